"""The bar of issue 36 on the simulated RM: under every cause of waiting that A cannot cure,
the default policy (`adaptive`, behind the daemon's guard, its loop run period after period)
never ends farther from the value it started at than one step.

Each scene holds a batch of jobs with real tasks behind one limit A is not part of for many
control periods; from the fourth cycle on the monitor must name that limit alone, and A must
stay within `ControllerSettings.step` of the start the whole time. A FairScheduler's users'
limits (``userMaxAppsDefault``, a ``<user>``'s ``maxRunningApps``) are in no scheduler
document: the cycle reads them from the allocation file and whose apps wait from the apps
document (`amtuner.monitor.waits.held_by_users`). A FairScheduler's full cluster is full in
memory with vcores to spare: under the default ``fair`` policy the vcore side of its AM limit
is A x the vcores free (``FSLeafQueue.computeMaxAMResource``), so on a cluster full in vcores
too A decides when the next AM starts, and that wait is A's (docs/waits.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from amtuner.config import ControllerSettings, GuardSettings
from amtuner.cures import describe, wait_records
from amtuner.model import GLOBAL_TARGET, WaitCause
from amtuner.sim.control import ControlledRun
from amtuner.sim.placement import AM_NODE_LABEL
from amtuner.sim.sched_config import CS_PREFIX, default_scheduler_config, with_capacity_properties
from amtuner.sim.simulation import build_simulation
from amtuner.sim.spec import JobSpec, TaskGroup, Workload

CS, FS = "capacity", "fair"
LEAF = "root.default"
LABEL = "core"


@dataclass(frozen=True)
class Scene:
    kind: str
    start: float
    cause: WaitCause
    users: tuple[str, ...] = ("u",) * 10
    props: dict[str, str] = field(default_factory=dict)
    """CapacityScheduler properties, or FairScheduler elements of root.default / <allocations>
    (``fs_leaf``, ``fs_top``)."""
    fs_leaf: str = ""
    fs_top: str = ""
    fs_parent: str = ""
    """FairScheduler elements of the parent ``root.batch``, when the scene's jobs go by turns
    to its two leaves (`PARENT_LEAVES`) rather than root.default."""
    late: int = 0
    """Jobs of the batch that come 30 s after the rest, once those fill what they may use."""
    maps: int = 4
    labelled: bool = False
    node_vcores: int = 8
    """Each node's (8 GB): 16 fills the nodes' memory with 1 GB containers, not their vcores."""
    daemon_from_s: float = 0.0
    """When the daemon's loop starts: for a full cluster, once the first jobs fill it. On the
    empty cluster before, the first jobs' apps wait for nothing but a heartbeat, and the
    policy's first look at them is its own to make."""


PART_KEY = f"{CS_PREFIX}{LEAF}.accessible-node-labels.{LABEL}."
LABEL_PROPS = {
    f"{CS_PREFIX}root.accessible-node-labels.{LABEL}.capacity": "100",
    f"{CS_PREFIX}{LEAF}.accessible-node-labels": LABEL,
    f"{PART_KEY}capacity": "100",
}

PARENT_LEAVES = ("root.batch.a", "root.batch.b")

SCENES = {
    "cs-queue-max-parallel-apps": Scene(
        CS, 0.1, WaitCause.MAX_APPS, props={f"{CS_PREFIX}{LEAF}.max-parallel-apps": "2"}
    ),
    "cs-cluster-max-parallel-apps": Scene(
        CS, 0.1, WaitCause.MAX_APPS, props={f"{CS_PREFIX}max-parallel-apps": "2"}
    ),
    "cs-user-max-parallel-apps": Scene(
        CS, 0.1, WaitCause.MAX_APPS, props={f"{CS_PREFIX}user.max-parallel-apps": "2"}
    ),
    "cs-user-limit": Scene(
        CS, 0.1, WaitCause.USER_LIMIT, users=("alice", "bob", "carol", "dave") * 3,
        props={f"{CS_PREFIX}{LEAF}.user-limit-factor": "0.25"}, late=8, maps=28,
    ),
    "cs-cluster-full": Scene(
        CS, 0.1, WaitCause.CLUSTER_FULL, users=("u", "u", "v", "v"), late=2, maps=30,
        daemon_from_s=15.0,
    ),
    "cs-partition-own-share": Scene(
        CS, 0.1, WaitCause.PARTITION_AM_LIMIT,
        props={**LABEL_PROPS, f"{PART_KEY}maximum-am-resource-percent": "0.25"},
        labelled=True,
    ),
    "fs-max-running-apps": Scene(
        FS, 0.5, WaitCause.MAX_APPS, fs_leaf="<maxRunningApps>2</maxRunningApps>"
    ),
    "fs-queue-max-apps-default": Scene(
        FS, 0.5, WaitCause.MAX_APPS, fs_top="<queueMaxAppsDefault>2</queueMaxAppsDefault>"
    ),
    "fs-parent-max-running-apps": Scene(
        FS, 0.5, WaitCause.MAX_APPS, fs_parent="<maxRunningApps>2</maxRunningApps>"
    ),
    "fs-user-max-apps-default": Scene(
        FS, 0.5, WaitCause.MAX_APPS, fs_top="<userMaxAppsDefault>2</userMaxAppsDefault>"
    ),
    "fs-user-max-running-apps": Scene(
        FS, 0.5, WaitCause.MAX_APPS,
        fs_top='<user name="u"><maxRunningApps>2</maxRunningApps></user>',
    ),
    "fs-cluster-full": Scene(
        FS, 0.5, WaitCause.CLUSTER_FULL, users=("u", "u", "v", "v"), late=2, maps=30,
        node_vcores=16, daemon_from_s=15.0,
    ),
}  # fmt: skip


def _workload(scene: Scene) -> Workload:
    """Jobs of 1 GB AMs and 1 GB maps of 900 s (longer than the test's cycles), on four 8 GB
    nodes (the first labelled where the scene's AMs go to a label)."""
    leaves = _leaves(scene)
    jobs = tuple(
        JobSpec(
            job_id=f"job{i:02d}", submit_s=30.0 if i >= len(scene.users) - scene.late else 0.0,
            queue=leaves[i % len(leaves)], user=user,
            maps=(TaskGroup("map", scene.maps, 1024, 1, 900.0, 0.0, 0.0),),
            am_memory_mb=1024, am_startup_s=2.0, am_teardown_s=1.0,
        )
        for i, user in enumerate(scene.users)
    )  # fmt: skip
    return Workload("incurable", jobs, nodes=4, node_vcores=scene.node_vcores)


def _leaves(scene: Scene) -> tuple[str, ...]:
    return PARENT_LEAVES if scene.fs_parent else (LEAF,)


def _config(scene: Scene) -> bytes:
    data = default_scheduler_config(scene.kind, _leaves(scene), scene.start)
    if scene.kind == CS:
        return with_capacity_properties(data, scene.props)
    text = data.decode()
    if scene.fs_parent:
        head, sep, tail = text.partition('<queue name="batch" type="parent">')
        assert sep, text
        text = head + sep + scene.fs_parent + tail
    if scene.fs_leaf:
        head, sep, tail = text.partition('<queue name="default">')
        assert sep, text
        text = head + sep + scene.fs_leaf + tail
    text = text.replace("<allocations>", f"<allocations>{scene.fs_top}", 1)
    return text.encode()


CYCLES = 20


@pytest.mark.parametrize("name", SCENES)
def test_the_default_policy_stays_within_a_step_of_its_start(name: str, tmp_path: Path) -> None:
    """Twenty periods of the daemon's loop (defaults: `adaptive`, its guard) from the moment
    the batch comes (or, for a full cluster, its first jobs have filled it), tasks outlasting
    them: after the first cycles every one names only the
    scene's limit, and A ends, as it stays, within one step of where it started."""
    scene = SCENES[name]
    kwargs: dict[str, object] = {}
    if scene.labelled:
        kwargs = {"site": {AM_NODE_LABEL: LABEL}, "labelled": ((LABEL, 1),)}
    sim = build_simulation(scene.kind, _workload(scene), _config(scene), **kwargs)  # type: ignore[arg-type]
    sim.run_until(scene.daemon_from_s)
    settings = ControllerSettings()
    assert settings.policy == "adaptive"
    control = ControlledRun(sim, tmp_path, controller=settings, guard=GuardSettings())
    seen: list[str] = []
    for cycle in range(CYCLES):
        sim.run_until(scene.daemon_from_s + cycle * settings.period_seconds)
        report = control.last_report
        assert report is not None and report.observation is not None
        waits = report.observation.waits_for(GLOBAL_TARGET)
        seen.append(describe(wait_records(report.observation, GLOBAL_TARGET)))
        if cycle >= 3:
            assert {w.cause for w in waits} == {scene.cause}, seen
    assert control.cycles == CYCLES
    values = [a for _, a in sim.a_trace]
    assert values[0] == scene.start
    assert max(abs(a - scene.start) for a in values) <= settings.step + 1e-9, (values, seen)
