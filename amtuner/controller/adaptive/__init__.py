"""The adaptive policy: the paper's loop (T2, alpha/2^n), rebuilt on what the RM measures.

Pure like the paper's (no I/O, no clock, no logging); one call is one control period. `decide`
reads the period's figures (`figures`: shares of the target's own denominator, in whole AMs),
asks the rules of `RULES` in order for a verdict, and turns the first into a move in stages: a
second reversal in a row waits for confirmation, the depth of the search (`_depth`), the step
(`figures.move`, over the leaves a global CapacityScheduler value caps at once), whole AMs
(`_whole_ams`), on a FairScheduler whose limit counts the vcores free the first look's A at
the top of its band of whole AMs (`rules.blind`), and on a CapacityScheduler no raise past
1 - aim where a user's AM limit holds apps (`_within_users_limits`) and the half of the first
look's step held back until the jobs it admitted show their size (`_held_back`, `_give_back`).
Each rule's docstring (`rules`) says why it is there; `Case` names them in decisions, metrics
and status. A stays in [a_min, a_max] with at most DECIMALS decimals; what the policy carries
between periods is `Memory`.

The rules, as one line each (A only gates apps that have not started; it never stops a running
AM): idle at start-up, set 1 - T2; nothing waits, hold; new jobs arriving into short jobs on a
FairScheduler, down to 1 - T2; room while apps wait, raise (unless every waiting AM fits, the
last raise has not shown, or the running apps are in their tail: then one AM after the room
shows twice); between ROOMY and FULL, hold;
full on a FairScheduler held by a few large jobs, raise; full while apps wait, lower straight to
where tasks keep their aim (`task_aim`: T2 for the paper's jobs, more for AMs smaller than two
tasks and, on a CapacityScheduler, for jobs with more work behind each AM; on memory, and not
below the AMs that run, where jobs run in waves under a limit that counts the vcores free,
unless those AMs outnumber their tasks)
unless they already do, AM use is still over A, jobs are short, or A is at the goal. The law's
reasons and measurements: docs/policies.md.
"""

from __future__ import annotations

from amtuner.config import ControllerSettings
from amtuner.controller.adaptive.cases import RULE_OF, Case
from amtuner.controller.adaptive.figures import DECIMALS, move, task_aim
from amtuner.controller.adaptive.rules import (
    FULL,
    ROOMY,
    RULES,
    Memory,
    Period,
    blind,
    period,
)
from amtuner.model import GLOBAL_TARGET, ControllerState, Decision, Observation, Rule, round_a

__all__ = ["DECIMALS", "FULL", "ROOMY", "RULES", "Case", "Memory", "decide", "task_aim"]


def _prefix(p: Period, state: ControllerState) -> str:
    prefix = "" if p.f.measured else "AM use estimated as R x unit x 2; "
    if p.a != state.a:
        prefix += f"A {state.a:.6g} taken as {p.a:.4g} (bounds, {DECIMALS} decimals); "
    if p.burst:
        prefix += (
            "first period: widest step; "
            if p.first
            else f"backlog jumped {p.prev_pending} -> {p.f.pending}: widest step; "
        )
    return prefix


def _depth(p: Period, n: int, want: int, reversal: bool) -> int:
    """n is a search depth, not a clock: a reversal (the last move overshot) deepens it; a
    second move the same way after a non-reversal makes it shallower (the optimum is further
    than thought); a backlog jump resets it to 1 (`decide`): a new workload, a new search. So
    the loop keeps the reach to follow a workload that changes, which the paper's ever-growing
    n loses after a few periods."""
    if p.burst and p.f.running == 0 and (p.f.am + p.f.am_per_app) * p.f.to_a <= p.a:
        # Nothing runs yet and A has room for the next AM: A is untried. Job sizes are
        # unknown, and AMs admitted in excess are not preempted, so probe half as far.
        return 2
    if reversal and not p.burst:  # after a burst n stays 1: a new search
        return n + 1
    if p.memory.last_move == want and not p.burst and not p.memory.reversed:
        return max(1, n - 1)
    return n


def _whole_ams(p: Period, new_a: float, move: str) -> tuple[float, str]:
    """A raise admits whole AMs: at least one more (a step smaller than an AM would admit
    none, and the next period would wait for AM use that cannot grow), and where rounding the
    limit up admits an AM the step does not cover (1-vcore AMs), only the AMs the step covers."""
    f = p.f
    whole = max(f.ams_within(new_a), f.ams_admitted(p.a) + 1)
    snapped = min(f.a_for(whole), p.settings.a_max)
    if f.ams_admitted(new_a) != whole and snapped > p.a:
        return snapped, move + f"; {whole} whole AMs"
    return new_a, move


def _held_back(p: Period, new_a: float) -> float | None:
    """The first look is blind: it has seen how many apps wait, not how large they are, and
    its step assumes jobs like those T2 was set for. An AM admitted in excess holds its memory
    for its job's whole life, while one held back costs a period: so on a CapacityScheduler
    the first raise commits half the AMs its step covers (a bisection in whole AMs, at least
    one), and `_give_back` adds the rest at the first period that sees apps waiting, once the
    admitted jobs have shown their size. On a FairScheduler the first write already lands
    after the AMs its old value admits (its allocation-file poll, 5-15 s after the write). The
    A of the half, or None."""
    if not (p.first and p.capacity and new_a > p.a):
        return None
    now = p.f.ams_admitted(p.a)
    half = p.f.a_for(now + max(1, (p.f.ams_of(new_a) - now) // 2))
    return half if half < new_a else None


def _within_users_limits(p: Period, new_a: float) -> float | None:
    """A user's AM limit is about A times its user limit, and its tasks get no more than
    that limit either (`Figures.users_hold`): within it AMs and tasks share one limit, as the
    paper's share the cluster. So on a CapacityScheduler whose apps a user's AM limit holds, a
    raise stops at 1 - aim, where that user's tasks keep their aim of its limit once its AMs
    fill theirs. The cluster's room says nothing of it: a user cannot borrow past its limit,
    and where its AMs fill it no task of that user's runs, a wait no lower A undoes (an
    admitted AM is not taken back). The A of the cap, or None."""
    if not (p.capacity and p.f.users_hold and new_a > p.a):
        return None
    cap = max(p.a, round_a(1 - p.aim))
    return cap if cap < new_a else None


def _give_back(p: Period, want: int, new_a: float) -> float | None:
    """The rest of the first look's step (`_held_back`), added at the first period since that
    sees apps waiting, when the jobs it admitted have no more work behind each AM than the
    jobs its step assumed (`Figures.work`; the CapacityScheduler's asks reach the RM once an
    AM runs) and this period does not lower A. Larger jobs want fewer AMs than the blind step
    covered: the search goes on from the half. The A with the rest, or None."""
    held_to = p.memory.held_to
    if not (held_to and p.f.pending and want >= 0 and p.f.work <= 1):
        return None
    return held_to if held_to > new_a else None


def decide(
    obs: Observation,
    state: ControllerState,
    settings: ControllerSettings,
    target: str = GLOBAL_TARGET,
) -> tuple[Decision, ControllerState]:
    """One control period; pure (no I/O, no clock, no logging): the first rule of RULES with a
    verdict, then the stages that turn it into a move. A reversal right after a reversal needs
    the same signal twice, so inputs that alternate cannot make A go up, down, up in
    consecutive periods; then the search depth, the step, and whole AMs."""
    p = period(obs, state, settings, target)
    a, memory = p.a, p.memory
    proposal = next(v for rule in RULES if (v := rule(p)) is not None)
    case, want = proposal.case, proposal.want
    n = 1 if p.burst else max(1, state.n)
    new_a, how = a, f"A stays {a:.4g}"
    last_move, reversed_, wanted = memory.last_move, memory.reversed, 0
    if proposal.set_to is not None:
        new_a, how = proposal.set_to, f"A {a:.4g} -> {proposal.set_to:.4g} (set, not searched)"
    elif want:
        reversal = memory.last_move != 0 and want != memory.last_move
        if reversal and memory.reversed and memory.wanted != want:
            case, wanted = Case.REVERSAL_UNCONFIRMED, want
            how = f"A stays {a:.4g} (second reversal in a row: waiting one period to confirm)"
        else:
            n = _depth(p, n, want, reversal)
            new_a, how_far = move(a, n, want > 0, proposal.cap, settings, p.f.gain)
            if want > 0 and new_a > a:
                new_a, how_far = _whole_ams(p, new_a, how_far)
            if (within := _within_users_limits(p, new_a)) is not None:
                how_far += f"; a user's AM limit holds apps: at most 1 - aim = {within:.4g}"
                case = case if within > a else Case.USERS_LIMIT
                new_a = within
            how = f"A {a:.4g} -> {new_a:.4g} ({how_far})"
            if new_a != a:
                last_move, reversed_ = want, reversal
    if p.first and new_a >= a and (top := blind(p.f, new_a, settings)) > new_a:
        how += f"; first look: A {top:.4g}, the top of its band of whole AMs"
        case = case if new_a > a else Case.TOP_OF_BAND
        new_a = top
    held_to = memory.held_to if not p.f.pending else 0.0
    if (short := _held_back(p, new_a)) is not None:
        how += f"; first look: half its AMs, A {short:.4g} until apps are seen"
        new_a, held_to = short, new_a
    elif (back := _give_back(p, want, new_a)) is not None:
        how += f"; with the rest of the first look's step: A {back:.4g}"
        case, new_a = Case.HELD_BACK, back
        last_move, reversed_ = 1, memory.last_move < 0
    rule = RULE_OF.get(case, Rule.HOLD)
    if case is Case.IDLE_START and p.start <= a:
        rule = Rule.OVER_ALLOCATION_3
    figures = (
        f"P {p.f.pending}, used {p.f.used:.2f}, AM {p.f.am:.2f}, tasks {p.f.tasks:.2f}, "
        f"next AM {p.f.am_per_app:.3f}"
    )
    if p.f.waiting:
        figures += f", tasks asked for {p.f.waiting:.2f}"
    if p.f.reserved:
        figures += f", reserved {p.f.reserved:.2f}"
    decision = Decision(
        old_a=state.a,
        new_a=new_a,
        rule=rule,
        reason=f"{_prefix(p, state)}{figures}: {proposal.why}; {how}",
        target=target,
        case=case.value,
    )
    remembered = Memory(
        had_room=p.f.pending > 0 and p.f.claimed < ROOMY,
        raised=new_a > a,
        am_seen=p.f.am,
        last_move=last_move,
        reversed=reversed_,
        wanted=wanted,
        short=p.was_short,
        held_to=held_to,
        burst=p.burst,
    )
    new_state = ControllerState(
        a=new_a,
        n=n,
        prev_pending=p.f.pending,
        prev_running=p.f.running,
        extra={**state.extra, **remembered.extra()},
    )
    return decision, new_state
