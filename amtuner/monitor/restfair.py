"""A FairScheduler's leaves from the REST scheduler document (why each figure is read as it
is: `amtuner.monitor.rest`), beside the CapacityScheduler's of `amtuner.monitor.restqueues`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from amtuner.model import QueueStats
from amtuner.monitor.fields import _bad, _opt_count, _resource
from amtuner.monitor.restqueues import _FS_LEAF_TYPE, _children, _is_leaf, _leaf


def fs_leaves(
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
            yield from fs_leaves(child, below)
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
