"""The simulated RM's answers beside what Hadoop 3.5.0's own RM answered in the same shape
(tests/data/monitor/hadoop-3.5.0, one directory per `capture.SCENES` scene): two 8 GB / 8 vcore
nodes and apps with 1 GB AMs, some running and the others held back (by the AM limit at
A = 0.1875 in the ``capacity`` and ``fair`` scenes, by a running-apps or user AM limit in the
others)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from amtuner.model import SchedulerKind
from amtuner.realyarn.capture import SCENES
from amtuner.sim import rmapi
from amtuner.sim.simulation import Simulation, build_simulation
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from tests.conftest import HADOOP_350

DATA = HADOOP_350

LEAF_FIELDS = {
    SchedulerKind.CAPACITY: (
        "numActiveApplications", "numPendingApplications", "numApplications", "numContainers",
        "pendingContainers", "allocatedContainers", "AMResourceLimit", "usedAMResource",
        "userAMResourceLimit", "resourcesUsed", "maxParallelApps",
    ),
    SchedulerKind.FAIR: (
        "numActiveApps", "numPendingApps", "pendingContainers", "allocatedContainers",
        "usedResources", "amUsedResources", "amMaxResources", "demandResources", "fairResources",
        "steadyFairResources", "maxApps",
    ),
}  # fmt: skip
"""A leaf's figures that say what runs, what waits, and what the AM and running-apps limits
are."""

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
    "leafQueueTemplate", "mode", "normalizedWeight", "queueAcls",
    "queueCapacityVectorInfo", "queueType", "weight",
}  # fmt: skip
"""Fields of the real RM's answers the simulator does not give (docs/fidelity.md)."""

ANSWERS = {
    "info.json": lambda view: rmapi.cluster_info(view, rmapi.FaceOptions()),
    "metrics.json": rmapi.cluster_metrics,
    "scheduler.json": rmapi.scheduler_info,
}


def _capture_shape(scene: str) -> Simulation:
    """A capture's cluster, file and batch (`capture.SCENES`), 10 s in: AMs that take longer to
    start than that, so no task is asked for yet."""
    recorded = SCENES[scene]
    maps = (TaskGroup("map", 1, 1024, 1, 10.0, 0.5, 1.0),)
    jobs = tuple(
        JobSpec(f"j{i}", 0.0, "root.default", maps, user=h.user, am_memory_mb=1024,
                am_startup_s=60.0)
        for i, h in enumerate(recorded.batch)
    )  # fmt: skip
    workload = Workload(scene, jobs, nodes=2, node_memory_mb=8192, node_vcores=8)
    sim = build_simulation(recorded.kind, workload, recorded.scheduler_file())
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
    simulated = _paths(ANSWERS[answer](_capture_shape(str(kind)).view()))
    assert simulated - real == set()
    missing = real - simulated
    assert {p for p in missing if not OMITTED & set(p)} == set()
    left_out = {name for p in missing for name in p if name in OMITTED}
    assert left_out == {name for p in real for name in p if name in OMITTED}


CAPACITY = SchedulerKind.CAPACITY
SIMULATED = [name for name, scene in SCENES.items() if not scene.after and not scene.label]
"""The scenes the simulator can run: not those of an RM whose counts its kills broke, nor
those with a labelled node (the simulated RM's answers have no per-partition figures, and
Hadoop's cluster metrics leave a labelled partition out: docs/fidelity.md)."""


@pytest.mark.parametrize("scene", SIMULATED)
def test_pending_and_allocated_figures_are_the_real_rm_s(scene: str) -> None:
    """``QueueMetrics`` counts an ask's memory, vcores and container from the moment it is made,
    an app the AM limit holds back included (`AppSchedulingInfo.updateResourceRequests`); the
    leaf's AM limits, AM use, apps and (FairScheduler) shares and demand are the real RM's too,
    in every recorded scene: the AM limit, ``max-parallel-apps`` and ``maxRunningApps`` holding
    apps, and two users under ``user-limit-factor`` 0.5."""
    kind = SCENES[scene].kind
    real = json.loads((DATA / scene / "metrics.json").read_bytes())["clusterMetrics"]
    sim = _capture_shape(scene)
    simulated = rmapi.cluster_metrics(sim.view())["clusterMetrics"]
    assert {k: simulated[k] for k in FIELDS} == {k: real[k] for k in FIELDS}
    real_leaf = _default_leaf(json.loads((DATA / scene / "scheduler.json").read_bytes()))
    leaf = _default_leaf(rmapi.scheduler_info(sim.view()))
    assert _figures(leaf, kind) == _figures(real_leaf, kind)


@pytest.mark.parametrize("scene", [n for n in SIMULATED if SCENES[n].kind is CAPACITY])
def test_a_capacity_scheduler_user_is_the_real_rm_s(scene: str) -> None:
    """``UserInfo``: each user's apps, AM use, user AM limit and user limit (memory; the
    simulator counts a user's memory only, docs/fidelity.md), alice's and bob's too when
    alice's own AM limit holds her apps."""
    real = _users(_default_leaf(json.loads((DATA / scene / "scheduler.json").read_bytes())))
    sim = _users(_default_leaf(rmapi.scheduler_info(_capture_shape(scene).view())))
    assert sim == real


def _users(leaf: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"queue_user_am_limit": leaf["userAMResourceLimit"]["memory"]}
    for user in leaf["users"]["user"]:
        (usage,) = user["resources"]["resourceUsagesByPartition"]
        out[user["username"]] = {
            "apps": (user["numPendingApplications"], user["numActiveApplications"]),
            "used": (user["resourcesUsed"]["memory"], usage["used"]["memory"]),
            "am": (user["AMResourceUsed"]["memory"], usage["amUsed"]["memory"]),
            "limits": (user["userResourceLimit"]["memory"], usage["amLimit"]["memory"]),
        }
    return out


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
