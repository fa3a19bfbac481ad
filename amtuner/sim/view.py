"""A read-only snapshot of the simulated RM, in the RM's own terms.

The simulation builds one with `Simulation.view()` (cost O(queues), never O(apps), so a scrape
of a 10,000-app cluster stays cheap) and lists apps with `Simulation.app_views(states, limit)`.
The RM face (`rmapi`) renders these as the REST JSON and web UI of a real RM, and nothing else
reaches into the simulation. Memory in MB, time in simulated seconds since the simulation started.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from amtuner.sim.sched_config import UNLIMITED

AppState = Literal["NEW", "SUBMITTED", "ACCEPTED", "RUNNING", "FINISHED", "FAILED", "KILLED"]


@dataclass(frozen=True, slots=True)
class Res:
    memory_mb: int = 0
    vcores: int = 0


@dataclass(frozen=True, slots=True)
class NodeView:
    """One NodeManager as the RM lists it (``NodeInfo``): every simulated node runs."""

    name: str
    total: Res
    used: Res
    containers: int
    label: str = ""
    """Its node-label partition ("": the default one)."""


@dataclass(frozen=True, slots=True)
class UserView:
    """One user of a CS leaf (``UsersManager.User``, rendered as the REST ``UserInfo``): the
    user limit and the user AM limit are where a user's apps stop, whatever the queue has."""

    name: str
    used: Res
    am_used: Res
    am_limit: Res
    """The user AM limit (``getUserAMResourceLimitPerPartition``)."""
    resource_limit: Res
    """The user limit (``computeUserLimit``): what the user may hold, AMs and tasks together."""
    pending_apps: int
    active_apps: int
    partition: UserPartitionView | None = None
    """The labelled partition of the leaf's containers, where its AMs (and ``am_used``) go."""


@dataclass(frozen=True, slots=True)
class UserPartitionView:
    """A user's figures in a labelled partition (its ``resourceUsagesByPartition`` entry)."""

    label: str
    used: Res
    am_used: Res
    am_limit: Res
    """The user AM limit there (``getUserAMResourceLimitPerPartition``)."""
    resource_limit: Res
    """The user limit there (``computeUserLimit`` for that partition): no document reports it."""


@dataclass(frozen=True, slots=True)
class PartitionView:
    """A CS leaf's figures in one labelled partition (``PartitionQueueCapacitiesInfo``,
    ``PartitionResourcesInfo``); the `QueueView`'s own are the default partition's."""

    label: str
    capacity: float
    """Fraction of the parent's capacity in the partition."""
    maximum_capacity: float
    absolute_capacity: float
    absolute_max_capacity: float
    max_am_percent: float
    guaranteed: Res
    maximum: Res
    used: Res
    pending: Res
    am_used: Res
    am_limit: Res
    user_am_limit: Res


@dataclass(frozen=True, slots=True)
class QueueView:
    path: str
    """Full path, ``root`` for the root queue."""
    is_leaf: bool
    children: tuple[str, ...]
    used: Res
    am_used: Res
    am_limit: Res
    """CS: the computed AM limit (yarn-facts §1.2); FS: ``amMaxResources`` as last computed."""
    num_pending_apps: int
    """CS: not yet activated; FS: runnable without AM + non-runnable."""
    num_active_apps: int
    """CS: activated; FS: runnable with the AM allocated."""
    max_apps: int
    pending_containers: int
    allocated_containers: int
    num_nonrunnable_apps: int = 0
    """CS: held by a ``max-parallel-apps`` limit, in neither count above (FS counts its
    non-runnable apps as pending)."""
    max_parallel_apps: int = UNLIMITED
    """CS ``max-parallel-apps`` in force here."""
    # CapacityScheduler figures (fractions 0..1 of the parent / of the cluster)
    capacity: float = 0.0
    maximum_capacity: float = 1.0
    absolute_capacity: float = 0.0
    absolute_max_capacity: float = 1.0
    max_am_percent: float = 0.0
    """The fraction in force here (CS maximum-am-resource-percent, FS maxAMShare)."""
    # FairScheduler figures
    weight: float = 1.0
    min_resources: Res = Res()
    max_resources: Res = Res()
    fair_share: Res = Res()
    steady_fair_share: Res = Res()
    demand: Res = Res()
    scheduling_policy: str = "fair"
    reserved: Res = Res()
    """Held for containers reserved by its apps (and below), as `reservedResources` shows it."""
    reserved_containers: int = 0
    users: tuple[UserView, ...] = ()
    """CS leaves: the users with apps in the queue."""
    user_am_limit: Res = Res()
    """CS leaves: the AM limit of a user of the default weight (``userAMResourceLimit``)."""
    user_limit_percent: float = 100.0
    user_limit_factor: float = 1.0
    partitions: tuple[PartitionView, ...] = ()
    """CS leaves: the labelled partition their containers use, if any."""
    default_label: str = ""
    """CS: ``default-node-label-expression``."""


@dataclass(frozen=True, slots=True)
class AppView:
    app_id: str
    """``application_<cluster-ts>_<seq>``, as a real RM names them."""
    name: str
    queue: str
    user: str
    state: AppState
    submitted_s: float
    started_s: float | None
    finished_s: float | None
    allocated: Res
    running_containers: int
    progress: float
    """0..100."""
    memory_seconds: int = 0
    vcore_seconds: int = 0
    """MB and vcores held times how long, to now: the RM's ``memorySeconds``/``vcoreSeconds``."""
    maps: int = 0
    reduces: int = 0
    maps_done: int = 0
    reduces_done: int = 0
    map_s: float = 0.0
    reduce_s: float = 0.0
    """Its tasks as its spec has them, for the JobHistory server's face: counts, done of its
    last run, and each kind's run time alone on an idle node (the mean over its groups)."""
    map_mb: int = 1024
    map_vcores: int = 1
    reduce_mb: int = 1024
    reduce_vcores: int = 1
    am_mb: int = 1536
    """What its spec asks for each container of a kind (a MapReduce job asks one size a kind:
    its first group's), for its job configuration on the JobHistory server's face."""
    am_container_mb: int = 0
    am_vcores: int = 0
    am_startup_s: float = 0.0
    task_groups: tuple[tuple[int, int, int, float], ...] = ()
    """Its AM container and its tasks as its spec has them, for the timeline server's face:
    each group's count over all its runs, memory as the RM allocates it, vcores, and run time
    alone on an idle node."""
    asks: tuple[tuple[int, int, int, int], ...] = ()
    """What it has asked for and not been given, as the RM lists it (``resourceRequests``):
    priority, MB, vcores and containers of each ask; its AM's (priority 0) while that waits,
    then its tasks' (MapReduce's priorities: 20 maps, 10 reduces, ``RMContainerAllocator``)."""


@dataclass(frozen=True, slots=True)
class ClusterView:
    now_s: float
    scheduler: Literal["capacity", "fair"]
    total: Res
    allocated: Res
    reserved: Res
    active_nodes: int
    apps_submitted: int
    apps_completed: int
    apps_pending: int
    """Cluster metric semantics (yarn-facts §1.5): submitted but no AM container yet."""
    apps_running: int
    apps_failed: int
    apps_killed: int
    containers_allocated: int
    containers_pending: int
    queues: tuple[QueueView, ...]
    """Pre-order: root first, parents before children."""
    containers_reserved: int = 0
    across_partitions: tuple[Res, Res, int] | None = None
    """CS with labelled partitions: every partition's total and allocated resources and
    containers (``total*AcrossPartition``); ``total``, ``allocated`` and
    ``containers_allocated`` are then the default partition's, as Hadoop 3.5.0 reports them."""
    minimum_allocation: Res = Res(1024, 1)
    maximum_allocation: Res = Res(8192, 4)
