"""MapReduce's reduce scheduling, each case as Hadoop 3.x's RMContainerAllocator decides it
(``scheduleReduces``, ``preemptReducesIfNeeded``), and the job model that runs it."""

from __future__ import annotations

import dataclasses

import pytest

from amtuner.sim.mrallocator import (
    UNCONDITIONAL_PREEMPT_S,
    Move,
    Tasks,
    containers,
    containers_ceil,
    heartbeat,
)
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.spec import HADOOP_3, HADOOP_3_MR, JobSpec, TaskGroup, Workload
from amtuner.sim.workload import load_workload

GB = (1024, 1)


def beat(tasks: Tasks, headroom: tuple[int, int], *, started: bool = True, waited: float = 0.0):
    return heartbeat(
        tasks,
        started=started,
        slowstart=0.05,
        headroom=headroom,
        map_ask=GB,
        reduce_ask=GB,
        vcores_count=False,
        maps_waited_s=waited,
    )


def test_resource_arithmetic_truncates_as_java_does() -> None:
    assert containers((-1500, 0), GB, False) == -1  # (int) (-1500L / 1024L)
    assert containers((3000, 1), GB, True) == 1  # vcores bind when they count
    assert containers((3000, 1), (0, 0), False) == 2**31 - 1  # nothing asked: no bound
    assert containers_ceil((2048, 3), GB, True) == 3
    assert containers_ceil((2048, 3), GB, False) == 2


def test_no_reduce_is_asked_before_slow_start() -> None:
    """``ceil(0.05 x 40)`` = 2 maps must be done first."""
    waiting = Tasks(40, 1, 30, 9, 4, 0, 0)
    assert beat(waiting, (8192, 8), started=False) == Move(0, 0, False)
    assert beat(waiting._replace(completed_maps=2), (8192, 8), started=False).started


def test_every_reduce_is_asked_once_every_map_is_placed() -> None:
    assert beat(Tasks(40, 10, 0, 30, 4, 0, 0), (0, 0)) == Move(4)


def test_reduces_ramp_up_with_the_fraction_of_maps_done() -> None:
    """Limit 10 GB (2 GB headroom + 8 maps held); 10 % of maps done: 1 GB for reduces. The
    maps' share (9 GB) holds fewer than their 40 asked or held, so nothing more goes to
    reduces."""
    assert beat(Tasks(40, 4, 28, 8, 4, 0, 0), (2048, 2)) == Move(1)
    # with the same limit and half the maps done the share is capped at rampup.limit 0.5
    assert beat(Tasks(40, 20, 12, 8, 4, 0, 0), (2048, 2)) == Move(4)


def test_the_fraction_of_maps_done_is_a_java_float() -> None:
    """70 of 400 maps done is 0.175 as a double but 0.17499999701976776 as the float
    ``scheduleReduces`` computes: 80 vcores' reduce share is 13.9999998, 13 whole vcores, where
    a double gives 14. Found by the check against Hadoop's own code
    (tests/realyarn/test_real_mrallocator.py)."""
    tasks = Tasks(400, 70, 330, 0, 20, 0, 0)
    move = heartbeat(
        tasks, started=True, slowstart=0.05, headroom=(1_000_000, 80), map_ask=GB,
        reduce_ask=GB, vcores_count=True, maps_waited_s=0.0,
    )  # fmt: skip
    assert move == Move(13)


def test_what_maps_leave_unused_goes_to_reduces() -> None:
    """Limit 9 GB, 10 % done: 921 MB for reduces, and of the maps' 8295 MB only 2 GB is
    wanted (2 maps left to place or run): 7168 MB, 7 reduces."""
    assert beat(Tasks(20, 2, 1, 1, 8, 0, 0), (8192, 8)) == Move(7)


def test_reduces_ramp_down_when_the_limit_shrinks() -> None:
    """Limit 4 GB (headroom 0, 4 maps running), 10 % done: 409 MB for reduces against 3 GB
    asked, -2.6 reduces, truncated to 2 withdrawn."""
    assert beat(Tasks(40, 4, 32, 4, 1, 3, 0), (0, 0)) == Move(-2)


def test_reduces_are_preempted_when_maps_starve() -> None:
    """No map running, maps waiting, no headroom for one: every reduce ask withdrawn and
    held reduces killed, max(one map's worth, 0.5 x limit) of them, no more than the maps
    waiting need."""
    starving = Tasks(20, 10, 10, 0, 0, 2, 6)
    assert beat(starving, (0, 0)) == Move(-2, 3)  # 0.5 x (6 GB held) = 3
    assert beat(starving._replace(scheduled_maps=1), (0, 0)) == Move(-2, 1)
    # one map running, or room for one map beside the reduce asks: no preemption
    assert beat(starving._replace(assigned_maps=1), (0, 0)).preempt == 0
    assert beat(starving, (3072, 3)).preempt == 0


def test_maps_waiting_too_long_preempt_whatever_the_headroom() -> None:
    starving = Tasks(20, 10, 10, 0, 0, 0, 6)
    assert beat(starving, (8192, 8), waited=UNCONDITIONAL_PREEMPT_S).preempt == 0
    # 0.5 x (8 GB headroom + 6 GB held) = 7 reduces' worth, of the 6 held
    assert beat(starving, (8192, 8), waited=UNCONDITIONAL_PREEMPT_S + 1).preempt == 6


def _one_job(maps: int) -> Workload:
    job = JobSpec(
        job_id="j",
        submit_s=0.0,
        queue="root.default",
        maps=(TaskGroup("map", maps, 1024, 1, 20.0, 0.5, 5.0),),
        reduces=(TaskGroup("reduce", 1, 1024, 1, 10.0, 0.5, 5.0),),
    )
    return Workload("one", (job,), nodes=1)


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_a_reduce_goes_ahead_of_waiting_maps_once_it_is_asked(kind: str) -> None:
    """One 8 GB node, an AM and 30 maps: once maps are done the reduce (priority 10) takes
    the next container before the maps still waiting (priority 20). The bench real AM host
    asks for it only when every map is placed."""
    wl = _one_job(30)
    config = default_scheduler_config(kind, wl.queues, 1.0)
    for ramp in (True, False):
        sim = build_simulation(
            kind, wl, config, heartbeats=dataclasses.replace(HADOOP_3, reduce_ramp=ramp)
        )
        sim.run_until(60.0)
        app = sim.apps[0]
        assert app.maps_done < app.maps_total
        assert app.reduces_assigned == (1 if ramp else 0), ramp


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_ams_and_held_reduces_never_hold_a_cluster_for_good(kind: str) -> None:
    """Nearly every container to AMs (A 0.9) on 4 nodes: reduces asked early would hold the
    rest while their maps wait, were they not preempted. Every job finishes."""
    wl = load_workload("paper:mixed")
    config = default_scheduler_config(kind, wl.queues, 0.9)
    sim = build_simulation(kind, wl, config, heartbeats=HADOOP_3_MR)
    result = sim.run(20_000)
    assert result.finished and result.jobs_failed == 0
