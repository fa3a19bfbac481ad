"""Nodes, container placement and how running tasks share a node's CPU and disk.

Placement keeps the nodes in buckets by free memory (in units of the minimum allocation), so
finding a node never scans the cluster: the scheduler takes a node from the fullest-free bucket,
which spreads containers the way node heartbeats arriving in turn do on a real RM. A scheduling
pass is one round of node heartbeats (`begin_heartbeat` / `end_heartbeat`): a node that has taken
its share of containers for the round leaves the buckets until the round ends.

Each bucket keeps its nodes in the order they entered it, and the first is taken: a list linked
through the nodes themselves, so entering, leaving and finding the first are a few attribute
writes (an `OrderedDict` did the same with a hash, a lookup and a link record per move; a plain
dict would walk past the slots of every node that left since it was last resized).

Processor sharing: every task on a node progresses at the same rate
``min(1, cpu / cpu_demand, disk / disk_demand)``. A node keeps a "work clock" (the integral of its
rate); a task finishes when the clock has advanced by its duration. A change in a node's task set
marks the node; once the instant's events have run (`Engine.settle`), each marked node gets its
new rate and, if its next finish moved, one event. A task ending and the next one placed on its
node in the same instant so cost one event, not two; a node's event that a later instant's
change supersedes moves in the queue (`Engine.schedule`), so none fires for nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from amtuner.sim.engine import Engine, Event

_EPS = 1e-9
_PARKED = -2
"""A node's bucket while it has taken all it may this heartbeat."""
_RESERVED = -3
"""A node's bucket while it is reserved for one container (`Cluster.reserve`)."""


def normalise_up(value: int, step: int) -> int:
    """A request as the scheduler grants it: a multiple of the minimum allocation, at least one."""
    if value <= step:
        return step
    return -(-value // step) * step


class Running:
    """A task on a node, in the node's heap by (finish work, seq): compiled, its fields are
    unboxed and compared as they are, where a tuple's are compared through Python objects."""

    __slots__ = ("cpu", "disk", "finish", "payload", "seq")

    def __init__(self, finish: float, seq: int, cpu: float, disk: float, payload: Any) -> None:
        self.finish = finish
        self.seq = seq
        self.cpu = cpu
        self.disk = disk
        self.payload = payload


def _push_task(heap: list[Running], task: Running) -> None:
    heap.append(task)
    finish, seq = task.finish, task.seq
    i = len(heap) - 1
    while i > 0:
        up = (i - 1) >> 1
        parent = heap[up]
        if finish < parent.finish or (finish == parent.finish and seq < parent.seq):
            heap[i] = parent
            i = up
        else:
            break
    heap[i] = task


def _pop_task(heap: list[Running]) -> Running:
    first = heap[0]
    last = heap.pop()
    n = len(heap)
    if n == 0:
        return first
    finish, seq = last.finish, last.seq
    i = 0
    child = 1
    while child < n:
        low = heap[child]
        right = child + 1
        if right < n:
            other = heap[right]
            if other.finish < low.finish or (other.finish == low.finish and other.seq < low.seq):
                child = right
                low = other
        if low.finish < finish or (low.finish == finish and low.seq < seq):
            heap[i] = low
            i = child
            child = 2 * i + 1
        else:
            break
    heap[i] = last
    return first


class Node:
    __slots__ = (
        "bucket",
        "bucket_next",
        "bucket_prev",
        "containers",
        "cpu",
        "cpu_sum",
        "disk",
        "disk_sum",
        "due",
        "free_mb",
        "free_vcores",
        "hb",
        "hb_all",
        "hb_off",
        "index",
        "last_t",
        "memory_mb",
        "name",
        "next_t",
        "part",
        "rate",
        "reserved",
        "tasks",
        "unsettled",
        "vcores",
        "work",
    )

    due: _NodeDue
    """Its next finish: one event per node, queued while it runs tasks."""

    def __init__(self, index: int, memory_mb: int, vcores: int, cpu: float, disk: float) -> None:
        self.index = index
        self.name = f"node{index:04d}:8041"
        self.memory_mb = memory_mb
        self.vcores = vcores
        self.cpu = cpu
        self.disk = disk
        self.free_mb = memory_mb
        self.free_vcores = vcores
        self.containers = 0
        self.bucket = -1
        self.bucket_prev: Node | None = None
        self.bucket_next: Node | None = None
        """Its neighbours in its bucket, in the order they entered it."""
        self.hb = -1
        """The heartbeat round ``hb_all`` and ``hb_off`` count in."""
        self.hb_all = 0
        self.hb_off = 0
        self.cpu_sum = 0.0
        self.disk_sum = 0.0
        self.rate = 1.0
        self.work = 0.0
        self.last_t = 0.0
        self.next_t = -1.0
        """When the node's queued event fires (-1: none queued)."""
        self.unsettled = False
        """Its task set changed this instant; rate and event are brought up to date at its end."""
        self.tasks: list[Running] = []
        """Running tasks, a heap by (finish work, seq)."""
        self.reserved: Any = None
        """What the node is reserved for (`Cluster.reserve`), None when it is not."""
        self.part = 0
        """Its node-label partition: 0 the default one, else `Cluster.labels`' index."""


class _Settle(Event):
    """The cluster's hook at the end of an instant (`Cluster.settle`)."""

    __slots__ = ("cluster",)

    def __init__(self, cluster: Cluster) -> None:
        super().__init__()
        self.cluster = cluster

    def fire(self) -> None:
        self.cluster.settle()


class _Bucket:
    """The nodes with the same free memory, first in first."""

    __slots__ = ("first", "last")

    def __init__(self) -> None:
        self.first: Node | None = None
        self.last: Node | None = None

    def append(self, node: Node) -> None:
        last = self.last
        node.bucket_prev = last
        node.bucket_next = None
        if last is None:
            self.first = node
        else:
            last.bucket_next = node
        self.last = node

    def remove(self, node: Node) -> None:
        before, after = node.bucket_prev, node.bucket_next
        if before is None:
            self.first = after
        else:
            before.bucket_next = after
        if after is None:
            self.last = before
        else:
            after.bucket_prev = before
        node.bucket_prev = node.bucket_next = None


TaskDoneCallback = Callable[[Node, Any], None]


class TaskSink:
    """Hears of each task's end (the job model does). A class rather than a callable so that
    the call made per task is a native one when compiled."""

    __slots__ = ()

    def task_done(self, node: Node, payload: Any) -> None:
        raise NotImplementedError


class _CallSink(TaskSink):
    __slots__ = ("fn",)

    def __init__(self, fn: TaskDoneCallback) -> None:
        self.fn = fn

    def task_done(self, node: Node, payload: Any) -> None:
        self.fn(node, payload)


class _NodeDue(Event):
    """A node's next finish."""

    __slots__ = ("cluster", "node")

    def __init__(self, cluster: Cluster, node: Node) -> None:
        super().__init__()
        self.cluster = cluster
        self.node = node

    def fire(self) -> None:
        self.cluster.node_due(self.node)


class Cluster:
    def __init__(
        self,
        engine: Engine,
        *,
        nodes: int,
        memory_mb: int,
        vcores: int,
        disk_mbps: float,
        min_alloc_mb: int = 1024,
        on_task_done: TaskDoneCallback | None = None,
        per_node: int = 0,
        offswitch_per_node: int = 0,
        maps_off_switch: bool = False,
        labelled: Sequence[tuple[str, int]] = (),
    ) -> None:
        if nodes < 1 or memory_mb < min_alloc_mb or vcores < 1:
            raise ValueError(
                f"a cluster needs nodes >= 1, node memory >= {min_alloc_mb} MB and vcores >= 1 "
                f"(got {nodes} nodes of {memory_mb} MB, {vcores} vcores)"
            )
        self.engine = engine
        self.min_alloc_mb = min_alloc_mb
        self.nodes = [Node(i, memory_mb, vcores, float(vcores), disk_mbps) for i in range(nodes)]
        self.total_mb = nodes * memory_mb
        self.total_vcores = nodes * vcores
        self.used_mb = 0
        self.used_vcores = 0
        self.containers = 0
        self.memory_seconds = 0.0
        """Integral of allocated memory over simulated time (MB·s), for mean utilisation."""
        self._last_t = 0.0
        self.sink: TaskSink | None = _CallSink(on_task_done) if on_task_done else None
        """Told (node, payload) as each task ends: the job model, or ``on_task_done``."""
        self._seq = 0
        units = memory_mb // min_alloc_mb
        self.labels: list[str] = [""]
        """The node-label partitions, the default one ("") first: a request for one is placed
        only on its nodes, as with Hadoop's exclusive labels (`labelled`: each label and how
        many nodes carry it, the first ones)."""
        first = 0
        for label, count in labelled:
            if count < 1 or first + count > nodes or not label or label in self.labels:
                raise ValueError(f"cannot label {count} more of {nodes} nodes {label!r}")
            self.labels.append(label)
            for node in self.nodes[first : first + count]:
                node.part = len(self.labels) - 1
            first += count
        self.part_mb = [0] * len(self.labels)
        """Each partition's memory (``RMNodeLabelsManager.getResourceByLabel``)."""
        self.part_used_mb = [0] * len(self.labels)
        self._buckets = [_Bucket() for _ in range(units + 1)]
        self._label_buckets = [[_Bucket() for _ in range(units + 1)] for _ in labelled]
        """A labelled partition's buckets (`labels`' index less one): its nodes are in none of
        the default partition's, which the requests of most clusters search alone."""
        for node in self.nodes:
            node.due = _NodeDue(self, node)
            node.bucket = units
            self.part_mb[node.part] += memory_mb
            self._buckets_of(node.part)[units].append(node)
        self._top = units if self.part_mb[0] else 0
        self._label_tops = [units] * len(labelled)
        self.per_node = per_node
        """Containers a node takes per heartbeat (0: no cap)."""
        self.offswitch_per_node = offswitch_per_node
        """Off-switch containers a node takes per heartbeat (0: no cap)."""
        self._capped_rounds = bool(per_node or offswitch_per_node)
        self.maps_off_switch = maps_off_switch
        """Maps ask for any host (else for their split's: node-local)."""
        self._round = 0
        self._parked: list[Node] = []
        self._capped = False
        self._unsettled: list[Node] = []
        self._settle_hook = _Settle(self)

    @property
    def free_mb(self) -> int:
        return self.total_mb - self.used_mb

    def _buckets_of(self, part: int) -> list[_Bucket]:
        return self._buckets if part == 0 else self._label_buckets[part - 1]

    def fits_somewhere(self, memory_mb: int) -> bool:
        """Whether a request of the default partition fits on one of its nodes."""
        return self._top * self.min_alloc_mb >= memory_mb

    def fits_in(self, memory_mb: int, part: int) -> bool:
        top = self._top if part == 0 else self._label_tops[part - 1]
        return top * self.min_alloc_mb >= memory_mb

    def find(
        self, memory_mb: int, vcores: int = 0, *, off_switch: bool = False, part: int = 0
    ) -> Node | None:
        """The node with the most free memory, if the (normalised) request fits there; with
        ``vcores``, the one with the most free memory among those that also have the vcores
        free. A FairScheduler checks both (``fitsIn``); a CapacityScheduler with the default
        resource calculator passes none: it places by memory alone and lets vcores run over.
        An ``off_switch`` request skips nodes that have had their off-switch share this
        heartbeat. Only the nodes of partition ``part`` are searched."""
        if part:
            return self._find_labelled(memory_mb, vcores, off_switch, part)
        top = self._top
        if top * self.min_alloc_mb < memory_mb:
            return None
        roomiest = self._buckets[top].first
        assert roomiest is not None  # the top bucket is never empty while it has room
        if (vcores <= 0 or roomiest.free_vcores >= vcores) and not (
            off_switch and self.offswitch_per_node
        ):
            return roomiest  # nearly always: memory runs out first in most clusters
        fewest_units = -(-memory_mb // self.min_alloc_mb)
        for units in range(top, fewest_units - 1, -1):
            node: Node | None = self._buckets[units].first
            while node is not None:
                if self._takes(node, vcores, off_switch):
                    return node
                node = node.bucket_next
        return None

    def _find_labelled(
        self, memory_mb: int, vcores: int, off_switch: bool, part: int
    ) -> Node | None:
        buckets, top = self._label_buckets[part - 1], self._label_tops[part - 1]
        fewest_units = max(1, -(-memory_mb // self.min_alloc_mb))
        for units in range(top, fewest_units - 1, -1):
            node: Node | None = buckets[units].first
            while node is not None:
                if self._takes(node, vcores, off_switch):
                    return node
                node = node.bucket_next
        return None

    def _takes(self, node: Node, vcores: int, off_switch: bool) -> bool:
        if vcores > 0 and node.free_vcores < vcores:
            return False
        cap = self.offswitch_per_node
        return not (off_switch and cap and node.hb == self._round and node.hb_off >= cap)

    def begin_heartbeat(self) -> None:
        """A new round of node heartbeats: every node may take its share again."""
        self._round += 1
        self._capped = False

    def end_heartbeat(self) -> bool:
        """Nodes that took their share come back; True when some node was capped this round
        (so more may be placeable on the next one)."""
        for node in self._parked:
            node.bucket = -1
            self._rebucket(node)
        self._parked.clear()
        return self._capped

    def offered(self) -> Node | None:
        """The node a scheduler offers a request that fits nowhere, to reserve: the one with the
        most free memory of those heartbeating this round and not reserved; None if none is."""
        return self._buckets[self._top].first

    def reserve(self, node: Node, holder: Any) -> None:
        """Hold ``node`` for ``holder``: no container goes there but the one it was reserved
        for (`unreserve` first), however much it frees."""
        self._buckets_of(node.part)[node.bucket].remove(node)
        node.bucket = _RESERVED
        node.reserved = holder
        self._lower_top(node.part)

    def unreserve(self, node: Node) -> None:
        node.reserved = None
        node.bucket = -1
        self._rebucket(node)

    def allocate(
        self, node: Node, memory_mb: int, vcores: int, *, off_switch: bool = False
    ) -> None:
        now = self.engine.now
        self.memory_seconds += self.used_mb * (now - self._last_t)
        self._last_t = now
        node.free_mb -= memory_mb
        node.free_vcores -= vcores
        node.containers += 1
        self.used_mb += memory_mb
        self.used_vcores += vcores
        self.containers += 1
        self.part_used_mb[node.part] += memory_mb
        self._rebucket(node)
        if self._capped_rounds:
            self._count_in_round(node, off_switch)

    def _count_in_round(self, node: Node, off_switch: bool) -> None:
        if node.hb != self._round:
            node.hb, node.hb_all, node.hb_off = self._round, 0, 0
        node.hb_all += 1
        node.hb_off += off_switch
        if self.offswitch_per_node and node.hb_off >= self.offswitch_per_node:
            self._capped = True
        if self.per_node and node.hb_all >= self.per_node:
            self._capped = True
            self._park(node)

    def _park(self, node: Node) -> None:
        self._buckets_of(node.part)[node.bucket].remove(node)
        node.bucket = _PARKED
        self._parked.append(node)
        self._lower_top(node.part)

    def release(self, node: Node, memory_mb: int, vcores: int) -> None:
        now = self.engine.now
        self.memory_seconds += self.used_mb * (now - self._last_t)
        self._last_t = now
        node.free_mb += memory_mb
        node.free_vcores += vcores
        node.containers -= 1
        self.used_mb -= memory_mb
        self.used_vcores -= vcores
        self.containers -= 1
        self.part_used_mb[node.part] -= memory_mb
        self._rebucket(node)

    def account_until_now(self) -> None:
        now = self.engine.now
        self.memory_seconds += self.used_mb * (now - self._last_t)
        self._last_t = now

    def start_task(self, node: Node, work_s: float, cpu: float, disk: float, payload: Any) -> None:
        """Run a task needing ``work_s`` seconds at full speed on ``node``; `sink` is told
        ``(node, payload)`` when it finishes."""
        now = self.engine.now
        node.work += node.rate * (now - node.last_t)
        node.last_t = now
        node.cpu_sum += cpu
        node.disk_sum += disk
        self._seq += 1
        _push_task(node.tasks, Running(node.work + work_s, self._seq, cpu, disk, payload))
        if not node.unsettled:
            self._unsettle(node)

    def _unsettle(self, node: Node) -> None:
        node.unsettled = True
        if not self._unsettled:
            self.engine.settle(self._settle_hook)
        self._unsettled.append(node)

    def _rebucket(self, node: Node) -> None:
        units = node.free_mb // self.min_alloc_mb
        old = node.bucket
        if units == old or old <= _PARKED:  # parked or reserved: out of the buckets
            return
        part = node.part
        if part:
            self._rebucket_labelled(node, units, old, part)
            return
        buckets = self._buckets
        if old >= 0:
            buckets[old].remove(node)
        buckets[units].append(node)
        node.bucket = units
        top = self._top
        if units > top:
            self._top = units
        elif buckets[top].first is None:
            self._lower_top(0)

    def _rebucket_labelled(self, node: Node, units: int, old: int, part: int) -> None:
        buckets = self._label_buckets[part - 1]
        if old >= 0:
            buckets[old].remove(node)
        buckets[units].append(node)
        node.bucket = units
        if units > self._label_tops[part - 1]:
            self._label_tops[part - 1] = units
        else:
            self._lower_top(part)

    def _lower_top(self, part: int = 0) -> None:
        buckets = self._buckets_of(part)
        top = self._top if part == 0 else self._label_tops[part - 1]
        while top > 0 and buckets[top].first is None:
            top -= 1
        if part == 0:
            self._top = top
        else:
            self._label_tops[part - 1] = top

    def settle(self) -> None:
        """Each node whose tasks changed this instant: its new rate, and an event at its next
        finish unless the one queued already fires then."""
        engine = self.engine
        now = engine.now
        for node in self._unsettled:
            node.unsettled = False
            rate = 1.0
            if node.cpu_sum > node.cpu:
                rate = node.cpu / node.cpu_sum
            if node.disk_sum > node.disk:
                rate = min(rate, node.disk / node.disk_sum)
            node.rate = rate
            if not node.tasks:
                node.next_t = -1.0
                continue
            next_t = now + (node.tasks[0].finish - node.work) / rate
            if next_t == node.next_t:
                continue
            node.next_t = next_t
            engine.schedule(node.due, next_t)
        self._unsettled.clear()

    def node_due(self, node: Node) -> None:
        """Its earliest tasks are done: they leave it, and their ends are reported."""
        now = self.engine.now
        node.work += node.rate * (now - node.last_t)
        node.last_t = now
        node.next_t = -1.0
        tasks = node.tasks
        limit = node.work + _EPS
        done = []
        while tasks and tasks[0].finish <= limit:
            task = _pop_task(tasks)
            node.cpu_sum -= task.cpu
            node.disk_sum -= task.disk
            done.append(task.payload)
        if not tasks:
            node.cpu_sum = node.disk_sum = 0.0
        if not node.unsettled:
            self._unsettle(node)
        sink = self.sink
        assert sink is not None, "a cluster running tasks needs a sink (or on_task_done)"
        for payload in done:
            sink.task_done(node, payload)
