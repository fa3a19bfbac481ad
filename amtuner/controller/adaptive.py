"""The adaptive policy: the paper's loop, rebuilt on what the RM measures.

Pure like the paper's (no I/O, no clock, no logging); one call is one control period. The law,
and why each part is there:

* **Figures.** Shares of the target's own denominator: a named queue uses its own P, R, used
  and AM-used against ``memory_share_mb`` (CS effective max capacity, FS fair share), the
  scheduler-wide value the cluster's. AM use is what the RM measures; the paper's R x unit x 2
  only where the RM does not say. Each share is taken per resource (memory, and vcores where
  reported and the scheduler counts them) and the resource used most counts, as the
  DominantResourceCalculator does. A CapacityScheduler with the default calculator counts one
  vcore per container whatever it asked for and places by memory alone: its vcore figures can
  pass the cluster's total, and counting them would call a half-empty cluster full.
* **A is counted in whole AMs, by each AM's own larger share.** The AM limit admits an AM when
  it fits in every resource the scheduler counts, so A is worth as many AMs as its scarcest
  resource holds: 2 GB, 1 vcore AMs on nodes short of vcores fill A by memory while tasks run
  out of vcores, and a goal read in vcores is converted before it is written. Both schedulers
  round the limit up (to a MB, a vcore, or the minimum allocation): where a unit is a whole AM
  (1-vcore AMs) an A a hair above k AMs admits k + 1. So goals are whole AMs written half a unit
  under, a raise whose rounding would admit an AM more than its step covers is trimmed to the
  AMs the step covers, and a raise smaller than an AM is widened to one.
* **A only gates apps that have not started**; it never stops a running AM. With nothing
  waiting A binds nobody: hold.
* **Idle at start-up: A is set to 1 - T2**, the largest A at which tasks keep T2 once AMs fill
  it. The loop has seen nothing yet, and the value on disk may be far off either way (the
  CapacityScheduler's 0.1 holds most workloads back for a whole period when their jobs arrive
  between two cycles). Set, not searched: the search starts at the first burst. Idle later on,
  A is kept: it is what the loop learned about this cluster's jobs.
* **Room (used < ROOMY) while apps wait: raise**, by the paper's ``alpha / 2^n`` (at least
  ``step``). Not when every waiting app's AM fits under A anyway (A holds nobody back: one
  arrival of a trickle). Not when the last period raised and AM use has not grown since: the RM
  has not loaded the value yet (FairScheduler: 5-15 s) or the AMs are starting, and raising
  again would overshoot. When the running apps hold more as AMs than as tasks they are mostly in
  their tail (a batch of similar jobs in its reduce phase together) and will free room
  themselves: the room must show twice, and then A grows by one AM. Right after a burst too:
  apps just admitted hold their AM before they ask for tasks, so their room is not yet free
  (only the first period, with nothing to compare, raises at once). Short jobs on the
  CapacityScheduler (at least TURNOVER of the running apps finished last period; one map per AM)
  are AM-heavy by nature: they get the full step. (On the FairScheduler the same exemption,
  tried, lost the phase-changing workload its lead: large jobs admitted at the high A it leads
  to cannot be evicted, and the FairScheduler spreads containers over all of them.)
* **Full (used >= FULL) while apps wait**: every AM that A still admits takes its memory from
  tasks as it frees. If, with A filled less one AM of slack, tasks would hold less than the
  aim - step (AMs then cost more than the work they drive), **lower A straight to the goal**:
  the nearest whole number of AMs to used - aim (a tie goes to fewer), where tasks keep the aim.
  It is measured, not searched, so it needs no bisection. The aim is the paper's T2 for the
  paper's AMs, two task units each; for others it follows `task_aim`: AMs the size of a task
  (vcores bind, one each) leave tasks 0.59: 1.4 tasks per AM where T2 would allow one. The
  AM-to-task size ratio is measured (task containers are the RM's container count less one AM
  per running app) and taken as the paper's 2 within AM_TO_TASK_BAND of it. Not while AM use
  is more than one AM over A (a lower A acts only as jobs finish) or A is at the goal. Short
  jobs (at least TURNOVER of the running apps finished last period, and the backlog is not
  growing) are not what that rule is about: each has one or two tasks and its AM memory turns
  over by itself within a period or two, so a full cluster of them holding more as AMs than as
  tasks is their nature (one-map jobs: best near two thirds of the cluster as AMs), not AMs
  starving work. On the CapacityScheduler they lose one AM at a time (FIFO within the queue
  gives freed containers to the oldest apps, so the newest AMs wait for their task); on the
  FairScheduler, which gives each freed container to the app furthest below its share (an AM
  still waiting for its task), A holds. For longer jobs the FairScheduler shares containers
  among all running apps, so an AM too many slows every job: it always goes to the goal.
* **New jobs arriving into short jobs, on the FairScheduler: down to 1 - T2.** When the backlog
  grows (P above last period's) while the running jobs were short, A is high for jobs whose size
  is unknown, and short AMs are finishing all the time: every one frees a place that A lets a
  newcomer take within the period, AMs admitted in excess cannot be taken back, and the
  FairScheduler spreads containers over all of them. So A goes at once to 1 - T2, where tasks
  keep T2 once long jobs fill the cluster; if the newcomers are short too, the turnover shows it
  next period and the room rule raises again. (The full rule's goal, used - T2, tried here, cut
  A below the AMs already running whenever a trickle arrived on a half-busy cluster: on a stream
  of short jobs A fell to 0.09 and the backlog grew to 60 while the cluster idled.) The
  CapacityScheduler serves a queue's apps in order, so there a newcomer admitted too many waits
  for containers without slowing the jobs ahead of it, and the rule (tried) only cost the
  phase-changing workload two points. The net change of P + R hides finishes when arrivals match
  them, so "short" is carried over periods with arrivals (extra key SHORT).
* **n is a search depth, not a clock.** A reversal (the last move overshot) deepens it; a
  second move the same way after a non-reversal makes it shallower (the optimum is further than
  thought); a backlog jump (P grows by more than R and more than P was) resets it to 1: a new
  workload, a new search. The first period is such a jump; if nothing runs yet and A has room
  for the next AM (the scheduler has not used A yet) the probe goes half as far (n = 2): job
  sizes are unknown and excess AMs cannot be taken back. So the loop keeps the reach to follow
  a workload that changes, which the paper's ever-growing n loses after a few periods.
* **Dead band and stabilisation.** Between ROOMY and FULL, and while tasks keep the aim - step with
  A filled, nothing moves. A reversal right after a reversal needs the same signal twice, so
  inputs that alternate cannot make A go up, down, up in consecutive periods.

A stays in [a_min, a_max] with at most DECIMALS decimals. State: ``a``, ``n``,
``prev_pending``/``prev_running``, and in ``extra`` the keys named below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from amtuner.config import ControllerSettings
from amtuner.model import (
    GLOBAL_TARGET,
    ControllerState,
    Decision,
    Observation,
    QueueStats,
    Rule,
    SchedulerKind,
)

DECIMALS = 4
"""A is written with at most this many decimals."""

ROOMY = 0.9
"""Below this share of the scarce resource the target has room for more work. Containers are
placed whole on nodes, so a busy cluster always shows some capacity it cannot use
(fragmentation, containers between one finishing and the next starting); a tenth is about one
container per node on small nodes."""

FULL = 0.95
"""At or above this share the target is full: only then can AMs be what keeps tasks from
memory. Between ROOMY and FULL (and in the band around T2 below) A is left alone: the dead band."""

TURNOVER = 0.5
"""When at least this share of the running apps finished within the last period, the jobs are
short: their AMs' memory comes back within about two periods whatever A is, and an AM-heavy mix
is what such jobs need (one map per AM), not AMs sitting idle. The loop then lowers A by one AM
at a time (CapacityScheduler) or holds it (FairScheduler) instead of going to its goal."""

PAPER_AM_TO_TASK = 2.0
"""The paper's AM is two task units (R x unit x 2): the size ratio its T2 was set for."""

AM_TO_TASK_RANGE = 8.0
"""AM-to-task size ratios are taken within [1/8, 8]: beyond, a figure is more likely a moment
between containers than a job mix (a task-less AM-heavy instant, a lone huge task)."""

AM_TO_TASK_BAND = 1.5
"""A measured ratio within this factor of the paper's 2 is taken as 2. The count behind it is
rough: an AM allocated but not yet registered is a container but not a running app, so under
churn (hundreds of short jobs a period) the ratio reads up to a third high. Outside the band
the job mix really differs: AMs the size of a task (vcores, one each), or small AMs driving
large executors."""

RAISED = "raised"
"""extra key: 1 when the last period raised A."""
AM_SEEN = "am_seen"
"""extra key: the AM share seen last period."""
HAD_ROOM = "had_room"
"""extra key: 1 when the last period saw room with apps waiting."""
LAST_MOVE = "last_move"
"""extra key: +1 / -1 for the last move up / down, 0 when none yet."""
REVERSED = "reversed"
"""extra key: 1 when the last move reversed the one before it."""
WANTED = "wanted"
"""extra key: +1 / -1 for a second reversal seen once and held, awaiting confirmation."""
SHORT = "short"
"""extra key: 1 when the last period saw short jobs (or carried that over new arrivals)."""


@dataclass(frozen=True, slots=True)
class _Figures:
    """The target's own shares of its denominator, on the resource that binds."""

    pending: int
    running: int
    used: float
    """Dominant share used (max over memory and, where reported, vcores)."""
    am: float
    """Share held by AMs, on the resource that dominates ``used``."""
    am_per_app: float
    """One more AM as a share: measured mean over running apps, else 2 x unit."""
    tasks: float
    measured: bool
    """AM usage came from the RM (False: the paper's R x unit x 2 estimate)."""
    am_to_task: float = PAPER_AM_TO_TASK
    """One AM's size over one task container's, on the same resource; the paper's 2 where the
    RM does not tell how many containers run."""
    limits: tuple[tuple[float, float], ...] = ()
    """Per resource the AM limit counts: (one AM, one MB or vcore), as shares of the total."""
    fair: bool = False
    """A FairScheduler, which rounds its AM limit up to a unit, not to a minimum allocation."""

    @property
    def to_a(self) -> float:
        """An AM share times this is in A's units. The AM limit counts each AM by the resource
        it uses most of, which need not be the one that binds ``used``: 2 GB, 1 vcore AMs on
        nodes short of vcores fill A by memory while tasks run out of vcores."""
        return max(each for each, _ in self.limits) / self.am_per_app if self.limits else 1.0

    def ams_within(self, a: float) -> int:
        """Whole AMs inside A."""
        return min(math.floor(a / each + 1e-9) for each, _ in self.limits)

    def ams_admitted(self, a: float) -> int:
        """Whole AMs the RM admits under A, its limit rounded up to a whole unit."""
        return min(
            math.floor(math.ceil(a / unit - 1e-9) * unit / each + 1e-9)
            for each, unit in self.limits
        )

    def a_for(self, ams: int) -> float:
        """The A that admits ``ams`` AMs of the running apps' mean size and not one more.

        Both schedulers round the limit up, so an A a hair above ``ams`` AMs can admit one
        more. The FairScheduler rounds to a whole MB and vcore: half a unit under, rounded up to
        DECIMALS (at most 1e-4 of the total more, under the rest of an AM below 5,000 vcores of
        1-vcore AMs or 10,000 AMs' worth of memory). The CapacityScheduler rounds to its minimum
        allocation, which may be an AM's whole size (AMs of 1 GB, the default minimum): a hair
        under, rounded down (less than a minimum allocation under below 10 TB).
        """
        exact = max(ams * each - unit / 2 for each, unit in self.limits)
        scaled = round(exact * 10**DECIMALS, 6)
        return (math.ceil(scaled) if self.fair else math.floor(scaled)) / 10**DECIMALS


def _share(
    used: float, am: float, am_each: float, total: float, tasks_running: int
) -> tuple[float, float, float, float, float]:
    """(used, AM, one AM, AM-to-task size, one unit) as shares of ``total``, for one
    resource."""
    task_each = (used - am) / tasks_running if tasks_running else 0.0
    ratio = am_each / task_each if task_each > 0 else PAPER_AM_TO_TASK
    ratio = min(max(ratio, 1 / AM_TO_TASK_RANGE), AM_TO_TASK_RANGE)
    if 1 / AM_TO_TASK_BAND < ratio / PAPER_AM_TO_TASK < AM_TO_TASK_BAND:
        ratio = PAPER_AM_TO_TASK
    return used / total, am / total, am_each / total, ratio, 1 / total


def _available_vcores_base(obs: Observation, q: QueueStats | None) -> bool:
    """Whether the FairScheduler's AM limit counts vcores against what is available.

    ``FSLeafQueue.computeMaxAMResource`` (Hadoop 2.9+) replaces a zero component of the fair
    share by the cluster's available amount; under the default ``fair`` policy a leaf's fair
    share has 0 vcores (FairSharePolicy shares memory only), so the vcore side of the limit is
    A x the vcores free now, not A x a share of the total."""
    if obs.scheduler is not SchedulerKind.FAIR:
        return False
    leaves = [q] if q is not None else list(obs.queues)
    reported = [x.vcores_share for x in leaves if x.vcores_share is not None]
    return bool(reported) and not any(reported)


def _figures(obs: Observation, settings: ControllerSettings, target: str) -> _Figures:
    if obs.memory_total_mb <= 0:
        raise ValueError(f"M_total must be positive, got {obs.memory_total_mb}")
    q = obs.queue(target) if target != GLOBAL_TARGET else None
    from_available = _available_vcores_base(obs, q)
    if q is not None:
        p, r, mem, vc = q.pending_apps, q.running_apps, q.memory_used_mb, q.vcores_used
        am_mem, am_vc = q.am_memory_used_mb, q.am_vcores_used
        mem_total = q.memory_share_mb if q.memory_share_mb else obs.memory_total_mb
        vc_total = q.vcores_share if q.vcores_share else 0
        if from_available:
            vc_total = obs.vcores_total
        containers = q.containers
    else:
        p, r, mem, vc = obs.pending_apps, obs.running_apps, obs.memory_used_mb, obs.vcores_used
        am_mem = obs.am_memory_used_mb
        am_vcs = [x.am_vcores_used for x in obs.queues]
        am_vc = None if not am_vcs or None in am_vcs else sum(x or 0 for x in am_vcs)
        mem_total, vc_total = obs.memory_total_mb, obs.vcores_total
        containers = obs.containers
    measured = am_mem is not None
    if am_mem is None:
        am_mem = r * settings.unit_mb * 2
    # One AM container per running app; the rest run tasks. Unknown without measured AM use.
    tasks_running = containers - r if measured and containers is not None and containers > r else 0
    am_mem_each = am_mem / r if r and am_mem else settings.unit_mb * 2
    shares = [_share(mem, am_mem, am_mem_each, mem_total, tasks_running)]
    limits = [(shares[0][2], shares[0][4])]
    if vc_total > 0 and obs.vcores_scheduled:
        am_vc = r if am_vc is None else am_vc  # one vcore per AM: the MapReduce default
        am_vc_each = am_vc / r if r and am_vc else 1
        shares.append(_share(vc, am_vc, am_vc_each, vc_total, tasks_running))
        base = max(obs.vcores_total - obs.vcores_used, 1) if from_available else vc_total
        limits.append((am_vc_each / base, 1 / base))
    used, am, each, ratio, _ = max(shares)
    fair = obs.scheduler is SchedulerKind.FAIR
    return _Figures(p, r, used, am, each, used - am, measured, ratio, tuple(limits), fair)


def task_aim(t2: float, am_to_task: float) -> float:
    """The share tasks should keep with A filled, for AMs ``am_to_task`` times a task's size.

    The paper's T2 was set for AMs of two task units. A job holds its AM while it starts and
    ends (time o) and while its tasks work (W, spread over the s task containers it gets), so
    k AMs of size a (in task units) on C units finish k / (o + W k / (C - a k)) jobs a second,
    most at s = sqrt(a W / o): the best share for AMs, 1 / (1 + sqrt(W / (a o))), grows with
    the square root of a. Taking T2 as right for a = 2 fixes W / o, and so the aim for any a.
    """
    k = (1 - t2) * math.sqrt(am_to_task)
    return 1 - k / (k + t2 * math.sqrt(PAPER_AM_TO_TASK))


def _move(
    a: float, n: int, up: bool, cap: float, settings: ControllerSettings
) -> tuple[float, str]:
    """Up: alpha/2^n towards A_max, at most ``cap`` and at least ``step``. Down: ``cap``, the
    distance to the goal. Kept inside the bounds; (new A, how)."""
    bound, name = (settings.a_max, "A_max") if up else (settings.a_min, "A_min")
    if a == bound:
        return a, f"already at {name} {bound:.4g}"
    alpha = abs(bound - a)
    delta = max(min(math.ldexp(alpha, -n), cap), settings.step) if up else cap
    rounded = round(a + delta if up else a - delta, DECIMALS)
    new = min(rounded, settings.a_max) if up else max(rounded, settings.a_min)
    if not up:
        return new, f"to the goal, {cap:.4f} lower"
    return new, f"alpha {alpha:.4f}/2^{n}, cap {cap:.4f}, step {settings.step:.4g}"


def _aim_text(aim: float, f: _Figures) -> str:
    if f.am_to_task == PAPER_AM_TO_TASK:
        return f"T2 {aim:.3g}"
    return f"{aim:.3g} (T2 for AMs {f.am_to_task:.2g}x a task)"


def decide(
    obs: Observation,
    state: ControllerState,
    settings: ControllerSettings,
    target: str = GLOBAL_TARGET,
) -> tuple[Decision, ControllerState]:
    """One control period; pure (no I/O, no clock, no logging)."""
    f = _figures(obs, settings, target)
    a = min(max(round(state.a, DECIMALS), settings.a_min), settings.a_max)
    n = max(1, state.n)
    last = int(state.extra.get(LAST_MOVE, 0))
    reversed_last = bool(state.extra.get(REVERSED, 0))
    wanted = int(state.extra.get(WANTED, 0))
    last_raised = bool(state.extra.get(RAISED, 0))

    prefix = "" if f.measured else "AM use estimated as R x unit x 2; "
    if a != state.a:
        prefix += f"A {state.a:.6g} taken as {a:.4g} (bounds, {DECIMALS} decimals); "
    prev_p = state.prev_pending
    burst = prev_p is None or f.pending - prev_p > max(f.running, prev_p)
    if burst:
        n = 1
        prefix += (
            "first period: widest step; "
            if prev_p is None
            else f"backlog jumped {prev_p} -> {f.pending}: widest step; "
        )

    prev_r = state.prev_running or 0
    done = max(0, (prev_p or 0) + prev_r - f.pending - f.running)
    arrived = prev_p is not None and f.pending > prev_p
    short = prev_r > 0 and done >= TURNOVER * prev_r
    was_short = short or (arrived and bool(state.extra.get(SHORT, 0)))
    capacity = obs.scheduler is SchedulerKind.CAPACITY
    turnover = f"{done} of {prev_r} apps finished last period (short jobs)"
    figures = (
        f"P {f.pending}, used {f.used:.2f}, AM {f.am:.2f}, tasks {f.tasks:.2f}, "
        f"next AM {f.am_per_app:.3f}"
    )
    want, cap = 0, 1.0
    aim = task_aim(settings.t2, f.am_to_task)
    # A admits whole AMs: the goal is the nearest whole number of them (at least one), a tie
    # going to fewer, since an AM admitted in excess cannot be taken back.
    goal = f.a_for(max(math.ceil((f.used - aim) / f.am_per_app - 0.5), 1))
    start = round(min(max(1 - settings.t2, settings.a_min), settings.a_max), DECIMALS)
    starting = prev_p is None and f.pending == f.running == 0 and start != a
    if starting:
        rule = Rule.UNDER_ALLOCATION if start > a else Rule.OVER_ALLOCATION_3
        why = f"idle at start-up: A to 1 - T2 = {start:.4g}, where tasks keep T2 once AMs fill A"
    elif f.pending == 0:
        rule, why = Rule.HOLD, "nothing waits, A binds nobody"
    elif not capacity and arrived and was_short and a - start >= 10**-DECIMALS:
        rule, want, cap = Rule.OVER_ALLOCATION_3, -1, a - start
        why = (
            f"P grew {prev_p} -> {f.pending} while the running jobs were short: new jobs of"
            f" unknown size would take every AM place that frees; to 1 - T2 = {start:.4g}, where"
            " tasks keep T2 once long jobs fill the cluster"
        )
    elif f.used < ROOMY:
        unseen = not burst and last_raised and f.am <= state.extra.get(AM_SEEN, 0.0)
        fits = (f.am + f.pending * f.am_per_app) * f.to_a <= a
        if fits:
            rule, why = Rule.HOLD, "room, and every waiting app's AM fits under A: A binds nobody"
        elif not unseen:
            rule, want = Rule.UNDER_ALLOCATION, 1
            why = f"room (used < {ROOMY:g}) while apps wait"
            if short and capacity:
                why += f"; {turnover}: an AM-heavy mix is what they need"
            elif f.tasks < f.am and state.prev_pending is not None:
                cap = f.a_for(round(f.am / f.am_per_app) + 1) - a
                why += (
                    "; running apps hold more as AMs than as tasks (in their tail, or just"
                    " started): room for one more AM"
                )
                if not state.extra.get(HAD_ROOM):
                    rule, want = Rule.HOLD, 0
                    why += ", if the room is still there next period"
        else:
            rule, why = Rule.HOLD, "room, but AM use has not grown since the last raise: waiting"
    elif f.used < FULL:
        rule, why = Rule.HOLD, f"used between {ROOMY:g} and {FULL:g}: dead band"
    else:
        # Full with apps waiting: every AM that A still admits takes its memory from tasks as
        # it frees. Judge the tasks' share once A is filled, less one AM of slack (A is counted
        # in whole AMs; a band narrower than one AM hunts between two counts).
        filled = max(f.am, a / f.to_a - f.am_per_app)
        lacking = aim - settings.step - (f.used - filled)
        if lacking <= 0:
            rule, why = (
                Rule.HOLD,
                f"full, tasks keep >= {_aim_text(aim, f)} - step even with A filled: dead band",
            )
        elif f.am > a / f.to_a + f.am_per_app:
            rule, why = (
                Rule.HOLD,
                "over-allocated, but AM use is still over A by more than one AM: waiting",
            )
        elif short and not capacity:
            rule, why = (
                Rule.HOLD,
                f"full, but {turnover}: each AM gets its task and leaves within a period",
            )
        elif a - goal < 10**-DECIMALS:
            rule, why = (
                Rule.HOLD,
                f"over-allocated, but A is at {goal:.4f} (tasks keep {_aim_text(aim, f)} once A"
                " is filled): waiting for jobs to finish",
            )
        else:
            rule, want = Rule.OVER_ALLOCATION_3, -1
            cap = a - goal
            why = (
                f"full, and with A filled tasks would hold {f.used - filled:.2f} < "
                f"{_aim_text(aim, f)} - step: AMs would cost more than the work they drive; "
                f"goal {goal:.4f}"
            )
            if short and capacity:
                cap = min(cap, f.am_per_app * f.to_a)
                why += f"; {turnover}: one AM less"

    new_a, how = a, f"A stays {a:.4g}"
    new_last, new_reversed, new_wanted = last, reversed_last, 0
    if starting:
        new_a, how = start, f"A {a:.4g} -> {start:.4g} (set, not searched)"
    elif want:
        reversal = last != 0 and want != last
        if reversal and reversed_last and wanted != want:
            rule = Rule.HOLD
            new_wanted = want
            how = f"A stays {a:.4g} (second reversal in a row: waiting one period to confirm)"
        else:
            if burst and f.running == 0 and (f.am + f.am_per_app) * f.to_a <= a:
                # Nothing runs yet and A has room for the next AM: A is untried. Job sizes are
                # unknown, and AMs admitted in excess are not preempted, so probe half as far.
                n = 2
            elif reversal and not burst:  # after a burst n stays 1: a new search
                n += 1
            elif last == want and not burst and not reversed_last:
                n = max(1, n - 1)
            new_a, move = _move(a, n, want > 0, cap, settings)
            if want > 0 and new_a > a:
                # A raise admits whole AMs: at least one more (a step smaller than an AM would
                # admit none, and the next period would wait for AM use that cannot grow), and
                # where rounding the limit up admits an AM the step does not cover (1-vcore
                # AMs), only the AMs the step covers.
                whole = max(f.ams_within(new_a), f.ams_admitted(a) + 1)
                snapped = min(f.a_for(whole), settings.a_max)
                if f.ams_admitted(new_a) != whole and snapped > a:
                    new_a = snapped
                    move += f"; {whole} whole AMs"
            how = f"A {a:.4g} -> {new_a:.4g} ({move})"
            if new_a != a:
                new_last, new_reversed = want, reversal

    decision = Decision(
        old_a=state.a,
        new_a=new_a,
        rule=rule,
        reason=f"{prefix}{figures}: {why}; {how}",
        target=target,
    )
    extra = {
        **state.extra,
        HAD_ROOM: float(f.pending > 0 and f.used < ROOMY),
        RAISED: float(new_a > a),
        AM_SEEN: f.am,
        LAST_MOVE: float(new_last),
        REVERSED: float(new_reversed),
        WANTED: float(new_wanted),
        SHORT: float(was_short),
    }
    new_state = ControllerState(
        a=new_a, n=n, prev_pending=f.pending, prev_running=f.running, extra=extra
    )
    return decision, new_state
