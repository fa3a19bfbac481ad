"""The values that flow through one control cycle.

Everything here is a frozen dataclass with no behaviour beyond derived figures, so the
controller can be a pure function and the simulator can hand the same values to it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace


class SchedulerKind(enum.StrEnum):
    CAPACITY = "capacity"
    FAIR = "fair"


A_DECIMALS = 4
"""A (a share of a queue's resources) is decided, written and compared with this many decimals:
enough for a one-AM step on a 10,000-node queue, short enough for an operator to read."""

SAME_A = 0.5 * 10**-A_DECIMALS
"""Two values of A closer than this are the same value once written."""


def same_a(a: float | None, b: float | None) -> bool:
    """Whether two values of A (None: not set) are the same once written."""
    return a is b or (a is not None and b is not None and abs(a - b) < SAME_A)


def round_a(value: float) -> float:
    return round(value, A_DECIMALS)


def format_a(value: float) -> str:
    """A as the scheduler file holds it: short and stable ("0.35", "0.5"); Hadoop parses it with
    ``Float.parseFloat``."""
    text = f"{value:.{A_DECIMALS}f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


GLOBAL_TARGET = ""
"""The target key for the scheduler-wide value (CS global AMRP, FS queueMaxAMShareDefault)."""

PARTITION_MARK = "@"
"""Between a CapacityScheduler leaf and a node label in a target, ``root.default@core``: that
leaf's AM share in that partition
(``<leaf>.accessible-node-labels.<label>.maximum-am-resource-percent``)."""


def split_target(target: str) -> tuple[str, str]:
    """A target's queue and node label (``""``: the default partition, or no label)."""
    queue, _, label = target.partition(PARTITION_MARK)
    return queue, label


def queue_path(name: str) -> str:
    """A queue named by its full path or by a name under root, as a full path: ``default`` is
    ``root.default`` (Hadoop's ``FairQueuePlacementUtils.assureRoot``; a CapacityScheduler leaf
    under root by its short name)."""
    return name if name == "root" or name.startswith("root.") else f"root.{name}"


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One leaf queue as the RM reports it; `None` where this RM version does not say."""

    name: str
    """Full path, e.g. ``root.default``."""
    pending_apps: int
    running_apps: int
    memory_used_mb: int
    vcores_used: int = 0
    am_memory_used_mb: int | None = None
    am_vcores_used: int | None = None
    am_memory_limit_mb: int | None = None
    """CS ``AMResourceLimit`` / FS ``amMaxResources`` (FS: stale until an AM was tried)."""
    am_vcores_limit: int | None = None
    """FS only: ``amMaxResources``' vcores, which ``FSLeafQueue.canRunAppAM`` checks beside
    its memory (Hadoop 3; a CapacityScheduler's default calculator counts memory alone)."""
    am_share: float | None = None
    """The A the RM has loaded for this leaf: CS ``configuredMaxAMResourceLimit``, else the
    default partition's ``maxAMLimitPercentage`` / 100. None where the RM does not say (a
    FairScheduler reports no maxAMShare, only the limit it last computed from it)."""
    memory_share_mb: int | None = None
    """What the queue may use now: CS max(guarantee, current limit) approximated by the
    effective max capacity; FS the instantaneous fair share."""
    vcores_share: int | None = None
    containers: int | None = None
    """Containers allocated, AMs included (CS ``numContainers``, FS ``allocatedContainers``)."""
    memory_pending_mb: int | None = None
    """Memory the queue's apps asked for and do not hold yet, their AM asks included (CS the
    default partition's ``pending``; FS ``demandResources`` less ``usedResources``)."""
    max_apps: int | None = None
    """Apps that may run at once: CS ``maxParallelApps`` (3.4+), FS ``maxApps`` (its
    ``maxRunningApps``)."""
    held_apps: int | None = None
    """CS only: apps over ``max-parallel-apps`` (``AbstractLeafQueue`` non-runnable apps), which
    ``numPendingApplications`` leaves out: ``numApplications`` less pending and active (3.4+)."""
    user_am_room_mb: int | None = None
    """CS only: the least AM room (per-user ``amLimit`` less ``amUsed``, ``UsersManager``) among
    the users with apps waiting; None where the RM lists no such user."""
    user_room_mb: int | None = None
    """CS only: the least room under the user limit (``userResourceLimit`` less
    ``resourcesUsed``) among the users with apps waiting; None where the RM lists no such
    user."""
    guarantee_mb: int | None = None
    """CS only: the memory guaranteed to the leaf in the default partition
    (``effectiveMinResource``, 3.1+; else its ``absoluteCapacity`` of the cluster's)."""
    ancestor_max_apps: tuple[tuple[str, int], ...] = ()
    """Each ancestor's running-apps limit, its parent first and root last: CS
    ``maxParallelApps`` (3.4+), FS ``maxApps``; an app is runnable only while every one of them
    has room (``CSMaxRunningAppsEnforcer``, ``MaxRunningAppsEnforcer``)."""
    am_partition: PartitionStats | None = None
    """CS only: the labelled node-label partition the leaf's AMs go to, and its figures there;
    None when they go to the default one. Every figure above is the default partition's, as
    the cluster's metrics are (Hadoop 3.5.0 leaves a labelled partition's memory and
    containers out of ``totalMB`` and ``allocatedMB``)."""

    @property
    def partition_sets_own_share(self) -> bool:
        """Whether the AM partition's share is its own, which neither the leaf's value nor the
        global one reaches (the RM reports only the values, so a partition set to exactly the
        leaf's value counts as not set)."""
        part = self.am_partition
        return (
            part is not None
            and part.am_share is not None
            and self.am_share is not None
            and abs(part.am_share - self.am_share) > SAME_A
        )

    def in_am_partition(self) -> QueueStats:
        """The leaf as its AMs' partition sees it: that partition's memory and AM figures in
        place of the default one's (itself when its AMs go to the default partition). Its AM
        limit there is the one that admits them (``AbstractLeafQueue.activateApplications``
        judges an app on its AM partition's limits)."""
        part = self.am_partition
        if part is None:
            return self
        return replace(
            self,
            memory_used_mb=part.memory_used_mb,
            vcores_used=part.vcores_used,
            am_memory_used_mb=part.am_memory_used_mb,
            am_vcores_used=part.am_vcores_used,
            am_memory_limit_mb=part.am_memory_limit_mb,
            am_share=part.am_share,
            memory_share_mb=part.memory_share_mb,
            vcores_share=None,
            memory_pending_mb=part.memory_pending_mb,
            user_am_room_mb=part.user_am_room_mb,
            user_room_mb=part.user_room_mb,
            am_partition=None,
        )


@dataclass(frozen=True, slots=True)
class PartitionStats:
    """A CS leaf's figures in one labelled partition (``PartitionResourcesInfo``,
    ``PartitionQueueCapacitiesInfo``, each user's entry); None where the RM does not say."""

    label: str
    memory_used_mb: int = 0
    vcores_used: int = 0
    am_memory_used_mb: int | None = None
    am_vcores_used: int | None = None
    am_memory_limit_mb: int | None = None
    am_share: float | None = None
    """Its ``maxAMLimitPercentage`` / 100: the leaf's own unless the file sets the partition's
    (``getMaximumAMResourcePercentPerPartition`` falls back to the queue's)."""
    memory_share_mb: int | None = None
    memory_pending_mb: int | None = None
    user_am_room_mb: int | None = None
    """The least AM room among the users with apps waiting, in this partition."""
    user_room_mb: int | None = None
    """The least room under the user limit there among the users with apps waiting: no
    document reports a user's limit in a labelled partition, so the monitor computes it
    (`user_limit_mb`) from the leaf's capacity, use and maximum there."""


@dataclass(frozen=True, slots=True)
class Observation:
    """What the monitor saw at one instant. Totals are validated positive by the monitor."""

    time: float
    """Seconds since the epoch (simulated seconds in the simulator)."""
    scheduler: SchedulerKind
    pending_apps: int
    """P: apps waiting (not yet running)."""
    running_apps: int
    """R: apps running."""
    memory_used_mb: int
    memory_total_mb: int
    vcores_used: int = 0
    vcores_total: int = 0
    am_memory_used_mb: int | None = None
    """Sum of the RM's measured AM memory over leaf queues, when the RM reports it."""
    queues: tuple[QueueStats, ...] = ()
    containers: int | None = None
    """Containers allocated cluster-wide, AMs included (``containersAllocated``); with the AM
    figures it tells how large a task container is, and so how many tasks an AM's room holds."""
    memory_pending_mb: int | None = None
    """Memory asked for and not yet allocated, cluster-wide (``pendingMB``, the root queue's
    ``QueueMetrics``): waiting apps' AM asks and running apps' task asks."""
    memory_reserved_mb: int | None = None
    """Memory held on nodes for containers that did not fit them yet (``reservedMB``): room an
    AM or a large task will take, not room for more."""
    vcores_scheduled: bool = True
    """False when the scheduler ignores vcores (a CapacityScheduler with the default resource
    calculator): it counts one vcore per container, so its vcore figures can pass the cluster's
    and say nothing about what binds. The REST API does not say; the scheduler file does."""
    source: str = ""
    """Where the figures came from, e.g. ``rest http://rm1:8088``."""
    labelled_partitions: tuple[str, ...] = ()
    """Node-label partitions the CapacityScheduler reports queues in. Every figure above is the
    default partition's (or the cluster's): AMs there, and their limits, are not tuned."""
    waits: tuple[Wait, ...] = ()
    """Why the waiting apps wait, per leaf queue (`amtuner.causes`); empty where the source
    does not tell (the web UI)."""
    idle_ams: tuple[IdleAMs, ...] | None = None
    """Running apps that hold only their AM, per leaf queue (`amtuner.monitor.idle`); None
    where they were not looked for (only while an AM limit holds apps)."""

    def idle_for(self, target: str) -> IdleAMs | None:
        """The idle AMs of one target summed (its leaf's, every leaf's for the global target;
        ``queue`` the target); None where they were not looked for."""
        if self.idle_ams is None:
            return None
        queue = split_target(target)[0]
        mine = [i for i in self.idle_ams if target == GLOBAL_TARGET or i.queue == queue]
        return IdleAMs(
            target,
            sum(i.apps for i in mine),
            sum(i.memory_mb for i in mine),
            sum(i.running for i in mine),
        )

    def waits_for(self, target: str) -> tuple[Wait, ...]:
        """The waits of one target: its leaf queue's (in its partition for a ``leaf@label``
        target), or every one for the global target."""
        if target == GLOBAL_TARGET:
            return self.waits
        queue, label = split_target(target)
        return tuple(
            w for w in self.waits if w.queue == queue and (not label or w.partition == label)
        )

    @property
    def memory_ratio(self) -> float:
        return self.memory_used_mb / self.memory_total_mb

    def queue(self, name: str) -> QueueStats | None:
        """A leaf by name; for a ``leaf@label`` target, the leaf as that partition sees it
        while its AMs go there (`QueueStats.in_am_partition`; None otherwise: no figure of it
        is read)."""
        queue, label = split_target(name)
        for q in self.queues:
            if q.name == queue:
                if not label:
                    return q
                if q.am_partition is None or q.am_partition.label != label:
                    return None
                return q.in_am_partition()
        return None


class WaitCause(enum.StrEnum):
    """Why a queue's apps wait in ACCEPTED: the scheduler's limits in the order the
    CapacityScheduler documents them (max-parallel-apps, then the queue AM limit, then the user
    AM limit), a user already holding its user limit, and the cluster being full when none of
    them binds."""

    MAX_APPS = "max-apps"
    QUEUE_AM_LIMIT = "queue-am-limit"
    PARTITION_AM_LIMIT = "partition-am-limit"
    """The queue's AM limit in the node-label partition its AMs go to (CS)."""
    USER_AM_LIMIT = "user-am-limit"
    USER_LIMIT = "user-limit"
    CLUSTER_FULL = "cluster-full"

    @property
    def a_cures(self) -> bool:
        """Whether raising A lets these apps start: only the AM limits are made of A (the user
        AM limit is the queue's times the user limit and user-limit-factor, YARN-2637). A user
        at its user limit gets no container, AM or task, whatever A (``canAssignToUser``): a
        higher A would only give its AMs more of what its tasks use."""
        return self in (
            WaitCause.QUEUE_AM_LIMIT,
            WaitCause.PARTITION_AM_LIMIT,
            WaitCause.USER_AM_LIMIT,
        )


USERS_LIMIT = "users"
"""`Wait.held_at` of apps held by their users' running-apps limits rather than a queue's."""


@dataclass(frozen=True, slots=True)
class IdleAMs:
    """Running apps of one queue that hold their AM container alone and ask for nothing: a
    session or service between its queries, or an AM computing on its own (the RM cannot tell
    them apart); `amtuner.monitor.idle` says which count."""

    queue: str
    apps: int
    memory_mb: int
    """What their containers hold (``allocatedMB``): AM share no task uses."""
    running: int = 0
    """The queue's apps RUNNING, of which ``apps`` are idle, as the same listing says."""


@dataclass(frozen=True, slots=True)
class Wait:
    """Apps of one leaf queue held by one limit (queue ``""``: apps no leaf accounts for)."""

    queue: str
    cause: WaitCause
    apps: int
    held_at: tuple[str, ...] = ()
    """``max-apps`` only, where the limits that hold them are set when not ``queue``'s own
    alone: every queue from ``queue`` up whose running apps have reached its limit (each must
    be raised for one more to run); (`USERS_LIMIT`,) for the apps their users' limits hold
    (CapacityScheduler: when no queue's limit is reached)."""
    partition: str = ""
    """CapacityScheduler: the labelled partition whose AM limits hold them (their AMs go
    there), "" for the default one."""
    own_share: bool = False
    """``partition-am-limit`` only: the partition sets its own AM share, so only a
    ``queue@partition`` target's value makes that limit."""

    def cured_by(self, target: str) -> bool:
        """Whether raising ``target``'s A lets these apps start: an AM limit made of the value
        that target writes (a partition's own share only by its ``leaf@label`` target)."""
        if not self.cause.a_cures:
            return False
        if self.cause is not WaitCause.PARTITION_AM_LIMIT or not self.own_share:
            return True
        return target == f"{self.queue}{PARTITION_MARK}{self.partition}"


class Rule(enum.StrEnum):
    """Which case of the paper's Algorithm 1 fired (or why nothing did)."""

    UNDER_ALLOCATION = "under-allocation"
    OVER_ALLOCATION_1 = "over-allocation-1"
    OVER_ALLOCATION_2 = "over-allocation-2"
    OVER_ALLOCATION_3 = "over-allocation-3"
    HOLD = "hold"

    @property
    def meaning(self) -> str:
        """What the rule says in an operator's words (the paper's Algorithm 1)."""
        return RULE_MEANINGS[self]


RULE_MEANINGS: dict[Rule, str] = {
    Rule.UNDER_ALLOCATION: "apps wait, more than last period, memory use below T1: raise A",
    Rule.OVER_ALLOCATION_1: "nothing waits and fewer apps run than last period: lower A",
    Rule.OVER_ALLOCATION_2: (
        "apps wait, memory use between T3 and T1 but tasks hold less than T2: lower A"
    ),
    Rule.OVER_ALLOCATION_3: "memory use at or above T1 but tasks hold less than T2: lower A",
    Rule.HOLD: "none of the above (or a move held back by a bound or the guard): keep A",
}
"""One home for the rule names' explanations: `once`, `status` and `--help` show them."""


class Direction(enum.StrEnum):
    UP = "up"
    DOWN = "down"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Decision:
    old_a: float
    new_a: float
    rule: Rule
    reason: str
    """One line a human can check against the numbers,
    e.g. ``P 12 > P(t-1) 9 and M_used/M_total 0.41 < T1 1.00``."""
    target: str = GLOBAL_TARGET
    case: str = ""
    """Which of the policy's cases decided (adaptive: `adaptive.Case`); the rule's name where a
    policy has no finer cases (the paper's)."""

    @property
    def label(self) -> str:
        """The case, else the rule: what metrics, status and logs name the decision by."""
        return self.case or self.rule.value

    @property
    def direction(self) -> Direction:
        if self.new_a > self.old_a:
            return Direction.UP
        if self.new_a < self.old_a:
            return Direction.DOWN
        return Direction.NONE

    @property
    def changed(self) -> bool:
        return self.new_a != self.old_a


@dataclass(frozen=True, slots=True)
class ControllerState:
    """What the controller carries from one period to the next (persisted by the daemon)."""

    a: float
    n: int = 1
    prev_pending: int | None = None
    prev_running: int | None = None
    extra: dict[str, float] = field(default_factory=dict)
    """Policy-specific numbers (e.g. a stabilisation counter); plain floats so it is JSON."""
    file_a: float | None = None
    """Set only in a state decided without writing (dry-run, paused): the value the file held
    then. Its ``a`` is the value the loop would have written, so an admin's edit is told by the
    file no longer holding ``file_a``. Never saved: such states are not persisted."""


def user_limit_mb(
    guarantee_mb: int,
    queue_used_mb: int,
    max_mb: int,
    min_alloc_mb: int,
    *,
    active_users: int = 1,
    user_limit_percent: float = 100.0,
    user_limit_factor: float = 1.0,
) -> int:
    """How much one user may hold in a leaf (``UsersManager.computeUserLimit``), in one
    partition: an equal split of the queue's current capacity among active users (at least
    minimum-user-limit-percent of it), capped by guarantee × user-limit-factor; so one user
    alone gets the queue's capacity, not its maximum capacity, unless the factor is raised
    (-1: no cap but max capacity). The simulator's CapacityScheduler holds users to it, and
    the monitor computes it where no document reports it (a labelled partition)."""
    current = guarantee_mb if queue_used_mb < guarantee_mb else queue_used_mb + min_alloc_mb
    share = max(-(-current // max(active_users, 1)), int(current * user_limit_percent / 100.0))
    share = -(-share // min_alloc_mb) * min_alloc_mb
    if user_limit_factor == -1:
        cap = max_mb
    else:
        cap = min(int(guarantee_mb * user_limit_factor) // min_alloc_mb * min_alloc_mb, max_mb)
    return min(share, cap)
