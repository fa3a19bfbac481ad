"""The adaptive policy: hand-checked cases per behaviour, and properties."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from amtuner.config import ControllerSettings
from amtuner.controller import adaptive, get_policy
from amtuner.controller.adaptive import Case
from amtuner.controller.adaptive.figures import figures
from amtuner.controller.adaptive.rules import period
from amtuner.model import (
    GLOBAL_TARGET,
    ControllerState,
    Decision,
    Direction,
    Observation,
    QueueStats,
    Rule,
    SchedulerKind,
    Wait,
    WaitCause,
)
from amtuner.sim import capacity, fairshare

SETTINGS = ControllerSettings(policy="adaptive")  # T2 0.5, step 0.05, A in [0.05, 0.95]
TOTAL = 100_000
"""M_total in MB; unit_mb 1024, so the paper's estimate of one AM is 2048 MB."""


def obs(
    p: int,
    r: int,
    used: int,
    am: int | None,
    *,
    total: int = TOTAL,
    vcores: tuple[int, int] = (0, 0),
    queues: tuple[QueueStats, ...] = (),
) -> Observation:
    return Observation(
        time=0.0,
        scheduler=SchedulerKind.CAPACITY,
        pending_apps=p,
        running_apps=r,
        memory_used_mb=used,
        memory_total_mb=total,
        vcores_used=vcores[0],
        vcores_total=vcores[1],
        am_memory_used_mb=am,
        queues=queues,
    )


def seen(a: float, p: int = 10, **kw: object) -> ControllerState:
    """A state that has seen one period before (no first-period burst)."""
    return ControllerState(a=a, prev_pending=p, prev_running=10, **kw)  # type: ignore[arg-type]


def decide(o: Observation, s: ControllerState, target: str = GLOBAL_TARGET):
    return adaptive.decide(o, s, SETTINGS, target)


def test_registered_under_its_name() -> None:
    assert get_policy("adaptive") is adaptive.decide


# --- measured AM use and the fallback ---------------------------------------------------------


def test_measured_am_use_decides_and_the_estimate_is_only_a_fallback() -> None:
    # Full (used 0.97), 10 running apps, A 0.6. The RM says AMs hold 80 000 MB = 0.80: more
    # than one AM (0.08) over A, so lowering A again cannot act before jobs finish: hold.
    d, _ = decide(obs(5, 10, 97_000, 80_000), seen(0.6, p=5))
    assert (d.rule, d.new_a) == (Rule.HOLD, 0.6)
    assert "AM 0.80" in d.reason and d.case == Case.AMS_OVER_A
    assert "estimated" not in d.reason
    # Without the RM's figure the paper's estimate is 10 x 2048 = 20 480 MB = 0.2048: with A
    # filled (0.6 - 0.0205 of slack = 0.5795) tasks would hold 0.97 - 0.5795 = 0.39 < 0.45.
    # Lower towards used - T2 = 0.47, where tasks keep T2, in whole AMs: 0.47 / 0.02048 = 22.95,
    # so 23 AMs, 0.47104 less half a MB, rounded down to 4 decimals (the CapacityScheduler
    # rounds its limit up to the minimum allocation). Less than the bisection's
    # (0.6 - 0.05) / 2 = 0.275.
    d, s = decide(obs(5, 10, 97_000, None), seen(0.6, p=5))
    assert (d.rule, d.new_a) == (Rule.OVER_ALLOCATION_3, 0.471)
    assert d.reason.startswith("AM use estimated as R x unit x 2; ")
    assert s.a == 0.471 and s.prev_pending == 5 and s.prev_running == 10


def test_over_allocation_moves_to_where_tasks_keep_t2_and_no_further() -> None:
    # used 1.0, AM 0.5 of 10 apps (0.05 each), A 0.75: filled = max(0.5, 0.70) = 0.70, tasks
    # would hold 0.30 < 0.45. Goal 1.0 - 0.5 = 0.5, 10 AMs, so 0.25 lower (the bisection would
    # allow 0.35); less half a MB, rounded down: 0.4999, whose limit the CapacityScheduler
    # rounds up to 50,176 MB, room for the 10 AMs of 5,000 MB and not an 11th.
    d, s = decide(obs(5, 10, 100_000, 50_000), seen(0.75, p=5))
    assert (d.rule, d.old_a, d.new_a) == (Rule.OVER_ALLOCATION_3, 0.75, 0.4999)
    assert "tasks would hold 0.30 < T2 0.5 - step" in d.reason
    # AM 0.56 (0.056 each), A 0.53: tasks hold 0.44 < 0.45. The goal 0.5 is 8.93 AMs: 9 of
    # them, 0.504 less half a MB, 0.0261 away: the move is that, not a whole step.
    d, _ = decide(obs(5, 10, 100_000, 56_000), seen(0.53, p=5))
    assert (d.rule, d.new_a) == (Rule.OVER_ALLOCATION_3, 0.5039)
    # At the goal (7 AMs of 0.07: 0.49) with AM use (0.56) still over it: lowering more would
    # act only as jobs finish.
    d, _ = decide(obs(5, 8, 100_000, 56_000), replace(s, a=0.49))
    assert (d.rule, d.new_a) == (Rule.HOLD, 0.49)
    assert d.case == Case.AT_GOAL


def test_short_jobs_on_the_capacity_scheduler_lower_one_am_at_a_time() -> None:
    # 6 of the 10 apps running last period finished (P 10 + R 10 -> P 5 + R 9): short jobs,
    # whose AM memory comes back by itself. Lower by one AM (0.05), not to the goal 0.5.
    o = obs(5, 9, 100_000, 45_000)
    d, _ = decide(o, seen(0.75, p=10))
    assert (d.rule, d.new_a) == (Rule.OVER_ALLOCATION_3, 0.7)
    assert d.case == Case.OVER_ALLOCATED and "6 of 10 apps finished" in d.reason


def test_short_jobs_on_the_fair_scheduler_hold_and_long_ones_go_to_the_goal() -> None:
    # The same full cluster on the FairScheduler: short jobs get their task from the next freed
    # container and leave, so A holds; with only 1 of 10 finished (P 5 + R 10 -> P 5 + R 9)
    # the jobs are long and an AM too many slows all of them: to the goal 1.0 - 0.5.
    o = replace(obs(5, 9, 100_000, 45_000), scheduler=SchedulerKind.FAIR)
    d, s = decide(o, seen(0.75, p=10))
    assert (d.rule, d.new_a) == (Rule.HOLD, 0.75)
    assert d.case == Case.SHORT_FULL and "6 of 10 apps finished" in d.reason
    assert adaptive.Memory.of(s.extra).short
    d, s = decide(o, seen(0.75, p=5))
    assert (d.rule, d.new_a) == (Rule.OVER_ALLOCATION_3, 0.5)
    assert not adaptive.Memory.of(s.extra).short


def test_new_jobs_arriving_into_short_jobs_send_a_fair_scheduler_to_one_minus_t2() -> None:
    # P 10 -> 20 with R 10 -> 10: arrivals hide how many finished (the net change shows none),
    # but last period's jobs were short. Used 0.90 is no reason to move by itself (dead band);
    # the newcomers' size is unknown and each freed AM place would admit one: A goes to where
    # tasks keep T2 once long jobs fill the cluster, 1 - 0.5.
    o = replace(obs(20, 10, 90_000, 60_000), scheduler=SchedulerKind.FAIR)
    d, s = decide(o, seen(0.8, p=10, extra=adaptive.Memory(short=True).extra()))
    assert (d.rule, d.new_a) == (Rule.OVER_ALLOCATION_3, 0.5)
    assert d.case == Case.NEWCOMERS
    assert adaptive.Memory.of(s.extra).short  # carried over the arrivals
    # Long jobs before the arrivals, or the CapacityScheduler (FIFO: a newcomer too many waits
    # without slowing the jobs ahead): the dead band holds.
    d, _ = decide(o, seen(0.8, p=10))
    assert (d.rule, d.new_a) == (Rule.HOLD, 0.8)
    capacity = replace(o, scheduler=SchedulerKind.CAPACITY)
    d, _ = decide(capacity, seen(0.8, p=10, extra=adaptive.Memory(short=True).extra()))
    assert (d.rule, d.new_a) == (Rule.HOLD, 0.8)
    # Already at or below 1 - T2: nothing to do.
    d, _ = decide(o, seen(0.4, p=10, extra=adaptive.Memory(short=True).extra()))
    assert d.new_a == 0.4


def test_a_trickle_into_short_jobs_on_a_half_busy_cluster_keeps_its_room() -> None:
    # A stream of short jobs: one arrives (P 0 -> 1) with the cluster 0.59 used. The room is
    # real; the old goal used - T2 = 0.09 cut A below the AMs already running and let the
    # backlog grow to 60 while the cluster idled. At A 0.5 = 1 - T2 there is nothing to lower.
    o = replace(obs(1, 8, 59_000, 50_000), scheduler=SchedulerKind.FAIR)
    d, _ = decide(o, seen(0.5, p=0, extra=adaptive.Memory(short=True).extra()))
    assert d.rule is not Rule.OVER_ALLOCATION_3 and d.new_a >= 0.5


def held_by_large_jobs(kind: SchedulerKind, pending: int = 30) -> Observation:
    """A SWIM-day moment on 25 nodes: two large jobs hold 196 of 200 vcores and nearly all
    memory, two AMs between them, while 30 apps wait; the leaf's fair share has no vcores (the
    default fair policy), so the AM limit counts vcores against the 4 free."""
    leaf = QueueStats(
        name="root.default", pending_apps=pending, running_apps=2, memory_used_mb=99_000,
        vcores_used=196, am_memory_used_mb=4096, am_vcores_used=2, memory_share_mb=TOTAL,
        vcores_share=0, containers=196,
    )  # fmt: skip
    o = obs(pending, 2, 99_000, 4096, vcores=(196, 200), queues=(leaf,))
    return replace(o, scheduler=kind, containers=196)


def test_a_fair_scheduler_held_by_a_few_large_jobs_raises_a_so_the_waiting_jobs_start() -> None:
    # Tasks hold 0.95, AMs 0.04: tasks keep T2 even with A filled, which used to hold A at 0.5
    # while the limit (A x 4 free vcores = 2) admitted no third AM for hours.
    d, _ = decide(held_by_large_jobs(SchedulerKind.FAIR), seen(0.5, p=30))
    assert d.case == Case.LARGE_JOBS_HOLD and d.rule is Rule.UNDER_ALLOCATION
    assert d.new_a > 0.5 and "held by a few large jobs" in d.reason
    # The CapacityScheduler serves the queue in order: an admitted job waits behind the large
    # ones while its AM holds memory, so A goes down (here by one AM: the state says 8 of 10
    # apps finished last period) towards where tasks keep an aim that grows with the jobs' work
    # per AM (tasks 0.95 per AM 0.041, over the paper's 3: 7.7x), not up.
    d, _ = decide(held_by_large_jobs(SchedulerKind.CAPACITY), seen(0.5, p=30))
    assert (d.case, d.rule) == (Case.OVER_ALLOCATED, Rule.OVER_ALLOCATION_3)
    assert d.new_a < 0.5 and "jobs 7.7x the paper's work per AM" in d.reason


def four_nodes(
    ams: int,
    tasks: int,
    p: int = 10,
    *,
    asked_mb: int = 0,
    node_vcores: int = 8,
    kind: SchedulerKind = SchedulerKind.FAIR,
) -> Observation:
    """4 nodes of 8 GB: ``ams`` AMs of 2 GB and one vcore and ``tasks`` tasks of 1 GB and one
    run while ``p`` apps wait, and the running apps' tasks ask for ``asked_mb`` more; the leaf's
    fair share has no vcores (the default fair policy)."""
    mem, vc = ams * 2048 + tasks * 1024, ams + tasks
    leaf = QueueStats(
        name="root.default", pending_apps=p, running_apps=ams, memory_used_mb=mem,
        vcores_used=vc, am_memory_used_mb=ams * 2048, am_vcores_used=ams,
        memory_share_mb=32_768, vcores_share=0, containers=ams + tasks,
    )  # fmt: skip
    o = obs(p, ams, mem, ams * 2048, total=32_768, vcores=(vc, 4 * node_vcores), queues=(leaf,))
    return replace(o, scheduler=kind, containers=ams + tasks, memory_pending_mb=p * 2048 + asked_mb)


def small_batch(kind: SchedulerKind, p: int = 111, asked_mb: int = 2048) -> Observation:
    """15 s into 120 one-map jobs on 4 nodes: nine AMs and six maps run, two more maps are
    asked for, the rest of the batch waits."""
    return four_nodes(9, 6, p, asked_mb=asked_mb, kind=kind)


def test_a_batch_of_small_jobs_seen_after_its_burst_fills_a_fair_scheduler_with_their_ams() -> None:
    after_burst = adaptive.Memory(burst=True, last_move=1).extra()
    # Each job holds and asks for less than a task beside its AM; taken as one, an AM and its
    # task are 0.094 of the share: 11 AMs fill it. The memory side admits 11 up to 0.7499, the
    # top of their band, where the vcore side (A x the 17 vcores free) lets the next one start
    # with the least room free.
    d, _ = decide(small_batch(SchedulerKind.FAIR), seen(0.6125, p=120, extra=after_burst))
    assert (d.case, d.rule, d.new_a) == (Case.SMALL_BATCH, Rule.UNDER_ALLOCATION, 0.7499)
    assert "11 AMs and their tasks fill the share" in d.reason
    # No task asked for: a moment between waves says nothing of the jobs' size. Most of the
    # batch running: the reading is not the batch's. Later than the period after the burst, a
    # CapacityScheduler: the other rules decide.
    for o, state in (
        (small_batch(SchedulerKind.FAIR, asked_mb=0), seen(0.6125, p=120, extra=after_burst)),
        (small_batch(SchedulerKind.FAIR, p=8), seen(0.6125, p=120, extra=after_burst)),
        (small_batch(SchedulerKind.FAIR), seen(0.6125, p=111)),
        (small_batch(SchedulerKind.CAPACITY), seen(0.6125, p=120, extra=after_burst)),
    ):
        d, _ = decide(o, state)
        assert d.case != Case.SMALL_BATCH


def test_newcomers_into_short_jobs_do_not_lower_a_held_by_large_jobs_or_that_binds_nobody() -> None:
    short = adaptive.Memory(short=True).extra()
    # Large jobs hold the cluster: the newcomers are what they wait for; A keeps rising.
    d, _ = decide(held_by_large_jobs(SchedulerKind.FAIR), seen(0.8, p=10, extra=short))
    assert d.case == Case.LARGE_JOBS_HOLD and d.new_a > 0.8
    # One arrival on a nearly idle cluster: its AM fits under 1 - T2 too, so lowering would
    # hold nobody back now and leave the next full period to climb back.
    idle = replace(obs(1, 2, 5_000, 4096), scheduler=SchedulerKind.FAIR)
    d, _ = decide(idle, seen(0.9, p=0, extra=short))
    assert d.case != Case.NEWCOMERS and d.new_a == 0.9


def test_short_jobs_on_the_capacity_scheduler_raise_by_the_bisection_step() -> None:
    # AM-heavy room (tasks 0.15 < AM 0.45), and 6 of 10 apps finished last period as in the
    # period before: one-map jobs need an AM each, so the mix is not a tail; raise by half the
    # distance, 0.5 + 0.225.
    short = adaptive.Memory(short=True).extra()
    d, _ = decide(obs(10, 9, 60_000, 45_000), seen(0.5, p=15, extra=short))
    assert (d.rule, d.new_a) == (Rule.UNDER_ALLOCATION, 0.725)
    assert d.case == Case.ROOM_SHORT
    # Short this period only: a batch's wave ending together looks the same once most of its
    # jobs are gone (their tasks with them): one AM more, 0.5 -> 0.55.
    d, _ = decide(obs(10, 9, 60_000, 45_000), seen(0.5, p=15))
    assert (d.new_a, d.case) == (0.55, Case.ROOM_SHORT) and "this period only" in d.reason
    # A batch's wave of similar jobs ending together turns over as fast, but its jobs ran more
    # than a task an AM (tasks 0.35 > AM 0.5 / 2): one AM more, 10 x 0.05 = 0.5 -> 0.55.
    d, _ = decide(obs(10, 10, 85_000, 50_000), seen(0.5, p=16))
    assert (d.rule, d.new_a, d.case) == (Rule.UNDER_ALLOCATION, 0.55, Case.ROOM_SHORT)
    assert "one AM" in d.reason


# --- dead band --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("used", "am", "a", "why"),
    [
        (92_000, 50_000, 0.6, "used between 0.9 and 0.95: dead band"),
        # full; filled = max(0.5, 0.55 - 0.05) = 0.5, tasks would keep 0.5 >= 0.45
        (100_000, 50_000, 0.55, "even with A filled: dead band"),
        # full; filled = max(0.5, 0.60 - 0.05) = 0.55, tasks would keep exactly 0.45
        (100_000, 50_000, 0.60, "even with A filled: dead band"),
    ],
)
def test_dead_band_holds(used: int, am: int, a: float, why: str) -> None:
    d, s = decide(obs(5, 10, used, am), seen(a))
    assert (d.rule, d.new_a, s.a) == (Rule.HOLD, a, a)
    assert why in d.reason


def test_nothing_waiting_holds_whatever_the_figures() -> None:
    for used in (0, 50_000, 100_000):
        d, _ = decide(obs(0, 10, used, 90_000), seen(0.9))
        assert (d.rule, d.new_a) == (Rule.HOLD, 0.9)
        assert d.case == Case.NOTHING_WAITS


@pytest.mark.parametrize(
    ("a", "kind", "new_a"),
    [
        (0.1, SchedulerKind.FAIR, 0.5),
        (0.8, SchedulerKind.FAIR, 0.5),
        (0.8, SchedulerKind.CAPACITY, 0.5),
        # A raise on a CapacityScheduler's first look commits half its AMs: 0.1 admits 4 of
        # the paper's 2048 MB, 0.5 covers 24, 4 + 20 / 2 = 14 are 0.28672 less half a MB,
        # rounded down.
        (0.1, SchedulerKind.CAPACITY, 0.2867),
    ],
)
def test_idle_at_start_up_sets_one_minus_t2(a: float, kind: SchedulerKind, new_a: float) -> None:
    # A daemon starting on an idle cluster has nothing to go on: A is set (not searched) to
    # 1 - T2 = 0.5, from either side, and the search starts afresh at the first burst.
    d, s = decide(replace(obs(0, 0, 0, 0), scheduler=kind), ControllerState(a=a))
    rule = Rule.UNDER_ALLOCATION if a < 0.5 else Rule.OVER_ALLOCATION_3
    assert (d.rule, d.new_a, adaptive.Memory.of(s.extra).last_move) == (rule, new_a, 0.0)
    assert d.case == Case.IDLE_START
    # Idle later on: whatever A was learned is kept for the next burst.
    d, _ = decide(obs(0, 0, 0, 0), seen(a))
    assert (d.rule, d.new_a) == (Rule.HOLD, a)


# --- raising ----------------------------------------------------------------------------------


def test_first_period_is_a_burst_and_raises_by_half_the_distance() -> None:
    # 30 apps submitted; the AMs admitted so far (12 000 MB = 0.12) already fill A 0.1:
    # alpha = 0.95 - 0.1 = 0.85, half is 0.425.
    fair = replace(obs(30, 0, 0, 12_000), scheduler=SchedulerKind.FAIR)
    d, s = decide(fair, ControllerState(a=0.1))
    assert (d.rule, d.new_a) == (Rule.UNDER_ALLOCATION, 0.525)
    assert "first period: widest step" in d.reason
    assert s.n == 1 and adaptive.Memory.of(s.extra).last_move == 1.0
    assert not adaptive.Memory.of(s.extra).held_to


def test_a_burst_into_an_untried_a_probes_half_as_far() -> None:
    # Nothing runs and A 0.5 has room for the next AM: the scheduler has not used A yet.
    # Excess AMs cannot be taken back, so a quarter of the distance: 0.5 + 0.45 / 4.
    fair = replace(obs(30, 0, 0, 0), scheduler=SchedulerKind.FAIR)
    d, s = decide(fair, ControllerState(a=0.5))
    assert (d.rule, d.new_a, s.n) == (Rule.UNDER_ALLOCATION, 0.6125, 2)


def test_a_capacity_schedulers_first_look_commits_half_its_step_until_the_jobs_show() -> None:
    # A 0.1 admits 4 AMs of 2048 MB; the first period's raise to 0.525 covers 25: the first
    # look commits 4 + 21 // 2 = 14 (0.28672 less half a MB, rounded down). It has seen how
    # many apps wait, not how large they are.
    d, s = decide(obs(30, 0, 0, 12_000), ControllerState(a=0.1))
    assert (d.rule, d.case, d.new_a) == (Rule.UNDER_ALLOCATION, Case.ROOM, 0.2867)
    assert "first look: half its AMs" in d.reason
    assert adaptive.Memory.of(s.extra).held_to == 0.525
    # Idle (the batch not here yet): nothing to judge the jobs on, so the rest stays held.
    d, s = decide(obs(0, 0, 0, 0), s)
    assert (d.case, d.new_a, adaptive.Memory.of(s.extra).held_to) == (
        Case.NOTHING_WAITS, 0.2867, 0.525,
    )  # fmt: skip
    # Apps wait and the dead band holds A (used 0.92), the jobs no larger than the paper's
    # (no tasks asked for): the rest of the step is added.
    d, s = decide(obs(10, 14, 92_000, 28_672), s)
    assert (d.rule, d.case, d.new_a) == (Rule.UNDER_ALLOCATION, Case.HELD_BACK, 0.525)
    assert not adaptive.Memory.of(s.extra).held_to
    # Added once: the same period again is the dead band's.
    d, _ = decide(obs(10, 14, 92_000, 28_672), s)
    assert (d.case, d.new_a) == (Case.DEAD_BAND, 0.525)


def test_the_rest_of_the_first_look_is_not_added_when_the_jobs_seen_are_larger() -> None:
    _, s = decide(obs(30, 0, 0, 12_000), ControllerState(a=0.1))
    # Used 0.92 (the dead band), but the 14 running jobs hold 63 GB of tasks and ask for
    # 200 GB more per 28 GB of AMs: far more work per AM than the blind step assumed, so the
    # half stays and the search goes on from it.
    o = replace(obs(10, 14, 92_000, 28_672), containers=75, memory_pending_mb=220_000)
    d, s = decide(o, s)
    assert d.case != Case.HELD_BACK and d.new_a <= 0.2867
    assert not adaptive.Memory.of(s.extra).held_to


def test_the_goal_is_not_held_at_the_ams_that_run_when_they_outnumber_their_tasks() -> None:
    # 4 nodes of 8 GB and 16 vcores, a FairScheduler whose fair share has no vcores: jobs in
    # waves under a floating vcore side keep the goal at the AMs that run, since a wave hands
    # its room back as it ends. 14 AMs of 2 GB and 4 tasks of 1 GB, the cluster full: the
    # AMs hold no task each, no wave is running, and A goes to where tasks keep T2 (8 AMs).
    crowded = four_nodes(14, 4, node_vcores=16)
    f = adaptive.figures.figures(crowded, SETTINGS, GLOBAL_TARGET)
    assert f.in_waves and f.starved
    d, _ = decide(crowded, seen(0.875))
    assert (d.case, d.rule) == (Case.OVER_ALLOCATED, Rule.OVER_ALLOCATION_3)
    assert f.ams_of(d.new_a) == 8
    # 8 AMs and 16 tasks: AMs no more than their tasks, the floor holds.
    waves = four_nodes(8, 16, node_vcores=16)
    assert not adaptive.figures.figures(waves, SETTINGS, GLOBAL_TARGET).starved
    d, _ = decide(waves, seen(0.875))
    assert adaptive.figures.figures(waves, SETTINGS, GLOBAL_TARGET).ams_of(d.new_a) >= 8


def test_room_with_am_heavy_apps_waits_a_period_then_admits_one_more_am() -> None:
    # used 0.6, AM 0.5 (10 apps, 0.05 each), tasks 0.1 < AM: the running apps are in their
    # tail and may free the room themselves. First sight: hold.
    d, s = decide(obs(10, 10, 60_000, 50_000), seen(0.5))
    assert (d.rule, d.new_a, d.case) == (Rule.HOLD, 0.5, Case.ROOM_TAIL_UNCONFIRMED)
    # Still there: one more AM, 11 x 0.05 = 0.55 (the RM rounds its limit up, so exactly that
    # admits the eleventh AM).
    d, _ = decide(obs(10, 10, 60_000, 50_000), s)
    assert (d.rule, d.new_a, d.case) == (Rule.UNDER_ALLOCATION, 0.55, Case.ROOM_TAIL)


def test_a_fair_scheduler_waits_out_the_period_after_a_raise_before_the_next_am() -> None:
    # The tail's room seen twice, but the last period raised A (AM use has grown since, 0.45 ->
    # 0.5): on a FairScheduler that raise's AM was loaded 5-15 s after the write and has not
    # shown its tasks, so the room is the same tail. Hold.
    raised = adaptive.Memory(had_room=True, raised=True, am_seen=0.45, last_move=1).extra()
    fair = replace(obs(10, 10, 60_000, 50_000), scheduler=SchedulerKind.FAIR)
    d, _ = decide(fair, seen(0.5, extra=raised))
    assert (d.rule, d.new_a, d.case) == (Rule.HOLD, 0.5, Case.ROOM_TAIL_UNCONFIRMED)
    assert "once the last raise's AM shows its tasks" in d.reason
    # A CapacityScheduler, refreshed at once, counts the room its raise saw: one more AM.
    d, _ = decide(obs(10, 10, 60_000, 50_000), seen(0.5, extra=raised))
    assert (d.rule, d.new_a, d.case) == (Rule.UNDER_ALLOCATION, 0.55, Case.ROOM_TAIL)


def test_room_between_short_jobs_two_periods_running_is_not_waited_for() -> None:
    # The same room on a FairScheduler whose jobs were short this period (6 of 10 finished:
    # P 14 + R 10 -> P 10 + R 8) and the last: one-map jobs come and go, the room is theirs.
    fair = replace(obs(10, 8, 60_000, 50_000), scheduler=SchedulerKind.FAIR)
    short = adaptive.Memory(short=True).extra()
    d, _ = decide(fair, seen(0.5, p=14, extra=short))
    assert (d.rule, d.case) == (Rule.UNDER_ALLOCATION, Case.ROOM_TAIL)
    # Short this period alone is a batch's wave ending together: wait as before.
    d, _ = decide(fair, seen(0.5, p=14))
    assert (d.rule, d.case) == (Rule.HOLD, Case.ROOM_TAIL_UNCONFIRMED)


def test_apps_just_admitted_by_a_burst_wait_for_their_tasks() -> None:
    # P jumped 0 -> 30 and 10 AMs just started without tasks yet (tasks 0.1 < AM 0.5): they will
    # ask for their tasks within seconds, so the room is not free; it must show twice.
    d, _ = decide(obs(30, 10, 60_000, 50_000), ControllerState(a=0.5, prev_pending=0))
    assert (d.rule, d.new_a, d.case) == (Rule.HOLD, 0.5, Case.ROOM_TAIL_UNCONFIRMED)


def test_room_with_busy_tasks_gets_the_bisection_step() -> None:
    # used 0.8, AM 0.3, tasks 0.5 >= AM: the apps use their room, A holds the rest back.
    d, _ = decide(obs(10, 10, 80_000, 30_000), seen(0.3))
    assert (d.rule, d.new_a) == (Rule.UNDER_ALLOCATION, 0.625)  # 0.3 + 0.65 / 2


def test_room_the_running_apps_tasks_have_asked_for_is_not_room() -> None:
    # used 0.8, as in the case above, but the RM says 15 000 MB is asked for beyond the 10
    # waiting apps' AM asks (10 x 3000 MB, the running apps' mean AM): the running apps' tasks
    # will take the free 0.2 at the nodes' next heartbeats. Used or asked for: 0.95, no room,
    # so A holds where it raised before.
    o = replace(obs(10, 10, 80_000, 30_000), memory_pending_mb=10 * 3000 + 12_000)
    d, s = decide(o, seen(0.3))
    assert (d.rule, d.new_a, d.case) == (Rule.HOLD, 0.3, Case.DEAD_BAND)
    assert not adaptive.Memory.of(s.extra).had_room  # nor is it room seen once, for next period
    assert "tasks asked for 0.12" in d.reason and "used or asked for by tasks" in d.reason
    # Asks no larger than the waiting AMs' leave the room as it was.
    d, _ = decide(replace(o, memory_pending_mb=10 * 3000), seen(0.3))
    assert (d.rule, d.new_a) == (Rule.UNDER_ALLOCATION, 0.625)


def test_room_reserved_for_a_container_that_did_not_fit_is_not_room() -> None:
    # used 0.8 as above, and 16 000 MB reserved on nodes for AMs that fit none
    # (``reservedMB``): what those nodes free goes to them. Used or reserved: 0.96, no room.
    o = replace(obs(10, 10, 80_000, 30_000), memory_reserved_mb=16_000)
    d, _ = decide(o, seen(0.3))
    assert (d.rule, d.new_a) == (Rule.HOLD, 0.3)
    d, _ = decide(replace(o, memory_reserved_mb=0), seen(0.3))
    assert (d.rule, d.new_a) == (Rule.UNDER_ALLOCATION, 0.625)


def test_room_while_a_fair_scheduler_admits_more_ams_than_run_is_the_heartbeats_not_a() -> None:
    # 8 AMs of 2048 MB on 32 GB (0.5), A 0.6125 admits 9: an app finished and the next waits
    # only for a node heartbeat to place its AM. Raising now would admit a tenth for good.
    fair = SchedulerKind.FAIR
    o = replace(obs(5, 8, 22_528, 16_384, total=32_768), scheduler=fair)
    d, _ = decide(o, seen(0.6125, p=5))
    assert (d.rule, d.new_a, d.case) == (Rule.HOLD, 0.6125, Case.NOT_BINDING)
    assert "admits 9 AMs and 8 run" in d.reason
    # With A full (9 AMs run), the room is the other room rules' to judge.
    o = replace(obs(5, 9, 24_576, 18_432, total=32_768), scheduler=fair)
    assert decide(o, seen(0.6125, p=5))[0].case == Case.ROOM_TAIL_UNCONFIRMED
    # A burst starts a search whatever A admits; a CapacityScheduler may be held by a user's
    # share of its limit, which the figures do not show.
    o = replace(obs(5, 8, 22_528, 16_384, total=32_768), scheduler=fair)
    assert decide(o, ControllerState(a=0.6125))[0].rule is Rule.UNDER_ALLOCATION
    o = obs(5, 8, 22_528, 16_384, total=32_768)
    assert decide(o, seen(0.6125, p=5))[0].case != Case.NOT_BINDING


def test_a_capacity_schedulers_am_charge_is_shared_by_the_apps_it_activated() -> None:
    """LeafQueue.activateApplications charges an app's AM when it activates it, before the AM
    has a container and the app counts as running: 3 run, 6 are charged."""
    leaf = QueueStats(
        name="root.default", pending_apps=4, running_apps=6, memory_used_mb=16_384,
        am_memory_used_mb=12_288, memory_share_mb=32_768,
    )  # fmt: skip
    o = obs(7, 3, 16_384, 12_288, total=32_768, queues=(leaf,))
    figures = adaptive.figures.figures(o, SETTINGS, GLOBAL_TARGET)
    assert figures.am_per_app == 2048 / 32_768
    fair = replace(o, scheduler=SchedulerKind.FAIR)  # a FairScheduler charges running AMs
    assert adaptive.figures.figures(fair, SETTINGS, GLOBAL_TARGET).am_per_app == 4096 / 32_768


def test_room_is_no_reason_to_raise_when_every_waiting_am_fits_under_a() -> None:
    # One app arrived (a Poisson stream), nothing runs: 0 + 1 x 0.0205 <= 0.5. A holds nobody.
    d, _ = decide(obs(1, 0, 0, 0), ControllerState(a=0.5))
    assert (d.rule, d.new_a) == (Rule.HOLD, 0.5)
    assert d.case == Case.ALL_FIT


def test_when_the_rm_says_an_am_limit_holds_them_a_rises_as_far_as_admits_them() -> None:
    """The cluster's figures say every waiting AM fits under A 0.1, but one leaf's user AM limit
    (its guarantee times A) holds 8 apps: its 14 AMs hold 23,552 MB, so admitting 8 more of the
    same size needs A 0.1 x (23,552 + 8 x 1,682) / 23,552."""
    leaf = QueueStats(
        name="root.reports", pending_apps=8, running_apps=14, memory_used_mb=40_000,
        am_memory_used_mb=23_552, memory_share_mb=TOTAL, am_share=0.1,
    )  # fmt: skip
    o = replace(
        obs(8, 40, 65_000, 7_000, queues=(leaf,)),
        waits=(Wait("root.reports", WaitCause.USER_AM_LIMIT, 8),),
    )
    d, _ = decide(o, seen(0.1, p=8))
    assert d.case == Case.ROOM and d.direction is Direction.UP
    assert d.new_a == pytest.approx(0.1 * (23_552 + 8 * 23_552 / 14) / 23_552, abs=1e-4)
    assert "the RM's AM limit holds them" in d.reason
    unheld = replace(o, waits=(Wait("root.reports", WaitCause.USER_LIMIT, 8),))
    assert decide(unheld, seen(0.1, p=8))[0].case == Case.ALL_FIT


def held_at_a_users_am_limit(a: float, cause: WaitCause = WaitCause.USER_AM_LIMIT) -> Observation:
    """The leaf above, its limit loaded at ``a``, on a cluster whose tasks have 8 times the
    AMs' memory: jobs with more work behind each AM than the paper's, whose aim is over T2."""
    leaf = QueueStats(
        name="root.reports", pending_apps=8, running_apps=14, memory_used_mb=40_000,
        am_memory_used_mb=23_552, memory_share_mb=TOTAL, am_share=a,
    )  # fmt: skip
    return replace(obs(8, 40, 65_000, 7_000, queues=(leaf,)), waits=(Wait(leaf.name, cause, 8),))


def test_a_users_am_limit_holding_apps_stops_a_raise_where_its_tasks_keep_their_aim() -> None:
    """A user's AM limit is about A times its user limit, and its tasks get no more than that
    limit: a raise that would admit the 8 apps it holds (A x 1.57) stops at 1 - aim, and at
    1 - aim A stays. Where the leaf's own AM limit holds them, its tasks may borrow past it, and
    the raise admits them all."""
    s = seen(0.3, p=8)
    aim = period(held_at_a_users_am_limit(0.3), s, SETTINGS, GLOBAL_TARGET).aim
    assert 0.3 < 1 - aim < 0.3 * (1 + 8 / 14)
    d, _ = decide(held_at_a_users_am_limit(0.3), s)
    assert d.case == Case.ROOM and d.new_a == round(1 - aim, 4)
    assert "a user's AM limit holds apps: at most 1 - aim" in d.reason
    d, _ = decide(held_at_a_users_am_limit(d.new_a), seen(d.new_a, p=8))
    assert d.case == Case.USERS_LIMIT and d.rule is Rule.HOLD
    queue_held = held_at_a_users_am_limit(0.3, WaitCause.QUEUE_AM_LIMIT)
    d, _ = decide(queue_held, s)
    assert d.new_a == pytest.approx(0.3 * (1 + 8 / 14), abs=1e-4)


def leaves_held(n: int, limit_mb: int = 10_000) -> Observation:
    """n CapacityScheduler leaves, each at its AM limit of A 0.1 x the whole cluster (its
    maximum capacity, on an idle cluster) with apps waiting on it, and room in the cluster."""
    leaf = QueueStats(
        name="", pending_apps=5, running_apps=5, memory_used_mb=2 * limit_mb,
        am_memory_used_mb=limit_mb, am_memory_limit_mb=limit_mb, am_share=0.1,
    )  # fmt: skip
    leaves = tuple(replace(leaf, name=f"root.q{i}") for i in range(n))
    waits = tuple(Wait(q.name, WaitCause.QUEUE_AM_LIMIT, 5) for q in leaves)
    o = obs(5 * n, 5 * n, 2 * n * limit_mb, n * limit_mb, queues=leaves)
    return replace(o, waits=waits)


def steady(n: int) -> ControllerState:
    return ControllerState(a=0.1, prev_pending=5 * n, prev_running=5 * n)


def test_a_global_capacity_value_raises_by_its_step_over_the_leaves_it_caps_at_once() -> None:
    """Four leaves each admit AMs up to A x the cluster: a step of A admits four times its
    share, so it is taken a quarter as far (alpha 0.85 / 2 / 4)."""
    one, _ = decide(leaves_held(1), steady(1))
    four, _ = decide(leaves_held(4), steady(4))
    assert one.case == four.case == Case.ROOM
    assert one.new_a == pytest.approx(0.1 + 0.85 / 2, abs=1e-3)
    assert four.new_a == pytest.approx(0.1 + 0.85 / 8, abs=1e-3)


def test_leaves_held_by_their_users_count_as_the_ams_they_hold() -> None:
    """Users' AM limits (their part of each leaf's guarantee times A) hold the four leaves at
    half their own limits: A's step admits twice its share, not four times."""
    o = leaves_held(4)
    halved = tuple(replace(q, am_memory_used_mb=5_000) for q in o.queues)
    o = replace(o, queues=halved, am_memory_used_mb=20_000)
    d, _ = decide(o, steady(4))
    assert d.new_a == pytest.approx(0.1 + 0.85 / 4, abs=1e-3)


def test_a_fair_schedulers_leaf_held_by_its_am_limit_is_taken_at_the_value_in_force() -> None:
    """A FairScheduler reports no leaf's maxAMShare, only the limit it computed from it (its
    fair share times the share): a small leaf's limit holds 2 apps while the cluster's figures
    say every AM fits under A 0.5. The leaf runs under the value the target holds, so its 6
    AMs of 2,048 MB and 2 more need 0.5 x 8 / 6."""
    leaf = QueueStats(
        name="root.adhoc", pending_apps=2, running_apps=6, memory_used_mb=20_000,
        am_memory_used_mb=12_288, am_memory_limit_mb=13_516, memory_share_mb=27_000,
    )  # fmt: skip
    o = replace(
        obs(2, 10, 30_000, 20_480, queues=(leaf,)),
        scheduler=SchedulerKind.FAIR,
        waits=(Wait("root.adhoc", WaitCause.QUEUE_AM_LIMIT, 2),),
    )
    d, _ = decide(o, seen(0.5, p=2))
    assert d.case == Case.ROOM and d.direction is Direction.UP
    assert d.new_a == pytest.approx(0.5 * 8 / 6, abs=1e-4)
    assert "the RM's AM limit holds them" in d.reason


def leaf_under_its_guarantee(
    tasks_asked_mb: int = 2_000, etl_held: bool = False, etl_used_mb: int = 85_000
) -> Observation:
    """A full cluster of 100,000 MB: root.etl borrows 45,000 MB over its guarantee, while
    root.adhoc's AM limit (A 0.1 x its 60,000 MB) holds 10 apps with the leaf at 12,000 MB, its
    6 AMs of 1,000 MB and their tasks."""
    adhoc = QueueStats(
        name="root.adhoc", pending_apps=10, running_apps=6, memory_used_mb=12_000,
        am_memory_used_mb=6_000, am_share=0.1, guarantee_mb=60_000,
        memory_pending_mb=10 * 1_000 + tasks_asked_mb,
    )  # fmt: skip
    etl = QueueStats(
        name="root.etl", pending_apps=3 if etl_held else 0, running_apps=8,
        memory_used_mb=etl_used_mb, am_memory_used_mb=8_000, am_share=0.1, guarantee_mb=40_000,
    )  # fmt: skip
    waits = [Wait("root.adhoc", WaitCause.QUEUE_AM_LIMIT, 10)]
    if etl_held:
        waits.append(Wait("root.etl", WaitCause.QUEUE_AM_LIMIT, 3))
    o = obs(10 + 3 * etl_held, 14, 97_000, 14_000, queues=(adhoc, etl))
    return replace(o, waits=tuple(waits))


def test_a_full_cluster_whose_held_leaf_is_under_its_guarantee_admits_one_am_more() -> None:
    """Full, but the leaf whose AM limit holds apps uses 12,000 of its 60,000 MB and its tasks
    have asked for 2,000 more: the borrower gives the rest back as its containers end, and the
    leaf is served first. A rises by one AM a period, not at once to the 10 AMs that wait."""
    o = leaf_under_its_guarantee()
    d, _ = decide(o, seen(0.1, p=10))
    assert d.case == Case.UNDER_GUARANTEE and d.direction is Direction.UP
    assert d.rule is Rule.UNDER_ALLOCATION
    f = figures(o, SETTINGS, GLOBAL_TARGET, 0.1)
    assert f.a_into_guarantee == pytest.approx(0.1 * (6_000 + 10 * 1_000) / 6_000)
    assert d.new_a == pytest.approx(f.a_for(f.ams + 1), abs=1e-4)
    assert d.new_a < f.a_into_guarantee
    assert "uses less than its guarantee" in d.reason


@pytest.mark.parametrize(
    "o",
    [
        # Its own tasks have asked for all it does not use: an AM admitted now waits behind them.
        leaf_under_its_guarantee(tasks_asked_mb=48_000),
        # A raise would admit the borrower's waiting apps too.
        leaf_under_its_guarantee(etl_held=True),
        # No leaf borrows: what fills the cluster is the leaves' own.
        leaf_under_its_guarantee(etl_used_mb=40_000),
        replace(leaf_under_its_guarantee(), scheduler=SchedulerKind.FAIR),
    ],
    ids=["its-tasks-asked-for-it", "a-borrower-is-held-too", "no-leaf-borrows", "fair-scheduler"],
)
def test_a_held_leaf_under_its_guarantee_is_no_reason_to_raise_when(o: Observation) -> None:
    f = figures(o, SETTINGS, GLOBAL_TARGET, 0.1)
    assert f.a_into_guarantee == 0
    d, _ = decide(o, seen(0.1, p=o.pending_apps))
    assert d.case != Case.UNDER_GUARANTEE


def test_a_raise_not_yet_seen_in_am_use_is_waited_for() -> None:
    # The last period raised A and the AM share (0.5) has not grown since: the RM has not
    # loaded the value yet or the AMs are starting. Raising again would overshoot.
    s = seen(0.7, extra=adaptive.Memory(raised=True, am_seen=0.5, last_move=1).extra())
    d, s2 = decide(obs(10, 10, 60_000, 50_000), s)
    assert (d.rule, d.new_a) == (Rule.HOLD, 0.7)
    assert d.case == Case.UNSEEN
    # Once AM use has grown the loop may raise again.
    d, _ = decide(obs(10, 11, 65_000, 55_000), s2)
    assert d.rule is Rule.UNDER_ALLOCATION and d.new_a > 0.7


# --- the step: deeper on reversal, shallower on repeats, reset on a shift -----------------------


def test_reversal_deepens_the_step() -> None:
    # Last move was down; room now: a reversal, n 1 -> 2: 0.5 + 0.45 / 4 = 0.6125.
    s = seen(0.5, p=40, extra=adaptive.Memory(last_move=-1).extra())
    d, s2 = decide(obs(40, 10, 60_000, 25_000), s)
    assert (d.new_a, s2.n, adaptive.Memory.of(s2.extra).reversed) == (0.6125, 2, 1.0)


def test_step_regrows_while_moves_keep_the_same_direction() -> None:
    # n 3 after earlier reversals; a second raise in a row: n 3 -> 2, 0.5 + 0.45 / 4 = 0.6125.
    s = seen(0.5, p=40, n=3, extra=adaptive.Memory(last_move=1).extra())
    d, s2 = decide(obs(40, 12, 60_000, 25_000), s)
    assert (d.new_a, s2.n) == (0.6125, 2)
    d, s3 = decide(obs(40, 14, 70_000, 30_000), s2)  # AM use grew: the raise took effect
    assert s3.n == 1 and d.new_a == round(0.6125 + (0.95 - 0.6125) / 2, 4)


def test_backlog_jump_resets_the_step_to_the_widest() -> None:
    # n 6 (a long search converged), then 40 apps arrive at once (P 5 -> 45 > max(R 8, 5)).
    s = ControllerState(a=0.3, n=6, prev_pending=5, prev_running=8,
                        extra=adaptive.Memory(last_move=-1).extra())  # fmt: skip
    d, s2 = decide(obs(45, 8, 50_000, 16_384), s)
    assert "backlog jumped 5 -> 45: widest step" in d.reason
    assert (d.rule, d.new_a, s2.n) == (Rule.UNDER_ALLOCATION, 0.625, 1)  # 0.3 + 0.65 / 2
    # A rise that is not larger than what runs is no shift: P 5 -> 12 with R 8. The raise
    # reverses the last move, so the search goes one deeper: 0.3 + max(0.65 / 2^7, step).
    d, s3 = decide(obs(12, 8, 50_000, 16_384), s)
    assert "jumped" not in d.reason
    assert (d.new_a, s3.n) == (0.35, 7)


# --- stabilisation: no flapping ---------------------------------------------------------------


ROOM = obs(40, 10, 60_000, 25_000)
"""Apps wait with room and their tasks use it: raise."""
OVER = obs(40, 10, 100_000, 50_000)
"""Full, AM 0.5: lowering when A is above 0.6."""


def test_second_reversal_in_a_row_waits_for_confirmation() -> None:
    s = seen(0.9, p=40)
    d1, s = decide(OVER, s)  # down
    d2, s = decide(ROOM, s)  # up: first reversal, allowed at once
    d3, s = decide(OVER, s)  # down again: second reversal in a row, held
    d4, s = decide(OVER, s)  # confirmed: down
    dirs = [d.direction for d in (d1, d2, d3, d4)]
    assert dirs == [Direction.DOWN, Direction.UP, Direction.NONE, Direction.DOWN]
    assert d3.case == Case.REVERSAL_UNCONFIRMED and d3.rule is Rule.HOLD


# --- per-queue figures ------------------------------------------------------------------------


def queue(name: str, p: int, r: int, used: int, am: int, share: int, **kw: int) -> QueueStats:
    return QueueStats(name=name, pending_apps=p, running_apps=r, memory_used_mb=used,
                      am_memory_used_mb=am, memory_share_mb=share, **kw)  # fmt: skip


def test_a_named_queue_is_judged_on_its_own_figures() -> None:
    # The cluster is full (97 %) but root.small has 20 000 MB of its 50 000 MB share free
    # with apps waiting: raise root.small. root.big is full with AMs at 0.8 of its share:
    # lower it. The cluster-wide figures would say the opposite for root.small.
    small = queue("root.small", 6, 10, 30_000, 20_000, 50_000)
    big = queue("root.big", 3, 10, 50_000, 30_000, 50_000)
    o = obs(9, 20, 97_000, 50_000, queues=(small, big))
    d, _ = decide(o, seen(0.4, p=6, extra=adaptive.Memory(had_room=True).extra()), "root.small")
    assert (d.rule, d.target) == (Rule.UNDER_ALLOCATION, "root.small")
    assert "P 6, used 0.60, AM 0.40" in d.reason
    d, _ = decide(o, seen(0.8, p=3), "root.big")
    assert (d.rule, d.target) == (Rule.OVER_ALLOCATION_3, "root.big")
    assert "P 3, used 1.00, AM 0.60" in d.reason


def test_a_named_queue_reads_its_own_asks_not_the_clusters() -> None:
    # root.small has room (used 0.60 of its share) but its running apps' tasks asked for 20 000
    # MB beyond its 6 waiting AM asks: no room. The cluster's asks are root.big's too.
    small = replace(queue("root.small", 6, 10, 30_000, 20_000, 50_000), memory_pending_mb=32_000)
    big = replace(queue("root.big", 3, 10, 50_000, 30_000, 50_000), memory_pending_mb=6_000)
    o = replace(obs(9, 20, 80_000, 50_000, queues=(small, big)), memory_pending_mb=38_000)
    d, _ = decide(o, seen(0.4, p=6, extra=adaptive.Memory(had_room=True).extra()), "root.small")
    assert d.case == Case.DEAD_BAND and "tasks asked for 0.40" in d.reason
    # Its asks no larger than its waiting apps' AMs: the room is room again.
    o = replace(o, queues=(replace(small, memory_pending_mb=12_000), big))
    d, _ = decide(o, seen(0.4, p=6, extra=adaptive.Memory(had_room=True).extra()), "root.small")
    assert d.rule is Rule.UNDER_ALLOCATION


def test_a_queue_without_a_reported_share_falls_back_to_the_cluster_total() -> None:
    q = QueueStats(name="root.a", pending_apps=4, running_apps=5, memory_used_mb=40_000,
                   am_memory_used_mb=10_000)  # fmt: skip
    d, _ = decide(obs(4, 5, 40_000, 10_000, queues=(q,)), seen(0.3, p=4), "root.a")
    assert "used 0.40, AM 0.10" in d.reason


# --- vcores: the dominant share -----------------------------------------------------------------


def test_vcores_dominate_when_they_run_out_first() -> None:
    # Memory 0.5 used, but 97 of 100 vcores: the cluster is full. 10 AMs of 500 MB and one
    # vcore each (0.005 of memory, 0.01 of vcores); with A 0.8 filled (0.8 - 0.01 = 0.79) tasks
    # would hold 0.97 - 0.79 = 0.18 < 0.45: lower.
    o = obs(40, 10, 50_000, 5_000, vcores=(97, 100))
    d, _ = decide(o, seen(0.8, p=40))
    assert d.rule is Rule.OVER_ALLOCATION_3 and "used 0.97" in d.reason
    # Without vcore figures the same memory figures show room: raise (from an A that holds
    # some of the 40 waiting back).
    d, _ = decide(replace(o, vcores_used=0, vcores_total=0), seen(0.2, p=40))
    assert d.rule is Rule.UNDER_ALLOCATION and "used 0.50" in d.reason


def test_a_counts_ams_by_their_own_larger_share() -> None:
    # The same full vcores, but 30 AMs of 2,000 MB and one vcore: A 0.8 admits 40 of them by
    # memory (0.02 each), and 40 AMs hold 0.40 of the vcores, so with A filled tasks would keep
    # 0.97 - 0.39 = 0.58: nothing to lower.
    d, _ = decide(obs(40, 30, 80_000, 60_000, vcores=(97, 100)), seen(0.8, p=40))
    assert d.rule is Rule.HOLD and d.case in (Case.DEAD_BAND, Case.TASKS_KEEP_AIM)


def test_vcores_a_scheduler_does_not_count_are_ignored() -> None:
    # A CapacityScheduler with the default calculator: one vcore per container, 300 of 100
    # "used". Memory says 0.5: room, raise, as if no vcores were reported.
    o = replace(obs(40, 10, 50_000, 20_000, vcores=(300, 100)), vcores_scheduled=False)
    d, _ = decide(o, seen(0.8, p=40))
    assert d.rule is Rule.UNDER_ALLOCATION and "used 0.50" in d.reason


def test_queue_am_vcores_come_from_the_rm() -> None:
    q = queue("root.a", 5, 10, 40_000, 20_000, 100_000, vcores_used=95, am_vcores_used=60,
              vcores_share=100)  # fmt: skip
    d, _ = decide(obs(5, 10, 40_000, 20_000, vcores=(95, 100), queues=(q,)), seen(0.5), "root.a")
    assert "used 0.95, AM 0.60" in d.reason


# --- AMs against tasks, and whole AMs ---------------------------------------------------------


def test_the_aim_is_t2_for_the_papers_ams_and_higher_for_ams_the_size_of_a_task() -> None:
    assert adaptive.task_aim(0.5, 2.0) == pytest.approx(0.5)
    assert adaptive.task_aim(0.5, 1.0) == pytest.approx(1 - 1 / (1 + 2**0.5))  # 0.586
    assert adaptive.task_aim(0.5, 8.0) == pytest.approx(1 / 3)  # large AMs, small tasks
    assert adaptive.task_aim(1.0, 1.0) == 1.0  # T2 1: tasks keep everything, whatever a
    # Jobs with four times the paper's work per AM: AMs should hold half of what they would.
    assert adaptive.task_aim(0.5, 2.0, 4.0) == pytest.approx(2 / 3)


@given(st.floats(0.05, 0.95), st.floats(0.125, 8.0), st.floats(1.0, 100.0), st.floats(1.0, 10.0))
def test_the_aim_grows_with_the_jobs_work_and_stays_a_share(
    t2: float, am_to_task: float, work: float, more: float
) -> None:
    aim = adaptive.task_aim(t2, am_to_task, work)
    assert 0 < aim < 1
    assert adaptive.task_aim(t2, am_to_task, work * more) >= aim - 1e-12  # float rounding


def large_jobs_batch(kind: SchedulerKind, asked_mb: int) -> Observation:
    """A batch of large jobs 15 s in, on 4 nodes of 8 GB: 8 AMs of 2 GB hold half the cluster
    and their maps the rest, 8 apps wait, and the RM has ``asked_mb`` pending beside their AM
    asks."""
    o = obs(8, 8, 32_768, 16_384, total=32_768)
    return replace(o, scheduler=kind, containers=24, memory_pending_mb=8 * 2048 + asked_mb)


def test_large_jobs_on_a_capacity_scheduler_leave_fewer_ams_to_wait_behind_them() -> None:
    # Tasks hold half the cluster and have asked for 7 clusters more: 7.5 / 0.5 = 15 task
    # shares per AM share, 5x the paper's 3. The aim for tasks is 0.691, so A goes to the five
    # whole AMs that leave them that (the best fixed A for such a batch on 4 nodes is 0.3).
    d, _ = decide(large_jobs_batch(SchedulerKind.CAPACITY, 7 * 32_768), seen(0.525, p=8))
    assert (d.case, d.new_a) == (Case.OVER_ALLOCATED, 0.3124)
    assert "0.691 (T2 for jobs 5x the paper's work per AM)" in d.reason
    # With nothing asked beyond the waiting AMs the jobs are the paper's kind: tasks keep T2.
    d, _ = decide(large_jobs_batch(SchedulerKind.CAPACITY, 0), seen(0.525, p=8))
    assert (d.case, d.new_a) == (Case.TASKS_KEEP_AIM, 0.525)
    # A FairScheduler gives an admitted job its share at once: the aim stays T2.
    d, _ = decide(large_jobs_batch(SchedulerKind.FAIR, 7 * 32_768), seen(0.525, p=8))
    assert (d.case, d.new_a) == (Case.TASKS_KEEP_AIM, 0.525)


def fair_3_vcores(p: int, r: int, tasks: int, *, containers: int | None) -> Observation:
    """Four nodes of 8 GB and 3 vcores; AMs of 2 GB and one vcore, tasks of 1 GB and one."""
    o = obs(p, r, r * 2048 + tasks * 1024, r * 2048, total=32_768, vcores=(r + tasks, 12))
    return replace(o, scheduler=SchedulerKind.FAIR, containers=containers)


def test_ams_the_size_of_a_task_leave_tasks_more_than_t2() -> None:
    # Six AMs and six tasks fill the 12 vcores: AMs hold half of them, tasks T2. With the
    # paper's AMs of two task units that is the aim: hold.
    d, _ = decide(fair_3_vcores(20, 6, 6, containers=None), seen(0.5, p=20))
    assert (d.rule, d.new_a) == (Rule.HOLD, 0.5)
    # The RM counts 12 containers: 6 tasks of one vcore, the size of an AM. Tasks should keep
    # 0.586; 4.97 AMs leave them that, so five: 4.5 vcores' worth (the FairScheduler rounds
    # its limit up to a whole vcore), 0.375 (by memory 0.375 admits six).
    d, _ = decide(fair_3_vcores(20, 6, 6, containers=12), seen(0.5, p=20))
    assert (d.rule, d.new_a) == (Rule.OVER_ALLOCATION_3, 0.375)
    assert "0.586 (T2 for AMs 1x a task)" in d.reason


def test_a_raise_admits_the_whole_ams_it_covers_not_one_the_rounding_adds() -> None:
    # First look at 30 waiting apps on the 12 vcores: the probe is (0.95 - 0.5) / 4, to 0.6125.
    # The FairScheduler would round 7.35 vcores up to 8 and admit two more AMs for a step the
    # size of 1.35; A goes to 7 AMs' worth instead, 6.5 / 12.
    d, _ = decide(fair_3_vcores(30, 0, 0, containers=0), ControllerState(a=0.5))
    assert (d.rule, d.new_a) == (Rule.UNDER_ALLOCATION, 0.5417)
    # With 8 vcores a node memory decides, where rounding up to a whole MB adds no AM: as is.
    o = replace(fair_3_vcores(30, 0, 0, containers=0), vcores_total=32)
    d, _ = decide(o, ControllerState(a=0.5))
    assert (d.rule, d.new_a) == (Rule.UNDER_ALLOCATION, 0.6125)


@given(
    ams=st.integers(1, 100),
    nodes=st.integers(1, 200),
    node_gb=st.sampled_from([8, 16, 32]),
    node_vcores=st.integers(2, 24),
    am_mb=st.sampled_from([1024, 2048, 3072, 4096]),
    kind=st.sampled_from([SchedulerKind.CAPACITY, SchedulerKind.FAIR]),
)
def test_the_a_for_whole_ams_admits_exactly_them_in_the_simulated_schedulers(
    ams: int, nodes: int, node_gb: int, node_vcores: int, am_mb: int, kind: SchedulerKind
) -> None:
    # The simulator's AM limits are Hadoop's: FairScheduler maxAMShare x fair share rounded up
    # to a MB and a vcore, both counted; CapacityScheduler memory x percent normalised up to the
    # 1 GB minimum allocation. Three AMs of am_mb and one vcore run.
    total_mb, total_vc = nodes * node_gb * 1024, nodes * node_vcores
    assume(ams * am_mb < total_mb and ams < total_vc)
    o = obs(5, 3, 3 * am_mb, 3 * am_mb, total=total_mb, vcores=(3, total_vc))
    o = replace(o, scheduler=kind, vcores_scheduled=kind is SchedulerKind.FAIR)
    a = adaptive.figures.figures(o, SETTINGS, GLOBAL_TARGET).a_for(ams)
    if kind is SchedulerKind.FAIR:
        whole = (total_mb, total_vc)
        limit = fairshare.max_am_resource(whole, whole, whole, a)
        admitted = 0
        while fairshare.can_run_am((admitted * am_mb, admitted), (am_mb, 1), limit, a):
            admitted += 1
    else:
        admitted = capacity.am_limit_mb(total_mb, total_mb, a, 1024) // am_mb
    assert admitted == ams, a


@given(
    ams=st.integers(1, 60),
    nodes=st.integers(1, 100),
    am_mb=st.sampled_from([1024, 2048, 3072]),
    kind=st.sampled_from([SchedulerKind.CAPACITY, SchedulerKind.FAIR]),
    a=st.floats(0.01, 1.0),
)
def test_the_ams_an_a_stands_for_invert_a_for_and_count_raw_values_whole(
    ams: int, nodes: int, am_mb: int, kind: SchedulerKind, a: float
) -> None:
    # `a_for(k)` sits a hair under k AMs' worth; read back it is k AMs, not k - 1. A raw value
    # (0.55 of 32 GB is 8.8 AMs of 2 GB) stands for the AMs within it, not the nearest count.
    total_mb, total_vc = nodes * 32 * 1024, nodes * 8
    assume(ams * am_mb < total_mb and ams < total_vc)
    o = obs(5, 3, 3 * am_mb, 3 * am_mb, total=total_mb, vcores=(3, total_vc))
    f = adaptive.figures.figures(replace(o, scheduler=kind), SETTINGS, GLOBAL_TARGET)
    assert f.ams_of(f.a_for(ams)) == ams
    assert f.ams_of(a) in (f.ams_within(a), f.ams_within(a) + 1)
    assert f.a_for(f.ams_of(a)) <= a < f.a_for(f.ams_of(a) + 1)
    # The top of a count's band on memory admits that count and is the last A that does.
    m = f.on_memory
    top = f.top_of_band(ams)
    assert m.ams_of(top) == ams and m.ams_of(round(top + 1e-4, 4)) == ams + 1


def test_a_raise_smaller_than_an_am_still_admits_one() -> None:
    # Seven 2 GB AMs on 32 GB (A 0.4375), room shown twice, a deep search (n 5): the step, 0.05,
    # is less than an AM (0.0625) and 0.4875 would admit none. A goes to eight AMs' worth.
    o = replace(obs(2, 7, 24_576, 14_336, total=32_768), scheduler=SchedulerKind.FAIR)
    d, _ = decide(o, seen(0.4375, p=2, n=5, extra=adaptive.Memory(had_room=True).extra()))
    assert (d.rule, d.new_a) == (Rule.UNDER_ALLOCATION, 0.5)
    assert "8 whole AMs" in d.reason


def test_zero_total_memory_is_refused() -> None:
    with pytest.raises(ValueError, match="M_total must be positive"):
        decide(obs(1, 1, 0, 0, total=0), seen(0.5))


# --- properties -------------------------------------------------------------------------------

counts = st.integers(0, 200)
frac = st.floats(0.0, 1.0)


@st.composite
def observations(draw: st.DrawFn) -> Observation:
    total = draw(st.integers(1_000, 1_000_000))
    used = int(draw(frac) * total)
    am = draw(st.one_of(st.none(), st.builds(lambda x: int(x * used), frac)))
    vtotal = draw(st.sampled_from([0, 32, 4800]))
    o = obs(
        draw(counts), draw(counts), used, am, total=total,
        vcores=(int(draw(frac) * vtotal), vtotal),
    )  # fmt: skip
    kind = draw(st.sampled_from([SchedulerKind.CAPACITY, SchedulerKind.FAIR]))
    containers = draw(st.one_of(st.none(), st.integers(0, 10_000)))
    pending_mb = draw(st.one_of(st.none(), st.builds(lambda x: int(x * total), frac)))
    return replace(
        o, scheduler=kind, vcores_scheduled=draw(st.booleans()), containers=containers,
        memory_pending_mb=pending_mb,
    )  # fmt: skip


@st.composite
def states(draw: st.DrawFn) -> ControllerState:
    extra = adaptive.Memory(
        last_move=draw(st.sampled_from([-1, 0, 1])),
        reversed=draw(st.booleans()),
        wanted=draw(st.sampled_from([-1, 0, 1])),
        had_room=draw(st.booleans()),
        raised=draw(st.booleans()),
        am_seen=draw(frac),
        short=draw(st.booleans()),
        held_to=draw(st.sampled_from([0.0, 0.525])),
        burst=draw(st.booleans()),
    ).extra()
    return ControllerState(
        a=draw(st.floats(-0.5, 1.5)),
        n=draw(st.integers(1, 2000)),
        prev_pending=draw(st.one_of(st.none(), counts)),
        prev_running=draw(st.one_of(st.none(), counts)),
        extra=draw(st.sampled_from([{}, extra])),
    )


@given(observations(), states())
def test_a_stays_in_bounds_rounded_and_the_rule_matches_the_direction(
    o: Observation, s: ControllerState
) -> None:
    d, s2 = decide(o, s)
    lo, hi = SETTINGS.a_min, SETTINGS.a_max
    assert lo <= d.new_a <= hi and round(d.new_a, 4) == d.new_a and s2.a == d.new_a
    start = min(max(round(s.a, 4), lo), hi)
    if d.rule is Rule.UNDER_ALLOCATION:
        assert d.new_a >= start
    elif d.rule is Rule.OVER_ALLOCATION_3:
        assert d.new_a <= start
    else:
        assert d.rule is Rule.HOLD and d.new_a == start
    assert s2.n >= 1 and (s2.prev_pending, s2.prev_running) == (o.pending_apps, o.running_apps)


@given(observations(), states())
def test_large_jobs_raise_only_a_fair_scheduler_and_only_when_tasks_dwarf_the_ams(
    o: Observation, s: ControllerState
) -> None:
    d, _ = decide(o, s)
    if d.case == Case.LARGE_JOBS_HOLD:
        f = adaptive.figures.figures(o, SETTINGS, GLOBAL_TARGET)
        assert o.scheduler is SchedulerKind.FAIR and o.pending_apps > 0
        assert f.tasks >= adaptive.rules.LARGE_JOBS * f.am and f.used >= adaptive.FULL
        assert d.new_a >= min(max(round(s.a, 4), SETTINGS.a_min), SETTINGS.a_max)


@given(observations(), states())
def test_deterministic_and_the_input_state_is_not_touched(
    o: Observation, s: ControllerState
) -> None:
    before = replace(s, extra=dict(s.extra))
    assert decide(o, s) == decide(o, s)
    assert s == before


BUSY = [
    replace(o, pending_apps=p, running_apps=r) for o in (ROOM, OVER) for p, r in ((80, 10), (5, 2))
]
"""ROOM and OVER with a backlog that jumps (arrivals) or drains fast (short jobs)."""


@given(
    st.lists(st.sampled_from([ROOM, OVER, *BUSY]), min_size=3, max_size=40),
    st.floats(0.05, 0.95),
    st.sampled_from([SchedulerKind.CAPACITY, SchedulerKind.FAIR]),
)
def test_no_flapping_never_up_down_up_in_consecutive_periods(
    inputs: list[Observation], a: float, scheduler: SchedulerKind
) -> None:
    s = seen(round(a, 4))
    decisions: list[Decision] = []
    for o in inputs:
        d, s = decide(replace(o, scheduler=scheduler), s)
        decisions.append(d)
    dirs = [d.direction for d in decisions]
    for x, y, z in zip(dirs, dirs[1:], dirs[2:], strict=False):
        assert not (Direction.NONE not in (x, y, z) and x != y and y != z), dirs


def test_strictly_alternating_inputs_settle() -> None:
    # ROOM, OVER, ROOM, ...: the moves shrink (each reversal deepens n) and every second
    # reversal waits a period, so A ends in a narrow range instead of swinging.
    s = seen(0.9, p=40)
    trace = []
    for i in range(40):
        d, s = decide(ROOM if i % 2 else OVER, s)
        trace.append(d.new_a)
    late = trace[20:]
    assert max(late) - min(late) <= 2 * SETTINGS.step + 1e-9


def fair_leaf(vcores_share: int | None) -> QueueStats:
    return QueueStats(
        name="root.default", pending_apps=6, running_apps=4, memory_used_mb=14336,
        vcores_used=10, am_memory_used_mb=8192, am_vcores_used=4,
        memory_share_mb=32768, vcores_share=vcores_share, containers=10,
    )  # fmt: skip


@pytest.mark.parametrize(("share", "base"), [(0, 2), (12, 12)])
def test_a_fair_limits_vcores_count_against_what_is_free_when_its_share_has_none(
    share: int | None, base: int
) -> None:
    """FSLeafQueue.computeMaxAMResource (Hadoop 2.9+): a fair share of 0 vcores (the default
    fair policy shares memory only) is replaced by the vcores available, so A x 2 free vcores,
    not A x 12, is what the next AM must fit in; a share with vcores (drf) is used as given."""
    leaf = fair_leaf(share)
    o = replace(
        obs(6, 4, 14336, 8192, total=32768, vcores=(10, 12), queues=(leaf,)),
        scheduler=SchedulerKind.FAIR, containers=10,
    )  # fmt: skip
    for target in (GLOBAL_TARGET, "root.default"):
        figures = adaptive.figures.figures(o, SETTINGS, target)
        (_, _), (vc_each, vc_unit) = figures.limits
        assert (vc_each, vc_unit) == pytest.approx((1 / base, 1 / base))


def test_a_fair_limit_held_by_the_vcores_tasks_hold_is_not_raised_past_them() -> None:
    # Memory 0.875 used: A 0.55 admits 8 AMs by memory and 7 by the 11 free vcores (0.55 x 11,
    # rounded up). The vcores come back as tasks end, and then the eighth starts; raising A to
    # admit it now would admit several more once they are free.
    d, _ = decide(four_nodes(7, 14), seen(0.55, p=10))
    assert (d.rule, d.new_a, d.case) == (Rule.HOLD, 0.55, Case.NOT_BINDING)
    assert "A admits 8 AMs and 7 run" in d.reason and "vcores the limit counts" in d.reason
    # Nodes of 3 vcores: tasks use vcores (0.75) more than memory (0.41), so the free vcores
    # are the lasting limit (0.55 x 3 free admits 2 of the 4 AMs that run): the room is A's
    # to open.
    d, _ = decide(four_nodes(4, 5, node_vcores=3), seen(0.55, p=10))
    assert d.rule is Rule.UNDER_ALLOCATION and d.case != Case.NOT_BINDING


def test_jobs_in_waves_under_a_floating_fair_limit_are_judged_on_its_memory_side() -> None:
    # 30 s into the paper's grep group: 9 AMs and 13 maps run (memory 0.97, vcores 22 of 32),
    # 21 apps wait. A 0.6125 admits 7 AMs against the 10 free vcores and 9 on memory; the jobs end
    # in waves and hand the vcores back, so 9 is what A lets run. Filled, that leaves tasks
    # 0.41 < T2 - step. The goal of T2 is 7 AMs, below the 9 that run: A goes to those 9,
    # where the limit stops admitting at once.
    d, _ = decide(four_nodes(9, 13, 21, asked_mb=4096), seen(0.6125, p=21))
    assert (d.case, d.rule, d.new_a) == (Case.OVER_ALLOCATED, Rule.OVER_ALLOCATION_3, 0.5625)
    assert "tasks would hold 0.41" in d.reason
    # Maps asking for 60 GB: jobs with more work per AM than the paper's keep the vcores, and
    # the vcore side stays the limit: it already holds AM use two AMs under what runs.
    d, _ = decide(four_nodes(9, 13, 21, asked_mb=61_440), seen(0.6125, p=21))
    assert (d.case, d.new_a) == (Case.AMS_OVER_A, 0.6125)


def test_a_first_look_on_a_floating_fair_limit_goes_to_the_top_of_its_band() -> None:
    # Idle at start-up: 1 - T2 = 0.5 admits 8 AMs of 2 GB on memory, as does every A up to
    # 0.5624, whose vcore side (A x the vcores free) lets each start soonest.
    d, _ = decide(four_nodes(0, 0, 0), ControllerState(a=0.1))
    assert (d.case, d.rule, d.new_a) == (Case.IDLE_START, Rule.UNDER_ALLOCATION, 0.5624)
    # A batch: the first raise, 0.6125 (9 AMs), goes to the top of their band.
    d, _ = decide(four_nodes(0, 0, 30), ControllerState(a=0.5))
    assert (d.case, d.rule, d.new_a) == (Case.ROOM, Rule.UNDER_ALLOCATION, 0.6249)
    assert "the top of its band of whole AMs" in d.reason
    # A stream's first app fits under A: the hold becomes a move within A's band.
    d, s = decide(four_nodes(0, 0, 1), ControllerState(a=0.5))
    assert (d.case, d.rule, d.new_a) == (Case.TOP_OF_BAND, Rule.UNDER_ALLOCATION, 0.5624)
    # Later looks keep what the loop set; a fair share with vcores (drf) is a fixed limit.
    d, _ = decide(four_nodes(0, 0, 1), replace(s, a=0.5))
    assert (d.case, d.new_a) == (Case.ALL_FIT, 0.5)
    drf = four_nodes(0, 0, 0)
    drf = replace(drf, queues=(replace(drf.queues[0], vcores_share=32),))
    d, _ = decide(drf, ControllerState(a=0.1))
    assert (d.case, d.new_a) == (Case.IDLE_START, 0.5)


@given(observations(), states())
def test_every_case_reports_the_rule_the_paper_would_name(
    o: Observation, s: ControllerState
) -> None:
    """A case names which rule decided; its Rule stays the paper's coarser name: raises are
    under-allocation, lowers over-allocation-3, everything that keeps A a hold (A given inside
    its bounds: one outside is taken to them, a move of no rule's)."""
    inside = min(max(round(s.a, adaptive.DECIMALS), SETTINGS.a_min), SETTINGS.a_max)
    d, _ = decide(o, replace(s, a=inside))
    assert d.case in set(Case)
    if d.direction is Direction.UP:
        assert d.rule is Rule.UNDER_ALLOCATION
    elif d.direction is Direction.DOWN:
        assert d.rule is Rule.OVER_ALLOCATION_3
    holds = (Case.NOTHING_WAITS, Case.DEAD_BAND, Case.ALL_FIT, Case.REVERSAL_UNCONFIRMED)
    if d.case in (*holds, Case.USERS_LIMIT):
        assert d.rule is Rule.HOLD and not d.changed


def test_the_rules_table_ends_with_a_rule_that_always_decides() -> None:
    """`decide` takes the first verdict of RULES; the last rule has one for every period that
    reaches it (full, apps waiting, A above its goal)."""
    assert adaptive.RULES[-1] is adaptive.rules.over_allocated


def test_small_jobs_on_a_capacity_scheduler_keep_more_ams_than_the_papers() -> None:
    # One-map jobs, 20 s in on 4 nodes of 8 GB: 12 AMs of 2 GB and their 7 maps fill the
    # cluster (0.97) and 20 apps wait. Tasks hold 0.22 per AM share 0.75, a third of the
    # paper's jobs' backlog: the jobs need fewer tasks per AM, so the aim falls from T2 to
    # 0.267, which the tasks keep with A filled: A stays at 12 AMs (one-map jobs' best is 0.8).
    o = replace(
        obs(20, 12, 31_744, 24_576, total=32_768), containers=19, memory_pending_mb=20 * 2048
    )
    d, _ = decide(o, seen(0.7625, p=25))
    assert (d.case, d.new_a) == (Case.TASKS_KEEP_AIM, 0.7625)
    assert "0.267 (T2 for jobs 0.13x the paper's work per AM)" in d.reason
    # The same cluster with 12 more maps asked for: the paper's backlog, T2, down to 8 AMs.
    o = replace(o, memory_pending_mb=20 * 2048 + 12 * 1024)
    d, _ = decide(o, seen(0.7625, p=25))
    assert (d.case, d.new_a) == (Case.OVER_ALLOCATED, 0.4999)
