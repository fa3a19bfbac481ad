"""The paper's controller: hand-computed sequences per rule, the documented choices, properties."""

from __future__ import annotations

import math
from typing import get_args

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from amtuner.config import ControllerSettings, PolicyName
from amtuner.controller import POLICIES, get_policy, paper
from amtuner.model import (
    GLOBAL_TARGET,
    ControllerState,
    Decision,
    Observation,
    QueueStats,
    Rule,
    SchedulerKind,
)

PAPER = ControllerSettings()  # T1 1.0, T2 0.5, T3 0.8, step 0.05, A_min 0.05, A_max 0.95
TOTAL = 100_000
"""M_total in MB for the hand-computed cases; unit_mb 1024, so one AM estimate is 2048 MB."""


def obs(p: int, r: int, used: int, total: int = TOTAL) -> Observation:
    return Observation(
        time=0.0,
        scheduler=SchedulerKind.CAPACITY,
        pending_apps=p,
        running_apps=r,
        memory_used_mb=used,
        memory_total_mb=total,
    )


def run(
    state: ControllerState, observations: list[Observation], settings: ControllerSettings = PAPER
) -> tuple[list[Decision], ControllerState]:
    decisions = []
    for o in observations:
        d, state = paper.decide(o, state, settings, GLOBAL_TARGET)
        decisions.append(d)
    return decisions, state


# --- hand-computed sequences ------------------------------------------------------------------


def test_under_allocation_example_from_the_brief() -> None:
    # A 0.1, n 1: alpha = 0.95 - 0.1 = 0.85, 0.85/2 = 0.425 > 0.05 -> A = 0.525, n = 2.
    d, s = paper.decide(obs(12, 3, 41_000), ControllerState(a=0.1, n=1, prev_pending=9,
                                                            prev_running=3), PAPER)  # fmt: skip
    assert (d.rule, d.old_a, d.new_a) == (Rule.UNDER_ALLOCATION, 0.1, 0.525)
    assert s == ControllerState(a=0.525, n=2, prev_pending=12, prev_running=3)
    assert "P 12 > P(t-1) 9 and M_used/M_total 0.41 < T1 1.00" in d.reason
    assert "0.8500/2^1 = 0.4250 > step 0.05" in d.reason


def test_under_allocation_sequence_bisects_then_steps_then_stops_at_a_max() -> None:
    # alpha/2^n: 0.8/2 = 0.4, 0.4/4 = 0.1, 0.3/8 = 0.0375 -> step from then on, up to A_max.
    observations = [obs(p, 4, 30_000) for p in range(5, 15)]
    decisions, state = run(ControllerState(a=0.15, n=1, prev_pending=4, prev_running=4),
                           observations)  # fmt: skip
    assert [d.new_a for d in decisions] == [
        0.55, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.95, 0.95,
    ]  # fmt: skip
    assert all(d.rule is Rule.UNDER_ALLOCATION for d in decisions)
    assert "alpha/2^n = 0.3000/2^3 = 0.0375 <= step 0.05: step" in decisions[2].reason
    assert "already at A_max 0.95: holding" in decisions[8].reason
    assert not decisions[8].changed
    assert state.n == 11


def test_over_allocation_1_sequence() -> None:
    # P 0 and R falling 12 -> 10 -> 8 -> 6: alpha = 0.8/2 = 0.4, 0.4/4 = 0.1, 0.3/8 -> step.
    observations = [obs(0, r, 20_000) for r in (10, 8, 6)]
    decisions, state = run(ControllerState(a=0.85, n=1, prev_pending=0, prev_running=12),
                           observations)  # fmt: skip
    assert [(d.rule, d.new_a) for d in decisions] == [
        (Rule.OVER_ALLOCATION_1, 0.45), (Rule.OVER_ALLOCATION_1, 0.35),
        (Rule.OVER_ALLOCATION_1, 0.3),
    ]  # fmt: skip
    assert decisions[0].reason.startswith("P 0 and R 10 < R(t-1) 12; A 0.85 -> 0.45")
    assert state == ControllerState(a=0.3, n=4, prev_pending=0, prev_running=6)


def test_over_allocation_2_sequence() -> None:
    # M_used/M_total 0.9 in (T3 0.8, T1 1.0); R 30 -> M_AMs 61440, M_tasks/M_total 0.2856 < T2.
    # P not growing (6, 6, 5). alpha = 0.6/2 = 0.3; 0.3/4 = 0.075; 0.225/8 -> step.
    observations = [obs(p, 30, 90_000) for p in (6, 6, 5)]
    decisions, state = run(ControllerState(a=0.65, n=1, prev_pending=7, prev_running=30),
                           observations)  # fmt: skip
    assert [(d.rule, d.new_a) for d in decisions] == [
        (Rule.OVER_ALLOCATION_2, 0.35), (Rule.OVER_ALLOCATION_2, 0.275),
        (Rule.OVER_ALLOCATION_2, 0.225),
    ]  # fmt: skip
    assert (
        "P 6 <= P(t-1) 7, T3 0.80 < M_used/M_total 0.90 < T1 1.00 and M_tasks/M_total 0.29 < T2"
        in decisions[0].reason
    )
    assert state.n == 4


def test_over_allocation_3_and_its_hold() -> None:
    # Memory full (>= T1 1.0). R 20: M_tasks = 100000 - 40960 -> 0.59 >= T2: hold.
    # R 40: M_tasks = 100000 - 81920 -> 0.18 < T2: decrease, alpha = 0.4/2 = 0.2 -> 0.25.
    start = ControllerState(a=0.45, n=1, prev_pending=3, prev_running=20)
    d, s = paper.decide(obs(3, 20, TOTAL), start, PAPER)
    assert (d.rule, d.new_a, s.n) == (Rule.HOLD, 0.45, 2)
    assert "M_tasks/M_total 0.59 >= T2 0.50" in d.reason
    d, s = paper.decide(obs(3, 40, TOTAL), start, PAPER)
    assert (d.rule, d.new_a, s.n) == (Rule.OVER_ALLOCATION_3, 0.25, 2)
    assert "P 3 > 0, M_used/M_total 1.00 >= T1 1.00 and M_tasks/M_total 0.18 < T2 0.50" in d.reason


def test_holds() -> None:
    start = ControllerState(a=0.3, n=3, prev_pending=5, prev_running=4)
    # P 0, R not falling.
    d, s = paper.decide(obs(0, 4, 10_000), start, PAPER)
    assert (d.rule, d.new_a, d.changed) == (Rule.HOLD, 0.3, False)
    assert d.reason == "P 0 and R 4 >= R(t-1) 4; A stays 0.3"
    # P waiting but not growing, memory below T3.
    d, s = paper.decide(obs(5, 4, 50_000), start, PAPER)
    assert d.rule is Rule.HOLD
    assert s == ControllerState(a=0.3, n=4, prev_pending=5, prev_running=4)
    # Above T3 but tasks have enough memory (R 1: M_tasks/M_total 0.88).
    d, _ = paper.decide(obs(2, 1, 90_000), start, PAPER)
    assert d.rule is Rule.HOLD
    # The paper's comparisons are strict: M_used/M_total exactly T3 is not above it ...
    d, _ = paper.decide(obs(2, 30, 80_000), start, PAPER)
    assert d.rule is Rule.HOLD
    # ... and M_tasks/M_total exactly T2 (102400 - 25 x 2048 = 51200) is not below it.
    d, _ = paper.decide(obs(2, 25, 102_400, total=102_400), start, PAPER)
    assert d.rule is Rule.HOLD


def test_negative_m_tasks_is_used_as_the_paper_computes_it() -> None:
    # R 50 -> M_AMs 102400 > M_used 85000: M_tasks/M_total -0.17 < T2 -> over-allocation-2.
    d, _ = paper.decide(obs(1, 50, 85_000), ControllerState(a=0.5, n=9, prev_pending=1), PAPER)
    assert d.rule is Rule.OVER_ALLOCATION_2
    assert "M_tasks/M_total -0.17" in d.reason


def test_unit_mb_comes_from_the_settings() -> None:
    # R 10, used 90%: unit 1024 -> M_tasks 0.6952 (hold); unit 4096 -> 0.0808 (decrease).
    start = ControllerState(a=0.5, n=9, prev_pending=1, prev_running=10)
    assert paper.decide(obs(1, 10, 90_000), start, PAPER)[0].rule is Rule.HOLD
    big = ControllerSettings(unit_mb=4096)
    assert paper.decide(obs(1, 10, 90_000), start, big)[0].rule is Rule.OVER_ALLOCATION_2


# --- documented choices -----------------------------------------------------------------------


def test_first_period_takes_the_history_as_an_idle_cluster() -> None:
    d, s = paper.decide(obs(12, 3, 41_000), ControllerState(a=0.1), PAPER)
    assert (d.rule, d.new_a) == (Rule.UNDER_ALLOCATION, 0.525)
    assert d.reason.startswith("first period, P(t-1) and R(t-1) taken as 0; P 12 > P(t-1) 0")
    assert s == ControllerState(a=0.525, n=2, prev_pending=12, prev_running=3)
    # With nothing waiting, R cannot have fallen below 0: hold.
    d, s = paper.decide(obs(0, 7, 41_000), ControllerState(a=0.4), PAPER)
    assert (d.rule, d.new_a, s.n, s.prev_running) == (Rule.HOLD, 0.4, 2, 7)


def test_n_grows_by_one_every_period_even_on_holds() -> None:
    _, state = run(ControllerState(a=0.3, n=1, prev_pending=0, prev_running=0),
                   [obs(0, 0, 0)] * 5)  # fmt: skip
    assert (state.a, state.n) == (0.3, 6)


@pytest.mark.parametrize("a", [0.1, 0.05])
def test_n_resets_when_the_cluster_drains_at_a_min(a: float) -> None:
    # R 1 -> 0 with P 0: decrease to (or stay at) A_min, then n = 1, then the period's n + 1.
    d, s = paper.decide(obs(0, 0, 0), ControllerState(a=a, n=7, prev_pending=0, prev_running=1),
                        PAPER)  # fmt: skip
    assert (d.rule, d.new_a, s.n) == (Rule.OVER_ALLOCATION_1, 0.05, 2)
    assert "R 0 at A_min: n reset to 1" in d.reason
    if a == 0.05:
        assert "already at A_min 0.05: holding" in d.reason
    # The first move after the drain is alpha/4: 0.05 + 0.9/4 = 0.275.
    d, s = paper.decide(obs(3, 0, 0), s, PAPER)
    assert (d.rule, d.new_a, s.n) == (Rule.UNDER_ALLOCATION, 0.275, 3)


def test_no_reset_without_draining_or_above_a_min() -> None:
    # R 0 but A still above A_min after the decrease (0.5 - 0.45/2^2 = 0.3875): no reset.
    _, s = paper.decide(obs(0, 0, 0), ControllerState(a=0.5, n=2, prev_running=3), PAPER)
    assert (s.a, s.n) == (0.3875, 3)
    # A reaches A_min but R is 1: no reset.
    _, s = paper.decide(obs(0, 1, 0), ControllerState(a=0.06, n=8, prev_running=3), PAPER)
    assert (s.a, s.n) == (0.05, 9)


def test_a_move_that_crosses_a_bound_is_clamped() -> None:
    # 0.93 + step 0.05 would be 0.98.
    d, _ = paper.decide(obs(9, 1, 0), ControllerState(a=0.93, n=10, prev_pending=1), PAPER)
    assert d.new_a == 0.95
    assert "clamped at A_max 0.95" in d.reason
    d, _ = paper.decide(obs(0, 1, 0), ControllerState(a=0.08, n=10, prev_running=5), PAPER)
    assert d.new_a == 0.05
    assert "clamped at A_min 0.05" in d.reason


@pytest.mark.parametrize(
    ("a", "p", "expected", "rule"),
    [
        (0.99, 0, 0.95, Rule.HOLD),  # hold still brings A into range
        (-1.0, 0, 0.05, Rule.HOLD),
        (1.0, 5, 0.95, Rule.UNDER_ALLOCATION),  # taken as A_max, already there
    ],
)
def test_a_outside_the_bounds_is_brought_back(
    a: float, p: int, expected: float, rule: Rule
) -> None:
    d, s = paper.decide(obs(p, 2, 0), ControllerState(a=a, n=3, prev_pending=1, prev_running=2),
                        PAPER)  # fmt: skip
    assert (d.old_a, d.new_a, d.rule, s.a) == (a, expected, rule, expected)
    assert f"A {a:.4g} outside [A_min 0.05, A_max 0.95], taken as {expected:.4g}; " in d.reason


def test_a_is_rounded_to_four_decimals() -> None:
    # 0.25 + 0.05 is 0.30000000000000004 in binary floating point.
    d, _ = paper.decide(obs(2, 0, 0), ControllerState(a=0.25, n=30, prev_pending=1), PAPER)
    assert repr(d.new_a) == "0.3"


def test_n_far_beyond_float_range_does_not_overflow() -> None:
    d, s = paper.decide(obs(2, 0, 0), ControllerState(a=0.5, n=100_000, prev_pending=1), PAPER)
    assert (d.new_a, s.n) == (0.55, 100_001)
    assert "= 0.0000 <= step 0.05: step" in d.reason


def test_named_target_uses_cluster_wide_figures() -> None:
    # The queue itself has nothing waiting; the cluster has 12 apps waiting.
    o = Observation(
        time=0.0, scheduler=SchedulerKind.FAIR, pending_apps=12, running_apps=3,
        memory_used_mb=41_000, memory_total_mb=TOTAL,
        queues=(QueueStats("root.a", pending_apps=0, running_apps=0, memory_used_mb=0),),
    )  # fmt: skip
    state = ControllerState(a=0.1, n=1, prev_pending=9, prev_running=3)
    named, named_state = paper.decide(o, state, PAPER, "root.a")
    cluster, cluster_state = paper.decide(o, state, PAPER, GLOBAL_TARGET)
    assert (named.target, cluster.target) == ("root.a", GLOBAL_TARGET)
    assert (named.rule, named.new_a, named.reason) == (cluster.rule, 0.525, cluster.reason)
    assert named_state == cluster_state


def test_zero_total_memory_is_refused() -> None:
    with pytest.raises(ValueError, match="M_total must be positive, got 0"):
        paper.decide(obs(1, 1, 0, total=0), ControllerState(a=0.5), PAPER)


def test_extra_is_carried_over_as_a_copy() -> None:
    state = ControllerState(a=0.5, extra={"k": 1.0})
    _, new = paper.decide(obs(0, 0, 0), state, PAPER)
    assert new.extra == {"k": 1.0}
    assert new.extra is not state.extra


def test_get_policy() -> None:
    assert get_policy("paper") is paper.decide
    known = r"unknown controller policy 'zhang'; known: adaptive, paper"
    with pytest.raises(ValueError, match=known):
        get_policy("zhang")
    assert set(POLICIES) == set(get_args(PolicyName))


# --- properties -------------------------------------------------------------------------------


@st.composite
def settings_st(draw: st.DrawFn) -> ControllerSettings:
    # Bounds as the config admits them: values A can hold (4 decimals).
    a_min = draw(st.integers(0, 5000)) / 10**4
    a_max = draw(st.integers(round(a_min * 10**4) + 100, 10**4)) / 10**4
    step = draw(st.floats(0.001, a_max - a_min))
    t1 = draw(st.floats(0.05, 1.0))
    t3 = draw(st.floats(0.01, t1 - 0.01))
    return ControllerSettings(
        t1=t1, t2=draw(st.floats(0.01, 1.0)), t3=t3, step=step, a_min=a_min, a_max=a_max,
        unit_mb=draw(st.integers(128, 8192)),
    )  # fmt: skip


@st.composite
def case_st(
    draw: st.DrawFn, inside: bool = True
) -> tuple[Observation, ControllerState, ControllerSettings]:
    s = draw(settings_st())
    a = draw(st.floats(s.a_min, s.a_max) if inside else st.floats(-1.0, 2.0))
    total = draw(st.integers(1, 10**7))
    o = obs(
        p=draw(st.integers(0, 60)),
        r=draw(st.integers(0, 60)),
        used=draw(st.integers(0, total)),
        total=total,
    )
    state = ControllerState(
        a=a,
        n=draw(st.integers(1, 3000)),
        prev_pending=draw(st.none() | st.integers(0, 60)),
        prev_running=draw(st.none() | st.integers(0, 60)),
    )
    return o, state, s


def oracle_rule(o: Observation, state: ControllerState, s: ControllerSettings) -> Rule:
    """Algorithm 1's branches, written out again from the paper."""
    prev_p = state.prev_pending or 0
    prev_r = state.prev_running or 0
    used = o.memory_used_mb / o.memory_total_mb
    tasks = (o.memory_used_mb - o.running_apps * s.unit_mb * 2) / o.memory_total_mb
    if o.pending_apps == 0:
        return Rule.OVER_ALLOCATION_1 if o.running_apps < prev_r else Rule.HOLD
    if used < s.t1:
        if o.pending_apps > prev_p:
            return Rule.UNDER_ALLOCATION
        if used > s.t3 and tasks < s.t2:
            return Rule.OVER_ALLOCATION_2
        return Rule.HOLD
    return Rule.OVER_ALLOCATION_3 if tasks < s.t2 else Rule.HOLD


@given(case_st(inside=False))
def test_a_always_ends_inside_the_bounds(
    case: tuple[Observation, ControllerState, ControllerSettings],
) -> None:
    o, state, s = case
    d, new = paper.decide(o, state, s, GLOBAL_TARGET)
    assert s.a_min <= d.new_a <= s.a_max
    assert new.a == d.new_a
    assert d.old_a == state.a


@given(case_st())
def test_rule_and_direction_follow_algorithm_1(
    case: tuple[Observation, ControllerState, ControllerSettings],
) -> None:
    o, state, s = case
    d, _ = paper.decide(o, state, s, GLOBAL_TARGET)
    assert d.rule is oracle_rule(o, state, s)
    if d.rule is Rule.HOLD:
        assert d.new_a == d.old_a
    elif d.rule is Rule.UNDER_ALLOCATION:
        assert d.new_a > d.old_a or d.old_a == s.a_max
    else:
        assert d.new_a < d.old_a or d.old_a == s.a_min


@given(case_st())
def test_step_is_alpha_over_2_to_the_n_or_step_or_clamped(
    case: tuple[Observation, ControllerState, ControllerSettings],
) -> None:
    o, state, s = case
    d, _ = paper.decide(o, state, s, GLOBAL_TARGET)
    assume(d.rule is not Rule.HOLD)
    up = d.rule is Rule.UNDER_ALLOCATION
    bound = s.a_max if up else s.a_min
    alpha = abs(bound - state.a)
    halved = math.ldexp(alpha, -state.n)
    expected = halved if halved > s.step else s.step
    if state.a == bound:
        assert d.new_a == state.a
    elif expected > alpha:  # the move would cross the bound
        assert d.new_a == bound
    else:
        # Rounding to 4 decimals moves A by at most 0.00005; a bound may cut that short too.
        assert abs(abs(d.new_a - d.old_a) - expected) <= 5e-5 + 1e-12
    assert d.new_a == round(d.new_a, 4) or d.new_a == bound


@given(case_st(inside=False))
def test_decide_is_deterministic_and_leaves_its_inputs_alone(
    case: tuple[Observation, ControllerState, ControllerSettings],
) -> None:
    o, state, s = case
    before = ControllerState(state.a, state.n, state.prev_pending, state.prev_running)
    first = paper.decide(o, state, s, "root.q")
    assert paper.decide(o, state, s, "root.q") == first
    assert state == before


@given(case_st(inside=False))
def test_n_grows_by_one_except_on_a_reset(
    case: tuple[Observation, ControllerState, ControllerSettings],
) -> None:
    o, state, s = case
    d, new = paper.decide(o, state, s, GLOBAL_TARGET)
    reset = d.rule is Rule.OVER_ALLOCATION_1 and o.running_apps == 0 and d.new_a == s.a_min
    assert new.n == (2 if reset else state.n + 1)
    assert (new.prev_pending, new.prev_running) == (o.pending_apps, o.running_apps)
    assert "\n" not in d.reason
