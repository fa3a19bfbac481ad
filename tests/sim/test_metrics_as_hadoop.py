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
from amtuner.sim.simulation import Simulation, build_simulation, default_scheduler_config
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


OMITTED = {
    "resourceInformations", "containerAssignedPerSecond",
    # CapacityScheduler queue fields of absolute and weight modes, auto-created queues, the
    # scheduler's health and ACLs (most Hadoop 3.4+): none is a figure the simulator models.
    "autoCreateChildQueueEnabled", "autoCreationEligibility", "autoQueueLeafTemplateProperties",
    "autoQueueParentTemplateProperties", "autoQueueTemplateProperties", "configuredMaxResource",
    "configuredMinResource", "creationMethod", "health", "isAbsoluteResource",
    "leafQueueTemplate", "maxParallelApps", "mode", "normalizedWeight", "queueAcls",
    "queueCapacityVectorInfo", "queueType", "weight",
}  # fmt: skip
"""Fields of the real RM's answers the simulator does not give (docs/fidelity.md)."""

ANSWERS = {
    "info.json": lambda view: rmapi.cluster_info(view, rmapi.FaceOptions()),
    "metrics.json": rmapi.cluster_metrics,
    "scheduler.json": rmapi.scheduler_info,
}


def _capture_shape(kind: SchedulerKind) -> Simulation:
    """The capture's cluster and batch, 10 s in: AMs that take longer to start than that, so no
    task is asked for yet."""
    maps = (TaskGroup("map", 1, 1024, 1, 10.0, 0.5, 1.0),)
    jobs = tuple(
        JobSpec(f"j{i}", 0.0, "root.default", maps, am_memory_mb=1024, am_startup_s=60.0)
        for i in range(5)
    )
    workload = Workload("hadoop-3.5.0 shape", jobs, nodes=2, node_memory_mb=8192, node_vcores=8)
    config = default_scheduler_config(kind, workload.queues, 0.1875)
    sim = build_simulation(kind, workload, config)
    sim.run_until(10.0)
    return sim


def _paths(doc: object, at: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every key path of a JSON document; a list's items share their list's path."""
    if isinstance(doc, dict):
        return {p for k, v in doc.items() for p in {(*at, k)} | _paths(v, (*at, k))}
    if isinstance(doc, list):
        return {p for item in doc for p in _paths(item, at)}
    return set()


@pytest.mark.parametrize("kind", list(SchedulerKind))
@pytest.mark.parametrize("answer", list(ANSWERS))
def test_the_simulated_rm_answers_with_the_real_rm_s_fields(
    kind: SchedulerKind, answer: str
) -> None:
    """Every field the simulator writes, a Hadoop 3.5.0 RM of the same scheduler writes at the
    same place (none invented: a FairScheduler has no cross-partition figures); every field it
    leaves out is one of OMITTED, and each of those is really left out somewhere."""
    real = _paths(json.loads((DATA / str(kind) / answer).read_bytes()))
    simulated = _paths(ANSWERS[answer](_capture_shape(kind).view()))
    assert simulated - real == set()
    missing = real - simulated
    assert {p for p in missing if not OMITTED & set(p)} == set()
    left_out = {name for p in missing for name in p if name in OMITTED}
    assert left_out == {name for p in real for name in p if name in OMITTED}


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_pending_and_allocated_figures_are_the_real_rm_s(kind: SchedulerKind) -> None:
    """``QueueMetrics`` counts an ask's memory, vcores and container from the moment it is made,
    an app the AM limit holds back included (`AppSchedulingInfo.updateResourceRequests`); the
    leaf's AM limit, AM use and (FairScheduler) shares and demand are the real RM's too."""
    real = json.loads((DATA / str(kind) / "metrics.json").read_bytes())["clusterMetrics"]
    sim = _capture_shape(kind)
    simulated = rmapi.cluster_metrics(sim.view())["clusterMetrics"]
    assert {k: simulated[k] for k in FIELDS} == {k: real[k] for k in FIELDS}
    real_leaf = _default_leaf(json.loads((DATA / str(kind) / "scheduler.json").read_bytes()))
    leaf = _default_leaf(rmapi.scheduler_info(sim.view()))
    assert _figures(leaf, kind) == _figures(real_leaf, kind)


def test_a_capacity_scheduler_user_is_the_real_rm_s() -> None:
    """``UserInfo``: the user's apps, AM use, user AM limit and user limit (memory; the
    simulator counts a user's memory only, docs/fidelity.md)."""
    real = _user(_default_leaf(json.loads((DATA / "capacity" / "scheduler.json").read_bytes())))
    sim = _user(_default_leaf(rmapi.scheduler_info(_capture_shape(SchedulerKind.CAPACITY).view())))
    assert sim == real


def _user(leaf: dict[str, Any]) -> dict[str, Any]:
    (user,) = leaf["users"]["user"]
    (usage,) = user["resources"]["resourceUsagesByPartition"]
    return {
        "apps": (user["numPendingApplications"], user["numActiveApplications"]),
        "used": (user["resourcesUsed"]["memory"], usage["used"]["memory"]),
        "am": (user["AMResourceUsed"]["memory"], usage["amUsed"]["memory"]),
        "limits": (user["userResourceLimit"]["memory"], usage["amLimit"]["memory"]),
        "queue_user_am_limit": leaf["userAMResourceLimit"]["memory"],
    }


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
