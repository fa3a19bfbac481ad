"""A FairScheduler reserves a node for an AM that fits nowhere (the default; ``--heartbeats
hadoop3-no-reserve`` turns it off), as Hadoop 2.8+ and 3.x do: ``FSAppAttempt.assignContainer``
reserves when the request is at least twice the increment allocation and the app is starved, up
to ``reservable-nodes`` of the cluster per app; ``assignReservedContainer`` keeps the node for it.
`tests/realyarn/test_real_reservation.py` runs the same load on Hadoop's own RM."""

from __future__ import annotations

import pytest

from amtuner.model import SchedulerKind
from amtuner.sim.app import App
from amtuner.sim.cluster import Cluster
from amtuner.sim.engine import Engine
from amtuner.sim.fsreserve import Reservations
from amtuner.sim.rmapi.rest import cluster_metrics, scheduler_info
from amtuner.sim.sched_config import with_global_am_share
from amtuner.sim.simulation import Simulation, build_simulation, default_scheduler_config
from amtuner.sim.spec import (
    HADOOP_3,
    HADOOP_3_NO_RESERVE,
    Heartbeats,
    JobSpec,
    TaskGroup,
    Workload,
)

FAIR = SchedulerKind.FAIR
LATE_S = 12.0


def full_then_late(late_am_mb: int = 3072, nodes: int = 2) -> Workload:
    """Nodes of 8 GB (32 vcores: the AM limit's vcore side, A x the free vcores, never binds)
    filled by a job of a 1 GB AM and 1 GB maps of 10 s, three waves of them; a job whose AM
    is ``late_am_mb`` arrives at LATE_S, when they are full. Maps placed a second apart end
    about a second apart, so a node frees 1 GB at a time."""
    big = JobSpec(
        job_id="big", submit_s=0.0, queue="root.default", am_memory_mb=1024, am_startup_s=1.0,
        maps=(TaskGroup("map", 24 * nodes - 3, 1024, 1, 10.0, 0.1, 1.0),),
    )  # fmt: skip
    late = JobSpec(
        job_id="late", submit_s=LATE_S, queue="root.default", am_memory_mb=late_am_mb,
        am_startup_s=1.0, maps=(TaskGroup("map", 1, 1024, 1, 5.0, 0.1, 1.0),),
    )  # fmt: skip
    return Workload("t", (big, late), nodes=nodes, node_vcores=32, queues=("root.default",))


def simulate(wl: Workload, heartbeats: Heartbeats = HADOOP_3) -> Simulation:
    config = default_scheduler_config(FAIR, wl.queues, 1.0)
    return build_simulation(FAIR, wl, config, heartbeats=heartbeats)


def late_start(heartbeats: Heartbeats = HADOOP_3, late_am_mb: int = 3072) -> float:
    """When the late job's AM container was allocated, in seconds after the first job."""
    sim = simulate(full_then_late(late_am_mb), heartbeats)
    sim.run(3600)
    late = next(a for a in sim.runtime.apps if a.spec.job_id == "late")
    assert late.started_s is not None
    return late.started_s


def test_a_reserved_node_keeps_what_its_tasks_free_for_the_am() -> None:
    """Without a reservation each freed 1 GB goes to the next map, and the late AM waits for
    the big job's last wave to be placed; with one, the node it holds gathers its AM's 3 GB as
    the first wave ends."""
    assert late_start(HADOOP_3) < LATE_S + 8
    assert late_start(HADOOP_3_NO_RESERVE) > LATE_S + 20


def test_the_rm_reports_what_is_reserved() -> None:
    """``reservedMB`` and ``containersReserved`` (ClusterMetricsInfo) while a node is held: one
    node, ``reservable-nodes`` 0.05 of two rounded up; the app's queue and its parents report
    it as ``reservedResources`` and ``reservedContainers`` (a Hadoop 3.5.0 RM's answer:
    2048 MB, 1 vcore, 1 container on root and root.default for one reserved AM)."""
    sim = simulate(full_then_late())
    sim.run_until(LATE_S + 1.5)
    view = sim.view()
    metrics = cluster_metrics(view)["clusterMetrics"]
    assert (metrics["reservedMB"], metrics["reservedVirtualCores"]) == (3072, 1)
    assert metrics["containersReserved"] == 1
    assert metrics["availableMB"] == 0  # a FairScheduler does not take reserved from available
    root = scheduler_info(view)["scheduler"]["schedulerInfo"]["rootQueue"]
    (leaf,) = root["childQueues"]["queue"]
    for q in (root, leaf):
        assert q["reservedResources"] == {"memory": 3072, "vCores": 1}
        assert q["reservedContainers"] == 1


def test_an_am_below_the_threshold_does_not_reserve() -> None:
    """Twice the 1024 MB increment: a 1 GB AM never reserves, and starts as without."""
    assert late_start(HADOOP_3, 1024) == late_start(HADOOP_3_NO_RESERVE, 1024)
    sim = simulate(full_then_late(1024))
    sim.run_until(LATE_S + 1.5)
    assert sim.view().containers_reserved == 0


def test_a_reservation_the_am_limit_no_longer_admits_is_released() -> None:
    """``isValidReservation``: the AM limit is checked again at the node's heartbeat; lowered
    below what runs, it releases the node, and the maps take what it frees."""
    sim = simulate(full_then_late())
    sim.run_until(LATE_S + 1.5)
    assert sim.view().containers_reserved == 1
    sim.reload_scheduler_config(with_global_am_share(FAIR, sim.scheduler_config(), 0.1))
    sim.run_until(LATE_S + 2.5)
    assert sim.view().containers_reserved == 0
    sim.run_until(LATE_S + 8)
    late = next(a for a in sim.runtime.apps if a.spec.job_id == "late")
    assert late.started_s is None
    assert sim.view().allocated.memory_mb >= 16384 - 2048  # the freed room went to maps


@pytest.mark.parametrize(("nodes", "per_app"), [(1, 1), (4, 1), (20, 1), (21, 2), (100, 5)])
def test_an_app_reserves_at_most_a_twentieth_of_the_nodes(nodes: int, per_app: int) -> None:
    """``reservable-nodes`` 0.05 of the cluster, rounded up, for an off-switch request."""
    cluster = Cluster(Engine(), nodes=nodes, memory_mb=8192, vcores=8, disk_mbps=100.0)
    reservations = Reservations(cluster)
    app = App(0, "app_0", full_then_late().jobs[1], 1024)
    for _ in range(per_app):
        assert reservations.may_reserve(app) and reservations.reserve(app)
    assert not reservations.may_reserve(app)
    assert len(reservations.nodes) == per_app == app.reserved
    reservations.release(reservations.nodes[0])
    assert reservations.may_reserve(app) and app.reserved == per_app - 1
