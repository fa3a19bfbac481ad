"""A CapacityScheduler's leaves from the REST scheduler document, and what both schedulers'
queue trees share there (their child lists, which childless queue is a leaf, the figures every
leaf has): `amtuner.monitor.restfair` reads a FairScheduler's with them, as the web UI's readers
share `amtuner.monitor.webqueues`. Why each figure is read as it is: `amtuner.monitor.rest`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from amtuner.model import PartitionStats, QueueStats, SchedulerKind
from amtuner.monitor.fields import _bad, _count, _opt_count, _percent, _resource, share_of
from amtuner.monitor.users import Triple, user_limit_there

# The JAXB type names the document gives its leaves and its scheduler.
_CS_LEAF_TYPE = "capacitySchedulerLeafQueueInfo"
_FS_LEAF_TYPE = "fairSchedulerLeafQueueInfo"
_SCHEDULER_TYPES = {
    "capacityScheduler": SchedulerKind.CAPACITY,
    "fairScheduler": SchedulerKind.FAIR,
}

Pair = tuple[int, int | None]


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


def cs_leaves(
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
            yield from cs_leaves(child, path, total_mb, total_vcores, below)
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
        share = (share_of(total_mb, fraction), share_of(total_vcores, fraction))
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
        guarantee = (share_of(total_mb, fraction), 0)
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
