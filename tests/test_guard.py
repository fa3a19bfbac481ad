"""Guard rails between the controller's wish and the file: pure functions, checked by hand."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from amtuner import guard
from amtuner.config import ControllerSettings, GuardSettings
from amtuner.model import (
    ControllerState,
    Decision,
    Observation,
    QueueStats,
    Rule,
    SchedulerKind,
    Wait,
    WaitCause,
)

OBS = Observation(
    time=1000.0, scheduler=SchedulerKind.FAIR, pending_apps=5, running_apps=3,
    memory_used_mb=4096, memory_total_mb=32768,
)


def decision(old: float, new: float) -> Decision:
    return Decision(old_a=old, new_a=new, rule=Rule.UNDER_ALLOCATION, reason="P 5 > P(t-1) 0")


def test_a_small_move_passes_untouched() -> None:
    d = decision(0.3, 0.45)
    after = ControllerState(a=0.45, n=3, prev_pending=5, prev_running=3)
    assert guard.apply(d, ControllerState(a=0.3, n=2), after, OBS, GuardSettings()) == (d, after)


def test_a_large_move_is_clipped_and_says_so() -> None:
    after = ControllerState(a=0.525, n=2, prev_pending=5, prev_running=3)
    tight = GuardSettings(max_change_per_cycle=0.2)
    d, state = guard.apply(decision(0.1, 0.525), ControllerState(a=0.1), after, OBS, tight)
    assert d.new_a == 0.3 and state.a == 0.3 and state.n == 2
    assert "clipped to guard.max_change_per_cycle 0.2" in d.reason
    down, _ = guard.apply(decision(0.9, 0.3), ControllerState(a=0.9), after, OBS, tight)
    assert down.new_a == 0.7


def test_the_default_clip_passes_the_widest_step_a_policy_takes() -> None:
    c = ControllerSettings()
    widest = c.widest_step
    after = ControllerState(a=c.a_min + widest, n=1)
    d, state = guard.apply(
        decision(c.a_min, c.a_min + widest), ControllerState(a=c.a_min), after, OBS,
        GuardSettings(),
    )  # fmt: skip
    assert (d.new_a, state.a) == (c.a_min + widest, c.a_min + widest)
    assert "clipped" not in d.reason


def test_hold_off_keeps_a_and_n_but_remembers_p_and_r() -> None:
    before = guard.mark_changed(ControllerState(a=0.3, n=4, prev_pending=2), 995.0)
    after = ControllerState(a=0.4, n=5, prev_pending=5, prev_running=3, extra=before.extra)
    d, state = guard.apply(decision(0.3, 0.4), before, after, OBS, GuardSettings())
    assert d.rule is Rule.HOLD and d.new_a == 0.3
    assert "hold-off: last change 5 s ago < 10 s" in d.reason
    assert (state.a, state.n, state.prev_pending, state.prev_running) == (0.3, 4, 5, 3)


def test_after_the_hold_off_a_change_goes_through() -> None:
    before = guard.mark_changed(ControllerState(a=0.3, n=4), 975.0)
    d, _ = guard.apply(
        decision(0.3, 0.4), before, ControllerState(a=0.4, n=5), OBS, GuardSettings()
    )
    assert d.new_a == 0.4


def test_pause_file(tmp_path: Path) -> None:
    switch = tmp_path / "pause"
    settings = GuardSettings(pause_file=switch)
    assert not guard.paused(settings)
    switch.touch()
    assert guard.paused(settings)
    assert not guard.paused(GuardSettings())


def test_a_fair_scheduler_share_never_drops_below_one_am() -> None:
    """0.05 x 32768 MB = 1638 MB cannot hold a 2048 MB AM: the floor is 2048/32768 = 0.0625."""
    d = Decision(old_a=0.1, new_a=0.05, rule=Rule.OVER_ALLOCATION_1, reason="R 2 < R(t-1) 3")
    after = ControllerState(a=0.05, n=3)
    kept, state = guard.apply(d, ControllerState(a=0.1), after, OBS, GuardSettings())
    assert kept.new_a == 0.0625 and state.a == 0.0625
    assert "the least A that admits one 2048 MB AM" in kept.reason
    assert guard.am_floor(OBS, "", 2048) == 0.0625


def test_the_floor_does_not_apply_to_the_capacity_scheduler_or_to_raises() -> None:
    capacity = replace(OBS, scheduler=SchedulerKind.CAPACITY)
    assert guard.am_floor(capacity, "", 2048) == 0.0
    up = decision(0.03, 0.05)  # below the floor but rising: let it rise
    d, _ = guard.apply(up, ControllerState(a=0.03), ControllerState(a=0.05), OBS, GuardSettings())
    assert d.new_a == 0.05


def waiting(kind: SchedulerKind, *waits: Wait, am_limit_mb: int = 4096) -> Observation:
    leaf = QueueStats(
        "root.a", pending_apps=5, running_apps=3, memory_used_mb=4096,
        am_memory_limit_mb=am_limit_mb,
    )  # fmt: skip
    return replace(OBS, scheduler=kind, queues=(leaf,), waits=waits)


def test_no_raise_while_every_waiting_app_is_held_by_a_limit_a_is_not_part_of() -> None:
    held = waiting(
        SchedulerKind.CAPACITY,
        Wait("root.a", WaitCause.USER_LIMIT, 3), Wait("root.a", WaitCause.MAX_APPS, 2),
    )  # fmt: skip
    before = ControllerState(a=0.3, n=4, prev_pending=2)
    after = ControllerState(a=0.4, n=5, prev_pending=5, prev_running=3)
    d, state = guard.apply(decision(0.3, 0.4), before, after, held, GuardSettings())
    assert d.rule is Rule.HOLD and d.new_a == 0.3
    assert d.reason.startswith("A cures none of the waits: 3 user-limit in root.a (cure: ")
    assert "max-parallel-apps" in d.reason and "wanted 0.3 -> 0.4" in d.reason
    assert (state.a, state.n, state.prev_pending, state.prev_running) == (0.3, 4, 5, 3)
    down, _ = guard.apply(decision(0.3, 0.2), before, after, held, GuardSettings())
    assert down.new_a == 0.2  # lowering is never held: it gives tasks back what AMs hold


def test_one_wait_a_cures_lets_the_raise_through() -> None:
    mixed = waiting(
        SchedulerKind.CAPACITY,
        Wait("root.a", WaitCause.USER_LIMIT, 3), Wait("root.a", WaitCause.QUEUE_AM_LIMIT, 1),
    )  # fmt: skip
    after = ControllerState(a=0.4)
    d, _ = guard.apply(decision(0.3, 0.4), ControllerState(a=0.3), after, mixed, GuardSettings())
    assert d.new_a == 0.4


def test_a_raise_admits_the_apps_the_am_limit_holds_and_no_more_where_others_hold_the_rest(
) -> None:
    """Three apps run (6 GB of AMs, the leaf may use 32 GB): one waits on the AM limit and 20
    on the queue's running-apps limit. Admitting the one takes (6144 + 2048) / 32768 = 0.25;
    past that the running-apps limit holds the rest whatever A. Without that limit in the mix
    the raise goes through whole."""
    leaf = QueueStats(
        "root.a", pending_apps=1, running_apps=3, memory_used_mb=6144, am_memory_used_mb=6144,
        am_memory_limit_mb=6144, memory_share_mb=32768,
    )  # fmt: skip
    mixed = replace(
        OBS, scheduler=SchedulerKind.CAPACITY, queues=(leaf,),
        waits=(Wait("root.a", WaitCause.QUEUE_AM_LIMIT, 1), Wait("root.a", WaitCause.MAX_APPS, 20)),
    )  # fmt: skip
    before, after = ControllerState(a=0.1875), ControllerState(a=0.525)
    d, state = guard.apply(decision(0.1875, 0.525), before, after, mixed, GuardSettings())
    assert (d.new_a, state.a) == (0.25, 0.25)
    assert "admits the 1 apps the AM limit holds" in d.reason
    alone = replace(mixed, waits=mixed.waits[:1])
    d, _ = guard.apply(decision(0.1875, 0.525), before, after, alone, GuardSettings())
    assert d.new_a == 0.525


def test_a_fair_scheduler_cluster_full_is_not_proof_enough_to_hold() -> None:
    """Its ``cluster-full`` is inferred from a mean AM against a limit last computed when the
    scheduler tried an AM: a raise goes through."""
    full = waiting(SchedulerKind.FAIR, Wait("root.a", WaitCause.CLUSTER_FULL, 5))
    after = ControllerState(a=0.6)
    d, _ = guard.apply(decision(0.5, 0.6), ControllerState(a=0.5), after, full, GuardSettings())
    assert d.new_a == 0.6
    capacity = replace(full, scheduler=SchedulerKind.CAPACITY)
    d, _ = guard.apply(decision(0.5, 0.6), ControllerState(a=0.5), after, capacity, GuardSettings())
    assert d.new_a == 0.5


def full_of_tasks(free_vcores: int) -> Observation:
    """Four 8 GB nodes of 16 vcores full in memory: two 1 GB AMs and 30 GB of tasks in
    root.a, whose fair share is the cluster; two apps of 1 GB AMs wait."""
    leaf = QueueStats(
        "root.a", pending_apps=2, running_apps=2, memory_used_mb=32768, vcores_used=32,
        am_memory_used_mb=2048, am_vcores_used=2, am_memory_limit_mb=16384,
        memory_share_mb=32768, vcores_share=0,
    )  # fmt: skip
    return replace(
        OBS, pending_apps=2, running_apps=2, memory_used_mb=32768, vcores_total=64,
        vcores_used=64 - free_vcores, queues=(leaf,),
        waits=(Wait("root.a", WaitCause.CLUSTER_FULL, 2),),
    )  # fmt: skip


def test_a_fair_cluster_full_is_held_where_the_am_limit_computed_afresh_admits_its_apps() -> None:
    """``FSLeafQueue.computeMaxAMResource``: 0.5 x the 32 GB fair share, and 0.5 x the free
    vcores (the ``fair`` policy's share has none): with 32 vcores free, 2 + 2 AMs fit both
    sides, so the apps wait for a container to free and a raise is held. With 3 free, the
    vcore side is 1 and A decides when the next AM starts: the raise goes through. With
    memory free, the apps have just come and start at the next heartbeat: it goes through."""
    before, after = ControllerState(a=0.5), ControllerState(a=0.95)
    d, _ = guard.apply(decision(0.5, 0.95), before, after, full_of_tasks(32), GuardSettings())
    assert d.rule is Rule.HOLD and "A cures none of the waits: 2 cluster-full" in d.reason
    d, _ = guard.apply(decision(0.5, 0.95), before, after, full_of_tasks(3), GuardSettings())
    assert d.new_a == 0.95
    room = replace(full_of_tasks(32), memory_used_mb=30720)
    d, _ = guard.apply(decision(0.5, 0.95), before, after, room, GuardSettings())
    assert d.new_a == 0.95


def test_a_lowering_that_holds_none_of_a_fair_full_clusters_apps_is_held() -> None:
    """At 0.25 the limit is 8 GB and 8 vcores, room for the two waiting 1 GB AMs beside the
    two running: the lowering changes nothing for them, so A stays. At 0.0625 (2 GB) it
    would hold them, so that tasks get what frees: it goes through."""
    full = full_of_tasks(32)
    before = ControllerState(a=0.5)
    d, _ = guard.apply(decision(0.5, 0.25), before, ControllerState(a=0.25), full, GuardSettings())
    assert (d.rule, d.new_a) == (Rule.HOLD, 0.5)
    assert d.reason.startswith("0.25 holds none of the waits either: 2 cluster-full")
    low = ControllerState(a=0.0625)
    d, _ = guard.apply(decision(0.5, 0.0625), before, low, full, GuardSettings())
    assert d.new_a < 0.5


def test_a_partitions_own_am_limit_is_raised_only_by_its_own_target() -> None:
    """A partition that sets its own ``maximum-am-resource-percent`` is reached by neither the
    leaf's value nor the global one (``getMaximumAMResourcePercentPerPartition``): their raise
    is held; the ``leaf@label`` target's goes through. A partition without its own share takes
    the leaf's, so the leaf's raise goes through too."""
    own = Wait("root.a", WaitCause.PARTITION_AM_LIMIT, 3, partition="core", own_share=True)
    held = waiting(SchedulerKind.CAPACITY, own)
    before, after = ControllerState(a=0.3), ControllerState(a=0.4)
    for target in ("", "root.a"):
        up = replace(decision(0.3, 0.4), target=target)
        d, _ = guard.apply(up, before, after, held, GuardSettings())
        assert d.rule is Rule.HOLD, target
        assert "partition-am-limit in root.a (cure: yarn.scheduler.capacity.root.a." in d.reason
    up = replace(decision(0.3, 0.4), target="root.a@core")
    d, _ = guard.apply(up, before, after, held, GuardSettings())
    assert d.new_a == 0.4
    inherited = waiting(SchedulerKind.CAPACITY, replace(own, own_share=False))
    up = replace(decision(0.3, 0.4), target="root.a")
    d, _ = guard.apply(up, before, after, inherited, GuardSettings())
    assert d.new_a == 0.4


def test_a_fair_batch_just_come_under_max_running_apps_is_raised_for_the_runnable() -> None:
    """A batch of ten has just come to a FairScheduler leaf with ``maxRunningApps`` 2: no AM
    was tried, so ``amMaxResources`` is 0 and the two runnable apps are `cluster-full` beside
    eight held by the limit. A raise is kept where it admits two AMs of the policy's size, (0 +
    2 x 2048) / 32768 = 0.125, under the A there already: held at 0.5."""
    leaf = QueueStats(
        "root.a", pending_apps=10, running_apps=0, memory_used_mb=0, am_memory_used_mb=0,
        am_memory_limit_mb=0, memory_share_mb=32768, max_apps=2,
    )  # fmt: skip
    obs = replace(
        OBS, scheduler=SchedulerKind.FAIR, queues=(leaf,),
        waits=(Wait("root.a", WaitCause.MAX_APPS, 8), Wait("root.a", WaitCause.CLUSTER_FULL, 2)),
    )  # fmt: skip
    before, after = ControllerState(a=0.5), ControllerState(a=0.6249)
    d, state = guard.apply(decision(0.5, 0.6249), before, after, obs, GuardSettings())
    assert (d.new_a, state.a) == (0.5, 0.5)
    assert "admits the 2 apps the AM limit may hold" in d.reason
    alone = replace(obs, waits=obs.waits[1:])
    d, _ = guard.apply(decision(0.5, 0.6249), before, after, alone, GuardSettings())
    assert d.new_a == 0.6249
