"""Why apps wait, read from what Hadoop 3.5.0's own RM answered (tests/data/monitor/hadoop-3.5.0:
three 1 GB AMs run under a 3 GB AM limit, two apps wait; and the scenes where another limit
holds them). The causes no scene records are the same answers with the figures changed as
Hadoop would report them in that state (each test says which), so the field names and shapes
stay Hadoop's."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from amtuner.cures import (
    a_cures_none,
    describe,
    held_by_users_limits,
    knob,
    settings,
    wait_records,
)
from amtuner.executor import SchedulerFile
from amtuner.model import (
    GLOBAL_TARGET,
    USERS_LIMIT,
    Observation,
    QueueStats,
    SchedulerKind,
    Wait,
    WaitCause,
)
from amtuner.monitor import ObservationError
from amtuner.monitor.rest import build_observation
from amtuner.monitor.waits import (
    UnfinishedApp,
    UsersLimits,
    held_by_users,
    parse_unfinished_apps,
    queue_waits,
)
from tests.conftest import HADOOP_350

DATA = HADOOP_350
CS, FS = SchedulerKind.CAPACITY, SchedulerKind.FAIR


def documents(scene: str) -> tuple[dict[str, Any], dict[str, Any]]:
    here = DATA / scene
    return (
        json.loads((here / "metrics.json").read_bytes()),
        json.loads((here / "scheduler.json").read_bytes()),
    )


def leaf_of(scheduler: dict[str, Any], kind: SchedulerKind) -> dict[str, Any]:
    info = scheduler["scheduler"]["schedulerInfo"]
    if kind is CS:
        [leaf] = info["queues"]["queue"]
    else:
        [leaf] = info["rootQueue"]["childQueues"]["queue"]
    assert leaf["type"].endswith("LeafQueueInfo")
    return leaf  # type: ignore[no-any-return]


def waits(metrics: dict[str, Any], scheduler: dict[str, Any]) -> tuple[Wait, ...]:
    return build_observation(metrics, scheduler, time=0.0, source="rest").waits


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_as_recorded_the_queue_am_limit_holds_both_apps(kind: SchedulerKind) -> None:
    metrics, scheduler = documents(str(kind))
    obs = build_observation(metrics, scheduler, time=0.0, source="rest", targets=["root.default"])
    assert obs.waits == (Wait("root.default", WaitCause.QUEUE_AM_LIMIT, 2),)
    assert obs.waits_for("root.default") == obs.waits_for(GLOBAL_TARGET) == obs.waits
    assert obs.waits_for("root.other") == ()
    line = describe(wait_records(obs, GLOBAL_TARGET))
    cure = (
        "yarn.scheduler.capacity.root.default.maximum-am-resource-percent"
        if kind is CS
        else "maxAMShare of queue root.default"
    )
    assert line == f"2 queue-am-limit in root.default (cure: {cure})"


RECORDED = {
    "capacity-max-parallel-apps": (Wait("root.default", WaitCause.MAX_APPS, 3),),
    "capacity-cluster-max-parallel-apps": (
        Wait("root.default", WaitCause.MAX_APPS, 3, ("root.default", "root")),
    ),
    "capacity-user-max-parallel-apps": (
        Wait("root.default", WaitCause.MAX_APPS, 3, (USERS_LIMIT,)),
    ),
    "fair-max-running-apps": (Wait("root.default", WaitCause.MAX_APPS, 3),),
    "fair-parent-max-running-apps": (Wait("root.default", WaitCause.MAX_APPS, 3, ("root",)),),
    "capacity-user-am-limit": (Wait("root.default", WaitCause.USER_AM_LIMIT, 2),),
    "capacity-user-am-limit-after-kills": (Wait("root.default", WaitCause.USER_AM_LIMIT, 2),),
}


@pytest.mark.parametrize("scene", list(RECORDED))
def test_as_recorded_under_each_other_limit(scene: str) -> None:
    """What Hadoop 3.5.0 answered with a limit other than the queue's AM share holding apps
    (`amtuner.realyarn.capture.SCENES`): five apps under ``max-parallel-apps`` (the leaf's,
    the cluster-wide value that is root's too, or each user's: the leaf and its parents
    unlimited, so the user's) or ``maxRunningApps`` 2, three held
    non-runnable; alice's two apps over her AM limit (``user-limit-factor`` 0.5) while bob's
    run, also on an RM that lists a user its kills took below zero (apps -2, AM memory -2 GB:
    left out, not a reason to refuse the answer). Each waiting app is put down to that
    limit."""
    assert waits(*documents(scene)) == RECORDED[scene]


def test_the_cluster_wide_max_parallel_apps_fills_root_and_the_leaf_and_both_are_named() -> None:
    """Recorded: the cluster-wide value is root's and the leaf's; raising either alone would
    leave the other holding the apps."""
    obs = build_observation(
        *documents("capacity-cluster-max-parallel-apps"), time=0.0, source="rest"
    )
    (record,) = wait_records(obs, GLOBAL_TARGET)
    assert record["knob"] == (
        "yarn.scheduler.capacity.root.default.max-parallel-apps and "
        "yarn.scheduler.capacity.root.max-parallel-apps"
    )


def test_cs_max_parallel_apps_holds_the_apps_neither_pending_nor_active() -> None:
    """max-parallel-apps 3 reached: 3.4+ counts the non-runnable apps in ``numApplications``
    only (``AbstractLeafQueue.getNumApplications``); the two over the AM limit stay pending."""
    metrics, scheduler = documents("capacity")
    leaf = leaf_of(scheduler, CS)
    leaf["maxParallelApps"] = 3
    leaf["numApplications"] = 7
    metrics["clusterMetrics"]["appsPending"] = 4
    assert waits(metrics, scheduler) == (
        Wait("root.default", WaitCause.MAX_APPS, 2),
        Wait("root.default", WaitCause.QUEUE_AM_LIMIT, 2),
    )
    assert knob(WaitCause.MAX_APPS, CS, "root.default") == (
        "yarn.scheduler.capacity.root.default.max-parallel-apps"
    )


@pytest.mark.parametrize(
    "root_limit, held_at, cure",
    [
        (5, ("root",), "yarn.scheduler.capacity.root.max-parallel-apps"),
        (2**31 - 1, (USERS_LIMIT,),
         "yarn.scheduler.capacity.user.max-parallel-apps (or user.<user>.max-parallel-apps)"),
    ],
)  # fmt: skip
def test_cs_max_parallel_apps_of_a_parent_or_of_the_users(
    root_limit: int, held_at: tuple[str, ...], cure: str
) -> None:
    """Two apps held non-runnable in a leaf with no limit of its own: root's limit of 5 holds
    them when its leaves' pending and active apps reach it (``exceedQueueMaxParallelApps``
    walks up to root); with no queue at its limit, a user's does (``exceedUserMaxParallelApps``,
    checked first, reported nowhere)."""
    metrics, scheduler = documents("capacity")
    scheduler["scheduler"]["schedulerInfo"]["maxParallelApps"] = root_limit
    leaf_of(scheduler, CS)["numApplications"] = 7
    metrics["clusterMetrics"]["appsPending"] = 4
    obs = build_observation(metrics, scheduler, time=0.0, source="rest")
    assert obs.waits[0] == Wait("root.default", WaitCause.MAX_APPS, 2, held_at)
    assert wait_records(obs, GLOBAL_TARGET)[0]["knob"] == cure


def test_cs_user_am_limit_binds_when_the_waiting_users_room_is_smaller() -> None:
    """Two users: the queue's AM limit has room for three more 1 GB AMs, but the waiting user
    ``bob`` already holds his own AM limit (user limit 50 %: ``amLimit`` 2 GB, both used)."""
    metrics, scheduler = documents("capacity")
    leaf = leaf_of(scheduler, CS)
    leaf["AMResourceLimit"]["memory"] = 6144
    [alice] = leaf["users"]["user"]
    alice["numPendingApplications"] = 0
    bob = copy.deepcopy(alice)
    bob["username"] = "bob"
    bob["numPendingApplications"] = 2
    bob["numActiveApplications"] = 2
    bob["AMResourceUsed"]["memory"] = 2048
    usage = bob["resources"]["resourceUsagesByPartition"][0]
    usage["amUsed"]["memory"] = 2048
    usage["amLimit"]["memory"] = 2048
    leaf["users"]["user"].append(bob)
    assert waits(metrics, scheduler) == (Wait("root.default", WaitCause.USER_AM_LIMIT, 2),)
    assert WaitCause.USER_AM_LIMIT.a_cures
    assert knob(WaitCause.USER_AM_LIMIT, CS, "root.default") == (
        "yarn.scheduler.capacity.root.default.user-limit-factor"
    )


def test_cs_a_user_at_its_user_limit_is_held_by_it_whatever_the_am_limits() -> None:
    """The waiting user already holds its whole 16 GB ``userResourceLimit`` (its tasks grew):
    no AM of its fits, whatever A lets in, so A is not the cure."""
    metrics, scheduler = documents(CS)
    leaf = leaf_of(scheduler, CS)
    [user] = leaf["users"]["user"]
    user["resourcesUsed"]["memory"] = 16384
    user["resources"]["resourceUsagesByPartition"][0]["used"]["memory"] = 16384
    assert waits(metrics, scheduler) == (Wait("root.default", WaitCause.USER_LIMIT, 2),)
    assert not WaitCause.USER_LIMIT.a_cures
    assert knob(WaitCause.USER_LIMIT, CS, "root.default") == (
        "yarn.scheduler.capacity.root.default.user-limit-factor"
    )
    user["resourcesUsed"]["memory"] = 15360  # room for one more 1 GB AM: the AM limit again
    user["resources"]["resourceUsagesByPartition"][0]["used"]["memory"] = 15360
    assert waits(metrics, scheduler) == (Wait("root.default", WaitCause.QUEUE_AM_LIMIT, 2),)


def test_cs_activated_apps_waiting_for_their_am_container_are_the_cluster_full() -> None:
    """Both apps activated (the AM limit let them in) but no node has room for their AMs:
    they are in no queue's pending count, only in the cluster's ``appsPending``."""
    metrics, scheduler = documents("capacity")
    leaf = leaf_of(scheduler, CS)
    leaf["numPendingApplications"] = 0
    leaf["numActiveApplications"] = 5
    leaf["AMResourceLimit"]["memory"] = 8192
    assert waits(metrics, scheduler) == (Wait(GLOBAL_TARGET, WaitCause.CLUSTER_FULL, 2),)


def test_cs_no_app_running_is_never_the_am_limit() -> None:
    """``activateApplications`` exempts the first AM of a queue, whatever the limit."""
    metrics, scheduler = documents("capacity")
    leaf = leaf_of(scheduler, CS)
    leaf["numActiveApplications"] = 0
    leaf["numApplications"] = 2
    assert waits(metrics, scheduler)[0] == Wait("root.default", WaitCause.CLUSTER_FULL, 2)


def test_fs_max_running_apps_holds_what_passes_max_apps() -> None:
    """maxRunningApps 4 with three running: one of the two waiting is runnable (behind the AM
    share), the other is held by maxRunningApps."""
    metrics, scheduler = documents("fair")
    leaf_of(scheduler, FS)["maxApps"] = 4
    assert waits(metrics, scheduler) == (
        Wait("root.default", WaitCause.MAX_APPS, 1),
        Wait("root.default", WaitCause.QUEUE_AM_LIMIT, 1),
    )
    assert knob(WaitCause.MAX_APPS, FS, "root.default") == "maxRunningApps of queue root.default"
    assert not WaitCause.MAX_APPS.a_cures and not WaitCause.CLUSTER_FULL.a_cures


def test_fs_a_parents_max_running_apps_holds_its_leaves_apps() -> None:
    """``fair-max-running-apps`` as if root's maxRunningApps 2 held its three (the leaf's own
    unset): every queue reports ``maxApps``, root's is full with two running, so no pending
    app below it is runnable; the cure is root's, and A cures none."""
    metrics, scheduler = documents("fair-max-running-apps")
    leaf_of(scheduler, FS)["maxApps"] = 2147483647
    scheduler["scheduler"]["schedulerInfo"]["rootQueue"]["maxApps"] = 2
    obs = build_observation(metrics, scheduler, time=0.0, source="rest")
    assert obs.waits == (Wait("root.default", WaitCause.MAX_APPS, 3, ("root",)),)
    assert describe(wait_records(obs, GLOBAL_TARGET)) == (
        "3 max-apps in root.default (cure: maxRunningApps of queue root)"
    )
    assert a_cures_none(obs, GLOBAL_TARGET) and a_cures_none(obs, "root.default")
    # Both full (queueMaxAppsDefault 2 is root's and the leaf's): each is named.
    leaf_of(scheduler, FS)["maxApps"] = 2
    assert waits(metrics, scheduler) == (
        Wait("root.default", WaitCause.MAX_APPS, 3, ("root.default", "root")),
    )
    # Room for one more runnable app under root: one of the three may be runnable.
    scheduler["scheduler"]["schedulerInfo"]["rootQueue"]["maxApps"] = 3
    leaf_of(scheduler, FS)["maxApps"] = 2147483647
    assert waits(metrics, scheduler)[0] == Wait("root.default", WaitCause.MAX_APPS, 2, ("root",))


def test_fs_a_parents_room_is_shared_by_its_leaves() -> None:
    """root.batch at maxRunningApps 4 over two leaves, three apps running: its room of one may
    go to a pending app of either leaf, so each leaf names all its pending apps but one; a leaf
    outside it is not held by it."""

    def leaf(name: str, pending: int, running: int, *limits: tuple[str, int]) -> QueueStats:
        return QueueStats(name, pending, running, memory_used_mb=0, ancestor_max_apps=limits)

    batch = (("root.batch", 4), ("root", 2147483647))
    leaves = (
        leaf("root.batch.a", 3, 2, *batch),
        leaf("root.batch.b", 2, 1, *batch),
        leaf("root.other", 2, 0, ("root", 2147483647)),
    )
    held = {
        q.name: [(w.cause, w.apps, w.held_at) for w in queue_waits(q, FS, leaves)] for q in leaves
    }
    assert held == {
        "root.batch.a": [
            (WaitCause.MAX_APPS, 2, ("root.batch",)), (WaitCause.CLUSTER_FULL, 1, ())
        ],
        "root.batch.b": [
            (WaitCause.MAX_APPS, 1, ("root.batch",)), (WaitCause.CLUSTER_FULL, 1, ())
        ],
        "root.other": [(WaitCause.CLUSTER_FULL, 2, ())],
    }  # fmt: skip


def test_fs_a_parents_max_running_apps_as_the_file_sets_it(tmp_path: Path) -> None:
    """`check` shows the parent's own ``<maxRunningApps>`` (root's too, when the file declares
    root), else ``queueMaxAppsDefault``, which applies to parents as to leaves."""
    path = tmp_path / "fair-scheduler.xml"
    path.write_text(
        "<allocations><queueMaxAppsDefault>7</queueMaxAppsDefault><queue name='root'>"
        "<maxRunningApps>9</maxRunningApps><queue name='batch' type='parent'>"
        "<queue name='a'/></queue></queue></allocations>"
    )
    sched = SchedulerFile.read(path, FS)
    [root, batch] = settings(WaitCause.MAX_APPS, FS, "root.batch.a", ("root", "root.batch"))[:2]
    assert root.in_file(sched) == "maxRunningApps of queue root = 9"
    assert batch.in_file(sched) == (
        "maxRunningApps of queue root.batch unset: default 7 (queueMaxAppsDefault)"
    )
    assert knob(WaitCause.MAX_APPS, FS, "root.batch.a", ("root.batch", "root")) == (
        "maxRunningApps of queue root.batch and maxRunningApps of queue root"
    )


def test_fs_room_under_the_am_share_means_the_cluster_is_full() -> None:
    metrics, scheduler = documents("fair")
    leaf_of(scheduler, FS)["amMaxResources"].update(memory=8192, vCores=8)
    assert waits(metrics, scheduler) == (Wait("root.default", WaitCause.CLUSTER_FULL, 2),)


def test_fs_am_vcores_held_with_memory_to_spare_are_the_am_share() -> None:
    """``canRunAppAM`` checks ``amMaxResources`` in vcores too: three 1-vcore AMs hold its 3
    vcores (as recorded) while its memory is raised to room for five more."""
    metrics, scheduler = documents("fair")
    leaf_of(scheduler, FS)["amMaxResources"]["memory"] = 8192
    assert waits(metrics, scheduler) == (Wait("root.default", WaitCause.QUEUE_AM_LIMIT, 2),)


def test_fs_an_am_share_never_computed_is_not_blamed() -> None:
    """``amMaxResources`` is 0 until an AM was tried, and stays 0 with maxAMShare -1."""
    metrics, scheduler = documents("fair")
    leaf_of(scheduler, FS)["amMaxResources"]["memory"] = 0
    assert waits(metrics, scheduler) == (Wait("root.default", WaitCause.CLUSTER_FULL, 2),)


def _apps(*apps: tuple[str, str, str]) -> dict[str, Any]:
    """An ``/ws/v1/cluster/apps`` answer (queue, user, state per app), with the fields the
    monitor reads under Hadoop's names."""
    listed = [
        {"id": f"application_1_{i:04d}", "queue": q, "user": u, "state": s}
        for i, (q, u, s) in enumerate(apps, 1)
    ]
    return {"apps": {"app": listed} if listed else None}


def test_fs_a_users_max_running_apps_holds_its_apps_past_the_limit() -> None:
    """``fair-max-running-apps`` as if ``userMaxAppsDefault`` 2 held its three (the leaf's
    own limit unset): the document alone sees room under the AM share, a full cluster; the
    apps document says they are alice's, five with two running."""
    metrics, scheduler = documents("fair-max-running-apps")
    leaf_of(scheduler, FS)["maxApps"] = 2147483647
    obs = build_observation(metrics, scheduler, time=0.0, source="rest")
    assert obs.waits == (Wait("root.default", WaitCause.CLUSTER_FULL, 3),)
    apps = parse_unfinished_apps(
        _apps(
            *[("root.default", "alice", "RUNNING")] * 2,
            *[("root.default", "alice", "ACCEPTED")] * 3,
        )
    )
    held = held_by_users(obs, apps, UsersLimits(2))
    assert held.waits == (Wait("root.default", WaitCause.MAX_APPS, 3, (USERS_LIMIT,)),)
    line = describe(wait_records(held, GLOBAL_TARGET))
    assert line == (
        '3 max-apps in root.default (cure: userMaxAppsDefault (or <user name="…"><maxRunningApps>))'
    )
    # Under a user's own higher limit, or with two users of two apps and one: nothing held.
    assert held_by_users(obs, apps, UsersLimits(2, {"alice": 5})) == obs
    spread = parse_unfinished_apps(
        _apps(
            *[("root.default", "alice", "ACCEPTED")] * 2, *[("root.default", "bob", "ACCEPTED")] * 3
        )
    )
    assert held_by_users(obs, spread, UsersLimits(3)) == obs


def test_fs_users_held_apps_are_at_least_those_no_other_leaf_can_hold() -> None:
    """A user's limit counts its runnable apps in every queue: of x's five apps (limit 2),
    three are held, at least one of them in each leaf where its ACCEPTED apps elsewhere
    cannot be all three; y's apps stay as the document named them."""
    obs = Observation(
        time=0.0, scheduler=FS, pending_apps=5, running_apps=1, memory_used_mb=0,
        memory_total_mb=8192,
        waits=(
            Wait("root.a", WaitCause.CLUSTER_FULL, 3),
            Wait("root.b", WaitCause.QUEUE_AM_LIMIT, 2),
        ),
    )  # fmt: skip
    apps = parse_unfinished_apps(
        _apps(
            ("root.a", "x", "RUNNING"), ("root.a", "x", "ACCEPTED"), ("root.a", "x", "ACCEPTED"),
            ("root.b", "x", "ACCEPTED"), ("root.b", "x", "ACCEPTED"), ("root.a", "y", "ACCEPTED"),
        )
    )  # fmt: skip
    assert held_by_users(obs, apps, UsersLimits(2, {"y": 1})).waits == (
        Wait("root.a", WaitCause.MAX_APPS, 1, (USERS_LIMIT,)),
        Wait("root.a", WaitCause.CLUSTER_FULL, 2),
        Wait("root.b", WaitCause.MAX_APPS, 1, (USERS_LIMIT,)),
        Wait("root.b", WaitCause.QUEUE_AM_LIMIT, 1),
    )


@pytest.mark.parametrize(
    "doc", [[], {"app": []}, {"apps": []}, {"apps": {"app": [{"queue": "root.a", "user": "x"}]}}]
)
def test_an_apps_answer_without_queue_user_and_state_is_refused(doc: Any) -> None:
    with pytest.raises(ObservationError) as err:
        parse_unfinished_apps(doc)
    assert err.value.reason == "bad-response"
    assert parse_unfinished_apps({"apps": None}) == ()


def test_the_apps_are_listed_only_where_the_allocation_file_limits_users(tmp_path: Path) -> None:
    """One more request to the RM, and one that grows with the apps: only for a FairScheduler
    file that sets a users' limit, while a leaf's apps wait for something else than its own
    maxRunningApps."""
    metrics, scheduler = documents("fair-max-running-apps")
    leaf_of(scheduler, FS)["maxApps"] = 2147483647
    obs = build_observation(metrics, scheduler, time=0.0, source="rest")
    asked: list[int] = []
    apps = [("root.default", "alice", "ACCEPTED")] * 5

    def listed() -> tuple[UnfinishedApp, ...]:
        asked.append(1)
        return parse_unfinished_apps(_apps(*apps))

    def held(allocations: str, observed: Observation = obs) -> tuple[Wait, ...]:
        path = tmp_path / "fair-scheduler.xml"
        path.write_text(f'<allocations><queue name="default"/>{allocations}</allocations>')
        return held_by_users_limits(observed, SchedulerFile.read(path, FS), listed).waits

    assert held("<queueMaxAppsDefault>9</queueMaxAppsDefault>") == obs.waits
    assert asked == []
    by_user = Wait("root.default", WaitCause.MAX_APPS, 3, (USERS_LIMIT,))
    assert held("<userMaxAppsDefault>2</userMaxAppsDefault>")[0] == by_user
    assert held('<user name="alice"><maxRunningApps>2</maxRunningApps></user>')[0] == by_user
    assert held('<user name="bob"><maxRunningApps>2</maxRunningApps></user>') == obs.waits
    assert len(asked) == 3
    queue_held = (Wait("root.default", WaitCause.MAX_APPS, 3),)
    assert held("<userMaxAppsDefault>2</userMaxAppsDefault>", replace(obs, waits=queue_held)) == (
        queue_held
    )
    assert len(asked) == 3


def test_as_recorded_a_users_limit_holds_three_of_its_five_apps() -> None:
    """Hadoop 3.5.0 under ``userMaxAppsDefault`` 2: its scheduler document shows room under
    the AM share (a full cluster, as far as it tells); its apps document lists the user's
    five apps, three ACCEPTED (their diagnostics: the user "has reached the maximum limit of
    runnable applications")."""
    metrics, scheduler = documents("fair-user-max-apps-default")
    obs = build_observation(metrics, scheduler, time=0.0, source="rest")
    assert obs.waits == (Wait("root.default", WaitCause.CLUSTER_FULL, 3),)
    doc = json.loads((DATA / "fair-user-max-apps-default" / "apps.json").read_bytes())
    assert all("maximum limit of runnable" in a["diagnostics"] for a in doc["apps"]["app"]
               if a["state"] == "ACCEPTED")  # fmt: skip
    held = held_by_users(obs, parse_unfinished_apps(doc), UsersLimits(2))
    assert held.waits == (Wait("root.default", WaitCause.MAX_APPS, 3, (USERS_LIMIT,)),)
