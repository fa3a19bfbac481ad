"""The FairScheduler's node reservations for AMs, as Hadoop 2.8+ and 3.x make them.

A node heartbeats and is offered to the app furthest below its fair share; an app waiting for
its AM uses nothing, so it comes first. When the AM does not fit the node's free room, the app
reserves the node (``FSAppAttempt.assignContainer`` → ``reserve``) if the AM is at least the
reservation threshold (``yarn.scheduler.reservation-threshold.increment-multiple``, 2, times the
increment allocation, 1024 MB: a 2 GB MapReduce AM is), the app is starved (below its fair
share: a waiting AM always is) and it holds fewer reservations than
``yarn.scheduler.fair.reservable-nodes`` (0.05) of the cluster's nodes, rounded up
(``reservationExceedsThreshold``). A reserved node takes nothing else
(``FairScheduler.attemptScheduling``): the room its tasks free waits for the AM. At each of its
heartbeats the reservation is checked (``assignReservedContainer``): released if the AM was
placed elsewhere or the queue's AM limit no longer admits it (``isValidReservation``), turned
into the AM's container once it fits. The AM limit does not count reservations, so every
waiting app the limit admits alone may reserve a node. Only AMs reserve here: Hadoop reserves
for a task of 2 GB or more too, which this model leaves out (the generated workloads' tasks are
1 GB; an SLS or rumen trace may ask for more).

The node reserved is the roomiest of those heartbeating in the pass, where Hadoop reserves
whichever heartbeats first.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

from amtuner.sim.app import App
from amtuner.sim.cluster import Cluster, Node

INCREMENT_MB = 1024
"""``yarn.resource-types.memory-mb.increment-allocation``: the FairScheduler's default."""
THRESHOLD_MULTIPLE = 2
"""``yarn.scheduler.reservation-threshold.increment-multiple``: Hadoop's default."""
RESERVABLE_NODES = 0.05
"""``yarn.scheduler.fair.reservable-nodes``: Hadoop's default."""


class Reservations:
    """The nodes reserved for AMs, and the rule for making one."""

    __slots__ = ("cluster", "nodes", "per_app", "threshold_mb")

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.nodes: list[Node] = []
        self.per_app = math.ceil(len(cluster.nodes) * RESERVABLE_NODES)
        """Reservations an app may hold (off-switch: against the whole cluster)."""
        self.threshold_mb = THRESHOLD_MULTIPLE * INCREMENT_MB

    def may_reserve(self, app: App) -> bool:
        return app.am_node is None and app.am_memory_mb >= self.threshold_mb and (
            app.reserved < self.per_app
        )

    def serve(self, admits: Callable[[App], bool], launch: Callable[[App, Node], None]) -> None:
        """Each reserved node serves its reservation before anything else at its heartbeat
        (``assignReservedContainer``): released when the AM went elsewhere or ``admits`` (the
        AM limit, the queues' maximum) no longer takes it; the AM's container once it fits."""
        for node in list(self.nodes):
            app: App = node.reserved
            if app.am_node is not None or not admits(app):
                self.release(node)
            elif node.free_mb >= app.am_memory_mb and node.free_vcores >= app.am_vcores:
                self.release(node)
                launch(app, node)

    def reserve_for_waiting(
        self, waiting: list[tuple[int, App]], admits: Callable[[App], bool]
    ) -> None:
        """No node has room for the next AM: the waiting apps (a heap by submission, walked in
        order without popping) reserve the nodes the rest of the round offers them, each while
        ``admits`` takes it alone."""
        todo = [(waiting[0][0], 0)]
        while todo:
            i = heapq.heappop(todo)[1]
            for child in (2 * i + 1, 2 * i + 2):
                if child < len(waiting):
                    heapq.heappush(todo, (waiting[child][0], child))
            app = waiting[i][1]
            if not self.may_reserve(app):
                continue
            if not admits(app):
                return
            while self.may_reserve(app):
                if not self.reserve(app):
                    return

    def reserve(self, app: App) -> bool:
        """Reserve the node a pass would offer ``app`` next; False when no node is left."""
        node = self.cluster.offered()
        if node is None:
            return False
        self.cluster.reserve(node, app)
        app.reserved += 1
        self.nodes.append(node)
        return True

    def release(self, node: Node) -> None:
        app: App = node.reserved
        app.reserved -= 1
        self.cluster.unreserve(node)
        self.nodes.remove(node)
