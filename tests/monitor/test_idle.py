"""Idle AMs (`amtuner.monitor.idle`): running apps that hold their AM container alone and ask
for nothing, read from the apps document Hadoop 3.5.0's RM answered."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from amtuner.cycle import named_from_apps
from amtuner.executor import SchedulerFile
from amtuner.model import GLOBAL_TARGET, IdleAMs, Observation, QueueStats, SchedulerKind, Wait
from amtuner.model import WaitCause as Cause
from amtuner.monitor import ObservationError
from amtuner.monitor.idle import (
    IDLE_AFTER_S,
    describe_idle,
    idle_ams,
    idle_record,
    looked_for,
    with_idle_ams,
)
from amtuner.monitor.rest import build_observation
from amtuner.monitor.waits import UnfinishedApp, parse_unfinished_apps
from tests.monitor.test_monitor_waits import DATA, documents


def recorded() -> dict[str, Any]:
    """Five apps of 1 GB AMs: two RUNNING (their AM alone, nothing asked, registered a second
    or two before), three ACCEPTED, each asking for its AM."""
    doc: dict[str, Any] = json.loads((DATA / "fair-user-max-apps-default/apps.json").read_bytes())
    return doc


def test_as_recorded_the_running_ams_ask_for_nothing_and_have_just_started() -> None:
    apps = parse_unfinished_apps(recorded())
    running = [a for a in apps if not a.accepted]
    assert [(a.running_containers, a.allocated_mb, a.asks) for a in running] == [(1, 1024, 0)] * 2
    assert all(a.running_s is not None and 1.0 < a.running_s < 2.0 for a in running), running
    waiting = [a for a in apps if a.accepted]
    assert [(a.running_containers, a.asks, a.running_s) for a in waiting] == [(0, 1, None)] * 3
    # Just registered: not idle yet. Past the time, both are.
    assert idle_ams(apps) == (IdleAMs("root.default", 0, 0, 2),)
    assert idle_ams(apps, after_s=1.0) == (IdleAMs("root.default", 2, 2048, 2),)


def test_an_app_with_asks_or_tasks_or_no_launch_time_is_not_idle() -> None:
    doc = recorded()
    listed = doc["apps"]["app"]
    old = IDLE_AFTER_S * 1000 + 1
    for app in listed:
        app["elapsedTime"] += old
    assert idle_ams(parse_unfinished_apps(doc)) == (IdleAMs("root.default", 2, 2048, 2),)
    first, second = [a for a in listed if a["state"] == "RUNNING"]
    asking = copy.deepcopy(listed[0]["resourceRequests"])
    asking[0].update(priority=20, numContainers=3)
    local = {**asking[0], "resourceName": "node-1", "numContainers": 3}
    first["resourceRequests"] = [asking[0], local]
    assert parse_unfinished_apps(doc)[listed.index(first)].asks == 3  # the node's repeat it
    second.update(runningContainers=2, allocatedMB=2048)
    assert idle_ams(parse_unfinished_apps(doc)) == (IdleAMs("root.default", 0, 0, 2),)
    first.pop("resourceRequests")
    for app in (first, second):
        app.pop("launchTime")
    second["runningContainers"] = 1
    none = (IdleAMs("root.default", 0, 0, 2),)
    assert idle_ams(parse_unfinished_apps(doc)) == none  # before 3.0: no launchTime, not told


@pytest.mark.parametrize(
    ("field", "value"), [("resourceRequests", {}), ("runningContainers", -1), ("launchTime", "x")]
)
def test_a_malformed_figure_refuses_the_answer(field: str, value: object) -> None:
    doc = recorded()
    doc["apps"]["app"][3][field] = value
    with pytest.raises(ObservationError) as err:
        parse_unfinished_apps(doc)
    assert err.value.reason == "bad-response"


def _observed(*waits: Wait) -> Observation:
    return Observation(
        time=0.0, scheduler=SchedulerKind.CAPACITY, pending_apps=2, running_apps=3,
        memory_used_mb=3072, memory_total_mb=16384,
        queues=(QueueStats("root.default", 2, 3, 3072), QueueStats("root.other", 0, 0, 0)),
        waits=waits,
    )  # fmt: skip


def test_the_apps_are_listed_only_while_an_am_limit_holds_apps() -> None:
    asked: list[int] = []
    idle = UnfinishedApp("root.default", "u", False, 1, 1024, 0, IDLE_AFTER_S)

    def listed() -> tuple[UnfinishedApp, ...]:
        asked.append(1)
        return (idle, idle, replace(idle, running_containers=3, allocated_mb=3072))

    held = _observed(Wait("root.default", Cause.MAX_APPS, 2))
    assert not looked_for(held) and with_idle_ams(held, listed) == held and not asked
    assert idle_record(held, GLOBAL_TARGET) is None
    obs = with_idle_ams(_observed(Wait("root.default", Cause.QUEUE_AM_LIMIT, 2)), listed)
    assert asked == [1]
    assert obs.idle_ams == (IdleAMs("root.default", 2, 2048, 3),)
    record = {"apps": 2, "running": 3, "memory_mb": 2048}
    assert idle_record(obs, GLOBAL_TARGET) == idle_record(obs, "root.default") == record
    assert idle_record(obs, "root.other") is None
    assert describe_idle(record) == (
        "2 of 3 running apps hold their AM alone (2048 MB) and ask for nothing (cure: the "
        "framework's idle timeout: tez.session.am.dag.submit.timeout.secs, "
        "livy.server.session.timeout, kyuubi.session.engine.idle.timeout)"
    )


def test_the_users_limits_and_the_idle_ams_share_one_listing(tmp_path: Path) -> None:
    """`named_from_apps`, as a cycle and `amtuner check` call it: a FairScheduler file that
    limits users and an AM limit that holds apps both want the apps; the RM is asked once. A
    listing that fails stops the users' limits (they decide what A cures), once, and costs
    only the idle AMs where nothing else wants it."""
    path = tmp_path / "fair-scheduler.xml"
    path.write_text(
        '<allocations><queue name="default"/><userMaxAppsDefault>9</userMaxAppsDefault>'
        "</allocations>"
    )
    sched = SchedulerFile.read(path, SchedulerKind.FAIR)
    asked: list[int] = []
    idle = UnfinishedApp("root.default", "u", False, 1, 1024, 0, IDLE_AFTER_S)
    held = replace(
        _observed(Wait("root.default", Cause.QUEUE_AM_LIMIT, 2)), scheduler=SchedulerKind.FAIR
    )

    def listed() -> tuple[UnfinishedApp, ...]:
        asked.append(1)
        return (idle, idle, replace(idle, running_containers=3, allocated_mb=3072))

    obs = named_from_apps(held, sched, listed)
    assert asked == [1] and obs.waits == held.waits
    assert obs.idle_ams == (IdleAMs("root.default", 2, 2048, 3),)
    assert named_from_apps(held, sched, listed, idle_ams=False).idle_ams is None
    assert asked == [1, 1]

    def failing() -> tuple[UnfinishedApp, ...]:
        asked.append(1)
        raise ObservationError("timeout", "no answer")

    asked.clear()
    with pytest.raises(ObservationError):
        named_from_apps(held, sched, failing)
    capacity = replace(held, scheduler=SchedulerKind.CAPACITY)
    assert named_from_apps(capacity, sched, failing) == capacity
    assert asked == [1, 1]


def test_as_recorded_three_idle_ams_hold_the_am_limit_two_apps_wait_behind() -> None:
    """``capacity-idle-ams``: Hadoop 3.5.0's RM 70 s after three AMs took its AM limit, each
    alone in its container and asking for nothing."""
    metrics, scheduler = documents("capacity-idle-ams")
    obs = build_observation(metrics, scheduler, time=0.0, source="rest")
    assert obs.waits == (Wait("root.default", Cause.QUEUE_AM_LIMIT, 2),)
    doc = json.loads((DATA / "capacity-idle-ams/apps.json").read_bytes())
    obs = with_idle_ams(obs, lambda: parse_unfinished_apps(doc))
    assert obs.idle_ams == (IdleAMs("root.default", 3, 3072, 3),)
    assert idle_record(obs, GLOBAL_TARGET) == {"apps": 3, "running": 3, "memory_mb": 3072}
