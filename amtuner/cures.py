"""The setting that cures each `WaitCause`, named as an operator finds it in the scheduler's
file (the keys' home is the executor, which writes them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from amtuner.executor.xmledit import CS_PREFIX, capacity_key
from amtuner.model import USERS_LIMIT, Observation, SchedulerKind, Wait, WaitCause
from amtuner.safetext import shown


def knob(cause: WaitCause, scheduler: SchedulerKind, queue: str, held_at: str = "") -> str:
    """The setting that cures a wait, as an operator finds it in the scheduler's file
    (``held_at``: `Wait.held_at`)."""
    if cause is WaitCause.CLUSTER_FULL or not queue:
        return "cluster capacity (more nodes, or fewer running tasks)"
    if scheduler is SchedulerKind.FAIR:
        tag = "maxAMShare" if cause is WaitCause.QUEUE_AM_LIMIT else "maxRunningApps"
        return f"{tag} of queue {queue}"
    if cause is WaitCause.QUEUE_AM_LIMIT:
        return capacity_key(queue)
    if cause in (WaitCause.USER_AM_LIMIT, WaitCause.USER_LIMIT):
        return f"{CS_PREFIX}{queue}.user-limit-factor"
    if held_at == USERS_LIMIT:
        return f"{CS_PREFIX}user.max-parallel-apps (or user.<user>.max-parallel-apps)"
    return f"{CS_PREFIX}{held_at or queue}.max-parallel-apps"


def wait_records(obs: Observation, target: str) -> list[dict[str, object]]:
    """One target's waits as plain JSON, the one shape the audit line and the state file keep
    (and `status` reads back); the queue's name is the RM's, so it is made safe to show."""
    return [
        {
            "queue": shown(w.queue),
            "cause": str(w.cause),
            "apps": w.apps,
            "a_cures": w.cause.a_cures,
            "knob": shown(knob(w.cause, obs.scheduler, w.queue, w.held_at)),
        }
        for w in obs.waits_for(target)
    ]


def describe(records: Sequence[Mapping[str, Any]]) -> str:
    """One line for `once` and `status`: ``2 queue-am-limit in root.default (cure: <knob>)``."""
    return "; ".join(
        f"{r.get('apps')} {r.get('cause')} in {r.get('queue') or 'the cluster'} "
        f"(cure: {r.get('knob')})"
        for r in records
    )


def incurable(obs: Observation, target: str) -> tuple[Wait, ...]:
    """The target's waits when raising A cures none of them, else ``()`` (nothing waits, one
    wait is A's, or one cannot be told).

    A FairScheduler's ``cluster-full`` is an inference, not a report: one AM of the queue's
    mean size against an ``amMaxResources`` the scheduler last computed when it tried an AM
    (stale, or 0, until it tries again), so a larger waiting AM, or a fair share that moved,
    may still be held by ``maxAMShare``."""
    waits = obs.waits_for(target)
    if not waits or any(w.cause.a_cures for w in waits):
        return ()
    if obs.scheduler is SchedulerKind.FAIR and any(
        w.cause is WaitCause.CLUSTER_FULL for w in waits
    ):
        return ()
    return waits
