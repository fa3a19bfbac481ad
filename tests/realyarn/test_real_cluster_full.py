"""A full cluster on Hadoop's own RM (issue 36's ``cluster-full``): apps wait only because no
node has room for their AM. `amtuner once` names the wait and its cure (cluster capacity) and
A, which cures none of it, does not rise: on a CapacityScheduler at its default 0.1 and on a
FairScheduler at its default 0.5, and the simulator, given the same file, holds the same apps.

The FairScheduler's nodes have more vcores than 1 GB slots, so its cluster is full in memory
while vcores are free. Under the default ``fair`` policy a leaf's fair share has no vcores, so
the vcore side of its AM limit is maxAMShare x the cluster's *free* vcores
(``FSLeafQueue.computeMaxAMResource``): on a cluster full in vcores too that side is 0, and A
decides how many must free before the next AM may start, which is no wait A cannot cure."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from amtuner.config import ControllerSettings
from amtuner.cures import CLUSTER_CAPACITY
from amtuner.model import SchedulerKind
from amtuner.realyarn import ClusterSpec, RealRM, apps
from amtuner.realyarn.admission import HOLD_S, SETTLE_S
from amtuner.realyarn.build import Build
from amtuner.realyarn.cluster import leftover_processes
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from tests.e2e.conftest import amtuner
from tests.e2e.test_once import WAITING
from tests.realyarn.conftest import against_sim, metrics, reset, simulation_of, wait_for
from tests.realyarn.test_real_once import DECISION, once_config
from tests.realyarn.test_real_waits import run_default_policy

SPECS = {
    "capacity": ClusterSpec(SchedulerKind.CAPACITY, nodes=3, am_share=0.1),
    "fair": ClusterSpec(SchedulerKind.FAIR, node_vcores=16, am_share=0.5),
}
"""8 GB NodeManagers. Three for the CapacityScheduler: at 0.1 of two the AM limit is 2 GB (1.6
normalised up to the minimum allocation), so the second late AM would wait behind it (a
``queue-am-limit``, which A cures); of three it is 3 GB, room for the filler's AM and both late
ones. Two of 16 vcores for the FairScheduler: full in memory, half its vcores free."""

TASK_MB = 1024
TASK_S = 900.0
"""Longer than any test here: the filler's maps hold the cluster until the test kills them."""
LATE_S = 20.0
"""When the late apps come to the simulated cluster, full by then (the real ones come once the
real cluster is full)."""
LATE = 2
WHERE = {SchedulerKind.CAPACITY: "the cluster", SchedulerKind.FAIR: "root.default"}
"""Where `once` says the apps wait: a CapacityScheduler reports an activated app whose AM has no
container in no queue figure (the global target's alone), a FairScheduler counts it in its
leaf's ``numPendingApps``, under room in ``amMaxResources``."""


@pytest.fixture(scope="module")
def full_rm(
    request: pytest.FixtureRequest, realyarn_build: Build, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealRM]:
    """The cluster `SPECS` names; pytest runs a cluster's tests together and stops it before it
    starts the next, so one JVM at a time."""
    kind = request.param
    rm = RealRM(SPECS[kind], tmp_path_factory.mktemp(f"full-{kind}"), realyarn_build).start()
    try:
        yield rm
    finally:
        rm.stop()
        left = leftover_processes(rm.work)
        assert not left, f"processes outlived their cluster: {left}"


EVERY = pytest.mark.parametrize("full_rm", list(SPECS), indirect=True)


def scene(spec: ClusterSpec) -> Workload:
    """One job of alice's whose 1 GB maps, twice as many as the cluster holds, fill it; two apps
    of bob's that hold a 1 GB AM come once it is full."""
    slots = spec.nodes * spec.node_memory_mb // TASK_MB
    fill = JobSpec(
        job_id="fill", submit_s=0.0, queue="root.default", user="alice",
        maps=(TaskGroup("map", 2 * slots, TASK_MB, 1, TASK_S, 0.0, 0.0),),
        am_memory_mb=TASK_MB, am_startup_s=1.0, am_teardown_s=0.0,
    )  # fmt: skip
    late = tuple(
        JobSpec(
            job_id=f"late-{i}", submit_s=LATE_S, queue="root.default", user="bob", maps=(),
            am_memory_mb=TASK_MB, am_startup_s=HOLD_S, am_teardown_s=0.0,
        )
        for i in range(LATE)
    )  # fmt: skip
    return Workload(
        "cluster-full", (fill, *late), nodes=spec.nodes, node_memory_mb=spec.node_memory_mb,
        node_vcores=spec.node_vcores, queues=("root.default",),
    )  # fmt: skip


def fill(rm: RealRM) -> bytes:
    """Stage `scene` on ``rm`` reset: alice's job until its maps fill the cluster, then bob's
    apps, until they have waited `SETTLE_S` with no container; returns the scheduler file."""
    reset(rm)
    data = rm.scheduler_file.read_bytes()
    first, *late = scene(rm.spec).jobs
    total_mb = rm.spec.nodes * rm.spec.node_memory_mb
    with requests.Session() as alice:
        apps.submit(alice, rm.url, apps.real_job(first), str(rm.markers))
    wait_for(lambda: metrics(rm)["allocatedMB"] == total_mb, 60, "the filler to fill the cluster")
    with requests.Session() as bob:
        for job in late:
            holder = apps.RealJob(name=job.job_id, user=job.user, am_memory_mb=job.am_memory_mb)
            apps.submit(bob, rm.url, holder, str(rm.markers))

    def waiting() -> tuple[int, int, int]:
        m = metrics(rm)
        return m["appsRunning"], m["appsPending"], m["allocatedMB"]

    wanted = (1, LATE, total_mb)
    wait_for(lambda: waiting() == wanted, 30, f"{LATE} apps to wait")
    time.sleep(SETTLE_S)
    assert waiting() == wanted, metrics(rm)
    return data


def simulated_starts(rm: RealRM) -> set[str]:
    """The apps of `scene` whose AM the simulator has started once the late ones have waited as
    long as the real ones, under the real RM's scheduler file."""
    sim = simulation_of(rm, scene(rm.spec))
    sim.run_until(LATE_S + SETTLE_S)
    return {v.name for v in sim.app_views() if v.started_s is not None}


@EVERY
def test_once_names_a_full_cluster_and_holds_a(full_rm: RealRM, tmp_path: Path) -> None:
    """Alice's maps hold every MB, bob's two apps wait for an AM container (under the
    CapacityScheduler's 3 GB AM limit both are activated; under the FairScheduler's, 8 GB and 8
    of the 16 free vcores, both may run). `amtuner once`, the default policy, names the wait
    ``cluster-full`` with the cluster-capacity cure and leaves A where it is, writing nothing:
    on the CapacityScheduler the policy holds by itself (tasks hold the cluster: its dead
    band); on the FairScheduler its first look wants the top of A's band, which the guard
    holds (the AM limit at the current A admits both). The simulator, given the file, starts
    alice's AM alone."""
    rm = full_rm
    data = fill(rm)
    assert simulated_starts(rm) == {"fill"}
    config = once_config(tmp_path, rm, controller={"policy": ControllerSettings().policy})
    run = amtuner("once", "--config", str(config))
    assert run.returncode == 0, run.stdout + run.stderr
    where = WHERE[rm.spec.scheduler]
    assert dict(WAITING.findall(run.stdout))["global"] == (
        f"{LATE} cluster-full in {where} (cure: {CLUSTER_CAPACITY})"
    ), run.stdout
    ((target, old, new, rule),) = DECISION.findall(run.stdout)
    assert (target, new, rule) == ("global", old, "hold"), run.stdout
    if rm.spec.scheduler is SchedulerKind.FAIR:
        assert "A cures none of the waits" in run.stdout, run.stdout
    assert rm.scheduler_file.read_bytes() == data
    assert metrics(rm)["appsPending"] == LATE



@EVERY
def test_run_keeps_a_within_a_step_on_a_full_cluster(full_rm: RealRM, tmp_path: Path) -> None:
    """Issue 36's bar on a full cluster: `amtuner run`, the default policy and guard, every 2 s
    for eight cycles while bob's apps wait for room; A, in the metrics and in the file, ends
    within one step of the scheduler's default, where it started (on the FairScheduler the
    guard holds the first look's raise, as in `once`)."""
    rm = full_rm
    fill(rm)
    start = rm.spec.am_share
    assert start is not None
    run = run_default_policy(rm, tmp_path, "cluster-full")
    print(f"{rm.spec.scheduler}: A {start} -> {run.a} (file {run.on_disk})")
    assert run.waiting == LATE, run.log
    assert abs(run.a - start) <= run.step + 1e-9, run.log
    assert abs(run.on_disk - start) <= run.step + 1e-9, run.log
    if rm.spec.scheduler is SchedulerKind.FAIR:
        assert "A cures none of the waits" in run.log, run.log


FILL_MAP_S = 15.0
BATCH_LATE_S = 12.0
"""The batch's late jobs come when the filler's first wave of maps holds the cluster (placed by
about 10 s after its submission, the first of them ending at about 17 s)."""


def batch(spec: ClusterSpec) -> Workload:
    """`scene` run to its end: the filler's maps of `FILL_MAP_S`, two waves of them, and bob's
    two jobs, each of two 5 s maps, at `BATCH_LATE_S`."""
    fill, *late = scene(spec).jobs
    (maps,) = fill.maps
    fill = dataclasses.replace(
        fill, maps=(dataclasses.replace(maps, duration_s=FILL_MAP_S),), am_teardown_s=1.0
    )
    late = [
        dataclasses.replace(
            job, submit_s=BATCH_LATE_S, am_startup_s=1.0, am_teardown_s=1.0,
            maps=(TaskGroup("map", 2, TASK_MB, 1, 5.0, 0.0, 0.0),),
        )
        for job in late
    ]  # fmt: skip
    return dataclasses.replace(scene(spec), jobs=(fill, *late))


@EVERY
def test_a_full_cluster_runs_a_batch_on_the_real_rm_as_in_the_simulator(full_rm: RealRM) -> None:
    """`batch` on a warm cluster at the scheduler's default A, each job submitted at its time
    (the late ones find every MB held), and through the simulator: AMs at once exact (the
    late AMs start while the filler's last maps run: three), makespans within 10 %. The
    CapacityScheduler gives what frees to the filler's second wave first (FIFO within the
    leaf), the FairScheduler to bob's AMs (furthest below their fair share)."""
    rm = full_rm
    reset(rm)
    total_mb = rm.spec.nodes * rm.spec.node_memory_mb
    a = rm.spec.am_share
    assert a is not None

    def full() -> None:
        assert metrics(rm)["allocatedMB"] == total_mb, "not full when the late jobs came"

    _, sim = against_sim(rm, batch(rm.spec), a, "cluster-full", before_late=full)
    assert sim.ams_at_once == 1 + LATE, sim
