"""Which running apps hold their AM container alone and ask for nothing: idle AMs, named beside
the waits so that an operator sees when the AM share is held by sessions with nothing to do.

A Tez session (``DAGAppMaster`` in session mode, as Hive runs it) keeps its AM between queries
and for ``tez.session.am.dag.submit.timeout.secs`` after the last; a Livy session's Spark driver
until ``livy.server.session.timeout``, a Kyuubi engine until
``kyuubi.session.engine.idle.timeout``. Each holds AM share while it runs no task, and A does
not tell them from AMs with work: their cure is the framework's timeout. The apps document
tells them: RUNNING, one container (``runningContainers``, the AM's), and no asks
(`UnfinishedApp.asks`). So does an AM computing on its own (a Spark driver between jobs, a Tez
AM generating its splits): the RM cannot tell those apart, and both hold AM share no task uses.

That document grows with the apps, so it is read only where it says something to the point:
while an AM limit, one A makes, holds apps (`looked_for`), once per cycle and shared with the
users' running-apps limits (`amtuner.cures.held_by_users_limits`). Informational: the controller
never reads it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from amtuner.model import IdleAMs, Observation
from amtuner.monitor.waits import UnfinishedApp

IDLE_AFTER_S = 60.0
"""How long an app must have run (since its AM container launched) before it counts as idle.
An AM with work asks for its containers at its first allocate heartbeats after it registers:
MapReduce's ``RMContainerAllocator`` every second
(``yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms``), Tez at most every second
(``tez.am.am-rm.heartbeat.interval-ms.max``), Spark's ``YarnAllocator`` every 3 s
(``spark.yarn.scheduler.heartbeat.interval-ms``), and an allocated container is counted from
the next NodeManager heartbeat (1 s). Within a few seconds of RUNNING it has asked; 30 s is ten
of Spark's heartbeats, and AM start-up (JVM, localisation) comes before RUNNING."""

IDLE_CURE = (
    "the framework's idle timeout: tez.session.am.dag.submit.timeout.secs, "
    "livy.server.session.timeout, kyuubi.session.engine.idle.timeout"
)


def looked_for(obs: Observation) -> bool:
    """Whether a cycle lists the apps for idle AMs: some apps wait behind an AM limit A makes."""
    return any(w.cause.a_cures for w in obs.waits)


def idle_ams(apps: Sequence[UnfinishedApp], after_s: float = IDLE_AFTER_S) -> tuple[IdleAMs, ...]:
    """Per queue with apps RUNNING, those RUNNING for ``after_s`` or more with one container
    and no asks, of how many."""
    found: dict[str, tuple[int, int, int]] = {}
    for a in apps:
        if a.accepted:
            continue
        n, mb, running = found.get(a.queue, (0, 0, 0))
        idle = a.running_containers == 1 and not a.asks
        if idle and a.running_s is not None and a.running_s >= after_s:
            n, mb = n + 1, mb + (a.allocated_mb or 0)
        found[a.queue] = (n, mb, running + 1)
    return tuple(IdleAMs(q, *figures) for q, figures in sorted(found.items()))


def with_idle_ams(
    obs: Observation, unfinished_apps: Callable[[], Sequence[UnfinishedApp]]
) -> Observation:
    """The observation with `Observation.idle_ams` filled in where `looked_for` (one request,
    ``unfinished_apps``, asked only then)."""
    if not looked_for(obs):
        return obs
    return dataclasses.replace(obs, idle_ams=idle_ams(unfinished_apps()))


def idle_record(obs: Observation, target: str) -> dict[str, int] | None:
    """One target's idle AMs as plain JSON, the shape the audit line and the state file keep
    (and `status` reads back); None where none were found or none looked for."""
    idle = obs.idle_for(target)
    if idle is None or not idle.apps:
        return None
    return {"apps": idle.apps, "running": idle.running, "memory_mb": idle.memory_mb}


def idle_entry(obs: Observation | None, target: str) -> dict[str, object]:
    """``{"idle_ams": <idle_record>}`` for an audit line or a state file's decision, ``{}``
    where there is none: those written before idle AMs were named read the same."""
    record = None if obs is None else idle_record(obs, target)
    return {} if record is None else {"idle_ams": record}


def describe_idle(record: Mapping[str, Any]) -> str:
    """One line for `once` and `status`."""
    return (
        f"{record.get('apps')} of {record.get('running')} running apps hold their AM alone "
        f"({record.get('memory_mb')} MB) and ask for nothing (cure: {IDLE_CURE})"
    )
