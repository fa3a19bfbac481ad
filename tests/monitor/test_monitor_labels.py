"""Node-label partitions are noticed, and the default partition's figures stay the ones read."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from amtuner.monitor.rest import build_observation

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
