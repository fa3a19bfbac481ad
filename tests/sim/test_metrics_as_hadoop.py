"""The simulated RM's cluster metrics beside what Hadoop 3.5.0's own RM answered in the same
shape (tests/data/monitor/hadoop-3.5.0): two 8 GB / 8 vcore nodes, A = 0.1875, five apps with
1 GB AMs, three running and two held back by the AM limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amtuner.model import SchedulerKind
from amtuner.sim import rmapi
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.spec import JobSpec, TaskGroup, Workload

DATA = Path(__file__).parent.parent / "data" / "monitor" / "hadoop-3.5.0"

LEAF_FIELDS = {
    SchedulerKind.CAPACITY: (
        "numActiveApplications", "numPendingApplications", "numApplications", "numContainers",
        "pendingContainers", "allocatedContainers", "AMResourceLimit", "usedAMResource",
        "userAMResourceLimit", "resourcesUsed",
    ),
    SchedulerKind.FAIR: (
        "numActiveApps", "numPendingApps", "pendingContainers", "allocatedContainers",
        "usedResources", "amUsedResources", "amMaxResources", "demandResources", "fairResources",
        "steadyFairResources",
    ),
}  # fmt: skip
"""A leaf's figures that say what runs, what waits and what the AM limit is."""

FIELDS = (
    "appsPending", "appsRunning", "allocatedMB", "allocatedVirtualCores", "containersAllocated",
    "pendingMB", "pendingVirtualCores", "containersPending", "totalMB", "totalVirtualCores",
)  # fmt: skip


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_pending_and_allocated_figures_are_the_real_rm_s(kind: SchedulerKind) -> None:
    """``QueueMetrics`` counts an ask's memory, vcores and container from the moment it is made,
    an app the AM limit holds back included (`AppSchedulingInfo.updateResourceRequests`); the
    leaf's AM limit, AM use and (FairScheduler) shares and demand are the real RM's too."""
    real = json.loads((DATA / str(kind) / "metrics.json").read_bytes())["clusterMetrics"]
    # AMs that take longer to start than the test looks: no task is asked for yet.
    maps = (TaskGroup("map", 1, 1024, 1, 10.0, 0.5, 1.0),)
    jobs = tuple(
        JobSpec(f"j{i}", 0.0, "root.default", maps, am_memory_mb=1024, am_startup_s=60.0)
        for i in range(5)
    )
    workload = Workload("hadoop-3.5.0 shape", jobs, nodes=2, node_memory_mb=8192, node_vcores=8)
    config = default_scheduler_config(kind, workload.queues, 0.1875)
    sim = build_simulation(kind, workload, config)
    sim.run_until(10.0)
    simulated = rmapi.cluster_metrics(sim.view())["clusterMetrics"]
    assert {k: simulated[k] for k in FIELDS} == {k: real[k] for k in FIELDS}
    real_leaf = _default_leaf(json.loads((DATA / str(kind) / "scheduler.json").read_bytes()))
    leaf = _default_leaf(rmapi.scheduler_info(sim.view()))
    assert _figures(leaf, kind) == _figures(real_leaf, kind)


def _figures(leaf: dict[str, Any], kind: SchedulerKind) -> dict[str, Any]:
    """The leaf's LEAF_FIELDS, a resource by its memory and vcores (the simulator does not
    write the ``resourceInformations`` list beside them)."""
    return {
        k: {r: leaf[k][r] for r in ("memory", "vCores")} if isinstance(leaf[k], dict) else leaf[k]
        for k in LEAF_FIELDS[kind]
    }


def _default_leaf(doc: dict[str, Any]) -> dict[str, Any]:
    info = doc["scheduler"]["schedulerInfo"]
    queues = info["rootQueue"]["childQueues"] if "rootQueue" in info else info["queues"]
    (leaf,) = (q for q in queues["queue"] if q["queueName"] in ("default", "root.default"))
    return leaf  # type: ignore[no-any-return]
