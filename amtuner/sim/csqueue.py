"""A CapacityScheduler queue's counters, and which apps ``max-parallel-apps`` lets run.

`CSQueue` keeps what `amtuner.sim.capacity.CapacityScheduler` counts per queue. `RunnableApps`
is ``CSMaxRunningAppsEnforcer`` (3.4+, YARN-9930): an app is runnable when its user has fewer
runnable apps than the user's ``max-parallel-apps`` and its leaf and every ancestor up to root
fewer than theirs; otherwise it waits, non-runnable, outside its leaf's pending apps
(``AbstractLeafQueue.nonRunnableApps``), counted in the leaf's applications only. When a
runnable app leaves, the apps that may run now are those under the highest queue it took off its
limit, and its user's if it took the user off theirs (``updateRunnabilityOnAppRemoval``); on a
reload, those under every queue with room (``updateRunnabilityOnReload``). The scheduler makes
them runnable in submission order while the limits allow (``updateAppsRunnability``).
"""

from __future__ import annotations

from amtuner.sim.app import App
from amtuner.sim.cluster import Cluster
from amtuner.sim.sched_config import SchedulerConfigError
from amtuner.sim.sched_config.capacity import CSConf, CSQueueConf


def submitted(app: App) -> int:
    """An app's place in submission order (its start time's, in Hadoop's iterators)."""
    return app.index


class CSQueue:
    """One queue's configuration and running counters (a parent's sum its leaves')."""

    __slots__ = (
        "active",
        "allocated_containers",
        "am_part",
        "am_used_mb",
        "am_used_vcores",
        "apps",
        "children",
        "conf",
        "guarantee_mb",
        "heap",
        "is_leaf",
        "label_guarantee_mb",
        "label_max_mb",
        "label_pending_mb",
        "label_used_mb",
        "label_used_vcores",
        "label_user_used",
        "max_mb",
        "min_pending_am",
        "nonrunnable",
        "parent",
        "pending",
        "pending_containers",
        "pending_mb",
        "pending_vcores",
        "runnable",
        "task_part",
        "used_mb",
        "used_vcores",
        "user_active",
        "user_am_used",
        "user_limit",
        "user_used",
    )

    def __init__(self, conf: CSQueueConf, parent: CSQueue | None) -> None:
        self.conf = conf
        self.parent = parent
        self.is_leaf = not conf.children
        self.children: list[CSQueue] = []
        """In configuration order (ties in ParentQueue's ordering go to the first)."""
        self.guarantee_mb = 0
        """Its absolute capacity of the cluster, normalised up; set with the configuration."""
        self.max_mb = 0
        """Its absolute maximum capacity of the cluster."""
        self.am_part = 0
        """The node-label partition its AMs go to (`Cluster.labels`' index; 0 the default)."""
        self.task_part = 0
        """The partition its other containers go to (its ``default-node-label-expression``)."""
        self.label_guarantee_mb = 0
        self.label_max_mb = 0
        self.label_used_mb = 0
        """Its capacity, maximum capacity and use in the labelled partition it uses (the
        default partition's are `guarantee_mb`, `max_mb` and `used_mb`)."""
        self.label_used_vcores = 0
        self.label_pending_mb = 0
        """What of `pending_mb` is asked for in that partition."""
        self.label_user_used: dict[str, int] = {}
        """Memory by user there (`user_used` is the default partition's)."""
        self.used_mb = 0
        self.used_vcores = 0
        self.allocated_containers = 0
        self.pending_containers = 0
        self.pending_mb = 0
        """Memory asked for and not yet allocated, AMs of apps not yet activated included: the
        queue's ``QueueMetrics`` pending figure, which `AppSchedulingInfo` raises with each ask
        whether or not the app is active."""
        self.pending_vcores = 0
        """The same in vcores (the metrics count them whatever the resource calculator); and
        `pending_containers` in containers."""
        self.pending: list[App] = []
        """Submitted, not yet activated, FIFO."""
        self.min_pending_am = 0
        """A lower bound of the AM sizes in `pending` (exact when it was last empty)."""
        self.runnable = 0
        """Runnable apps here and below: what its ``max-parallel-apps`` counts."""
        self.nonrunnable: list[App] = []
        """Submitted while a ``max-parallel-apps`` limit was reached, FIFO: neither pending nor
        active, but counted in `apps`."""
        self.active = 0
        self.apps = 0
        self.am_used_mb = 0
        self.am_used_vcores = 0
        self.user_am_used: dict[str, int] = {}
        """AM memory by user; its keys are the users with active apps."""
        self.user_active: dict[str, int] = {}
        """Active apps by user (what the REST ``UserInfo`` counts; nothing schedules by it)."""
        self.user_used: dict[str, int] = {}
        self.user_limit = (-1, 0, 0)
        """(current capacity, active users, user limit) last computed: the limit changes only
        with those two, and it is asked for every container."""
        self.heap: list[tuple[int, App]] = []
        """Activated apps that want a container, FIFO by submission."""


def place(leaf: CSQueue, cluster: Cluster, am_label: str) -> None:
    """The partitions of a leaf's AMs (``am_label``, the RM's, else its default label) and of
    its other containers (its default label), and its capacities in the labelled one
    (`amtuner.sim.capacity`)."""
    task_label = leaf.conf.default_label
    am_label = am_label or task_label
    if task_label and am_label != task_label:
        raise SchedulerConfigError(
            f"{leaf.conf.path}: AMs in partition {am_label} and tasks in {task_label}: "
            "a leaf using two labelled partitions is not simulated"
        )
    labels = cluster.labels
    for label in {am_label, task_label} - {""}:
        if label not in labels:
            raise SchedulerConfigError(
                f"{leaf.conf.path}: partition {label} has no node in the simulated cluster"
            )
    leaf.am_part = labels.index(am_label)
    leaf.task_part = labels.index(task_label)
    part = leaf.am_part or leaf.task_part
    if part:
        size = cluster.part_mb[part]
        cap, max_cap, _ = leaf.conf.in_partition(labels[part])
        # multiplyAndNormalizeUp, as the default partition's guarantee
        leaf.label_guarantee_mb = -(-int(size * cap + 0.5) // cluster.min_alloc_mb) * (
            cluster.min_alloc_mb
        )
        leaf.label_max_mb = int(max_cap * size)


class RunnableApps:
    """``CSMaxRunningAppsEnforcer``'s counts beside the queues' own (`CSQueue.runnable`):
    runnable apps by user, across queues, and how many apps wait non-runnable."""

    __slots__ = ("by_user", "conf", "waiting")

    def __init__(self, conf: CSConf) -> None:
        self.conf = conf
        """The configuration in force: the users' limits."""
        self.by_user: dict[str, int] = {}
        self.waiting = 0

    def can_run(self, leaf: CSQueue, user: str) -> bool:
        """``checkRunnabilityWithUpdate``: the user's limit, then the leaf's and each
        ancestor's."""
        if self.by_user.get(user, 0) >= self.conf.user_max_parallel_apps_of(user):
            return False
        q: CSQueue | None = leaf
        while q is not None:
            if q.runnable >= q.conf.max_parallel_apps:
                return False
            q = q.parent
        return True

    def track(self, leaf: CSQueue, app: App) -> None:
        """``app`` runnable: counted up to root and by its user, and pending in its leaf in
        submission order (``FifoOrderingPolicyForPendingApps``: an app made runnable late goes
        before the younger ones already pending)."""
        user = app.user
        self.by_user[user] = self.by_user.get(user, 0) + 1
        q: CSQueue | None = leaf
        while q is not None:
            q.runnable += 1
            q = q.parent
        pending = leaf.pending
        if not pending or app.am_memory_mb < leaf.min_pending_am:
            leaf.min_pending_am = app.am_memory_mb
        at = len(pending)
        while at > 0 and pending[at - 1].index > app.index:
            at -= 1
        pending.insert(at, app)

    def untrack(self, leaf: CSQueue, user: str) -> None:
        """A runnable app of ``user`` in ``leaf`` has left."""
        left = self.by_user[user] - 1
        if left:
            self.by_user[user] = left
        else:
            del self.by_user[user]
        q: CSQueue | None = leaf
        while q is not None:
            q.runnable -= 1
            q = q.parent

    def gather(self, queue: CSQueue, lists: list[list[App]]) -> None:
        """``gatherPossiblyRunnableAppLists``: the non-runnable apps of the leaves at or under
        ``queue`` reached through queues below their limits only."""
        if queue.runnable >= queue.conf.max_parallel_apps:
            return
        if queue.is_leaf:
            if queue.nonrunnable:
                lists.append(queue.nonrunnable)
            return
        for child in queue.children:
            self.gather(child, lists)

    def freed(self, leaf: CSQueue, user: str, leaves: list[CSQueue]) -> list[list[App]]:
        """Once `untrack` has counted an app of ``user`` in ``leaf`` out: the waiting apps that
        may run now, one list (oldest first) per limit it freed, of which at most one app each
        is made runnable."""
        lists: list[list[App]] = []
        highest: CSQueue | None = None
        q: CSQueue | None = leaf
        while q is not None:
            if q.runnable == q.conf.max_parallel_apps - 1:
                highest = q
            q = q.parent
        if highest is not None:
            self.gather(highest, lists)
        if self.by_user.get(user, 0) == self.conf.user_max_parallel_apps_of(user) - 1:
            mine = [a for lf in leaves for a in lf.nonrunnable if a.user == user]
            if mine:
                lists.append(sorted(mine, key=submitted))
        return lists
