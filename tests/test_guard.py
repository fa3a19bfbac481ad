"""Guard rails between the controller's wish and the file: pure functions, checked by hand."""

from __future__ import annotations

from pathlib import Path

from amtuner import guard
from amtuner.config import GuardSettings
from amtuner.model import ControllerState, Decision, Observation, Rule, SchedulerKind

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
    d, state = guard.apply(
        decision(0.1, 0.525), ControllerState(a=0.1), after, OBS, GuardSettings()
    )
    assert d.new_a == 0.3 and state.a == 0.3 and state.n == 2
    assert "clipped to guard.max_change_per_cycle 0.2" in d.reason
    down, _ = guard.apply(
        decision(0.9, 0.3), ControllerState(a=0.9), after, OBS, GuardSettings()
    )
    assert down.new_a == 0.7


def test_hold_off_keeps_a_and_n_but_remembers_p_and_r() -> None:
    before = guard.mark_changed(ControllerState(a=0.3, n=4, prev_pending=2), 990.0)
    after = ControllerState(a=0.4, n=5, prev_pending=5, prev_running=3, extra=before.extra)
    d, state = guard.apply(decision(0.3, 0.4), before, after, OBS, GuardSettings())
    assert d.rule is Rule.HOLD and d.new_a == 0.3
    assert "hold-off: last change 10 s ago < 25 s" in d.reason
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
