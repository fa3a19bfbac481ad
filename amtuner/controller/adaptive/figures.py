"""The figures the adaptive policy reads: shares of the target's own denominator, counted in
whole AMs by each AM's own larger share, and the aim tasks should keep."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from amtuner.config import ControllerSettings
from amtuner.model import A_DECIMALS as DECIMALS
from amtuner.model import (
    GLOBAL_TARGET,
    Observation,
    QueueStats,
    SchedulerKind,
    WaitCause,
    round_a,
)

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

PAPER_BACKLOG = 3.0
"""Task memory, held and asked for, per AM memory up to which the running jobs are the kind T2
was set for: five maps and a reduce behind an AM of two task units, which a full cluster shows
well under this (measured: docs/policies.md, "On a CapacityScheduler the aim grows with the
jobs' work per AM")."""
PAPER_BACKLOG_MIN = 0.8
"""Below this the running jobs are smaller than the paper's: a one-map job's AM of two task
units has at most half a unit of task memory per unit of AM."""
LEAST_WORK = 0.1
"""The smallest work `Figures.work` reads: the aim it gives AMs of two task units is 0.24, about
the tasks' share of 120 one-map jobs on 4 nodes at their best fixed A (0.8 on both schedulers:
12 AMs of 2 GB in 32 GB leave tasks 0.25)."""

@dataclass(frozen=True, slots=True)
class Figures:
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
    waiting: float = 0.0
    """Memory the running apps' tasks have asked for and not yet got, as a share: room they
    will take at their next node heartbeats, not room for another AM."""
    floating: bool = False
    """The vcore side of the limit is A x the vcores free now (a FairScheduler leaf whose fair
    share has none) and the tasks use memory more than vcores: that side tightens as tasks
    take vcores and loosens as they end. Where vcores are what runs out first (nodes short of
    them) the free vcores are the lasting limit, and this is False."""
    reserved: float = 0.0
    """Memory reserved on nodes for containers that did not fit (the cluster's, a share of the
    target's denominator): what frees there goes to them, not to more AMs."""
    a_admitting_held: float = 0.0
    """Where the RM's own figures show an AM limit holding waiting apps of the target
    (`amtuner.monitor.waits`: a user's AM limit, or a leaf's, which the target's shares do not
    see), the A that admits them all; 0 where none holds any. A limit that holds apps is full,
    and it is proportional to A, so it must grow by the held apps' AMs over the AMs it holds:
    the largest such growth over the leaves. Counting a leaf's AMs for one user's limit
    understates it, so the A is at most what they need."""

    a_into_guarantee: float = 0.0
    """CapacityScheduler: where leaves whose AM limits hold apps of the target each use less
    than their guarantee, the A that admits as many of their AMs as their unused guarantees
    hold (the largest over the leaves); 0 where none, where any of them uses its guarantee or
    more, or where no leaf uses more than its own. A leaf under its guarantee is served first
    as containers free (``PriorityUtilizationQueueOrderingPolicy`` orders leaves by used over
    guaranteed), so its AMs take what the borrowers give back, not room its own tasks need. A
    global A raises every leaf's limit at once, so a held leaf that borrows would have its
    apps admitted with them."""
    users_hold: bool = False
    """CapacityScheduler: a user's AM limit holds waiting apps of the target
    (``LeafQueue.getUserAMResourceLimitPerPartition``: A times the user's part of the leaf's
    guarantee, about A times the user's limit). That user's tasks get no more than its limit
    either (``canAssignToUser``), so its AMs and its tasks share one limit, which the target's
    shares do not show."""
    gain: float = 1.0
    """How many times A's share of the total the AMs it admits hold (`_leaves_gain`): ``limits``
    are already divided by it, and a raise's bisection step is (`move`), so a step of A moves
    the AMs admitted by the share the paper's step meant."""

    @property
    def am_limit_holds(self) -> bool:
        return self.a_admitting_held > 0

    @property
    def backlog(self) -> float:
        """Task memory held and asked for, per AM memory (0 while no AM runs)."""
        return (self.tasks + self.waiting) / self.am if self.am > 0 else 0.0

    @property
    def work(self) -> float:
        """The running jobs' work behind each AM over the paper's jobs': task memory held and
        asked for per AM memory (the backlog) over PAPER_BACKLOG above it, the square of its
        share of PAPER_BACKLOG_MIN below that (down to LEAST_WORK), 1 between. A job's asks
        reach the RM when its AM starts, so a full cluster with this above 1 runs jobs larger
        than the paper's (a day's few huge jobs, a batch of large ones), and below 1 smaller
        ones (one-map jobs, best with two thirds of the cluster as AMs or more). Squared because
        a full cluster's backlog over-reads small jobs' work: the AMs that crowd their tasks out
        leave those tasks asked for, and asks count (measured: docs/policies.md, "On a
        CapacityScheduler the aim grows with the jobs' work per AM"). 1 where AM use is the
        paper's estimate, which cannot tell an app's AM from its tasks."""
        if self.am <= 0 or not self.measured:
            return 1.0
        backlog = self.backlog
        if backlog < PAPER_BACKLOG_MIN:
            return max(LEAST_WORK, (max(backlog, 0.0) / PAPER_BACKLOG_MIN) ** 2)
        return max(1.0, backlog / PAPER_BACKLOG)

    @property
    def starved(self) -> bool:
        """Fewer task containers run than AMs (tasks over AMs, each counted in its own size):
        most AMs hold no task. A job moves only while a task of it runs, so its AM then holds
        memory for nothing."""
        return self.tasks * self.am_to_task < self.am

    @property
    def claimed(self) -> float:
        """The share used, already asked for by running apps' tasks, or reserved."""
        return min(1.0, self.used + self.waiting + self.reserved)

    @property
    def to_a(self) -> float:
        """An AM share times this is in A's units. The AM limit counts each AM by the resource
        it uses most of, which need not be the one that binds ``used``: 2 GB, 1 vcore AMs on
        nodes short of vcores fill A by memory while tasks run out of vcores."""
        return max(each for each, _ in self.limits) / self.am_per_app if self.limits else 1.0

    @property
    def a_for_all_waiting(self) -> float:
        """The A under which every waiting app's AM fits beside the running ones."""
        return (self.am + self.pending * self.am_per_app) * self.to_a

    @property
    def ams(self) -> int:
        """The AMs held (charged, on a CapacityScheduler), in whole AMs."""
        return round(self.am / self.am_per_app)

    def nearest_ams(self, share: float) -> int:
        """The whole AMs nearest to ``share`` (at least one), a tie going to fewer: A admits
        whole AMs, and one admitted in excess cannot be taken back."""
        return max(math.ceil(share / self.am_per_app - 0.5), 1)

    def ams_within(self, a: float) -> int:
        """Whole AMs inside A."""
        return min(math.floor(a / each + 1e-9) for each, _ in self.limits)

    def ams_admitted(self, a: float) -> int:
        """Whole AMs the RM admits under A, its limit rounded up to a whole unit."""
        return min(_admitted(a, each, unit) for each, unit in self.limits)

    @property
    def on_memory(self) -> Figures:
        """These figures with the AM limit counted on memory alone."""
        return replace(self, limits=self.limits[:1])

    @property
    def in_waves(self) -> bool:
        """The vcore side of the limit floats (`floating`) and the jobs have no more work
        behind each AM than the paper's (`work`): their tasks end together, in waves, and hand
        the vcores back, so over a batch the memory side is what caps the AMs (measured:
        docs/policies.md, "Jobs in waves under a FairScheduler limit that counts the vcores
        free"). Larger jobs keep the vcores, and the free vcores stay the limit (a
        SWIM day's few huge jobs let an AM in only with A near 1)."""
        return self.floating and self.work <= 1

    @property
    def lasting(self) -> Figures:
        """These figures with the AM limit counted as it binds over the jobs' lives: on memory
        alone where they run in waves (`in_waves`), as now otherwise."""
        return self.on_memory if self.in_waves else self

    def ams_admitted_once_free(self, a: float) -> int:
        """Whole AMs A admits as tasks end: where the vcore side floats with the free vcores,
        the memory side alone (the vcores come back with the tasks' ends); else as now."""
        return (self.on_memory if self.floating else self).ams_admitted(a)

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

    def top_of_band(self, ams: int) -> float:
        """The largest A that admits ``ams`` AMs on memory and not one more. Where the vcore
        side floats (`floating`), every A of a count's band runs as many AMs once tasks end,
        and the highest lets each start soonest: its vcore side, A x the vcores free, is the
        widest."""
        return round_a(self.on_memory.a_for(ams + 1) - 10**-DECIMALS)

    def ams_of(self, a: float) -> int:
        """The whole AMs ``a`` stands for, the inverse of `a_for`: those within it, and one more
        where ``a`` reaches `a_for` of one more (which sits a hair under its AMs' worth, where
        `ams_within` alone counts one fewer)."""
        within = self.ams_within(a)
        return within + (self.a_for(within + 1) <= a)


def _admitted(a: float, each: float, unit: float) -> int:
    """Whole AMs of ``each`` within A on one resource, the limit rounded up to a ``unit``."""
    return math.floor(math.ceil(a / unit - 1e-9) * unit / each + 1e-9)


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


def available_vcores_base(obs: Observation, q: QueueStats | None) -> bool:
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


def _am_holders(obs: Observation, q: QueueStats | None, running: int) -> int:
    """Apps whose AM the scheduler counts against A. A CapacityScheduler charges an AM when it
    activates the app (``LeafQueue.activateApplications``), before the AM's container is
    allocated and the app counts as running; its leaves report the activated apps
    (``numActiveApplications``, a queue's R here). With Hadoop's heartbeats an activated app
    can wait many seconds for its AM container behind older apps' tasks, and AM memory over
    the running apps alone reads one AM as two or three."""
    if obs.scheduler is not SchedulerKind.CAPACITY or q is not None or not obs.queues:
        return running
    return max(running, sum(x.running_apps for x in obs.queues))


def figures(
    obs: Observation, settings: ControllerSettings, target: str, a: float | None = None
) -> Figures:
    """Shares of the target's own denominator: a named queue's P, R, used and AM-used against
    its ``memory_share_mb`` (CS effective max capacity, FS fair share), the scheduler-wide
    value's against the cluster. AM use is what the RM measures; the paper's R x unit x 2 only
    where the RM does not say. Each share is taken per resource (memory, and vcores where
    reported and the scheduler counts them) and the resource used most counts, as the
    DominantResourceCalculator does: a CapacityScheduler with the default calculator counts
    one vcore per container whatever it asked for, so its vcore figures can pass the cluster's
    total and would call a half-empty cluster full."""
    if obs.memory_total_mb <= 0:
        raise ValueError(f"M_total must be positive, got {obs.memory_total_mb}")
    q = obs.queue(target) if target != GLOBAL_TARGET else None
    from_available = available_vcores_base(obs, q)
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
    pending_mb = obs.memory_pending_mb if q is None else q.memory_pending_mb
    measured = am_mem is not None
    if am_mem is None:
        am_mem = r * settings.unit_mb * 2
    # One AM container per running app; the rest run tasks. Unknown without measured AM use.
    tasks_running = containers - r if measured and containers is not None and containers > r else 0
    holders = _am_holders(obs, q, r)
    am_mem_each = am_mem / holders if holders and am_mem else settings.unit_mb * 2
    shares = [_share(mem, am_mem, am_mem_each, mem_total, tasks_running)]
    limits = [(shares[0][2], shares[0][4])]
    if vc_total > 0 and obs.vcores_scheduled:
        am_vc = r if am_vc is None else am_vc  # one vcore per AM: the MapReduce default
        am_vc_each = am_vc / holders if holders and am_vc else 1
        shares.append(_share(vc, am_vc, am_vc_each, vc_total, tasks_running))
        base = max(obs.vcores_total - obs.vcores_used, 1) if from_available else vc_total
        limits.append((am_vc_each / base, 1 / base))
    used, am, each, ratio, _ = max(shares)
    waits = obs.waits_for(target)
    held = {w.queue for w in waits if w.cured_by(target)}
    users_hold = any(w.cause is WaitCause.USER_AM_LIMIT for w in waits)
    gain = _leaves_gain(obs, target, a, held)
    limits = [(one / gain, unit / gain) for one, unit in limits]
    fair = obs.scheduler is SchedulerKind.FAIR
    waiting = max(0.0, pending_mb - p * am_mem_each) / mem_total if pending_mb else 0.0
    reserved = (obs.memory_reserved_mb or 0) / mem_total
    floating = from_available and len(shares) > 1 and shares[0][0] >= shares[1][0]
    return Figures(
        p, r, used, am, each, used - am, measured, ratio, tuple(limits), fair, waiting, floating,
        reserved, _a_admitting_held(obs, held, settings.a_max, a),
        _a_into_guarantee(obs, held, settings.a_max, a), users_hold, gain,
    )


def _a_into_guarantee(obs: Observation, held: set[str], a_max: float, a: float | None) -> float:
    """See `Figures.a_into_guarantee`; ``held``: the leaves whose waits the target's A cures.
    A leaf's unused guarantee is what it neither uses nor has asked for: a CapacityScheduler
    serves a leaf's apps in order (FIFO), so an AM admitted now is placed after the asks of the
    leaf's running apps."""
    if obs.scheduler is not SchedulerKind.CAPACITY:
        return 0.0
    over = {
        q.name: q.memory_used_mb - q.guarantee_mb for q in obs.queues if q.guarantee_mb is not None
    }
    leaves = [q for q in obs.queues if q.name in held]
    if any(over.get(q.name, -1) >= 0 for q in leaves):
        return 0.0  # a raise would admit the borrowers' waiting apps too
    if not any(x > 0 for x in over.values()):
        return 0.0  # no leaf borrows: what is full is the leaves' own
    growth = 0.0
    for q in leaves:
        share = q.am_share if q.am_share is not None else a
        if q.am_partition or not (q.guarantee_mb and q.am_memory_used_mb and q.running_apps):
            continue
        each = q.am_memory_used_mb / q.running_apps
        asked = max(0.0, (q.memory_pending_mb or 0) - q.pending_apps * each)
        ams = min(q.pending_apps, int((q.guarantee_mb - q.memory_used_mb - asked) // each))
        if ams > 0 and share:
            wanted = _a_for_more_ams(q.am_memory_used_mb, q.running_apps, share, ams)
            growth = max(growth, wanted)
    return min(growth, a_max)


def _leaves_gain(obs: Observation, target: str, a: float | None, held: set[str]) -> float:
    """How many times A's share of the cluster the AMs it admits may hold, where a global
    CapacityScheduler value caps several leaves at once: each leaf's AM limit is A times its
    own usable resource (``LeafQueue.getAMResourceLimitPerPartition``: its current limit, up to
    its maximum capacity, so on an idle cluster the whole of it), and leaves whose limits hold
    apps together admit the sum of theirs. The sum of the limits the RM reports over the value
    each leaf has loaded, but no more than the AMs those leaves hold over A: a user's AM limit
    (``getUserAMResourceLimitPerPartition``, A times the user's part of the leaf's guarantee)
    can hold the leaf's apps well under its own. ``held``: the leaves whose waits A cures."""
    if obs.scheduler is not SchedulerKind.CAPACITY or target != GLOBAL_TARGET or not a:
        return 1.0
    bases, ams = [], 0
    for leaf in obs.queues:
        q = leaf.in_am_partition()
        if q.name in held and q.am_memory_limit_mb:
            bases.append(min(q.am_memory_limit_mb / (q.am_share or a), obs.memory_total_mb))
            ams += q.am_memory_used_mb or 0
    if len(bases) < 2:
        return 1.0
    return max(1.0, min(sum(bases), ams / a) / obs.memory_total_mb)


def _a_admitting_held(
    obs: Observation, held: set[str], a_max: float, a: float | None = None
) -> float:
    """See `Figures.a_admitting_held`; ``held``: the leaves whose waits the target's A cures
    (`Wait.cured_by`). A leaf whose loaded share the RM does not report (a FairScheduler
    reports no maxAMShare) is taken to run under ``a``, the value the target holds, which is
    the one its waits say would cure them."""
    growth = 0.0
    for leaf in obs.queues:
        q = leaf.in_am_partition()  # the AM limit that holds them is their AMs' partition's
        share = q.am_share if q.am_share is not None else a
        if q.name not in held or not (q.am_memory_used_mb and q.running_apps and share):
            continue
        wanted = _a_for_more_ams(q.am_memory_used_mb, q.running_apps, share, q.pending_apps)
        growth = max(growth, wanted)
    return min(growth, a_max)


def _a_for_more_ams(am_mb: int, ams: int, share: float, more: int) -> float:
    """The A at which a leaf's AM limit, full at ``share`` with ``ams`` AMs holding ``am_mb``,
    admits ``more`` AMs of their mean size: the limit is proportional to A."""
    each = am_mb / ams
    return share * (am_mb + more * each) / am_mb


def task_aim(t2: float, am_to_task: float, work: float = 1.0) -> float:
    """The share tasks should keep with A filled, for AMs ``am_to_task`` times a task's size
    and jobs with ``work`` times the paper's jobs' work behind each AM.

    The paper's T2 was set for AMs of two task units. A job holds its AM while it starts and
    ends (time o) and while its tasks work (W, spread over the s task containers it gets), so
    k AMs of size a (in task units) on C units finish k / (o + W k / (C - a k)) jobs a second,
    most at s = sqrt(a W / o): the best share for AMs, 1 / (1 + sqrt(W / (a o))), grows with
    the square root of a and shrinks with the square root of W. Taking T2 as right for a = 2
    and the paper's W fixes W / o, and so the aim for any a and W.
    """
    k = (1 - t2) * math.sqrt(am_to_task / work)
    return 1 - k / (k + t2 * math.sqrt(PAPER_AM_TO_TASK))


def move(
    a: float, n: int, up: bool, cap: float, settings: ControllerSettings, gain: float = 1.0
) -> tuple[float, str]:
    """Up: alpha/2^n over ``gain`` (`Figures.gain`) towards A_max, at most ``cap`` and at least
    ``step``. Down: ``cap``, the distance to the goal. Kept inside the bounds; (new A, how)."""
    bound, name = (settings.a_max, "A_max") if up else (settings.a_min, "A_min")
    if a == bound:
        return a, f"already at {name} {bound:.4g}"
    alpha = abs(bound - a)
    delta = max(min(math.ldexp(alpha, -n) / gain, cap), settings.step) if up else cap
    rounded = round_a(a + delta if up else a - delta)
    new = min(rounded, settings.a_max) if up else max(rounded, settings.a_min)
    if not up:
        return new, f"to the goal, {cap:.4f} lower"
    over = f" over {gain:.3g} leaves' limits" if gain > 1 else ""
    return new, f"alpha {alpha:.4f}/2^{n}{over}, cap {cap:.4f}, step {settings.step:.4g}"


def aim_text(aim: float, f: Figures, work: float) -> str:
    why = []
    if f.am_to_task != PAPER_AM_TO_TASK:
        why.append(f"AMs {f.am_to_task:.2g}x a task")
    if work != 1:
        why.append(f"jobs {work:.2g}x the paper's work per AM")
    return f"{aim:.3g} (T2 for {', '.join(why)})" if why else f"T2 {aim:.3g}"


