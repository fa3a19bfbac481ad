"""Node-label partitions are noticed, and the default partition's figures stay the ones read."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from amtuner import cures
from amtuner.executor import SchedulerFile
from amtuner.model import WaitCause
from amtuner.monitor.rest import build_observation
from amtuner.realyarn.capture import SCENES

DATA = Path(__file__).resolve().parents[1] / "data" / "monitor"
LIVE = DATA / "hadoop-3.5.0" / "capacity"


def load(path: Path) -> object:
    return json.loads(path.read_text())


def observe(scheduler: Path):
    return build_observation(
        load(LIVE / "metrics.json"), load(scheduler), time=0.0, source="rest test"
    )


def test_a_labelled_partition_is_named() -> None:
    obs = observe(DATA / "scheduler-capacity-labels.json")
    assert obs.labelled_partitions == ("gpu",)


def test_the_default_partition_is_still_what_is_read() -> None:
    plain = observe(LIVE / "scheduler.json")
    labelled = observe(DATA / "scheduler-capacity-labels.json")
    assert plain.labelled_partitions == ()
    # The gpu entry's AM figures (2048 MB used of 4096) are not mixed into the default's.
    assert dataclasses.replace(labelled, labelled_partitions=()) == plain
    assert plain.queue("root.default").am_memory_used_mb == 3072


def test_fair_scheduler_has_no_partitions() -> None:
    fair = DATA / "hadoop-3.5.0" / "fair"
    obs = build_observation(
        load(fair / "metrics.json"), load(fair / "scheduler.json"), time=0.0, source="rest test"
    )
    assert obs.labelled_partitions == ()


def observe_scene(scene: str):
    d = DATA / "hadoop-3.5.0" / scene
    return build_observation(
        load(d / "metrics.json"), load(d / "scheduler.json"), time=0.0, source="rest test"
    )


def test_a_leaf_whose_ams_go_to_a_label_is_judged_on_that_partition() -> None:
    """Hadoop 3.5.0, every AM sent to the label core (the RM's
    ``am.default-node-label-expression``): the leaf's default-partition figures show no AM and
    4 GB of room, its core entry two AMs at its 2 GB limit, which hold the other three
    (``activateApplications`` judges an AM on its partition's limit, 0.25 of 8 GB here)."""
    obs = observe_scene("capacity-partition-am-limit")
    q = obs.queue("root.default")
    assert q is not None and q.am_partition is not None
    # The leaf's own figures stay the default partition's, as the cluster's metrics are.
    assert (q.am_memory_used_mb, q.am_memory_limit_mb, q.memory_used_mb) == (0, 4096, 0)
    assert (obs.memory_total_mb, obs.memory_used_mb, obs.am_memory_used_mb) == (8192, 0, 0)
    core = q.in_am_partition()
    assert (core.am_memory_used_mb, core.am_memory_limit_mb, core.memory_used_mb) == (
        2048, 2048, 2048,
    )  # fmt: skip
    assert (q.am_share, core.am_share, q.partition_sets_own_share) == (0.5, 0.25, True)
    assert (core.memory_share_mb, core.user_am_room_mb) == (8192, 0)  # the user's 2048 of 2048
    ((wait,),) = [obs.waits]
    assert (wait.cause, wait.apps, wait.partition, wait.own_share) == (
        WaitCause.PARTITION_AM_LIMIT, 3, "core", True,
    )  # fmt: skip
    # Only the partition's own value makes this limit.
    assert [wait.cured_by(t) for t in ("", "root.default", "root.default@core")] == [
        False, False, True,
    ]  # fmt: skip
    assert obs.queue("root.default@core") == core
    assert obs.queue("root.default@gpu") is None
    assert obs.waits_for("root.default@core") == obs.waits_for("root.default") == (wait,)
    assert obs.waits_for("root.default@gpu") == ()
    assert cures.knob(wait.cause, obs.scheduler, wait.queue, partition=wait.partition) == (
        "yarn.scheduler.capacity.root.default.accessible-node-labels.core."
        "maximum-am-resource-percent"
    )


def test_a_partition_without_its_own_share_is_cured_by_the_leafs_and_the_global_one() -> None:
    obs = observe_scene("capacity-partition-inherits")
    ((wait,),) = [obs.waits]
    assert (wait.cause, wait.apps, wait.own_share) == (WaitCause.PARTITION_AM_LIMIT, 3, False)
    assert all(wait.cured_by(t) for t in ("", "root.default", "root.default@core"))
    assert not cures.a_cures_none(obs, "")


def test_the_settings_behind_a_partition_limit_in_the_file(tmp_path: Path) -> None:
    obs = observe_scene("capacity-partition-am-limit")
    data = SCENES["capacity-partition-am-limit"].scheduler_file()
    sched_file = SchedulerFile(tmp_path / "capacity-scheduler.xml", "capacity", data)
    assert cures.settings_in_file(obs, "", sched_file) == [
        "yarn.scheduler.capacity.root.default.accessible-node-labels.core."
        "maximum-am-resource-percent = 0.25",
        "yarn.scheduler.capacity.root.default.maximum-am-resource-percent unset: default 0.5 "
        "(yarn.scheduler.capacity.maximum-am-resource-percent)",
    ]
