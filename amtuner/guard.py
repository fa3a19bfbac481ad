"""Guard rails between the controller's wish and the scheduler file.

The controller is the paper's algorithm and nothing else; what an operator adds around any
automatic change lives here, as pure functions of values: a largest step per cycle, a hold-off
after a change (the RM needs time to reload and the cluster to react before the next
observation means anything), a floor under A where a FairScheduler would admit no AM at all,
no raise while every waiting app is held by a limit A is not part of (`amtuner.cures`) and none
past what admits the apps the AM limit holds where a running-apps limit holds the rest, no
lowering that holds none of a FairScheduler's full cluster's waiting apps either, and a pause
switch.
"""

from __future__ import annotations

import math
from dataclasses import replace

from amtuner import cures
from amtuner.config import GuardSettings
from amtuner.model import (
    ControllerState,
    Decision,
    Observation,
    Rule,
    SchedulerKind,
    WaitCause,
    round_a,
)

CHANGED_AT = "changed_at"
"""Key in ControllerState.extra: time of the last applied change for this target."""


def paused(settings: GuardSettings) -> bool:
    return settings.pause_file is not None and settings.pause_file.exists()


def am_floor(obs: Observation, target: str, am_mb: int) -> float:
    """The smallest A whose AM limit still holds one AM of ``am_mb``.

    A FairScheduler admits no AM over maxAMShare x fair share (yarn-facts §2.1), so below this
    value no job can start; nothing then finishes, P stops growing, and the paper's controller,
    which only raises A when P grows, would never raise it again. A CapacityScheduler always
    admits a queue's first AM, so it needs no floor."""
    if obs.scheduler is not SchedulerKind.FAIR:
        return 0.0
    queue = obs.queue(target) if target else None
    share = (queue.memory_share_mb if queue else None) or obs.memory_total_mb
    return min(1.0, math.ceil(am_mb / share * 10_000) / 10_000)


def held_off(changed_at: float, now: float, hold_off_s: float) -> bool:
    """Whether a change at ``changed_at`` still holds a new one off at ``now``.

    Both are wall-clock times (the state file carries ``changed_at`` across restarts and between
    `run` and `once`, which no monotonic clock does). A clock stepped back makes the age
    negative: that is treated as expired, or the hold-off would last until the clock caught up
    again (hours, after an NTP step or a wrong RTC at boot)."""
    return 0 <= now - changed_at < hold_off_s


def apply(
    decision: Decision,
    before: ControllerState,
    after: ControllerState,
    obs: Observation,
    settings: GuardSettings,
    am_mb: int = 2048,
) -> tuple[Decision, ControllerState]:
    """Return the decision and state to act on. A held-off change keeps the old A and n (the
    bisection did not move) but remembers this period's P and R."""
    floor = am_floor(obs, decision.target, am_mb)
    if decision.new_a < floor and decision.new_a < decision.old_a:
        new_a = min(decision.old_a, floor)
        decision = replace(
            decision,
            new_a=new_a,
            reason=f"{decision.reason}; kept at {new_a:g}, the least A that admits one "
            f"{am_mb} MB AM",
        )
        after = replace(after, a=new_a)
    if not decision.changed:
        return decision, after
    changed_at = before.extra.get(CHANGED_AT)
    if changed_at is not None and held_off(changed_at, obs.time, settings.hold_off_seconds):
        why = f"hold-off: last change {obs.time - changed_at:.0f} s ago < "
        return _held(decision, before, after, f"{why}{settings.hold_off_seconds:g} s")
    if decision.new_a > decision.old_a and cures.a_cures_none(
        obs, decision.target, decision.old_a, am_mb
    ):
        records = cures.wait_records(obs, decision.target)
        why = f"A cures none of the waits: {cures.describe(records)}"
        return _held(decision, before, after, why)
    if decision.new_a > decision.old_a:
        decision, after = _only_what_a_cures(decision, after, obs, am_mb)
    elif cures.lowering_moot(obs, decision.target, decision.new_a, am_mb):
        records = cures.wait_records(obs, decision.target)
        why = f"{decision.new_a:g} holds none of the waits either: {cures.describe(records)}"
        return _held(decision, before, after, why)
    delta = decision.new_a - decision.old_a
    limit = settings.max_change_per_cycle
    if abs(delta) <= limit + 1e-12:
        return decision, after
    new_a = round_a(decision.old_a + (limit if delta > 0 else -limit))
    clipped = replace(
        decision,
        new_a=new_a,
        reason=f"{decision.reason}; clipped to guard.max_change_per_cycle {limit:g}",
    )
    return clipped, replace(after, a=new_a)


def _only_what_a_cures(
    decision: Decision, after: ControllerState, obs: Observation, am_mb: int
) -> tuple[Decision, ControllerState]:
    """A raise goes no further than admits the apps the queue AM limit holds (or may hold),
    where a running-apps limit holds the rest (`cures.a_admitting_curable`)."""
    cap = cures.a_admitting_curable(obs, decision.target, decision.old_a, am_mb)
    if cap is None or decision.new_a <= cap:
        return decision, after
    new_a = max(cap, decision.old_a)
    waits = obs.waits_for(decision.target)
    may = cures.am_limits_may_hold(obs.scheduler)
    rest = [w for w in waits if w.cause in may and w.queue]
    holds = "may hold" if any(w.cause is WaitCause.CLUSTER_FULL for w in rest) else "holds"
    apps = sum(w.apps for w in rest)
    why = (
        f"{decision.reason}; kept at {new_a:g}, which admits the {apps} apps the AM limit"
        f" {holds}: the running-apps limit holds the rest whatever A"
    )
    return replace(decision, new_a=new_a, reason=why), replace(after, a=new_a)


def _held(
    decision: Decision, before: ControllerState, after: ControllerState, why: str
) -> tuple[Decision, ControllerState]:
    """Keep A and n (the bisection did not move) but remember this period's P and R."""
    held = Decision(
        old_a=decision.old_a,
        new_a=decision.old_a,
        rule=Rule.HOLD,
        reason=f"{why} ({decision.rule} wanted {decision.old_a:g} -> {decision.new_a:g})",
        target=decision.target,
    )
    return held, replace(before, prev_pending=after.prev_pending, prev_running=after.prev_running)


def mark_changed(state: ControllerState, when: float) -> ControllerState:
    return replace(state, extra={**state.extra, CHANGED_AT: when})
