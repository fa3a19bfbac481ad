"""The simulated RM's cluster metrics beside what Hadoop 3.5.0's own RM answered in the same
shape (tests/data/monitor/hadoop-3.5.0): two 8 GB / 8 vcore nodes, A = 0.1875, five apps with
1 GB AMs, three running and two held back by the AM limit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amtuner.model import SchedulerKind
from amtuner.sim import rmapi
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.spec import JobSpec, TaskGroup, Workload

DATA = Path(__file__).parent.parent / "data" / "monitor" / "hadoop-3.5.0"

FIELDS = (
    "appsPending", "appsRunning", "allocatedMB", "allocatedVirtualCores", "containersAllocated",
    "pendingMB", "pendingVirtualCores", "containersPending", "totalMB", "totalVirtualCores",
)  # fmt: skip


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_pending_and_allocated_figures_are_the_real_rm_s(kind: SchedulerKind) -> None:
    """``QueueMetrics`` counts an ask's memory, vcores and container from the moment it is made,
    an app the AM limit holds back included (`AppSchedulingInfo.updateResourceRequests`)."""
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
