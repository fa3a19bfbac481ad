"""Guard rails between the controller's wish and the scheduler file.

The controller is the paper's algorithm and nothing else; what an operator adds around any
automatic change lives here, as pure functions of values: a largest step per cycle, a hold-off
after a change (the RM needs time to reload and the cluster to react before the next
observation means anything), and a pause switch.
"""

from __future__ import annotations

from dataclasses import replace

from amtuner.config import GuardSettings
from amtuner.model import ControllerState, Decision, Observation, Rule

CHANGED_AT = "changed_at"
"""Key in ControllerState.extra: time of the last applied change for this target."""


def paused(settings: GuardSettings) -> bool:
    return settings.pause_file is not None and settings.pause_file.exists()


def apply(
    decision: Decision,
    before: ControllerState,
    after: ControllerState,
    obs: Observation,
    settings: GuardSettings,
) -> tuple[Decision, ControllerState]:
    """Return the decision and state to act on. A held-off change keeps the old A and n (the
    bisection did not move) but remembers this period's P and R."""
    if not decision.changed:
        return decision, after
    changed_at = before.extra.get(CHANGED_AT)
    if changed_at is not None and obs.time - changed_at < settings.hold_off_seconds:
        held = Decision(
            old_a=decision.old_a,
            new_a=decision.old_a,
            rule=Rule.HOLD,
            reason=f"hold-off: last change {obs.time - changed_at:.0f} s ago < "
            f"{settings.hold_off_seconds:g} s ({decision.rule} wanted "
            f"{decision.old_a:g} -> {decision.new_a:g})",
            target=decision.target,
        )
        state = replace(before, prev_pending=after.prev_pending, prev_running=after.prev_running)
        return held, state
    delta = decision.new_a - decision.old_a
    limit = settings.max_change_per_cycle
    if abs(delta) <= limit + 1e-12:
        return decision, after
    new_a = round(decision.old_a + (limit if delta > 0 else -limit), 4)
    clipped = replace(
        decision,
        new_a=new_a,
        reason=f"{decision.reason}; clipped to guard.max_change_per_cycle {limit:g}",
    )
    return clipped, replace(after, a=new_a)


def mark_changed(state: ControllerState, when: float) -> ControllerState:
    return replace(state, extra={**state.extra, CHANGED_AT: when})
