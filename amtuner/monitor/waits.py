"""Why a queue's apps wait, from the one scheduler document the monitor reads each cycle (what
cures each: `amtuner.cures`).

An app waits in ACCEPTED for many reasons, and the AM share A is only one. The
CapacityScheduler applies its limits in a documented order (``CapacityScheduler.md``):
``maximum-applications`` refuses the submission, ``max-parallel-apps`` holds the app as
non-runnable (``AbstractLeafQueue``, YARN-9930), then ``activateApplications`` holds it behind
the queue AM limit and then the user AM limit (the queue's times the user limit and
user-limit-factor, YARN-2637). The FairScheduler holds an app non-runnable while
``maxRunningApps`` binds (``MaxRunningAppsEnforcer``) and its AM behind ``maxAMShare``
(``FSLeafQueue.canRunAppAM``). An app past all of them waits for its AM container: the cluster
is full. Raising A cures only the two AM limits.

What each scheduler reports decides what can be told apart:

* CS ``numPendingApplications`` counts exactly the apps ``activateApplications`` refused, so an
  AM limit holds each of them (but when no app runs: the first AM is exempt). The queue limit is
  the one named when one more AM of the queue's mean size would pass it, the user limit when a
  waiting user's room (``UserInfo``'s own ``amLimit`` less ``amUsed``) is smaller than that AM,
  else whichever has less room. But when a waiting user's room under its user limit
  (``userResourceLimit`` less ``resourcesUsed``) cannot hold that AM, the user limit holds the
  apps whatever the AM limits: ``canAssignToUser`` applies to AM containers too. Non-runnable
  apps are ``numApplications`` less pending and active (3.4+). Activated apps whose AM is not
  allocated yet appear in no queue figure: they are the cluster's ``appsPending`` less
  everything classified, cluster-full, global only.
* FS ``numPendingApps`` mixes runnable apps without an AM and non-runnable ones. At most
  ``maxApps`` are runnable, so at least running + pending - ``maxApps`` of them are held by it;
  a parent's ``maxApps`` (every queue reports one) holds at least those of its leaf's pending
  apps past its room, its ``maxApps`` less the apps running below it (`_fs_held`). The rest
  wait behind ``maxAMShare`` when one more AM would pass ``amMaxResources`` in memory or in
  vcores (a 0 there means the share is disabled or never computed), else for a container.

A CS leaf whose AMs go to a labelled partition (`QueueStats.am_partition`) is judged on that
partition's figures (`QueueStats.in_am_partition`), as ``activateApplications`` judges each
app on its AM partition's limits: its queue AM limit there is ``partition-am-limit``, whose
cure is the partition's ``maximum-am-resource-percent`` (and the leaf's, or the global one,
while the partition sets none of its own).

Which CS ``max-parallel-apps`` holds a leaf's non-runnable apps is the first on the way up
from the leaf whose runnable apps (a parent's: its leaves') have reached it; when none has,
the users' limits hold them (``yarn.scheduler.capacity.user[.<user>].max-parallel-apps``,
which the document does not report). Not told apart from that document: a
FairScheduler's users' limits (``userMaxAppsDefault``, ``<user>``'s ``maxRunningApps``): it
lists no user. The users' limits are in the allocation file alone, and whose apps wait in the apps
document alone: where the file sets them, the cycle reads both (`held_by_users`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from amtuner.model import (
    GLOBAL_TARGET,
    USERS_LIMIT,
    Observation,
    QueueStats,
    SchedulerKind,
    Wait,
    WaitCause,
)
from amtuner.monitor.fields import _bad, _count, _obj, _opt_count


def classify(obs: Observation) -> Observation:
    """The observation with its `Observation.waits` filled in."""
    waits: list[Wait] = []
    for q in obs.queues:
        waits.extend(queue_waits(q, obs.scheduler, obs.queues))
    rest = obs.pending_apps - sum(w.apps for w in waits)
    if rest > 0:
        waits.append(Wait(GLOBAL_TARGET, WaitCause.CLUSTER_FULL, rest))
    return dataclasses.replace(obs, waits=tuple(waits))


def queue_waits(
    q: QueueStats, scheduler: SchedulerKind, leaves: Sequence[QueueStats] = ()
) -> list[Wait]:
    """The waiting apps of one leaf queue by what holds them (only causes with apps); the
    other ``leaves`` tell which CapacityScheduler queue's running-apps limit binds."""
    counts = dict.fromkeys(WaitCause, 0)
    held_at: tuple[str, ...] = ()
    if scheduler is SchedulerKind.CAPACITY:
        counts[WaitCause.MAX_APPS] = q.held_apps or 0
        if q.held_apps:
            held_at = _cs_held_at(q, leaves)
        if q.pending_apps:
            counts[_cs_am_cause(q.in_am_partition())] += q.pending_apps
    else:
        held, held_at = _fs_held(q, leaves)
        counts[WaitCause.MAX_APPS] = held
        rest = q.pending_apps - held
        if rest:
            counts[_fs_am_cause(q)] += rest
    label = q.am_partition.label if q.am_partition else ""
    if label and counts[WaitCause.QUEUE_AM_LIMIT]:
        counts[WaitCause.PARTITION_AM_LIMIT] = counts.pop(WaitCause.QUEUE_AM_LIMIT)
    am_held = (WaitCause.PARTITION_AM_LIMIT, WaitCause.USER_AM_LIMIT, WaitCause.USER_LIMIT)
    return [
        Wait(
            q.name,
            cause,
            n,
            held_at if cause is WaitCause.MAX_APPS else (),
            partition=label if cause in am_held else "",
            own_share=cause is WaitCause.PARTITION_AM_LIMIT and q.partition_sets_own_share,
        )
        for cause, n in counts.items()
        if n > 0
    ]


def _cs_held_at(q: QueueStats, leaves: Sequence[QueueStats]) -> tuple[str, ...]:
    """Whose ``max-parallel-apps`` holds a CS leaf's non-runnable apps (`Wait.held_at`): the
    leaf's when its runnable apps (pending and active) have reached it, and each ancestor's
    whose leaves' runnable apps have reached its own (the cluster-wide value, every queue's
    default, fills them all at once); when none has, their users'."""
    if q.max_apps is None:
        return ()
    full = [q.name] if q.pending_apps + q.running_apps >= q.max_apps else []
    for path, limit in q.ancestor_max_apps:
        below = [lf for lf in leaves if lf.name.startswith(path + ".")]
        if sum(lf.pending_apps + lf.running_apps for lf in below) >= limit:
            full.append(path)
    if not full:
        return (USERS_LIMIT,)
    return () if full == [q.name] else tuple(full)


def _fs_held(q: QueueStats, leaves: Sequence[QueueStats]) -> tuple[int, tuple[str, ...]]:
    """How many of a FS leaf's pending apps are surely non-runnable, and whose
    ``maxRunningApps`` holds them (`Wait.held_at`: () for the leaf's own alone).

    ``MaxRunningAppsEnforcer.canAppBeRunnable`` makes an app runnable only while the leaf and
    every queue above it, each at its own ``maxRunningApps`` (else ``queueMaxAppsDefault``,
    root's too: ``AllocationConfiguration.getQueueMaxApps``), has fewer runnable apps. A queue
    whose apps below run (``numActiveApps``) leave it a slack of s has at most s runnable apps
    without an AM, so of the leaf's pending apps all but the least slack on the way up are
    held, by each queue with that slack (each must be raised for one more to run). Pending
    apps of other leaves under the same parent may take that slack, so this is the least held."""
    slack: dict[str, int] = {}
    if q.max_apps is not None:
        slack[q.name] = q.max_apps - q.running_apps
    for path, limit in q.ancestor_max_apps:
        running = sum(lf.running_apps for lf in leaves if lf.name.startswith(path + "."))
        slack[path] = limit - max(running, q.running_apps)
    if not slack:
        return 0, ()
    least = min(slack.values())
    held = min(q.pending_apps, max(0, q.pending_apps - max(0, least)))
    full = tuple(path for path, room in slack.items() if room == least)
    return held, (() if not held or full == (q.name,) else full)


def _mean_am_mb(q: QueueStats) -> int | None:
    if not q.running_apps or q.am_memory_used_mb is None:
        return None
    return -(-q.am_memory_used_mb // q.running_apps)


def _queue_am_full(q: QueueStats, am_mb: int | None) -> bool | None:
    """Whether one more AM passes the queue's AM limit; None when the figures are missing."""
    if q.am_memory_limit_mb is None or q.am_memory_used_mb is None:
        return None
    return q.am_memory_used_mb + (am_mb or 0) > q.am_memory_limit_mb or (
        q.am_memory_used_mb >= q.am_memory_limit_mb
    )


def _cs_am_cause(q: QueueStats) -> WaitCause:
    if not q.running_apps:
        return WaitCause.CLUSTER_FULL  # the first AM is never held (activateApplications)
    am_mb = _mean_am_mb(q)
    user_room = q.user_room_mb
    if am_mb is not None and user_room is not None and user_room < am_mb:
        return WaitCause.USER_LIMIT
    if _queue_am_full(q, am_mb):
        return WaitCause.QUEUE_AM_LIMIT
    room = q.user_am_room_mb
    if room is None:
        return WaitCause.QUEUE_AM_LIMIT
    if am_mb is not None and room < am_mb:
        return WaitCause.USER_AM_LIMIT
    queue_room = (
        None
        if q.am_memory_limit_mb is None or q.am_memory_used_mb is None
        else q.am_memory_limit_mb - q.am_memory_used_mb
    )
    return (
        WaitCause.USER_AM_LIMIT
        if queue_room is not None and room < queue_room
        else WaitCause.QUEUE_AM_LIMIT
    )


def _fs_am_cause(q: QueueStats) -> WaitCause:
    if not q.am_memory_limit_mb:
        return WaitCause.CLUSTER_FULL
    full = _queue_am_full(q, _mean_am_mb(q)) or _am_vcores_full(q)
    return WaitCause.QUEUE_AM_LIMIT if full else WaitCause.CLUSTER_FULL


def _am_vcores_full(q: QueueStats) -> bool:
    """Whether one more AM of the leaf's mean vcores passes ``amMaxResources``' vcores, which
    a FairScheduler checks beside its memory (`QueueStats.am_vcores_limit`; 0 is never
    blamed, as for memory). Its vcore share is what is free when fair shares count memory
    alone (``computeMaxAMResource``), so a leaf of 1-vcore AMs may fill it with memory to
    spare: launchers waiting on children the limit holds, for one."""
    limit, used = q.am_vcores_limit, q.am_vcores_used
    if not limit or used is None or not q.running_apps:
        return False
    return used + -(-used // q.running_apps) > limit


@dataclasses.dataclass(frozen=True, slots=True)
class UsersLimits:
    """A FairScheduler's running-apps limit per user, as its allocation file sets it
    (``AllocationConfiguration.getUserMaxApps``): the user's own ``<user>`` entry, else
    ``userMaxAppsDefault``."""

    default: int
    own: Mapping[str, int] = dataclasses.field(default_factory=dict)

    def of(self, user: str) -> int:
        return self.own.get(user, self.default)


@dataclasses.dataclass(frozen=True, slots=True)
class UnfinishedApp:
    """One app the RM has accepted and not finished, as ``/ws/v1/cluster/apps`` lists it."""

    queue: str
    user: str
    accepted: bool
    """In state ACCEPTED: a non-runnable app is, and so is a runnable one whose AM has not
    registered yet."""
    running_containers: int | None = None
    allocated_mb: int | None = None
    asks: int = 0
    """Containers asked for and not allocated: the ``numContainers`` of its ``*`` entries in
    ``resourceRequests`` (``AppSchedulingInfo``'s pending asks; Hadoop 3.5.0 leaves the list
    out when there are none)."""
    running_s: float | None = None
    """Seconds since its AM container launched, on the RM's clock: ``elapsedTime`` less
    ``launchTime`` - ``startedTime``; None before it launched, or where the RM reports no
    ``launchTime`` (before 3.0)."""


def held_by_users(
    obs: Observation, apps: Sequence[UnfinishedApp], limits: UsersLimits
) -> Observation:
    """The observation with the FairScheduler apps its users' running-apps limits hold named
    `WaitCause.MAX_APPS` at `USERS_LIMIT`.

    ``MaxRunningAppsEnforcer.canAppBeRunnable`` keeps an app non-runnable while its user's
    runnable apps, in every queue, have reached the user's limit, so at least n - limit of a
    user's n unfinished apps are held, each ACCEPTED; those a leaf holds are at least that
    less the user's ACCEPTED apps in other leaves. They come out of what `queue_waits` gave
    the leaf's runnable apps (its AM limit's or a full cluster's): an app the user's limit
    holds is never tried against ``maxAMShare``, and the apps its queue's ``maxRunningApps``
    holds are counted already (each count is a least, so the two may overlap and the larger
    alone is sure)."""
    if obs.scheduler is not SchedulerKind.FAIR:
        return obs
    users = Counter(a.user for a in apps)
    over = {u: n - limits.of(u) for u, n in users.items() if n > limits.of(u)}
    if not over:
        return obs
    accepted = Counter((a.user, a.queue) for a in apps if a.accepted)
    everywhere = Counter(a.user for a in apps if a.accepted)
    waits: list[Wait] = []
    for w in obs.waits:
        if not w.queue or w.cause is WaitCause.MAX_APPS:
            waits.append(w)
            continue
        held = sum(
            max(0, min(n - (everywhere[u] - accepted[u, w.queue]), accepted[u, w.queue]))
            for u, n in over.items()
        )
        held = min(held, w.apps)
        if held:
            waits.append(Wait(w.queue, WaitCause.MAX_APPS, held, (USERS_LIMIT,)))
        if w.apps > held:
            waits.append(dataclasses.replace(w, apps=w.apps - held))
    return dataclasses.replace(obs, waits=tuple(waits))


def parse_unfinished_apps(doc: Any, url: str = "apps") -> tuple[UnfinishedApp, ...]:
    """The apps of ``{"apps": {"app": […]}}`` (``{"apps": null}`` when none): queue, user and
    whether ACCEPTED."""
    if not isinstance(doc, Mapping) or "apps" not in doc:
        raise _bad(f"{url}: expected an object with 'apps', got {type(doc).__name__}")
    if doc["apps"] is None:
        return ()
    apps = _obj(doc, "apps", url)
    listed = apps.get("app")
    if not isinstance(listed, list):
        raise _bad(f"{url}: apps.app: expected a list, got {type(listed).__name__}")
    out: list[UnfinishedApp] = []
    for app in listed:
        fields = [app.get(k) if isinstance(app, Mapping) else None for k in _APP_FIELDS]
        if not all(isinstance(f, str) and f for f in fields):
            raise _bad(f"{url}: an app without {', '.join(_APP_FIELDS)}: {app!r:.200}")
        queue, user, state = fields
        where = f"{url}: {app.get('id')!s:.40}"
        started, launched, elapsed = (
            _opt_count(app, k, where) for k in ("startedTime", "launchTime", "elapsedTime")
        )
        running_s = None
        if launched and started is not None and elapsed is not None:
            running_s = max(0, elapsed - (launched - started)) / 1000
        out.append(
            UnfinishedApp(
                queue, user, state == "ACCEPTED",  # type: ignore[arg-type]
                running_containers=_opt_count(app, "runningContainers", where),
                allocated_mb=_opt_count(app, "allocatedMB", where),
                asks=_asks(app.get("resourceRequests"), where),
                running_s=running_s,
            )
        )  # fmt: skip
    return tuple(out)


def _asks(requests: Any, where: str) -> int:
    """The containers an app's ``resourceRequests`` ask for: its ``*`` (any node) entries', as
    the node and rack entries repeat the same asks where locality is asked for."""
    if requests is None:
        return 0
    if not isinstance(requests, list):
        raise _bad(f"{where}.resourceRequests: expected a list, got {type(requests).__name__}")
    return sum(
        _count(r, "numContainers", f"{where}.resourceRequests")
        for r in requests
        if isinstance(r, Mapping) and r.get("resourceName") == "*"
    )


_APP_FIELDS = ("queue", "user", "state")
