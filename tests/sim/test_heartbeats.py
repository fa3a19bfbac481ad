"""Containers handed out per node heartbeat, as Hadoop 3.x's schedulers do (``--heartbeats
hadoop3``); ``none`` keeps placing every container the instant it fits."""

from __future__ import annotations

import dataclasses

import pytest

from amtuner.model import SchedulerKind
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.spec import (
    HADOOP_3,
    HADOOP_3_SYNC,
    IMMEDIATE,
    Heartbeats,
    JobSpec,
    TaskGroup,
    Workload,
)


def workload(jobs: int, maps: int, nodes: int = 2) -> Workload:
    """``jobs`` jobs of ``maps`` 1 GB maps of 30 s at t = 0 on 8 GB / 8-vcore nodes."""
    specs = tuple(
        JobSpec(
            job_id=f"j{i}", submit_s=0.0, queue="root.default",
            maps=(TaskGroup("map", maps, 1024, 1, 30.0, 0.1, 1.0),),
            am_memory_mb=1024, am_startup_s=2.0,
        )
        for i in range(jobs)
    )
    return Workload("t", specs, nodes=nodes, queues=("root.default",))


def containers_at(
    kind: SchedulerKind, wl: Workload, heartbeats: Heartbeats, times: list[float]
) -> list[int]:
    sim = build_simulation(
        kind, wl, default_scheduler_config(kind, wl.queues, 1.0), heartbeats=heartbeats
    )
    seen = []
    for t in times:
        sim.run_until(t)
        seen.append(sim.view().containers_allocated)
    return seen


def test_the_fair_scheduler_assigns_one_container_per_node_heartbeat() -> None:
    """FairScheduler.attemptScheduling with ``assignmultiple`` false (the default, 2.x-3.5):
    one container per node update. Two nodes: two AMs a second, whatever room there is."""
    wl = workload(jobs=6, maps=0)
    assert containers_at(SchedulerKind.FAIR, wl, HADOOP_3, [0.5, 1.5, 2.5]) == [2, 4, 6]
    assert containers_at(SchedulerKind.FAIR, wl, IMMEDIATE, [0.5]) == [6]


def test_the_capacity_scheduler_assigns_one_off_switch_container_per_node_heartbeat() -> None:
    """CapacityScheduler scheduling on node heartbeats (``schedule-asynchronously.enable``
    false) stops a node's heartbeat after ``per-node-heartbeat.maximum-offswitch-assignments``
    (1) off-switch containers: AMs ask for any host, so two nodes admit two AMs a second;
    MapReduce maps ask for their split's hosts and are placed several in one heartbeat
    (``maximum-container-assignments`` 100)."""
    no_hear = dataclasses.replace(HADOOP_3_SYNC, am_s=0.0)
    wl = workload(jobs=1, maps=10)
    # The AM at t = 0; its maps asked at t = 2 are all placed on the t = 2 heartbeat.
    assert containers_at(SchedulerKind.CAPACITY, wl, no_hear, [1.0, 2.5]) == [1, 11]
    any_host = dataclasses.replace(no_hear, maps_off_switch=True)
    assert containers_at(SchedulerKind.CAPACITY, wl, any_host, [2.5, 3.5]) == [3, 5]
    ams = workload(jobs=6, maps=0)
    assert containers_at(SchedulerKind.CAPACITY, ams, HADOOP_3_SYNC, [0.5, 1.5]) == [2, 4]


def test_a_capacity_scheduler_of_hadoop_3_5_schedules_asynchronously() -> None:
    """Hadoop 3.5.0's CapacityScheduler schedules asynchronously by default
    (``CapacitySchedulerConfiguration.DEFAULT_SCHEDULE_ASYNCHRONOUSLY_ENABLE`` true, a pass
    every ``scheduling-interval-ms`` 5 over every node; its RM logs
    ``asynchronousScheduling=true, asyncScheduleInterval=5 ms``): six AMs on two nodes are
    placed within milliseconds, not two per node heartbeat; maps asking for any host too."""
    ams = workload(jobs=6, maps=0)
    assert containers_at(SchedulerKind.CAPACITY, ams, HADOOP_3, [0.1]) == [6]
    any_host = dataclasses.replace(HADOOP_3, maps_off_switch=True)
    assert containers_at(SchedulerKind.CAPACITY, workload(1, 10), any_host, [3.1]) == [11]


def test_an_am_asks_for_its_maps_with_its_next_heartbeat() -> None:
    """``AMRMClient.addContainerRequest`` only queues an ask: it reaches the RM with the next
    ``allocate``, the AM's heartbeat (1 s). An AM ready at t = 2 (its start-up) has its maps
    placed after t = 2 and no later than t = 3, on a scheduler that places them at once."""
    wl = workload(jobs=1, maps=10)
    for seed in range(5):
        sim = build_simulation(
            SchedulerKind.CAPACITY, wl, default_scheduler_config("capacity", wl.queues, 1.0),
            heartbeats=HADOOP_3, seed=seed,
        )  # fmt: skip
        sim.run_until(2.0)
        assert sim.view().containers_allocated == 1
        sim.run_until(3.01)
        assert sim.view().containers_allocated == 11


def released_at(heartbeats: Heartbeats, step: float = 0.01) -> tuple[float, float | None]:
    """One job of one 30 s map on a CapacityScheduler: when its map's container went back to
    the RM, and when the job finished."""
    job = JobSpec(
        job_id="j", submit_s=0.0, queue="root.default",
        maps=(TaskGroup("map", 1, 1024, 1, 30.0, 0.0, 0.0),), am_memory_mb=1024,
        am_startup_s=2.0, am_teardown_s=5.0,
    )  # fmt: skip
    wl = Workload("t", (job,), nodes=1)
    sim = build_simulation(
        SchedulerKind.CAPACITY, wl, default_scheduler_config("capacity", wl.queues, 1.0),
        heartbeats=heartbeats,
    )  # fmt: skip
    t, was = 0.0, 0
    while t < 60.0:
        t = round(t + step, 2)
        sim.run_until(t)
        now = sim.view().containers_allocated
        if was == 2 and now == 1:
            sim.run()
            return t, sim.apps[0].finished_s
        was = now
    raise AssertionError("the map's container never went back")


def test_an_ended_tasks_container_goes_back_with_the_ams_next_heartbeat() -> None:
    """The AM hears of a task's end on a heartbeat and queues its release
    (``AMRMClient.releaseAssignedContainer``), which the RM gets with the next ``allocate``: the
    container is held one AM heartbeat longer than when the AM heard, with the same draws."""
    heard, _ = released_at(dataclasses.replace(HADOOP_3, next_beat=False))
    sent, _ = released_at(HADOOP_3)
    assert sent - heard == pytest.approx(HADOOP_3.am_s, abs=0.011)


def test_an_am_containers_exit_reaches_the_rm_on_its_nodes_next_heartbeat() -> None:
    """After its teardown the AM container exits; the RM learns it from the node's next
    heartbeat (``NodeStatusUpdater``) and only then finishes the app (``RMAppAttemptImpl``:
    FINISHING to FINISHED on CONTAINER_FINISHED, Hadoop 3.5.0): up to one node heartbeat
    later than at the end of the teardown."""
    _, at_teardown = released_at(dataclasses.replace(HADOOP_3, am_exit_on_node_beat=False))
    _, on_beat = released_at(HADOOP_3)
    assert at_teardown is not None and on_beat is not None
    assert 0.0 < on_beat - at_teardown < HADOOP_3.node_s


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_with_heartbeats_a_seed_still_gives_one_result(kind: SchedulerKind) -> None:
    """AM heartbeat delays are drawn from the run's seeded stream: equal seeds, equal runs."""
    wl = workload(jobs=8, maps=6)
    config = default_scheduler_config(kind, wl.queues, 0.5)
    runs = [build_simulation(kind, wl, config, heartbeats=HADOOP_3).run() for _ in range(2)]
    assert runs[0].finished and runs[0].jobs_completed == 8
    assert runs[0].makespan_s == runs[1].makespan_s and runs[0].mean_jct_s == runs[1].mean_jct_s


def test_an_am_heartbeats_at_a_fixed_rate_at_its_own_phase() -> None:
    """MapReduce's AM heartbeats from one thread that sleeps the interval between calls
    (``RMCommunicator``; ``AMRMClientAsync`` likewise), so its heartbeats keep one phase: what an
    ask brings comes back a whole interval after it on an RM that places at once (Hadoop 3.5.0's
    asynchronous CapacityScheduler: containers ALLOCATED 5 ms after the ask were ACQUIRED 1.0 s
    later). A delay drawn afresh for each event would average half an interval."""
    wl = workload(jobs=3, maps=4)
    sim = build_simulation(
        SchedulerKind.CAPACITY, wl, default_scheduler_config("capacity", wl.queues, 1.0),
        heartbeats=HADOOP_3,
    )  # fmt: skip
    assert sim.run().finished
    phases = set()
    for app in sim.apps:
        on_beat = (app.maps_asked_s - app.beat_phase) % HADOOP_3.am_s
        assert min(on_beat, HADOOP_3.am_s - on_beat) == pytest.approx(0.0, abs=1e-6)
        phases.add(round(app.beat_phase % HADOOP_3.am_s, 6))
    assert len(phases) == 3, "each AM heartbeats at its own phase"
    app, runtime = sim.apps[0], sim.runtime
    for since_beat, wait in ((0.0, 1.0), (0.25, 0.75), (0.999, 0.001)):
        sim.engine.now = app.beat_phase + 7.0 + since_beat
        assert runtime.to_beat(app) == pytest.approx(wait, abs=1e-9)
