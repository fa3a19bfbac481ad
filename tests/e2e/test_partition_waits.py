"""A node-label partition's AM limit, read over HTTP from the simulated RM as from Hadoop's own.

The scene Hadoop 3.5.0 was recorded in (`amtuner.realyarn.capture`,
``tests/data/monitor/hadoop-3.5.0/capacity-partition-am-limit``): two 8 GB nodes, the first
labelled core, where every AM goes; root.default's AM share there is its own 0.25, the leaf's
0.5; five apps hold a 1 GB AM each. The simulated RM, given the same file, answers with the
per-partition entries Hadoop 3.x writes (``resourceUsagesByPartition``,
``queueCapacitiesByPartition``, each user's), so the monitor reads the same waits and the same
partition figures from both, and `amtuner once` names the partition's limit and holds a raise
of the global value, which does not reach it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from amtuner.model import Observation, WaitCause
from amtuner.monitor.rest import build_observation
from amtuner.realyarn.capture import AM_LABEL, SCENES
from amtuner.sim.placement import AM_NODE_LABEL
from amtuner.sim.server import SimServer
from amtuner.sim.simulation import build_simulation
from amtuner.sim.spec import IMMEDIATE, JobSpec, Workload
from tests.conftest import HADOOP_350
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_once import DECISION, WAITING

SCENE_NAME = "capacity-partition-am-limit"
SCENE = SCENES[SCENE_NAME]
RECORDED = HADOOP_350 / SCENE_NAME
KEY = f"yarn.scheduler.capacity.root.default.accessible-node-labels.{AM_LABEL}."


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The scene on the simulated RM, its AMs placed, served as it stands; and its file."""
    jobs = tuple(
        JobSpec(f"hold-{i:02d}", 0.0, "root.default", maps=(), am_memory_mb=1024, am_startup_s=1e9)
        for i in range(len(SCENE.batch))
    )
    data = SCENE.scheduler_file()
    sim = build_simulation(
        "capacity", Workload("holders", jobs, nodes=2), data, heartbeats=IMMEDIATE,
        site={AM_NODE_LABEL: AM_LABEL}, labelled=((AM_LABEL, 1),),
    )  # fmt: skip
    sim.run_until(5.0)
    path = tmp_path / "capacity-scheduler.xml"
    path.write_bytes(data)
    with SimServer(sim, run_clock=False) as server:
        yield server.url, path


def _observed(metrics: object, scheduler: object) -> Observation:
    return build_observation(metrics, scheduler, time=0.0, source="rest")


def test_the_monitor_reads_the_same_partition_from_the_simulated_rm_as_from_hadoop(
    served: tuple[str, Path],
) -> None:
    url, _ = served
    got = {
        name: requests.get(f"{url}/ws/v1/cluster/{name}", timeout=10).json()
        for name in ("metrics", "scheduler")
    }
    sim = _observed(got["metrics"], got["scheduler"])
    real = _observed(
        json.loads((RECORDED / "metrics.json").read_bytes()),
        json.loads((RECORDED / "scheduler.json").read_bytes()),
    )
    assert sim.waits == real.waits
    assert [w.cause for w in sim.waits] == [WaitCause.PARTITION_AM_LIMIT]
    (sim_leaf,), (real_leaf,) = sim.queues, real.queues
    assert sim_leaf.am_partition == real_leaf.am_partition
    assert (sim_leaf.am_memory_used_mb, sim_leaf.am_memory_limit_mb) == (
        real_leaf.am_memory_used_mb, real_leaf.am_memory_limit_mb,
    )  # fmt: skip
    assert (sim.memory_total_mb, sim.memory_used_mb) == (real.memory_total_mb, real.memory_used_mb)


def test_once_names_the_partition_limit_of_the_simulated_rm_and_holds_the_global_value(
    served: tuple[str, Path], tmp_path: Path
) -> None:
    url, path = served
    config = write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": [url]},
        scheduler={"kind": "capacity", "config_file": str(path)},
        refresh={"method": "command", "command": ["false"]},  # a write would fail: none is
        controller={"policy": "adaptive"},
    )
    before = path.read_bytes()
    run = amtuner("once", "--config", str(config))
    assert run.returncode == 0, run.stdout + run.stderr
    held = f"3 partition-am-limit in root.default (cure: {KEY}maximum-am-resource-percent)"
    assert dict(WAITING.findall(run.stdout))["global"] == held, run.stdout
    ((target, old, new, rule),) = DECISION.findall(run.stdout)
    assert (target, new, rule) == ("global", old, "hold"), run.stdout
    assert "A cures none of the waits" in run.stdout
    assert path.read_bytes() == before
