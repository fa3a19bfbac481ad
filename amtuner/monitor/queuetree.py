"""The queue tree of the RM's ``/ws/v1/cluster/scheduler`` document as settings, not figures:
what `amtuner advise` replays when it has no scheduler file to read (`amtuner.advicecluster`).

The document reports what the scheduler loaded, not the file it loaded it from, so some settings
are read back from what they made, and some are not there at all:

* CapacityScheduler (``CapacitySchedulerQueueInfo``, ``CapacitySchedulerLeafQueueInfo``): each
  queue's ``capacity`` and ``maxCapacity`` (percent of its parent), ``maxParallelApps`` (3.4+);
  each leaf's ``userLimit`` (``minimum-user-limit-percent``), ``userLimitFactor``,
  ``maxApplications`` (after its fallbacks) and AM share (``configuredMaxAMResourceLimit``, else
  the default partition's ``maxAMLimitPercentage``; 2.7+: older RMs do not say, None). The
  global AM share is not reported: a leaf's value already has it in.
* FairScheduler (``FairSchedulerQueueInfo``): ``minResources``, ``maxResources`` (clamped to
  the cluster by the RM), ``maxApps`` and ``schedulingPolicy``. No weight and no maxAMShare:
  the weight is read back from ``steadyFairResources`` (a queue's steady share is its parent's
  divided in proportion to the weights, ``ComputeFairShares.computeSteadyShares``, exact while
  no sibling's min or max resources binds), the maxAMShare from ``amMaxResources`` over
  ``fairResources`` (``FSLeafQueue.computeMaxAMResource``), known only for a leaf with a fair
  share (one with apps): None otherwise.

Node-label partitions and a FairScheduler's placement rules are not in these settings.

Beside the tree, the nodes of ``/ws/v1/cluster/nodes`` (`parse_nodes`): each running node's
size, which the cluster's metrics give only summed (and in Hadoop 3.5.0 without a labelled
partition's nodes' memory).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from amtuner.model import A_DECIMALS, SchedulerKind, round_a
from amtuner.monitor.fields import _bad, _count, _obj, _opt_count, _resource
from amtuner.monitor.rest import scheduler_kind_of
from amtuner.monitor.restqueues import (
    _CS_LEAF_TYPE,
    _FS_LEAF_TYPE,
    _children,
    _is_leaf,
    _loaded_share,
    _partition,
    cs_path,
)


@dataclass(frozen=True, slots=True)
class CSQueueSettings:
    """One CapacityScheduler queue; None where this RM does not report the setting."""

    path: str
    children: tuple[str, ...]
    """The children's names, in the document's order."""
    capacity: float
    """Percent of its parent."""
    maximum_capacity: float
    max_parallel_apps: int | None = None
    am_share: float | None = None
    max_apps: int | None = None
    user_limit_percent: float | None = None
    user_limit_factor: float | None = None


@dataclass(frozen=True, slots=True)
class FSQueueSettings:
    """One FairScheduler queue; None where the RM does not report the setting."""

    path: str
    children: tuple[str, ...]
    parent: bool
    steady_mb: int
    """Its steady fair share: among siblings, in proportion to their weights."""
    min_resources: tuple[int, int] | None = None
    max_resources: tuple[int, int] | None = None
    """As reported: the RM clamps it to the cluster, so unset reads as the whole cluster."""
    max_apps: int | None = None
    am_share: float | None = None
    policy: str | None = None


@dataclass(frozen=True, slots=True)
class QueueTree:
    kind: SchedulerKind
    queues: tuple[CSQueueSettings, ...] | tuple[FSQueueSettings, ...]
    """Pre-order, root first."""

    @property
    def leaves(self) -> tuple[str, ...]:
        return tuple(
            q.path
            for q in self.queues
            if not q.children and not (isinstance(q, FSQueueSettings) and q.parent)
        )


def _fraction(obj: Mapping[str, Any], key: str, where: str) -> float | None:
    """A non-negative number (a percentage, a factor) or None when absent."""
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _bad(f"{where}.{key}: expected a number, got {value!r}")
    if value < 0:
        raise _bad(f"{where}.{key}: negative value {value!r}")
    return float(value)


def _percent(obj: Mapping[str, Any], key: str, where: str) -> float:
    value = _fraction(obj, key, where)
    if value is None:
        raise _bad(f"{where}: missing field {key!r}")
    if not 0 <= value <= 100 + 1e-3:
        raise _bad(f"{where}.{key}: {value!r} is not a percentage")
    return min(value, 100.0)


def _cs_queues(queue: Mapping[str, Any], parent: str) -> Iterator[CSQueueSettings]:
    path = cs_path(queue, parent)
    kids = _children(queue, "queues", path)
    names = []
    for child in kids:
        child_name = child.get("queueName")
        if not isinstance(child_name, str) or not child_name or "." in child_name:
            raise _bad(f"a child of {path}: queueName {child_name!r} is not a queue's name")
        names.append(child_name)
    if not kids and not _is_leaf(queue, _CS_LEAF_TYPE, "numPendingApplications", path):
        raise _bad(f"{path}: neither a leaf nor a parent with queues")
    leaf = not kids
    caps = _partition(queue, "capacities", "queueCapacitiesByPartition")
    yield CSQueueSettings(
        path=path,
        children=tuple(names),
        capacity=100.0 if not parent else _percent(queue, "capacity", path),
        maximum_capacity=100.0 if not parent else _percent(queue, "maxCapacity", path),
        max_parallel_apps=_opt_count(queue, "maxParallelApps", path),
        am_share=_loaded_share(queue, caps, path) if leaf else None,
        max_apps=_opt_count(queue, "maxApplications", path) if leaf else None,
        user_limit_percent=_fraction(queue, "userLimit", path) if leaf else None,
        user_limit_factor=_user_limit_factor(queue, path) if leaf else None,
    )
    for child in kids:
        yield from _cs_queues(child, path)


def _user_limit_factor(queue: Mapping[str, Any], path: str) -> float | None:
    """``userLimitFactor``; -1 (3.3+: no user limit, YARN-10120) is a value too."""
    if queue.get("userLimitFactor") == -1:
        return -1.0
    return _fraction(queue, "userLimitFactor", path)


SHARE_SLACK = 0.001
"""How far, relatively, a leaf's AM limit may be from its fair share now times its maxAMShare:
the RM reports the limit it computed at its last AM try (``FSQueueMetrics`` ``MaxAMShareMB``),
and the fair share moves with every queue's demand in between."""


def _share_of(limit_mb: int, fair_mb: int) -> float:
    """The maxAMShare that made ``limit_mb`` of ``fair_mb``: the RM rounds the product down
    (``Resources.multiply``), so of the values whose product rounds down to it (within
    `SHARE_SLACK`) the one of fewest decimals, at most `A_DECIMALS`, nearest the quotient (a
    share written as 0.3 reads back 0.3, not 0.3001)."""
    low, high = Fraction(limit_mb, fair_mb), Fraction(limit_mb + 1, fair_mb)
    middle = (low + high) / 2
    slack = Fraction(SHARE_SLACK) * middle
    for decimals in range(1, A_DECIMALS + 1):
        scale = 10**decimals
        first = math.ceil((low - slack) * scale)
        last = math.floor((high + slack) * scale)
        if first <= last:
            best = min(range(first, last + 1), key=lambda n: abs(Fraction(n, scale) - middle))
            return min(max(best / scale, 10**-A_DECIMALS), 1.0)
    return min(round_a(float(middle)), 1.0)


def _fs_queues(queue: Mapping[str, Any]) -> Iterator[FSQueueSettings]:
    path = queue.get("queueName")
    if not isinstance(path, str) or not path:
        raise _bad("fair scheduler queue without queueName")
    kids = _children(queue, "childQueues", path)
    leaf = not kids and _is_leaf(queue, _FS_LEAF_TYPE, "numPendingApps", path)
    steady = _resource(queue, "steadyFairResources", path)
    if steady is None:
        raise _bad(f"{path}: missing field 'steadyFairResources'")
    fair = _resource(queue, "fairResources", path)
    am_max = _resource(queue, "amMaxResources", path)
    share = None
    if leaf and fair and am_max and fair[0] > 0 and am_max[0] > 0:
        share = _share_of(am_max[0], fair[0])
    policy = queue.get("schedulingPolicy")
    names = []
    for child in kids:
        child_path = child.get("queueName")
        if not isinstance(child_path, str) or child_path.rpartition(".")[0] != path:
            raise _bad(f"a child of {path}: queueName {child_path!r} is not under it")
        names.append(child_path.rpartition(".")[2])
    yield FSQueueSettings(
        path=path,
        children=tuple(names),
        parent=not leaf,
        steady_mb=steady[0],
        min_resources=_resource(queue, "minResources", path),
        max_resources=_resource(queue, "maxResources", path),
        max_apps=_opt_count(queue, "maxApps", path),
        am_share=share,
        policy=policy.lower() if isinstance(policy, str) and policy else None,
    )
    for child in kids:
        yield from _fs_queues(child)


NODES_PATH = "/cluster/nodes"


@dataclass(frozen=True, slots=True)
class NodeSize:
    """One running NodeManager's capacity; vcores None where the RM does not say (2.4)."""

    id: str
    memory_mb: int
    vcores: int | None
    labels: tuple[str, ...] = ()


def _node(node: Any, url: str) -> NodeSize | None:
    """A ``NodeInfo``'s size, None unless it runs (``NodeState.RUNNING``: what ``activeNodes``
    counts): ``totalResource`` (3.3+), else used plus available memory and vcores."""
    if not isinstance(node, Mapping):
        raise _bad(f"{url}: a node is not an object")
    where = f"{url} node {node.get('id')!r}"
    if node.get("state") != "RUNNING":
        return None
    total = _resource(node, "totalResource", where)
    if total is None:
        memory = _count(node, "usedMemoryMB", where) + _count(node, "availMemoryMB", where)
        used = _opt_count(node, "usedVirtualCores", where)
        free = _opt_count(node, "availableVirtualCores", where)
        vcores = None if used is None or free is None else used + free
    else:
        memory, vcores = total
    labels = node.get("nodeLabels") or ()
    if isinstance(labels, str):  # one label of a wrapped list
        labels = (labels,)
    if not isinstance(labels, list | tuple) or not all(isinstance(x, str) for x in labels):
        raise _bad(f"{where}.nodeLabels: expected a list of labels, got {labels!r}")
    return NodeSize(str(node.get("id")), memory, vcores, tuple(labels))


def parse_nodes(doc: Any, url: str = "nodes") -> tuple[NodeSize, ...]:
    """The running nodes of ``{"nodes": {"node": [...]}}``; refuses an answer with none."""
    if not isinstance(doc, Mapping) or "nodes" not in doc:
        raise _bad(f"{url}: missing object 'nodes'")
    listed = doc["nodes"].get("node") if isinstance(doc["nodes"], Mapping) else None
    if isinstance(listed, Mapping):  # one node of a wrapped list
        listed = [listed]
    if listed is not None and not isinstance(listed, list):
        raise _bad(f"{url}: expected a list of nodes, got {type(listed).__name__}")
    nodes = tuple(n for n in (_node(x, url) for x in listed or ()) if n is not None)
    if not nodes:
        raise _bad(f"{url}: no node is RUNNING: no cluster to replay on")
    return nodes


CAPACITY_ROUNDING = 0.01
"""How far from 100 siblings' capacities may add up: the RM prints each as a float
(``30.000002``), the file had them add up to 100 (``CapacitySchedulerConfiguration``)."""


def _check_capacities(queues: Sequence[CSQueueSettings], url: str) -> None:
    by_path = {q.path: q for q in queues}
    for q in queues:
        if not q.children:
            continue
        total = sum(by_path[f"{q.path}.{c}"].capacity for c in q.children)
        if abs(total - 100.0) > CAPACITY_ROUNDING:
            raise _bad(
                f"{url}: the capacities of {q.path}'s children ({', '.join(q.children)}) add up "
                f"to {total:g}, not 100 (a partial answer, or absolute-resource queues, which "
                "the replay cannot take)"
            )


def parse_queue_tree(doc: Any, url: str = "scheduler") -> QueueTree:
    """Every queue of ``{"scheduler": {"schedulerInfo": …}}`` with its settings; raises
    ObservationError (``bad-response``) naming the first queue or field it cannot read."""
    kind = scheduler_kind_of(doc, url)
    info = doc["scheduler"]["schedulerInfo"]
    queues: tuple[CSQueueSettings, ...] | tuple[FSQueueSettings, ...]
    if kind is SchedulerKind.CAPACITY:
        queues = cs = tuple(_cs_queues(info, ""))
        _check_capacities(cs, url)
    else:
        queues = tuple(_fs_queues(_obj(info, "rootQueue", f"{url} schedulerInfo")))
    tree = QueueTree(kind, queues)
    if queues[0].path != "root":
        raise _bad(f"{url}: the queue tree's root is {queues[0].path!r}, not root")
    if not tree.leaves:
        raise _bad(f"{url}: the scheduler response lists no leaf queue")
    return tree
