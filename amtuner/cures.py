"""The setting that cures each `WaitCause`, named as an operator finds it in the scheduler's
file (the keys' home is the executor, which writes them), and what the file sets it to."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from amtuner.executor.xmledit import (
    CS_DEFAULT,
    CS_GLOBAL_KEY,
    CS_PREFIX,
    FS_DEFAULT,
    FS_GLOBAL_TAG,
    FS_QUEUE_TAG,
    SchedulerFile,
    capacity_key,
)
from amtuner.model import (
    A_DECIMALS,
    GLOBAL_TARGET,
    PARTITION_MARK,
    USERS_LIMIT,
    Observation,
    SchedulerKind,
    Wait,
    WaitCause,
)
from amtuner.monitor.waits import UnfinishedApp, UsersLimits, held_by_users
from amtuner.safetext import shown

CLUSTER_CAPACITY = "cluster capacity (more nodes, or fewer running tasks)"
UNLIMITED = "unlimited"


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting of the scheduler's file behind a knob, and what applies while it is unset:
    the file-wide ``fallback`` when the file sets that, else Hadoop's ``default``."""

    key: str
    """A CapacityScheduler property, or a FairScheduler element's tag."""
    queue: str = GLOBAL_TARGET
    """FairScheduler: the leaf whose element it is (the global target: ``<allocations>``')."""
    default: str = UNLIMITED
    fallback: str = ""

    @property
    def name(self) -> str:
        return f"{self.key} of queue {self.queue}" if self.queue else self.key

    def in_file(self, sched_file: SchedulerFile) -> str:
        """``<name> = <value>`` as the file sets it, else ``<name> unset: default <value>``."""
        own = sched_file.setting(self.key, self.queue)
        if own is not None:
            return f"{self.name} = {own}"
        inherited = sched_file.setting(self.fallback) if self.fallback else None
        if inherited is not None:
            return f"{self.name} unset: default {inherited} ({self.fallback})"
        return f"{self.name} unset: default {self.default}"


def settings(
    cause: WaitCause,
    scheduler: SchedulerKind,
    queue: str,
    held_at: tuple[str, ...] = (),
    partition: str = "",
) -> tuple[Setting, ...]:
    """The settings that make the limit holding a wait, the knob first (``held_at``:
    `Wait.held_at`), with Hadoop's defaults: ``CapacitySchedulerConfiguration``
    (``DEFAULT_USER_LIMIT_FACTOR`` 1, ``DEFAULT_USER_LIMIT`` 100, max-parallel-apps
    ``Integer.MAX_VALUE``) and ``AllocationConfiguration`` (``queueMaxAppsDefault`` and
    ``userMaxAppsDefault`` ``Integer.MAX_VALUE``, ``queueMaxAMShareDefault`` 0.5). None for a
    full cluster."""
    if cause is WaitCause.CLUSTER_FULL or not queue:
        return ()
    if scheduler is SchedulerKind.FAIR:
        if cause is WaitCause.QUEUE_AM_LIMIT:
            return (Setting(FS_QUEUE_TAG, queue, f"{FS_DEFAULT:g}", FS_GLOBAL_TAG),)
        if held_at == (USERS_LIMIT,):
            return (Setting("userMaxAppsDefault"),)
        return (
            *(
                Setting("maxRunningApps", q, fallback="queueMaxAppsDefault")
                for q in held_at or (queue,)
            ),
            Setting("userMaxAppsDefault"),
        )
    queue_share = Setting(capacity_key(queue), default=f"{CS_DEFAULT:g}", fallback=CS_GLOBAL_KEY)
    if cause is WaitCause.QUEUE_AM_LIMIT:
        return (queue_share,)
    if cause is WaitCause.PARTITION_AM_LIMIT:
        # getMaximumAMResourcePercentPerPartition: the partition's, else the queue's.
        own = capacity_key(f"{queue}{PARTITION_MARK}{partition}")
        return (Setting(own, default=f"{CS_DEFAULT:g}", fallback=queue_share.key), queue_share)
    if cause in (WaitCause.USER_AM_LIMIT, WaitCause.USER_LIMIT):
        return (
            Setting(f"{CS_PREFIX}{queue}.user-limit-factor", default="1"),
            Setting(f"{CS_PREFIX}{queue}.minimum-user-limit-percent", default="100"),
        )
    if held_at == (USERS_LIMIT,):
        return (Setting(f"{CS_PREFIX}user.max-parallel-apps"),)
    return tuple(
        Setting(f"{CS_PREFIX}{q}.max-parallel-apps", fallback=f"{CS_PREFIX}max-parallel-apps")
        for q in held_at or (queue,)
    )


def knob(
    cause: WaitCause,
    scheduler: SchedulerKind,
    queue: str,
    held_at: tuple[str, ...] = (),
    partition: str = "",
) -> str:
    """The setting that cures a wait, as an operator finds it in the scheduler's file
    (``held_at``, ``partition``: `Wait`'s)."""
    found = settings(cause, scheduler, queue, held_at, partition)
    if not found:
        return CLUSTER_CAPACITY
    if held_at == (USERS_LIMIT,):
        own = (
            "user.<user>.max-parallel-apps"
            if scheduler is SchedulerKind.CAPACITY
            else ('<user name="…"><maxRunningApps>')
        )
        return f"{found[0].name} (or {own})"
    if cause is WaitCause.MAX_APPS and held_at:
        return " and ".join(s.name for s in found[: len(held_at)])  # each must be raised
    return found[0].name


def settings_in_file(obs: Observation, target: str, sched_file: SchedulerFile) -> list[str]:
    """Each setting behind one target's waits once, as the file sets it (`Setting.in_file`);
    the queue's name is the RM's, so it is made safe to show."""
    found = dict.fromkeys(
        s
        for w in obs.waits_for(target)
        for s in settings(w.cause, obs.scheduler, w.queue, w.held_at, w.partition)
    )
    return [shown(s.in_file(sched_file)) for s in found]


def wait_records(obs: Observation, target: str) -> list[dict[str, object]]:
    """One target's waits as plain JSON, the one shape the audit line and the state file keep
    (and `status` reads back), ``a_cures`` saying whether this target's A cures each; the
    queue's name is the RM's, so it is made safe to show."""
    return [
        {
            "queue": shown(w.queue),
            "cause": str(w.cause),
            "apps": w.apps,
            "a_cures": w.cured_by(target),
            "knob": shown(knob(w.cause, obs.scheduler, w.queue, w.held_at, w.partition)),
        }
        for w in obs.waits_for(target)
    ]


def describe(records: Sequence[Mapping[str, Any]]) -> str:
    """One line for `once` and `status`: ``2 queue-am-limit in root.default (cure: <knob>)``."""
    return "; ".join(
        f"{r.get('apps')} {r.get('cause')} in {r.get('queue') or 'the cluster'} "
        f"(cure: {r.get('knob')})"
        for r in records
    )


def a_cures_none(
    obs: Observation, target: str, a: float | None = None, am_mb: int | None = None
) -> bool:
    """Whether apps of the target wait and raising A cures none of them (False too when one
    wait cannot be told).

    A FairScheduler's ``cluster-full`` is an inference, not a report: one AM of the queue's
    mean size against an ``amMaxResources`` the scheduler last computed when it tried an AM
    (stale, or 0, until it tries again). It counts as beyond A's reach only where the cluster
    has no room for one more AM and the limit computed afresh at ``a`` admits every app it
    names (`_fs_limit_admits`)."""
    waits = obs.waits_for(target)
    if not waits or any(w.cured_by(target) for w in waits):
        return False
    if obs.scheduler is not SchedulerKind.FAIR:
        return True
    full = [w for w in waits if w.cause is WaitCause.CLUSTER_FULL]
    return not full or (a is not None and _fs_limit_admits_all(obs, full, a, am_mb))


def lowering_moot(obs: Observation, target: str, a: float, am_mb: int | None = None) -> bool:
    """Whether every app of the target waits, on a FairScheduler, for a container to free, and
    the AM limit at the lowered ``a`` still admits them all (`_fs_limit_admits`): the lower A
    holds none of them,
    and as a container frees they start as they would have. Where it would hold some, the
    lowering keeps them out so that tasks get what frees, a real trade; and on a
    CapacityScheduler every wait A cannot cure still meets the limit once what holds it
    goes (a user's AM limit, say, once its tasks end)."""
    waits = obs.waits_for(target)
    if obs.scheduler is not SchedulerKind.FAIR or not waits:
        return False
    if any(w.cause is not WaitCause.CLUSTER_FULL for w in waits):
        return False
    return _fs_limit_admits_all(obs, waits, a, am_mb)


def _fs_limit_admits_all(
    obs: Observation, waits: Sequence[Wait], a: float, am_mb: int | None
) -> bool:
    apps: dict[str, int] = {}
    for w in waits:
        apps[w.queue] = apps.get(w.queue, 0) + w.apps
    return all(_fs_limit_admits(obs, queue, k, a, am_mb) for queue, k in apps.items())


def _fs_limit_admits(obs: Observation, queue: str, apps: int, a: float, am_mb: int | None) -> bool:
    """Whether the cluster has no room for one more AM of a FairScheduler leaf's mean size
    (``am_mb`` and one vcore while none runs), and its AM limit at ``a``, computed as
    ``FSLeafQueue.computeMaxAMResource`` computes it now, has room for ``apps`` more beside
    the AMs it holds.

    The limit is ``a`` x the fair share, truncated (``Resources.multiply``), on each side
    ``canRunAppAM`` checks; a side the fair share leaves 0 (vcores, under the default ``fair``
    policy) takes what the cluster has free. Where it has room for all of them and no node
    can have room, a higher A admits none sooner: they wait for a container to free. Where
    the limit has no room, as when a cluster full in vcores leaves that side 0, A decides
    how many containers must free before the next AM starts. And where the cluster has room
    the apps have just come and start at the next heartbeat: what the policy makes of them
    is about the apps that follow."""
    q = obs.queue(queue) if queue else None
    if q is None or q.am_memory_used_mb is None or not obs.vcores_total:
        return False
    running = q.running_apps
    used_mb, used_vc = q.am_memory_used_mb, q.am_vcores_used or 0
    mean_mb = -(-used_mb // running) if running and used_mb else am_mb
    mean_vc = -(-used_vc // running) if running and used_vc else 1
    free_mb = obs.memory_total_mb - obs.memory_used_mb
    free_vc = obs.vcores_total - obs.vcores_used
    if not mean_mb or (free_mb >= mean_mb and free_vc >= mean_vc):
        return False
    share_mb = q.memory_share_mb or free_mb
    share_vc = q.vcores_share or free_vc
    fits_mb = used_mb + apps * mean_mb <= math.floor(share_mb * a)
    return fits_mb and used_vc + apps * mean_vc <= math.floor(share_vc * a)


def a_admitting_curable(
    obs: Observation, target: str, a: float, am_mb: int | None = None
) -> float | None:
    """Where the target's waiting apps are held partly by a running-apps limit
    (``max-parallel-apps``, ``maxRunningApps``) and the rest may be the AM limit's, the A that
    admits the rest and no more: a higher A admits AMs only while the AM limit binds, and once
    it stops binding the running-apps limit holds the others whatever A, so the excess buys
    nothing and would admit AMs beyond it the day it is raised. The rest are the queue AM
    limit's, and on a FairScheduler its ``cluster-full`` too (`a_cures_none`: an inference
    against a limit the scheduler may not have computed yet, as when a batch has just come
    and no AM of it was tried). Not beside a user's limit: the RM's figures give a leaf one
    room, the least among its waiting users, so other users' apps and the next arrivals may be
    the AM limit's (measured: docs/waits.md).

    A leaf's AM limit is A times what it may use now (``maxAMShare`` x its fair share,
    ``maximum-am-resource-percent`` x its capacity: `QueueStats.memory_share_mb`, else the
    limit over A, which the RM rounds up to an allocation), so k more AMs of the leaf's mean
    size (``am_mb`` while none runs) take (AM used + k x mean AM) over it; the largest over the
    held leaves, rounded up. None where no such mix holds the target, a held leaf's figures
    are missing, or a user's AM limit holds some (the RM lists its room, not the limit it is
    a share of)."""
    waits = obs.waits_for(target)
    causes = {w.cause for w in waits}
    if WaitCause.MAX_APPS not in causes or WaitCause.USER_AM_LIMIT in causes:
        return None
    rest = [w for w in waits if w.cause in am_limits_may_hold(obs.scheduler) and w.queue]
    if not rest:
        return None
    needed = 0.0
    for w in rest:
        q = obs.queue(w.queue)
        if q is None:
            return None
        used = q.am_memory_used_mb or 0
        mean = used / q.running_apps if q.running_apps and used else am_mb
        base = q.memory_share_mb or (q.am_memory_limit_mb or 0) / a
        if not mean or not base:
            return None
        needed = max(needed, (used + w.apps * mean) / base)
    scale = 10**A_DECIMALS
    return math.ceil(round(needed * scale, 6)) / scale


def am_limits_may_hold(scheduler: SchedulerKind) -> tuple[WaitCause, ...]:
    """The causes whose apps a higher A may admit beside a running-apps limit: the queue AM
    limit's, and a FairScheduler's ``cluster-full`` (`a_admitting_curable`)."""
    if scheduler is SchedulerKind.FAIR:
        return (WaitCause.QUEUE_AM_LIMIT, WaitCause.CLUSTER_FULL)
    return (WaitCause.QUEUE_AM_LIMIT,)


def users_limits(sched_file: SchedulerFile) -> UsersLimits | None:
    """A FairScheduler allocation file's running-apps limits per user (``userMaxAppsDefault``,
    each ``<user>``'s ``maxRunningApps``), read as the simulated RM reads the file; None when
    it sets none (Hadoop's default: unlimited) or is not one the simulated RM can read."""
    if sched_file.kind is not SchedulerKind.FAIR or b"<user" not in sched_file.data:
        return None  # neither element: the cheap answer, every cycle
    from amtuner.sim.sched_config import UNLIMITED, SchedulerConfigError
    from amtuner.sim.sched_config.fair import parse_allocation_file

    try:
        conf = parse_allocation_file(sched_file.data)
    except SchedulerConfigError:
        return None
    if conf.user_max_apps_default == UNLIMITED and not conf.user_max_apps:
        return None
    return UsersLimits(conf.user_max_apps_default, dict(conf.user_max_apps))


def held_by_users_limits(
    obs: Observation,
    sched_file: SchedulerFile,
    unfinished_apps: Callable[[], Sequence[UnfinishedApp]],
) -> Observation:
    """The observation with the apps a FairScheduler's users' running-apps limits hold named
    (`amtuner.monitor.waits.held_by_users`); ``unfinished_apps`` (one more request to the RM)
    is asked only where the file sets such limits and a leaf's apps wait for something else
    than its own ``maxRunningApps``."""
    if obs.scheduler is not SchedulerKind.FAIR or not any(
        w.queue and w.cause is not WaitCause.MAX_APPS for w in obs.waits
    ):
        return obs
    limits = users_limits(sched_file)
    if limits is None:
        return obs
    return held_by_users(obs, unfinished_apps(), limits)
