"""The adaptive policy's rules, in priority order (`RULES`): each reads one period's figures
and returns a proposal or nothing. The first with a verdict decides; `decide` turns it into a
move."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields

from amtuner.config import ControllerSettings
from amtuner.controller.adaptive.cases import Case
from amtuner.controller.adaptive.figures import DECIMALS, Figures, aim_text, figures, task_aim
from amtuner.model import ControllerState, Observation, SchedulerKind, round_a

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

@dataclass(frozen=True, slots=True)
class Memory:
    """What the policy carries from one period to the next; persisted as ``extra`` keys of the
    controller state (plain floats, so the state file stays JSON)."""

    had_room: bool = False
    """The last period saw room with apps waiting."""
    raised: bool = False
    """The last period raised A."""
    am_seen: float = 0.0
    """The AM share seen last period."""
    last_move: int = 0
    """+1 / -1 for the last move up / down, 0 when none yet."""
    reversed: bool = False
    """The last move reversed the one before it."""
    wanted: int = 0
    """+1 / -1 for a second reversal seen once and held, awaiting confirmation."""
    short: bool = False
    """The last period saw short jobs (or carried that over new arrivals)."""
    held_to: float = 0.0
    """The A the first look's raise aimed at, of which it committed half (CapacityScheduler),
    while no period has seen apps waiting since; 0 when nothing is held back."""
    burst: bool = False
    """The last period was a burst (the first, or a backlog jump)."""

    @classmethod
    def of(cls, extra: Mapping[str, float]) -> Memory:
        return cls(
            raised=bool(extra.get("raised", 0)),
            am_seen=extra.get("am_seen", 0.0),
            had_room=bool(extra.get("had_room", 0)),
            last_move=int(extra.get("last_move", 0)),
            reversed=bool(extra.get("reversed", 0)),
            wanted=int(extra.get("wanted", 0)),
            short=bool(extra.get("short", 0)),
            held_to=extra.get("held_to", 0.0),
            burst=bool(extra.get("burst", 0)),
        )

    def extra(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class Period:
    """What one period's rules read: the figures, the state they follow, and what follows from
    both (computed once, here, so each rule is a few lines)."""

    f: Figures
    settings: ControllerSettings
    a: float
    memory: Memory
    first: bool
    """No period before this one."""
    burst: bool
    """The backlog jumped (or this is the first period): a new search."""
    prev_pending: int | None
    arrived: bool
    short: bool
    was_short: bool
    capacity: bool
    done: int
    prev_running: int
    work: float
    """The running jobs' work per AM over the paper's jobs' (`Figures.work`) on a
    CapacityScheduler, 1 on a FairScheduler. A CapacityScheduler serves a queue's apps in order,
    so a job admitted behind large ones holds its AM idle until their asks are met: the larger
    the jobs, the fewer AMs pay. Jobs smaller than the paper's need fewer tasks per AM, so their
    aim falls. A FairScheduler gives an admitted job its fair share at once, and
    `_large_jobs_hold_it` raises A there instead; its short jobs hold (`_short_jobs_turn_over`).
    (Measured: docs/policies.md, "On a CapacityScheduler the aim grows with the jobs' work per
    AM".)"""
    aim: float
    goal: float
    start: float

    @property
    def turnover(self) -> str:
        return f"{self.done} of {self.prev_running} apps finished last period (short jobs)"

    @property
    def described_aim(self) -> str:
        return aim_text(self.aim, self.f, self.work)

    @property
    def filled(self) -> float:
        """The AM share once A is filled, less one AM of slack (A is counted in whole AMs; a
        band narrower than one AM hunts between two counts)."""
        return max(self.f.am, self.a / self.f.lasting.to_a - self.f.am_per_app)


@dataclass(frozen=True, slots=True)
class Proposal:
    """A rule's verdict: its case, the reason, and which way A should go (+1, -1, 0 holds) by at
    most ``cap``; or, ``set_to``, a value set rather than searched."""

    case: Case
    why: str
    want: int = 0
    cap: float = 1.0
    set_to: float | None = None


LARGE_JOBS = 4.0
"""Running apps whose tasks hold at least this many times what their AMs hold are large jobs
(the paper's are about one to one: five maps and a reduce behind an AM of two task units)."""

_UNDER = 10**-DECIMALS
"""Differences of A below this are none: A has DECIMALS decimals."""


def _idle_at_start_up(p: Period) -> Proposal | None:
    """Idle at start-up: A to 1 - T2, the largest A at which tasks keep T2 once AMs fill it.
    The loop has seen nothing yet, and the value on disk may be far off either way (the
    CapacityScheduler's 0.1 holds most workloads back for a whole period when their jobs
    arrive between two cycles). Set, not searched: the search starts at the first burst. Idle
    later on, A is kept: it is what the loop learned about this cluster's jobs."""
    if not (p.first and p.f.pending == p.f.running == 0 and p.start != p.a):
        return None
    why = f"idle at start-up: A to 1 - T2 = {p.start:.4g}, where tasks keep T2 once AMs fill A"
    return Proposal(Case.IDLE_START, why, set_to=p.start)


def _nothing_waits(p: Period) -> Proposal | None:
    """A only gates apps that have not started: with nothing waiting it binds nobody."""
    if p.f.pending:
        return None
    return Proposal(Case.NOTHING_WAITS, "nothing waits, A binds nobody")


def _newcomers_into_short_jobs(p: Period) -> Proposal | None:
    """The backlog grows while the running jobs were short (FairScheduler): A is high for jobs
    of unknown size, and short AMs finish all the time, so every freed place goes to a
    newcomer; AMs admitted in excess cannot be taken back and the FairScheduler spreads
    containers over all of them. Down to 1 - T2, where tasks keep T2 once long jobs fill the
    cluster; if the newcomers are short too, the room rule raises again. (Down to used - T2,
    tried, cut A below the AMs already running on a stream of short jobs.) The
    CapacityScheduler serves a queue's apps in order, so there a newcomer too many only waits,
    and the rule is the FairScheduler's only (measured: docs/policies.md, "New jobs arriving
    into short jobs"). Not when a few large jobs hold the cluster
    (`_large_jobs_hold_the_cluster`: the newcomers are what they wait for), nor when
    every waiting app's AM fits under 1 - T2 (the lower A holds nobody back now, and the next
    full period would have to climb back: on SWIM days it pulled A down at every idle arrival).
    """
    if p.capacity or not (p.arrived and p.was_short and p.a - p.start >= _UNDER):
        return None
    if _large_jobs_hold_the_cluster(p) or p.f.a_for_all_waiting <= p.start:
        return None
    why = (
        f"P grew {p.prev_pending} -> {p.f.pending} while the running jobs were short: new jobs of"
        f" unknown size would take every AM place that frees; to 1 - T2 = {p.start:.4g}, where"
        " tasks keep T2 once long jobs fill the cluster"
    )
    return Proposal(Case.NEWCOMERS, why, want=-1, cap=p.a - p.start)


def _room_but_every_am_fits(p: Period) -> Proposal | None:
    """Room, but A holds nobody back: every waiting app's AM fits under it (one arrival of a
    trickle). Unless the RM's figures show an AM limit holding some (a user's AM limit is the
    queue's guarantee times A, less than the queue's own when it borrows; a leaf's is its own
    capacity's): then A rises as far as admits them (`Figures.a_admitting_held`), no further,
    since the target's figures said it had room for them."""
    f = p.f
    if f.claimed >= ROOMY or f.a_for_all_waiting > p.a:
        return None
    if f.am_limit_holds:
        why = f"{_ROOM}; the RM's AM limit holds them, A {f.a_admitting_held:.4g} admits them"
        return Proposal(Case.ROOM, why, want=1, cap=max(f.a_admitting_held - p.a, 0.0))
    return Proposal(Case.ALL_FIT, "room, and every waiting app's AM fits under A: A binds nobody")


def _after_a_burst(p: Period) -> bool:
    """The period after a burst on a FairScheduler: the running apps came with it, so what
    they hold and ask for tells what the waiting ones will. (A CapacityScheduler reads the
    jobs' work in every period, `Period.work`.)"""
    return not p.capacity and p.memory.burst


def _small_batch(p: Period) -> Proposal | None:
    """The period after a burst, most of the batch still waiting, its running jobs asking for
    tasks and with less work behind each AM than the paper's (`Figures.work` below 1: one-map
    jobs): set A to the whole AMs that, each with the tasks it holds and asks for (at least
    one), fill the share. On a leaf whose limit's vcore side floats (`Figures.floating`) the
    memory side decides how many AMs run and the vcore side how much room must be free before
    the next one starts, so A goes to the top of that count's band: the next AM starts as soon
    as its one task's room is there. Without asks the reading is a moment between waves (the
    paper's terasort on a staggered start read 0.5 tasks per AM at one), and with most of the
    batch running it is not the batch's (the first jobs of a stream). Set, not climbed one AM
    a period: the batch is all there, and each period of climbing holds back AMs whose tasks
    have room now. (Measured: docs/policies.md, "A batch of small jobs".)"""
    f = p.f
    if not _after_a_burst(p) or f.pending <= f.running or f.waiting <= 0 or f.work >= 1:
        return None
    ams = f.nearest_ams(1 / (1 + max(f.backlog, 1 / f.am_to_task)))
    a = min(f.top_of_band(ams) if f.floating else f.a_for(ams), p.settings.a_max)
    if a - p.a < _UNDER:
        return None
    why = (
        f"the period after a burst, jobs with {f.work:.2g}x the paper's work per AM:"
        f" {ams} AMs and their tasks fill the share"
    )
    return Proposal(Case.SMALL_BATCH, why, set_to=a)


def _room_but_last_raise_unseen(p: Period) -> Proposal | None:
    """The last period raised and AM use has not grown since: the RM has not loaded the value
    yet (a FairScheduler reloads 5-15 s after the write) or the AMs are starting; raising again
    would overshoot."""
    if p.f.claimed >= ROOMY or p.burst or not p.memory.raised or p.f.am > p.memory.am_seen:
        return None
    return Proposal(Case.UNSEEN, "room, but AM use has not grown since the last raise: waiting")


def _room_but_a_admits_more(p: Period) -> Proposal | None:
    """A still admits more AMs than run: the waiting apps are held by nothing A decides but by
    the nodes' heartbeats (an RM places containers as nodes report, not when they free), and
    get their AMs within seconds; or, where the limit's vcore side is A x the vcores free now
    (a FairScheduler's `fair` leaf, `FSLeafQueue.computeMaxAMResource`), by the vcores the
    tasks hold, which come back as they end. Raising now would admit more than the room, seen
    once jobs finish together, is worth; raising past the free vcores would admit many more AMs
    once tasks end (measured: docs/policies.md, "A FairScheduler limit held by the free vcores
    is not raised past them"). Not on a burst: there the search starts. FairScheduler only: a
    CapacityScheduler also limits each user to a share of the queue's AM limit
    (``LeafQueue.getUserAMResourceLimit``), which the figures do not show, so there apps can
    wait with A's limit far from full."""
    f = p.f
    if p.capacity or f.claimed >= ROOMY or p.burst:
        return None
    admitted = f.ams_admitted_once_free(p.a)
    if admitted <= f.ams:
        return None
    why = (
        f"room, but A admits {admitted} AMs and {f.ams} run:"
        " the waiting apps get theirs as nodes heartbeat"
    )
    if f.floating and admitted > f.ams_admitted(p.a):
        why += " and tasks give back the vcores the limit counts"
    return Proposal(Case.NOT_BINDING, why)


_ROOM = f"room (used < {ROOMY:g}) while apps wait"


def _room_with_short_jobs(p: Period) -> Proposal | None:
    """Short jobs on the CapacityScheduler (at least TURNOVER of the running apps finished last
    period; one map per AM) are AM-heavy by nature: the full step, once they were short two
    periods running and hold no more than a task per AM. A wave of a batch's similar jobs
    ending together turns over as fast for one period, and once most of them are gone their
    tasks too can read one per AM or fewer: one AM more, since AMs admitted on one period's
    reading are not taken back (measured: docs/policies.md, "Short jobs on a
    CapacityScheduler").
    (On the FairScheduler the same exemption, tried, lost the phase-changing workload its
    lead: large jobs admitted at the high A it leads to cannot be evicted.)"""
    if p.f.claimed >= ROOMY or not (p.short and p.capacity):
        return None
    why = f"{_ROOM}; {p.turnover}: an AM-heavy mix is what they need"
    if not p.memory.short:
        why += "; short this period only: one AM"
    elif p.f.tasks * p.f.am_to_task > p.f.am:
        why += "; more than a task an AM: one AM"
    else:
        return Proposal(Case.ROOM_SHORT, why, want=1)
    return Proposal(Case.ROOM_SHORT, why, want=1, cap=p.f.a_for(p.f.ams + 1) - p.a)


def _room_in_the_tail(p: Period) -> Proposal | None:
    """Running apps holding more as AMs than as tasks are mostly in their tail (a batch of
    similar jobs reducing together) and will free room themselves, or have just been admitted
    and will fill it with their tasks: the room must show twice, then A grows by one AM. Not
    twice where jobs were short this period and the last (a stream of one-map jobs on a
    FairScheduler, whose AMs come and go within a period: the room each period shows is
    theirs); a batch's wave ending together is short for one period. On a FairScheduler not in
    the period after a raise either: the room that period saw was spent on it, and its AM,
    loaded 5-15 s after the write by the RM's own poll or at once on a refresh, has not shown
    its tasks yet, so the room now is the same tail. On a CapacityScheduler a raise's room still
    counts. (Measured: docs/policies.md, "Room (used < 0.9) and apps wait" and "Room between
    short jobs two periods running is not waited for".)"""
    f = p.f
    if f.claimed >= ROOMY or f.tasks >= f.am or p.first:
        return None
    why = (
        f"{_ROOM}; running apps hold more as AMs than as tasks (in their tail, or just"
        " started): room for one more AM"
    )
    if not p.capacity and p.memory.raised:
        why += " once the last raise's AM shows its tasks"
        return Proposal(Case.ROOM_TAIL_UNCONFIRMED, why)
    if not p.memory.had_room and not (p.short and p.memory.short):
        why += ", if the room is still there next period"
        return Proposal(Case.ROOM_TAIL_UNCONFIRMED, why)
    cap = f.a_for(f.ams + 1) - p.a
    return Proposal(Case.ROOM_TAIL, why, want=1, cap=cap)


def _room(p: Period) -> Proposal | None:
    """Room (used, asked for by tasks or reserved < ROOMY) while apps wait: raise by the paper's
    alpha / 2^n (at least step)."""
    return Proposal(Case.ROOM, _ROOM, want=1) if p.f.claimed < ROOMY else None


def _held_under_guarantee(p: Period) -> Proposal | None:
    """Full, but a CapacityScheduler leaf whose AM limit holds apps uses less than its
    guarantee (`Figures.a_into_guarantee`): the full cluster is other leaves borrowing it, which
    give it back as their containers end. One AM a period: the leaves' use moves as each AM's
    tasks arrive, and AMs admitted in excess are not taken back."""
    f = p.f
    if not p.capacity or f.a_into_guarantee - p.a < _UNDER:
        return None
    why = (
        "full, but a leaf its AM limit holds uses less than its guarantee, which the borrowers"
        f" give back as their containers end: A {f.a_into_guarantee:.4g} admits AMs into it;"
        " one AM"
    )
    cap = min(f.a_into_guarantee, f.a_for(f.ams + 1)) - p.a
    return Proposal(Case.UNDER_GUARANTEE, why, want=1, cap=max(cap, 0.0))


def _dead_band(p: Period) -> Proposal | None:
    """Between ROOMY and FULL nothing moves: a busy cluster always shows some capacity it cannot
    use, and AMs can only be what keeps tasks from memory when it is full."""
    if p.f.used >= FULL:
        return None
    what = "used" if p.f.claimed == p.f.used else "used or asked for by tasks"
    if p.f.reserved:
        what = "used, asked for by tasks or reserved"
    return Proposal(Case.DEAD_BAND, f"{what} between {ROOMY:g} and {FULL:g}: dead band")


def _large_jobs_hold_the_cluster(p: Period) -> bool:
    """The running apps' tasks hold LARGE_JOBS times what their AMs hold, and one more AM would
    still leave tasks their aim - step: a few large jobs hold the cluster, and an AM admitted
    now costs them little."""
    f = p.f
    return f.tasks >= LARGE_JOBS * f.am and f.am + f.am_per_app <= f.used - p.aim - p.settings.step


def _large_jobs_hold_it(p: Period) -> Proposal | None:
    """Full FairScheduler held by a few large jobs while apps wait: raise A, by alpha/2^n up to
    the goal. A FairScheduler gives each freed container to the admitted app furthest below its
    fair share (``FSLeafQueue.assignContainer``), so a job admitted beside the large ones starts
    at once and a small one finishes in minutes; a job held back waits until they end. And
    under the default ``fair`` policy a leaf's fair share has no vcores, so the vcore side of
    the AM limit is A x the vcores *available* (``FSLeafQueue.computeMaxAMResource``): on a
    full cluster it admits no AM unless A is near 1, and the policy's other rules, which see
    tasks keep their aim, would hold it there (measured: docs/policies.md, "Full, held by a few
    large jobs"). Not on the CapacityScheduler, which serves a queue's apps in order: there an
    admitted job waits behind the large ones whatever A is."""
    if p.capacity or not _large_jobs_hold_the_cluster(p) or p.goal - p.a < _UNDER:
        return None
    why = (
        f"full, held by a few large jobs (tasks {p.f.tasks:.2f}, AMs {p.f.am:.2f}) while apps"
        " wait: each app admitted gets its fair share of what frees"
    )
    return Proposal(Case.LARGE_JOBS_HOLD, why, want=1, cap=p.goal - p.a)


def _tasks_keep_their_aim(p: Period) -> Proposal | None:
    """Full, but with A filled (less one AM of slack) tasks keep their aim - step: the band
    around the aim where nothing moves."""
    lacking = p.aim - p.settings.step - (p.f.used - p.filled)
    if lacking > 0:
        return None
    why = f"full, tasks keep >= {p.described_aim} - step even with A filled: dead band"
    return Proposal(Case.TASKS_KEEP_AIM, why)


def _ams_still_over_a(p: Period) -> Proposal | None:
    """AM use is more than one AM over A: a lower A acts only as jobs finish, so wait."""
    if p.f.am <= p.a / p.f.lasting.to_a + p.f.am_per_app:
        return None
    why = "over-allocated, but AM use is still over A by more than one AM: waiting"
    return Proposal(Case.AMS_OVER_A, why)


def _short_jobs_turn_over(p: Period) -> Proposal | None:
    """Short jobs on a full FairScheduler: each has one or two tasks and its AM memory turns
    over within a period or two, and the FairScheduler gives each freed container to the app
    furthest below its share (an AM still waiting for its task): an AM-heavy mix is their
    nature (one-map jobs: best near two thirds of the cluster as AMs), not AMs starving work."""
    if not p.short or p.capacity:
        return None
    why = f"full, but {p.turnover}: each AM gets its task and leaves within a period"
    return Proposal(Case.SHORT_FULL, why)


def _at_the_goal(p: Period) -> Proposal | None:
    """A is already at the goal: lowering further would undershoot once the jobs finish."""
    if p.a - p.goal >= _UNDER:
        return None
    why = (
        f"over-allocated, but A is at {p.goal:.4f} (tasks keep {p.described_aim} once A"
        " is filled): waiting for jobs to finish"
    )
    return Proposal(Case.AT_GOAL, why)


def over_allocated(p: Period) -> Proposal:
    """Full while apps wait, and with A filled tasks would hold less than their aim - step:
    every AM that A still admits takes its memory from tasks as it frees, so AMs cost more than
    the work they drive. Lower straight to the goal, the nearest whole number of AMs to
    used - aim (a tie goes to fewer): measured, not searched. The aim is T2 for the paper's
    AMs of two task units and follows `task_aim` for others. Short jobs on the
    CapacityScheduler lose one AM at a time (FIFO within the queue gives freed containers to
    the oldest apps, so the newest AMs wait for their task)."""
    why = (
        f"full, and with A filled tasks would hold {p.f.used - p.filled:.2f} < "
        f"{p.described_aim} - step: AMs would cost more than the work they drive; "
        f"goal {p.goal:.4f}"
    )
    cap = p.a - p.goal
    if p.short and p.capacity:
        cap = min(cap, p.f.am_per_app * p.f.to_a)
        why += f"; {p.turnover}: one AM less"
    return Proposal(Case.OVER_ALLOCATED, why, want=-1, cap=cap)


RULES: tuple[Callable[[Period], Proposal | None], ...] = (
    _idle_at_start_up,
    _nothing_waits,
    _newcomers_into_short_jobs,
    _room_but_every_am_fits,
    _small_batch,
    _room_but_last_raise_unseen,
    _room_but_a_admits_more,
    _room_with_short_jobs,
    _room_in_the_tail,
    _room,
    _held_under_guarantee,
    _dead_band,
    _large_jobs_hold_it,
    _tasks_keep_their_aim,
    _ams_still_over_a,
    _short_jobs_turn_over,
    _at_the_goal,
    over_allocated,
)
"""The policy's rules in priority order: the first that has a verdict decides. Each reads the
period's figures and returns a proposal or nothing; none moves A itself (`decide` does, in
the stages after)."""

def blind(f: Figures, a: float, settings: ControllerSettings) -> float:
    """A value set before anything about the jobs is measured (the first period's, and 1 - T2,
    the fallback for jobs of unknown size), at the top of its band of whole AMs where the vcore
    side floats (`Figures.top_of_band`): its AMs start as soon as the vcores they need are
    free. Values the loop searches stay where the search puts them: raised to the top of each
    count too, a tail's room would take A up whole counts, and the jobs arriving after it
    would be admitted at that A. (Measured: docs/policies.md, "A first look on such a limit
    sets A at the top of its band".)"""
    if not f.floating:
        return a
    return min(f.top_of_band(f.on_memory.ams_of(a)), settings.a_max)


def _goal(f: Figures, aim: float) -> float:
    """The A where tasks keep their aim once AMs fill it: the nearest whole number of AMs to
    used - aim, on the limit as it lasts (`Figures.lasting`). Where jobs run in waves under a
    floating vcore side, not below the AMs that run: there A stops admitting at once, and the
    AMs of a wave hand their room back together as it ends. Not where the AMs outnumber their
    tasks' containers (`Figures.starved`): then most AMs hold no task and wait for one, no wave
    is running to end, and a goal at the AMs that run would keep the overload it measures."""
    lasting = f.lasting
    goal = lasting.a_for(f.nearest_ams(f.used - aim))
    return max(goal, lasting.a_for(f.ams)) if f.in_waves and not f.starved else goal


def period(
    obs: Observation, state: ControllerState, settings: ControllerSettings, target: str
) -> Period:
    a = min(max(round_a(state.a), settings.a_min), settings.a_max)
    f = figures(obs, settings, target, a)
    prev_p = state.prev_pending
    prev_r = state.prev_running or 0
    memory = Memory.of(state.extra)
    done = max(0, (prev_p or 0) + prev_r - f.pending - f.running)
    arrived = prev_p is not None and f.pending > prev_p
    short = prev_r > 0 and done >= TURNOVER * prev_r
    capacity = obs.scheduler is SchedulerKind.CAPACITY
    work = f.work if capacity else 1.0
    aim = task_aim(settings.t2, f.am_to_task, work)
    start = round_a(min(max(1 - settings.t2, settings.a_min), settings.a_max))
    return Period(
        f=f,
        settings=settings,
        a=a,
        memory=memory,
        first=prev_p is None,
        burst=prev_p is None or f.pending - prev_p > max(f.running, prev_p),
        prev_pending=prev_p,
        arrived=arrived,
        short=short,
        was_short=short or (arrived and memory.short),
        capacity=capacity,
        done=done,
        prev_running=prev_r,
        work=work,
        aim=aim,
        goal=_goal(f, aim),
        start=blind(f, start, settings),
    )


