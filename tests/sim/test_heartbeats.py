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


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_with_heartbeats_a_seed_still_gives_one_result(kind: SchedulerKind) -> None:
    """AM heartbeat delays are drawn from the run's seeded stream: equal seeds, equal runs."""
    wl = workload(jobs=8, maps=6)
    config = default_scheduler_config(kind, wl.queues, 0.5)
    runs = [build_simulation(kind, wl, config, heartbeats=HADOOP_3).run() for _ in range(2)]
    assert runs[0].finished and runs[0].jobs_completed == 8
    assert runs[0].makespan_s == runs[1].makespan_s and runs[0].mean_jct_s == runs[1].mean_jct_s
