"""Turn the RM's REST answers into an `Observation`, or refuse them with a reason.

Two documents make one observation: ``/ws/v1/cluster/metrics`` (P, R, memory and vcores of the
whole cluster) and ``/ws/v1/cluster/scheduler`` (the queue tree, with the measured AM memory where
the RM reports it). Neither grows with the number of applications, unlike ``/ws/v1/cluster/apps``.

Choices, with the reasons (yarn-facts §1.5, §3):

* P is the cluster metric ``appsPending`` and R is ``appsRunning``. An app moves from pending to
  running when its AM container is allocated, so P counts both the apps the AM limit holds back
  and the admitted apps still waiting for an AM container. The CS-only ``numPendingApplications``
  sum would see only the first kind and has no FairScheduler or web UI counterpart; the
  cluster metric is the same figure under both schedulers and in the web UI fallback, so the
  controller sees one meaning whatever the source.
* Per leaf queue, pending/running are what the scheduler itself reports there: CS
  ``numPendingApplications``/``numActiveApplications`` (held back by the AM limit / activated),
  FS ``numPendingApps``/``numActiveApps``.
* The measured AM memory is CS ``usedAMResource`` (2.7+) or else the default partition's
  ``amUsed`` (3.x per-partition block), FS ``amUsedResources`` (2.9+), summed over leaf queues.
  The sum is reported only when every leaf reports it: a partial sum would understate the AMs.
* A queue's memory share is CS ``maxEffectiveCapacity`` (3.x), else the default partition's
  ``effectiveMaxResource``, else ``absoluteMaxCapacity`` x ``totalMB``: how far the queue can grow
  now. FS uses ``fairResources`` (the instantaneous fair share, which is what maxAMShare scales).
* A queue's asks are CS ``pending`` in the default partition, FS ``demandResources`` less
  ``usedResources`` (``FSLeafQueue.updateDemand``: what the apps hold plus what they ask for,
  capped at the queue's maximum): what the cluster's ``pendingMB`` is for the whole cluster.
* Leaf queues: a queue with children is a parent whatever its ``type`` says; a childless queue
  is a leaf when its ``type`` says so or it carries the leaf counters. A childless entry with
  neither is an empty parent (FS ``type="parent"`` queues) and holds no figures.
* Any missing or negative figure the observation needs refuses the whole response: a partial
  observation could make the controller act on numbers the RM never reported.
* Why apps wait (`amtuner.monitor.waits`) is read from the same document: CS ``maxParallelApps``
  and ``numApplications`` (3.4+: the apps ``max-parallel-apps`` holds are in neither pending nor
  active), each waiting user's ``amLimit``/``amUsed`` (``users``), FS ``maxApps`` (a parent's
  too: every queue's ``maxRunningApps`` binds its leaves' apps, ``MaxRunningAppsEnforcer``).
* Node labels: a CS 3.x queue lists one entry per partition it can use in
  ``capacities.queueCapacitiesByPartition`` (``PartitionQueueCapacitiesInfo``, with
  ``maxAMLimitPercentage``) and ``resources.resourceUsagesByPartition``
  (``PartitionResourcesInfo``, with ``amUsed`` and ``amLimit``, ``pending``; each user's too).
  The default ("") partition's figures are the leaf's, as the cluster's metrics are; a leaf
  whose AMs go to a labelled partition (its ``defaultNodeLabelExpression``, else the one
  labelled partition holding its AMs while the default holds none) carries that partition's
  beside them (`QueueStats.am_partition`); every labelled partition's name is reported
  (`Observation.labelled_partitions`) so that `check` and `status` can say which are not
  tuned (``maximum-am-resource-percent`` per label is a separate key,
  ``accessible-node-labels.<label>.maximum-am-resource-percent``, a ``leaf@label`` target).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from amtuner.model import (
    GLOBAL_TARGET,
    Observation,
    PartitionStats,
    QueueStats,
    SchedulerKind,
    split_target,
)
from amtuner.monitor.fields import (
    ObservationError,
    _bad,
    _count,
    _obj,
    _opt_count,
    _percent,
    _resource,
)
from amtuner.monitor.users import Triple, user_limit_there
from amtuner.monitor.waits import classify

# Below an RM's REST base (``http://rm:8088/ws/v1``, or a gateway's path for it: `RMEndpoint`).
METRICS_PATH = "/cluster/metrics"
SCHEDULER_PATH = "/cluster/scheduler"
INFO_PATH = "/cluster/info"
UNFINISHED_APPS_PATH = "/cluster/apps?states=ACCEPTED,RUNNING"
"""Read only where a FairScheduler's users' running-apps limits may hold apps, or an AM limit
holds some (`amtuner.monitor.idle`): unlike the others, it grows with the apps."""

_CS_LEAF_TYPE = "capacitySchedulerLeafQueueInfo"
_FS_LEAF_TYPE = "fairSchedulerLeafQueueInfo"
_SCHEDULER_TYPES = {
    "capacityScheduler": SchedulerKind.CAPACITY,
    "fairScheduler": SchedulerKind.FAIR,
}


def decode_json(body: bytes | str, content_type: str, url: str) -> Any:
    """Parse a JSON body, naming what came instead: login pages and XML are common mistakes."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    head = text.lstrip()[:200].lower()
    ctype = content_type.lower()
    if "html" in ctype or head.startswith(("<!doctype html", "<html")):
        raise _bad(
            f"{url} answered an HTML page where JSON was expected "
            "(a login page of a gateway such as Knox, or SPNEGO not configured?)"
        )
    if "xml" in ctype or head.startswith("<"):
        raise _bad(f"{url} answered XML where JSON was expected (Accept header ignored?)")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _bad(f"{url} answered a body that is not valid JSON ({exc}; truncated?)") from exc
    except RecursionError as exc:
        raise _bad(f"{url} answered JSON nested deeper than Python can read") from exc


@dataclass(frozen=True, slots=True)
class ClusterMetrics:
    pending_apps: int
    running_apps: int
    memory_used_mb: int
    memory_total_mb: int
    vcores_used: int
    vcores_total: int
    containers: int | None = None
    memory_pending_mb: int | None = None
    memory_reserved_mb: int | None = None


MAX_CLUSTER_MB = 2**40
"""An exabyte of memory: more than any YARN cluster holds (the largest run some 10^4 nodes of
well under a terabyte each)."""


def refuse_implausible(m: ClusterMetrics, where: str) -> None:
    """Refuse memory figures no RM could report: the scheduler allocates only what its nodes
    hold, so these come from a broken or hostile answer, and a controller acting on them would
    move A for nothing. Not vcores: a CapacityScheduler with the default resource calculator
    counts one per container whatever the nodes have, so its used vcores can pass the total."""
    if m.memory_total_mb > MAX_CLUSTER_MB:
        raise _bad(f"{where}: total memory {m.memory_total_mb} MB is more than any cluster holds")
    if m.memory_used_mb > m.memory_total_mb:
        raise _bad(
            f"{where}: memory used {m.memory_used_mb} MB is more than the total "
            f"{m.memory_total_mb} MB"
        )


def parse_metrics(doc: Any, url: str = "metrics") -> ClusterMetrics:
    """Read ``{"clusterMetrics": {…}}``; refuses missing/negative figures and a zero total."""
    m = _obj(doc, "clusterMetrics", url)
    where = f"{url} clusterMetrics"
    total = _count(m, "totalMB", where)
    metrics = ClusterMetrics(
        pending_apps=_count(m, "appsPending", where),
        running_apps=_count(m, "appsRunning", where),
        memory_used_mb=_count(m, "allocatedMB", where),
        memory_total_mb=total,
        # vcores are not in 2.4: absent means unknown (0), and the policies count memory alone.
        vcores_used=_opt_count(m, "allocatedVirtualCores", where) or 0,
        vcores_total=_opt_count(m, "totalVirtualCores", where) or 0,
        containers=_opt_count(m, "containersAllocated", where),
        memory_pending_mb=_opt_count(m, "pendingMB", where),
        memory_reserved_mb=_opt_count(m, "reservedMB", where),
    )
    if total == 0:
        raise ObservationError(
            "zero-total",
            f"{where}: totalMB is 0 (no NodeManager registered yet?): memory ratio undefined",
        )
    refuse_implausible(metrics, where)
    return metrics


def scheduler_kind_of(doc: Any, url: str = "scheduler") -> SchedulerKind:
    info = _obj(_obj(doc, "scheduler", url), "schedulerInfo", f"{url} scheduler")
    kind = info.get("type")
    if kind == "fifoScheduler":
        raise _bad(f"{url}: the RM runs the FifoScheduler, which has no AM share to tune")
    if not isinstance(kind, str) or kind not in _SCHEDULER_TYPES:
        raise _bad(
            f"{url}: unknown scheduler type {kind!r} (expected capacityScheduler or fairScheduler)"
        )
    return _SCHEDULER_TYPES[kind]


def _children(queue: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """Child queues, in every shape Jersey has used.

    ``{"queue": [...]}`` (CS; FS 2.8+ ``FairSchedulerQueueInfoList``), ``{"queue": {...}}`` (one
    child of a wrapped list), a bare list (FS 2.7 ``Collection<FairSchedulerQueueInfo>``) and, for
    a lone child of FS 2.7 and older (YARN-2336, fixed in 2.8.0), the child object itself in place
    of the list. Anything else is refused rather than read as "no children", which would turn a
    parent into an empty one and drop its leaves unseen.
    """
    value = queue.get(key)
    if value is None:
        return []
    if isinstance(value, Mapping):
        if "queue" in value:
            value = value["queue"] if value["queue"] is not None else []
            if isinstance(value, Mapping):  # one child of a wrapped list
                value = [value]
        elif "queueName" in value:  # FS <= 2.7: a lone child marshalled as the object itself
            value = [value]
        elif not value:
            value = []
    if not isinstance(value, list) or not all(isinstance(c, Mapping) for c in value):
        raise _bad(f"{where}.{key}: expected a list of queues, got {_shape(value)}")
    return value


def _shape(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object with keys " + ", ".join(sorted(map(str, value))[:6])
    return type(value).__name__


def _is_leaf(queue: Mapping[str, Any], leaf_type: str, counter: str, where: str) -> bool:
    """Whether a childless queue is a leaf: its ``type`` says so, or it carries leaf counters.

    ``type`` is the JAXB subtype name, ``"fairSchedulerLeafQueueInfo"``; Hadoop 2.7 and older
    (YARN-4785, fixed in 2.7.3/2.8.0) could write it as a one-element list, read the same way. A
    ``type`` naming anything else (but the scheduler's own, on a CS root) is refused: guessing
    "empty parent" could drop a leaf unseen.
    """
    kind = queue.get("type")
    if isinstance(kind, list) and len(kind) == 1:
        kind = kind[0]
    if kind is not None and (
        not isinstance(kind, str) or kind not in (leaf_type, *_SCHEDULER_TYPES)
    ):
        raise _bad(f"{where}: childless queue of unknown type {queue['type']!r}")
    return kind == leaf_type or counter in queue


def _partition(
    queue: Mapping[str, Any], block: str, inner: str, label: str = ""
) -> Mapping[str, Any]:
    """One partition's entry (the default one, "", unless ``label``) of a CS 3.x
    per-partition block, or {}."""
    container = queue.get(block)
    entries = container.get(inner) if isinstance(container, Mapping) else None
    if isinstance(entries, Mapping):  # one entry of a wrapped list
        entries = [entries]
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, Mapping) and entry.get("partitionName", "") == label:
                return entry
    return {}


def _am_partition(queue: Mapping[str, Any], am_used: Pair | None, where: str) -> str:
    """The labelled partition a CS leaf's AMs go to, or "": the leaf's
    ``defaultNodeLabelExpression`` when it has one (``RMAppManager`` gives it to an AM that
    asks for no label), else the one labelled partition holding AMs of the leaf while the
    default holds none (AMs pinned by the RM's
    ``yarn.resourcemanager.node-labels.am.default-node-label-expression``, which no document
    reports, or by each app's AM label)."""
    expression = queue.get("defaultNodeLabelExpression")
    if isinstance(expression, str) and expression.strip():
        return expression.strip()
    if am_used is None or am_used[0] > 0:
        return ""
    holding = [
        label
        for label in sorted(_labels(queue))
        if (found := _resource(_usage(queue, label), "amUsed", f"{where}[{label}]")) and found[0]
    ]
    return holding[0] if len(holding) == 1 else ""


def _usage(queue: Mapping[str, Any], label: str = "") -> Mapping[str, Any]:
    return _partition(queue, "resources", "resourceUsagesByPartition", label)


def _labels(queue: Mapping[str, Any]) -> set[str]:
    """The non-default partitions one CS queue lists in its per-partition blocks."""
    found: set[str] = set()
    for block, inner in _PARTITION_BLOCKS:
        container = queue.get(block)
        entries = container.get(inner) if isinstance(container, Mapping) else None
        if isinstance(entries, Mapping):  # one entry of a wrapped list
            entries = [entries]
        for entry in entries if isinstance(entries, list) else ():
            name = entry.get("partitionName") if isinstance(entry, Mapping) else None
            if isinstance(name, str) and name:
                found.add(name)
    return found


def labelled_partitions(queue: Mapping[str, Any], where: str = "scheduler") -> tuple[str, ...]:
    """Every non-default partition named anywhere in a CS queue tree, sorted."""
    found = _labels(queue)
    for child in _children(queue, "queues", where):
        found.update(labelled_partitions(child, where))
    return tuple(sorted(found))


_PARTITION_BLOCKS = (
    ("capacities", "queueCapacitiesByPartition"),
    ("resources", "resourceUsagesByPartition"),
)


def cs_path(queue: Mapping[str, Any], parent: str) -> str:
    """A CapacityScheduler queue's full path: its ``queuePath``, else its parent's and its
    ``queueName`` (RMs that do not report the path)."""
    name = queue.get("queueName")
    path = queue.get("queuePath")
    if not isinstance(path, str) or not path:
        if not isinstance(name, str) or not name:
            raise _bad(f"queue under {parent or 'the scheduler'}: missing queueName")
        path = f"{parent}.{name}" if parent else name
    return path


def _cs_leaves(
    queue: Mapping[str, Any],
    parent: str,
    total_mb: int,
    total_vcores: int,
    ancestors: tuple[tuple[str, int], ...] = (),
) -> Iterator[QueueStats]:
    """The leaves at or under ``queue``; ``ancestors``: the `QueueStats.ancestor_max_apps` of
    its children."""
    path = cs_path(queue, parent)
    children = _children(queue, "queues", path)
    if children:
        limit = _opt_count(queue, "maxParallelApps", path)
        below = ancestors if limit is None else ((path, limit), *ancestors)
        for child in children:
            yield from _cs_leaves(child, path, total_mb, total_vcores, below)
        return
    if not _is_leaf(queue, _CS_LEAF_TYPE, "numPendingApplications", path):
        return
    used = _resource(queue, "resourcesUsed", path)
    if used is None:
        raise _bad(f"{path}: missing field 'resourcesUsed'")
    usage = _usage(queue)
    caps = _partition(queue, "capacities", "queueCapacitiesByPartition")
    am_used = _resource(queue, "usedAMResource", path) or _resource(usage, "amUsed", path)
    am_limit = _resource(queue, "AMResourceLimit", path) or _resource(usage, "amLimit", path)
    share: Pair | None = _resource(queue, "maxEffectiveCapacity", path) or _resource(
        caps, "effectiveMaxResource", path
    )
    if share is None and (fraction := _percent(queue, "absoluteMaxCapacity", path)) is not None:
        share = (round(total_mb * fraction / 100), round(total_vcores * fraction / 100))
    if share is not None and not total_vcores:
        share = (share[0], None)  # no cluster vcores reported: no vcore share either
    pending = _resource(usage, "pending", path)
    pending_mb = pending[0] if pending else None
    counters = ("numPendingApplications", "numActiveApplications", "numContainers")
    leaf = _leaf(
        path, queue, counters, used, am_used, am_limit, share, pending_mb,
        am_share=_loaded_share(queue, caps, path),
    )  # fmt: skip
    total_apps = _opt_count(queue, "numApplications", path)  # LeafQueue's count of its apps
    if total_apps is not None and leaf.pending_apps > total_apps:
        raise _bad(f"{path}: {leaf.pending_apps} apps pending, more than the {total_apps} it holds")
    held = (
        None if total_apps is None else max(0, total_apps - leaf.pending_apps - leaf.running_apps)
    )
    guarantee = _resource(caps, "effectiveMinResource", path)
    if guarantee is None and (fraction := _percent(queue, "absoluteCapacity", path)) is not None:
        guarantee = (round(total_mb * fraction / 100), 0)
    leaf = replace(
        leaf,
        guarantee_mb=guarantee[0] if guarantee else None,
        max_apps=_opt_count(queue, "maxParallelApps", path),
        held_apps=held,
        ancestor_max_apps=ancestors,
    )
    label = _am_partition(queue, am_used, path)
    if not label:
        user_am_room, user_room = _waiting_users_room(queue, path)
        yield replace(leaf, user_am_room_mb=user_am_room, user_room_mb=user_room)
        return
    user_am_room, user_room = _waiting_users_room(queue, path)
    leaf = replace(leaf, user_am_room_mb=user_am_room, user_room_mb=user_room)
    where = f"{path}[{label}]"
    usage = _usage(queue, label)
    am_used = _resource(usage, "amUsed", where)
    am_limit = _resource(usage, "amLimit", where)
    used = _resource(usage, "used", where) or (0, 0)
    pending = _resource(usage, "pending", where)
    caps = _partition(queue, "capacities", "queueCapacitiesByPartition", label)
    share = _resource(caps, "effectiveMaxResource", where)
    guarantee = _resource(caps, "effectiveMinResource", where)
    there = (guarantee[0], used[0], share[0]) if guarantee and share else None
    am_room, room = _waiting_users_room(queue, path, label, there)
    yield replace(
        leaf,
        am_partition=PartitionStats(
            label=label,
            memory_used_mb=used[0],
            vcores_used=used[1] or 0,
            am_memory_used_mb=am_used[0] if am_used else None,
            am_vcores_used=am_used[1] if am_used else None,
            am_memory_limit_mb=am_limit[0] if am_limit else None,
            am_share=_loaded_share({}, caps, where),
            memory_share_mb=share[0] if share else None,
            memory_pending_mb=pending[0] if pending else None,
            user_am_room_mb=am_room,
            user_room_mb=room,
        ),
    )


def _waiting_users_room(
    queue: Mapping[str, Any], where: str, label: str = "", there: Triple | None = None
) -> tuple[int | None, int | None]:
    """The least AM room and the least room under the user limit among a CS leaf's users with
    apps waiting: each ``UserInfo`` carries its own ``amLimit`` and ``amUsed`` per partition
    (2.8+, ``UsersManager.User``; ``label``'s, the default one's unless given) and its
    ``userResourceLimit`` and ``resourcesUsed`` (the default partition's only: in a labelled
    one the room is under `user_limit_there` less the user's use there)."""
    users = queue.get("users")
    listed = users.get("user") if isinstance(users, Mapping) else None
    listed = [listed] if isinstance(listed, Mapping) else listed  # one user of a wrapped list
    listed = listed if isinstance(listed, list) else []
    am_rooms, rooms = [], []
    limit_there = user_limit_there(queue, listed, there) if there else None
    for user in listed:
        waiting = isinstance(user, Mapping) and user.get("numPendingApplications")
        if not waiting or _below_zero(user):
            continue
        name = f"{where} user {user.get('username')!r}"
        usage = _usage(user, label)
        am_limit = _resource(usage, "amLimit", name)
        am_used = _resource(usage, "amUsed", name)
        if am_used is None and not label:
            am_used = _resource(user, "AMResourceUsed", name)
        if am_limit is not None and am_used is not None:
            am_rooms.append(am_limit[0] - am_used[0])
        if label:
            used_there = _resource(usage, "used", name)
            if limit_there is not None and used_there is not None:
                rooms.append(limit_there - used_there[0])
            continue
        limit = _resource(user, "userResourceLimit", name)
        used = _resource(usage, "used", name) or _resource(user, "resourcesUsed", name)
        if limit is not None and used is not None:
            rooms.append(limit[0] - used[0])
    return min(am_rooms, default=None), min(rooms, default=None)


def _below_zero(user: Mapping[str, Any]) -> bool:
    """A user whose counts the RM took below zero: Hadoop 3.5.0's ``UsersManager`` does so when
    apps of a queue where ``max-parallel-apps`` holds some are killed in quick succession, and
    the user stays listed with apps and memory of -1 or -2 (recorded:
    tests/data/monitor/hadoop-3.5.0/capacity-user-am-limit-after-kills). Its figures say nothing
    of its room, and the rest of the answer is sound, so it is left out rather than refused."""
    figures: list[Any] = [user.get("numPendingApplications"), user.get("numActiveApplications")]
    usage = _usage(user)
    for holder, key in ((user, "AMResourceUsed"), (user, "resourcesUsed"), (usage, "amUsed"),
                        (usage, "used")):  # fmt: skip
        value = holder.get(key)
        figures.append(value.get("memory") if isinstance(value, Mapping) else None)
    return any(type(v) is int and v < 0 for v in figures)


def _loaded_share(queue: Mapping[str, Any], caps: Mapping[str, Any], path: str) -> float | None:
    """The maximum-am-resource-percent a CS leaf runs with (a fraction), as the RM reports it:
    what a refresh is read back against."""
    for value, scale in (
        (queue.get("configuredMaxAMResourceLimit"), 1.0),
        (caps.get("maxAMLimitPercentage"), 100.0),
    ):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise _bad(f"{path}: expected an AM share, got {value!r}")
        return value / scale
    return None


def _fs_leaves(
    queue: Mapping[str, Any], ancestors: tuple[tuple[str, int], ...] = ()
) -> Iterator[QueueStats]:
    path = queue.get("queueName")
    if not isinstance(path, str) or not path:
        raise _bad("fair scheduler queue without queueName")
    children = _children(queue, "childQueues", path)
    if children:
        limit = _opt_count(queue, "maxApps", path)
        below = ancestors if limit is None else ((path, limit), *ancestors)
        for child in children:
            yield from _fs_leaves(child, below)
        return
    if not _is_leaf(queue, _FS_LEAF_TYPE, "numPendingApps", path):
        return
    used = _resource(queue, "usedResources", path)
    if used is None:
        raise _bad(f"{path}: missing field 'usedResources'")
    am_used = _resource(queue, "amUsedResources", path)
    am_limit = _resource(queue, "amMaxResources", path)
    share = _resource(queue, "fairResources", path)
    demand = _resource(queue, "demandResources", path)
    pending_mb = max(0, demand[0] - used[0]) if demand else None
    counters = ("numPendingApps", "numActiveApps", "allocatedContainers")
    leaf = _leaf(path, queue, counters, used, am_used, am_limit, share, pending_mb)
    yield replace(
        leaf,
        max_apps=_opt_count(queue, "maxApps", path),
        am_vcores_limit=am_limit[1] if am_limit else None,
        ancestor_max_apps=ancestors,
    )


Pair = tuple[int, int | None]


def _leaf(
    path: str,
    queue: Mapping[str, Any],
    counters: tuple[str, str, str],
    used: tuple[int, int],
    am_used: Pair | None,
    am_limit: Pair | None,
    share: Pair | None,
    pending_mb: int | None,
    am_share: float | None = None,
) -> QueueStats:
    """One leaf from the figures both schedulers report, under their own field names
    (``counters``: pending apps, running apps, containers)."""
    return QueueStats(
        name=path,
        pending_apps=_count(queue, counters[0], path),
        running_apps=_count(queue, counters[1], path),
        memory_used_mb=used[0],
        vcores_used=used[1],
        am_memory_used_mb=am_used[0] if am_used else None,
        am_vcores_used=am_used[1] if am_used else None,
        am_memory_limit_mb=am_limit[0] if am_limit else None,
        memory_share_mb=share[0] if share else None,
        vcores_share=share[1] if share else None,
        containers=_opt_count(queue, counters[2], path),
        memory_pending_mb=pending_mb,
        am_share=am_share,
    )


def parse_scheduler(
    doc: Any, metrics: ClusterMetrics, url: str = "scheduler"
) -> tuple[SchedulerKind, tuple[QueueStats, ...]]:
    """The scheduler kind and every leaf queue of ``{"scheduler": {"schedulerInfo": …}}``."""
    kind = scheduler_kind_of(doc, url)
    info = doc["scheduler"]["schedulerInfo"]
    if kind is SchedulerKind.CAPACITY:
        leaves = tuple(_cs_leaves(info, "", metrics.memory_total_mb, metrics.vcores_total))
    else:
        leaves = tuple(_fs_leaves(_obj(info, "rootQueue", f"{url} schedulerInfo")))
    if not leaves:
        raise _bad(f"{url}: the scheduler response lists no leaf queue")
    return kind, leaves


def check_targets(targets: Sequence[str], leaves: Sequence[QueueStats], source: str) -> None:
    names = {q.name for q in leaves}
    for target in targets:
        if target != GLOBAL_TARGET and split_target(target)[0] not in names:
            raise ObservationError(
                "unknown-queue",
                f"target queue {target!r} is not a leaf queue of the RM at {source} "
                f"(leaf queues: {', '.join(sorted(names))})",
            )


def build_observation(
    metrics_doc: Any,
    scheduler_doc: Any,
    *,
    time: float,
    source: str,
    targets: Sequence[str] = (),
) -> Observation:
    """One observation from the two documents; raises ObservationError, never returns a part."""
    metrics = parse_metrics(metrics_doc, source)
    kind, leaves = parse_scheduler(scheduler_doc, metrics, source)
    check_targets(targets, leaves, source)
    am_values = [q.am_memory_used_mb for q in leaves]
    am_total = None if any(v is None for v in am_values) else sum(v for v in am_values if v)
    obs = Observation(
        time=time,
        scheduler=kind,
        pending_apps=metrics.pending_apps,
        running_apps=metrics.running_apps,
        memory_used_mb=metrics.memory_used_mb,
        memory_total_mb=metrics.memory_total_mb,
        vcores_used=metrics.vcores_used,
        vcores_total=metrics.vcores_total,
        am_memory_used_mb=am_total,
        queues=leaves,
        containers=metrics.containers,
        memory_pending_mb=metrics.memory_pending_mb,
        memory_reserved_mb=metrics.memory_reserved_mb,
        source=source,
        labelled_partitions=(
            labelled_partitions(scheduler_doc["scheduler"]["schedulerInfo"], source)
            if kind is SchedulerKind.CAPACITY
            else ()
        ),
    )
    return classify(obs)
