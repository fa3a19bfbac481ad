"""Nodes, container placement and how running tasks share a node's CPU and disk.

Placement keeps the nodes in buckets by free memory (in units of the minimum allocation), so
finding a node never scans the cluster: the scheduler takes a node from the fullest-free bucket,
which spreads containers the way node heartbeats arriving in turn do on a real RM. A scheduling
pass is one round of node heartbeats (`begin_heartbeat` / `end_heartbeat`): a node that has taken
its share of containers for the round leaves the buckets until the round ends.

Processor sharing: every task on a node progresses at the same rate
``min(1, cpu / cpu_demand, disk / disk_demand)``. A node keeps a "work clock" (the integral of its
rate); a task finishes when the clock has advanced by its duration. So a change in a node's task
set costs one rate update and one rescheduled event for that node only; superseded events are
dropped by a version check when they come up.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from amtuner.sim.engine import Engine

_EPS = 1e-9
_PARKED = -2
"""A node's bucket while it has taken all it may this heartbeat."""


def normalise_up(value: int, step: int) -> int:
    """A request as the scheduler grants it: a multiple of the minimum allocation, at least one."""
    if value <= step:
        return step
    return -(-value // step) * step


class Node:
    __slots__ = (
        "bucket",
        "containers",
        "cpu",
        "cpu_sum",
        "disk",
        "disk_sum",
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
        "rate",
        "tasks",
        "vcores",
        "version",
        "work",
    )

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
        self.version = 0
        self.tasks: list[tuple[float, int, float, float, Any]] = []
        """Running tasks as a heap of (finish work, seq, cpu, disk, payload)."""


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
        on_task_done: Callable[[Node, Any], None],
        per_node: int = 0,
        offswitch_per_node: int = 0,
        maps_off_switch: bool = False,
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
        self._on_task_done = on_task_done
        self._seq = 0
        units = memory_mb // min_alloc_mb
        self._buckets: list[dict[Node, None]] = [{} for _ in range(units + 1)]
        for node in self.nodes:
            node.bucket = units
            self._buckets[units][node] = None
        self._top = units
        self.per_node = per_node
        """Containers a node takes per heartbeat (0: no cap)."""
        self.offswitch_per_node = offswitch_per_node
        """Off-switch containers a node takes per heartbeat (0: no cap)."""
        self.maps_off_switch = maps_off_switch
        """Maps ask for any host (else for their split's: node-local)."""
        self._round = 0
        self._parked: list[Node] = []
        self._capped = False

    @property
    def free_mb(self) -> int:
        return self.total_mb - self.used_mb

    def fits_somewhere(self, memory_mb: int) -> bool:
        return self._top * self.min_alloc_mb >= memory_mb

    def find(self, memory_mb: int, vcores: int = 0, *, off_switch: bool = False) -> Node | None:
        """The node with the most free memory, if the (normalised) request fits there; with
        ``vcores``, the one with the most free memory among those that also have the vcores
        free. A FairScheduler checks both (``fitsIn``); a CapacityScheduler with the default
        resource calculator passes none: it places by memory alone and lets vcores run over.
        An ``off_switch`` request skips nodes that have had their off-switch share this
        heartbeat."""
        if self._top * self.min_alloc_mb < memory_mb:
            return None
        roomiest = next(iter(self._buckets[self._top]))
        if self._takes(roomiest, vcores, off_switch):
            return roomiest  # nearly always: memory runs out first in most clusters
        fewest_units = -(-memory_mb // self.min_alloc_mb)
        for units in range(self._top, fewest_units - 1, -1):
            for node in self._buckets[units]:
                if self._takes(node, vcores, off_switch):
                    return node
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

    def allocate(
        self, node: Node, memory_mb: int, vcores: int, *, off_switch: bool = False
    ) -> None:
        self._account()
        node.free_mb -= memory_mb
        node.free_vcores -= vcores
        node.containers += 1
        self.used_mb += memory_mb
        self.used_vcores += vcores
        self.containers += 1
        self._rebucket(node)
        if not (self.per_node or self.offswitch_per_node):
            return
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
        del self._buckets[node.bucket][node]
        node.bucket = _PARKED
        self._parked.append(node)
        self._lower_top()

    def release(self, node: Node, memory_mb: int, vcores: int) -> None:
        self._account()
        node.free_mb += memory_mb
        node.free_vcores += vcores
        node.containers -= 1
        self.used_mb -= memory_mb
        self.used_vcores -= vcores
        self.containers -= 1
        self._rebucket(node)

    def account_until_now(self) -> None:
        self._account()

    def start_task(self, node: Node, work_s: float, cpu: float, disk: float, payload: Any) -> None:
        """Run a task needing ``work_s`` seconds at full speed on ``node``; ``on_task_done(node,
        payload)`` is called when it finishes."""
        self._advance(node)
        node.cpu_sum += cpu
        node.disk_sum += disk
        self._seq += 1
        heapq.heappush(node.tasks, (node.work + work_s, self._seq, cpu, disk, payload))
        self._reschedule(node)

    def _account(self) -> None:
        now = self.engine.now
        self.memory_seconds += self.used_mb * (now - self._last_t)
        self._last_t = now

    def _rebucket(self, node: Node) -> None:
        units = node.free_mb // self.min_alloc_mb
        if units == node.bucket or node.bucket == _PARKED:
            return
        buckets = self._buckets
        if node.bucket >= 0:
            del buckets[node.bucket][node]
        buckets[units][node] = None
        node.bucket = units
        if units > self._top:
            self._top = units
        else:
            self._lower_top()

    def _lower_top(self) -> None:
        buckets, top = self._buckets, self._top
        while top > 0 and not buckets[top]:
            top -= 1
        self._top = top

    def _advance(self, node: Node) -> None:
        now = self.engine.now
        node.work += node.rate * (now - node.last_t)
        node.last_t = now

    def _reschedule(self, node: Node) -> None:
        rate = 1.0
        if node.cpu_sum > node.cpu:
            rate = node.cpu / node.cpu_sum
        if node.disk_sum > node.disk:
            rate = min(rate, node.disk / node.disk_sum)
        node.rate = rate
        if not node.tasks:
            node.next_t = -1.0
            return
        next_t = self.engine.now + (node.tasks[0][0] - node.work) / rate
        if next_t == node.next_t:
            return
        node.next_t = next_t
        node.version += 1
        self.engine.at(next_t, self._on_node_event, (node, node.version))

    def _on_node_event(self, arg: tuple[Node, int]) -> None:
        node, version = arg
        if version != node.version:
            return
        self._advance(node)
        tasks = node.tasks
        limit = node.work + _EPS
        done = []
        while tasks and tasks[0][0] <= limit:
            _, _, cpu, disk, payload = heapq.heappop(tasks)
            node.cpu_sum -= cpu
            node.disk_sum -= disk
            done.append(payload)
        if not tasks:
            node.cpu_sum = node.disk_sum = 0.0
        node.next_t = -1.0
        self._reschedule(node)
        for payload in done:
            self._on_task_done(node, payload)
