"""The paper's controller (Lian & Liu 2020, Algorithms 1-3), as a pure function.

One call is one control period t. Inputs are P (apps waiting), R (apps running), M_used and
M_total from the observation, and the paper's estimates M_AMs = R x unit_mb x 2 (eq. 1) and
M_tasks = M_used - M_AMs (eq. 2; may go negative when the estimate overshoots, and is used as is,
as in the paper).

Algorithm 1 is followed branch for branch:

    if P == 0:
        if R(t) < R(t-1): decrease               -> over-allocation-1
            if R == 0 and A == A_min: n = 1
    elif M_used/M_total < T1:
        if P(t) > P(t-1): increase               -> under-allocation
        elif M_used/M_total > T3 and M_tasks/M_total < T2: decrease   -> over-allocation-2
    elif M_tasks/M_total < T2: decrease          -> over-allocation-3
    n = n + 1

and every other path is ``hold``. Where the paper is silent or ambiguous, this module decides:

* **n = n + 1 runs every period**, after the if, whatever fired (holds included), as in the
  pseudo-code. So the step size keeps shrinking while nothing happens, which is the paper's
  known weakness and is kept on purpose: this policy is the paper's.
* **The reset** happens only on the over-allocation-1 path, when after the decrease R == 0 and
  A == A_min (also when A already sat at A_min). It writes n = 1 and the period's n = n + 1
  still follows, so the state leaves with **n = 2**: the first move after a drain is α/4, not α/2.
* **First period** (no P(t-1), R(t-1) in the state): the history is taken as an idle cluster,
  P(t-1) = 0 and R(t-1) = 0, which is how the paper's experiment starts (the loop runs before
  the jobs are submitted). So a first period with jobs waiting and memory below T1 raises A, and
  over-allocation-1 cannot fire on a first period (R < 0 is impossible).
* **Step** (Algorithms 2, 3): the move is α/2^n when that is larger than ``step``, else ``step``
  (α = distance to the bound). Computed with ``ldexp`` so a daemon whose n has grown past 1023
  after a few hours does not overflow.
* **Bounds**: a move that would cross A_min or A_max stops at the bound ("clamped at A_max");
  when A already is at the bound the rule still names the case that fired, but A does not move
  and the reason says "already at A_max: holding". A stays in [A_min, A_max] always: an A read
  from the file outside that range is first taken as the nearest bound (and the reason says so),
  so the decision brings it back in even on a hold. A caller with FairScheduler's maxAMShare -1
  (no limit) should pass 1.0.
* **Rounding**: the new A is rounded to 4 decimals (then kept inside the bounds), so scheduler
  files read 0.3, never 0.30000000000000004.
* **Named targets**: the paper has one global A. For a named queue this policy still reads the
  cluster-wide P, R, M_used and M_total (the paper's figures); only A, n and the history are the
  target's own (one ControllerState per target), so queues that start at different A move in
  step from their own values.
"""

from __future__ import annotations

import math

from amtuner.config import ControllerSettings
from amtuner.model import GLOBAL_TARGET, ControllerState, Decision, Observation, Rule, round_a


def _move(a: float, n: int, up: bool, settings: ControllerSettings) -> tuple[float, str]:
    """Algorithm 2 (up) or 3 (down) from A, kept inside the bounds; returns (new A, how)."""
    bound, name = (settings.a_max, "A_max") if up else (settings.a_min, "A_min")
    if a == bound:
        return a, f"already at {name} {bound:.4g}: holding"
    alpha = abs(bound - a)
    halved = math.ldexp(alpha, -n)
    how = f"alpha/2^n = {alpha:.4f}/2^{n} = {halved:.4f}"
    if halved > settings.step:
        delta, how = halved, f"{how} > step {settings.step:.4g}"
    else:
        delta, how = settings.step, f"{how} <= step {settings.step:.4g}: step"
    rounded = round_a(a + delta if up else a - delta)
    new = min(rounded, settings.a_max) if up else max(rounded, settings.a_min)
    if new != rounded:
        how += f", clamped at {name} {bound:.4g}"
    return new, how


def decide(
    obs: Observation,
    state: ControllerState,
    settings: ControllerSettings,
    target: str = GLOBAL_TARGET,
) -> tuple[Decision, ControllerState]:
    """One control period of the paper's Algorithm 1; pure (no I/O, no clock, no logging)."""
    if obs.memory_total_mb <= 0:
        raise ValueError(f"M_total must be positive, got {obs.memory_total_mb}")
    p, r = obs.pending_apps, obs.running_apps
    prev_p = 0 if state.prev_pending is None else state.prev_pending
    prev_r = 0 if state.prev_running is None else state.prev_running
    used = obs.memory_used_mb / obs.memory_total_mb
    m_ams = r * settings.unit_mb * 2
    tasks = (obs.memory_used_mb - m_ams) / obs.memory_total_mb
    t1, t2, t3 = settings.t1, settings.t2, settings.t3

    a = min(max(state.a, settings.a_min), settings.a_max)
    prefix = "first period, P(t-1) and R(t-1) taken as 0; " if state.prev_pending is None else ""
    if a != state.a:
        prefix += (
            f"A {state.a:.4g} outside [A_min {settings.a_min:.4g}, A_max {settings.a_max:.4g}], "
            f"taken as {a:.4g}; "
        )

    up: bool | None = None  # None = hold
    n = state.n
    if p == 0:
        if r < prev_r:
            rule, up = Rule.OVER_ALLOCATION_1, False
            why = f"P 0 and R {r} < R(t-1) {prev_r}"
        else:
            rule = Rule.HOLD
            why = f"P 0 and R {r} >= R(t-1) {prev_r}"
    elif used < t1:
        if p > prev_p:
            rule, up = Rule.UNDER_ALLOCATION, True
            why = f"P {p} > P(t-1) {prev_p} and M_used/M_total {used:.2f} < T1 {t1:.2f}"
        elif used > t3 and tasks < t2:
            rule, up = Rule.OVER_ALLOCATION_2, False
            why = (
                f"P {p} <= P(t-1) {prev_p}, T3 {t3:.2f} < M_used/M_total {used:.2f} < T1 {t1:.2f}"
                f" and M_tasks/M_total {tasks:.2f} < T2 {t2:.2f}"
            )
        else:
            rule = Rule.HOLD
            why = (
                f"P {p} <= P(t-1) {prev_p}, M_used/M_total {used:.2f} < T1 {t1:.2f}, not both "
                f"M_used/M_total > T3 {t3:.2f} and M_tasks/M_total {tasks:.2f} < T2 {t2:.2f}"
            )
    elif tasks < t2:
        rule, up = Rule.OVER_ALLOCATION_3, False
        why = (
            f"P {p} > 0, M_used/M_total {used:.2f} >= T1 {t1:.2f}"
            f" and M_tasks/M_total {tasks:.2f} < T2 {t2:.2f}"
        )
    else:
        rule = Rule.HOLD
        why = (
            f"P {p} > 0, M_used/M_total {used:.2f} >= T1 {t1:.2f}"
            f" and M_tasks/M_total {tasks:.2f} >= T2 {t2:.2f}"
        )

    if up is None:
        new_a, how = a, f"A stays {a:.4g}"
    else:
        new_a, move = _move(a, n, up, settings)
        how = f"A {a:.4g} -> {new_a:.4g} ({move})"
        if rule is Rule.OVER_ALLOCATION_1 and r == 0 and new_a == settings.a_min:
            n = 1
            how += "; R 0 at A_min: n reset to 1"
    n += 1

    decision = Decision(
        old_a=state.a,
        new_a=new_a,
        rule=rule,
        reason=f"{prefix}{why}; {how}",
        target=target,
    )
    new_state = ControllerState(
        a=new_a, n=n, prev_pending=p, prev_running=r, extra=dict(state.extra)
    )
    return decision, new_state
