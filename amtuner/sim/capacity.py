"""CapacityScheduler semantics: queue tree, AM limits, activation and FIFO allocation.

The rules follow yarn-facts §1 (Hadoop 2.9–3.3 behaviour, default partition, default resource
calculator: only memory is compared). The arithmetic is in module-level functions of plain values,
so tests check them against the worked examples directly (§1.2, §1.3); `CapacityScheduler` only
keeps the running counters and applies them. The configuration is read by
`amtuner.sim.sched_config.capacity`.

``max-parallel-apps`` (3.4+) holds apps non-runnable as ``CSMaxRunningAppsEnforcer`` does
(`amtuner.sim.csqueue`, with the queue's counters).

Node-label partitions, for EMR-style clusters (every AM on one exclusive label, the RM's
``am.default-node-label-expression``; else the leaf's ``default-node-label-expression``, where
its other containers go too: `amtuner.sim.csqueue.place`): a request is placed only on its
partition's nodes, and the queue's AM limit there is its capacity there times its AM percent
there, normalised up, nothing borrowed (``calculateAndGetAMResourceLimitPerPartition``).

The user limit in a labelled partition is ``computeUserLimit`` on the leaf's capacity, use and
maximum there, the active users the leaf's (`label_user_limit_mb`).

Not modelled: absolute-resource capacities, preemption, user weights, per-user max applications;
a leaf using two labelled partitions.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping

from amtuner.model import SchedulerKind, user_limit_mb
from amtuner.sim.app import App
from amtuner.sim.cluster import Cluster
from amtuner.sim.csqueue import CSQueue, RunnableApps, place, submitted
from amtuner.sim.csview import Limits, queue_view
from amtuner.sim.jobs import Runtime, Scheduler
from amtuner.sim.mrallocator import Resource
from amtuner.sim.sched_config import UNLIMITED, SchedulerConfigError
from amtuner.sim.sched_config.capacity import CSConf, parse_capacity_config
from amtuner.sim.view import QueueView


def round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def multiply_and_normalize_up(memory_mb: int, by: float, min_alloc_mb: int) -> int:
    """``Resources.multiplyAndNormalizeUp`` under the default calculator (memory only)."""
    return round_up(int(memory_mb * by + 0.5), min_alloc_mb)


def am_limit_mb(guarantee_mb: int, current_limit_mb: int, percent: float, min_alloc_mb: int) -> int:
    """Queue AM limit: max(guarantee, current limit) × percent, normalised up."""
    usable = current_limit_mb if guarantee_mb <= current_limit_mb else guarantee_mb
    return multiply_and_normalize_up(usable, percent, min_alloc_mb)


def user_am_limit_mb(
    guarantee_mb: int,
    percent: float,
    queue_am_limit: int,
    min_alloc_mb: int,
    *,
    user_limit_percent: float = 100.0,
    user_limit_factor: float = 1.0,
    active_users: int = 1,
) -> int:
    """Per-user AM limit: based on the guarantee only, scaled by the user limit, capped by the
    queue's AM limit."""
    effective = min(max(user_limit_percent / 100.0, 1.0 / max(active_users, 1)), 1.0)
    factor = 1.0 if user_limit_factor == -1 else user_limit_factor
    limit = multiply_and_normalize_up(guarantee_mb, percent * effective * factor, min_alloc_mb)
    return min(limit, queue_am_limit)


def child_limit_mb(
    parent_limit_mb: int, parent_used_mb: int, child_used_mb: int, child_max_mb: int, min_alloc: int
) -> int:
    """What a child may grow to: its used plus what is still free in the parent, capped by its
    maximum capacity, rounded down to the minimum allocation."""
    limit = min(parent_limit_mb - parent_used_mb + child_used_mb, child_max_mb)
    return max(limit, 0) // min_alloc * min_alloc


def activations(
    pending_am_mb: Iterable[tuple[int, str]],
    am_used_mb: int,
    am_limit: int,
    num_active: int,
    user_am_used_mb: Mapping[str, int],
    user_am_limit: int,
    min_am_mb: int = 0,
) -> list[int]:
    """Indices of the pending apps (FIFO order; (AM size, user) each) to activate now.

    An app that does not fit is skipped, not waited for, so a later, smaller AM can still start;
    while the queue has no active app or no AM in use, the next one starts whatever the limit
    (the first-AM exemption). ``min_am_mb`` (a lower bound of the pending AM sizes) only ends
    the walk early once not even the smallest could fit."""
    chosen: list[int] = []
    user_used = dict(user_am_used_mb)
    for i, (am_mb, user) in enumerate(pending_am_mb):
        exempt = num_active < 1 or am_used_mb == 0
        if not exempt and am_used_mb + min_am_mb > am_limit:
            break
        if am_used_mb + am_mb > am_limit and not exempt:
            continue
        if user_used.get(user, 0) + am_mb > user_am_limit and not exempt:
            continue
        chosen.append(i)
        am_used_mb += am_mb
        num_active += 1
        user_used[user] = user_used.get(user, 0) + am_mb
    return chosen


class CapacityScheduler(Scheduler):
    kind = SchedulerKind.CAPACITY

    def __init__(self, data: bytes, cluster: Cluster, am_label: str = "") -> None:
        self.cluster = cluster
        self.am_label = am_label
        """The RM's ``am.default-node-label-expression``: where every AM goes ("" none)."""
        self.conf = parse_capacity_config(data)
        self.data = data
        self.queues: dict[str, CSQueue] = {}
        self.parallel = RunnableApps(self.conf)
        self.am_refusals = 0
        self._build(self.conf, {})

    @property
    def global_am_share(self) -> float:
        return self.conf.global_am_percent

    @property
    def leaf_am_shares(self) -> dict[str, float]:
        """Each leaf's effective maximum-am-resource-percent (its own, else the global one)."""
        return {q.conf.path: q.conf.am_percent for q in self.leaves}

    def _build(self, conf: CSConf, old: dict[str, CSQueue]) -> None:
        """Swap in ``conf``, keeping the leaves (and their apps) that stay leaves; checks first,
        so a refused configuration leaves every queue as it was."""
        new_leaves = {qc.path for qc in conf.queues if not qc.children}
        for path, q in old.items():
            if q.is_leaf and q.apps and path not in new_leaves:
                raise SchedulerConfigError(
                    f"queue {path} has {q.apps} applications and cannot be removed or made a parent"
                )
        queues: dict[str, CSQueue] = {}
        for qc in conf.queues:
            parent = queues.get(qc.path.rsplit(".", 1)[0]) if qc.path != "root" else None
            reused = old.get(qc.path)
            if reused is not None and reused.is_leaf and not qc.children:
                reused.conf, reused.parent = qc, parent
                queues[qc.path] = reused
            else:
                queues[qc.path] = CSQueue(qc, parent)
        cluster = self.cluster
        total, min_alloc = cluster.part_mb[0], cluster.min_alloc_mb
        for q in queues.values():
            q.children = [queues[c] for c in q.conf.children]
            q.guarantee_mb = multiply_and_normalize_up(total, q.conf.absolute_capacity, min_alloc)
            q.max_mb = int(q.conf.absolute_max_capacity * total)
            if q.is_leaf:
                place(q, cluster, self.am_label)
            q.user_limit = (-1, 0, 0)
            if not q.is_leaf:
                q.used_mb = q.used_vcores = q.allocated_containers = q.runnable = 0
        for q in queues.values():
            if q.is_leaf:
                p = q.parent
                while p is not None:
                    p.used_mb += q.used_mb
                    p.used_vcores += q.used_vcores
                    p.allocated_containers += q.allocated_containers
                    p.runnable += q.runnable
                    p = p.parent
        self.queues = queues
        self.leaves = [q for q in queues.values() if q.is_leaf]
        self._lone_leaf = self.leaves[0] if len(self.leaves) == 1 else None
        """The leaf of a tree that is one chain of queues (most clusters: root.default): it is
        the only pick, and its limit is its maximum capacity as the others' usage is its own."""

    def reload(self, data: bytes) -> None:
        conf = parse_capacity_config(data)
        self._build(conf, self.queues)
        self.conf = self.parallel.conf = conf
        self.data = data
        if self.parallel.waiting:
            lists: list[list[App]] = []
            self.parallel.gather(self.queues["root"], lists)
            self._promote(lists, UNLIMITED)
        for leaf in self.leaves:
            self._activate(leaf)

    # limits

    def current_limit_mb(self, queue: CSQueue) -> int:
        """What ``queue`` may grow to now (``getCurrentLimitResource``): its parent's limit less
        what its siblings use, capped by its maximum capacity."""
        parent = queue.parent
        if parent is None:
            return self.cluster.part_mb[0]
        return child_limit_mb(
            self.current_limit_mb(parent),
            parent.used_mb,
            queue.used_mb,
            queue.max_mb,
            self.cluster.min_alloc_mb,
        )

    def user_limit_mb(self, leaf: CSQueue) -> int:
        min_alloc = self.cluster.min_alloc_mb
        used, guarantee = leaf.used_mb, leaf.guarantee_mb
        current = guarantee if used < guarantee else used + min_alloc
        users = len(leaf.user_am_used)
        cached = leaf.user_limit
        if cached[0] == current and cached[1] == users:
            return cached[2]
        c = leaf.conf
        limit = user_limit_mb(
            guarantee,
            used,
            leaf.max_mb,
            min_alloc,
            active_users=users,
            user_limit_percent=c.user_limit_percent,
            user_limit_factor=c.user_limit_factor,
        )
        leaf.user_limit = (current, users, limit)
        return limit

    def label_user_limit_mb(self, leaf: CSQueue) -> int:
        """The user limit in the labelled partition the leaf uses (``computeUserLimit`` for
        that partition: its capacity, use and maximum capacity there)."""
        c = leaf.conf
        return user_limit_mb(
            leaf.label_guarantee_mb, leaf.label_used_mb, leaf.label_max_mb,
            self.cluster.min_alloc_mb, active_users=len(leaf.user_am_used),
            user_limit_percent=c.user_limit_percent, user_limit_factor=c.user_limit_factor,
        )  # fmt: skip

    def limits_in(self, leaf: CSQueue, part: int) -> Limits:
        """The leaf's limits in partition ``part`` (0: the default one), as the REST face
        reports them (`amtuner.sim.csview`)."""
        c, min_alloc = leaf.conf, self.cluster.min_alloc_mb
        percent = c.in_partition(self.cluster.labels[part])[2]
        if part:
            guarantee, user = leaf.label_guarantee_mb, self.label_user_limit_mb(leaf)
            am = multiply_and_normalize_up(guarantee, percent, min_alloc)
        else:
            guarantee, user = leaf.guarantee_mb, self.user_limit_mb(leaf)
            am = am_limit_mb(guarantee, self.current_limit_mb(leaf), percent, min_alloc)
        user_am = user_am_limit_mb(
            guarantee, percent, am, min_alloc, user_limit_percent=c.user_limit_percent,
            user_limit_factor=c.user_limit_factor, active_users=len(leaf.user_am_used) or 1,
        )  # fmt: skip
        return Limits(am, user_am, user)

    def user_am_limit_mb(self, leaf: CSQueue, queue_am_limit: int) -> int:
        """``getUserAMResourceLimitPerPartition`` in the partition of the leaf's AMs."""
        labelled = leaf.am_part > 0
        return user_am_limit_mb(
            leaf.label_guarantee_mb if labelled else leaf.guarantee_mb,
            self._am_percent(leaf),
            queue_am_limit,
            self.cluster.min_alloc_mb,
            user_limit_percent=leaf.conf.user_limit_percent,
            user_limit_factor=leaf.conf.user_limit_factor,
            active_users=len(leaf.user_am_used) or 1,
        )

    def _am_percent(self, leaf: CSQueue) -> float:
        return leaf.conf.in_partition(self.cluster.labels[leaf.am_part])[2]

    def am_limit_mb(self, queue: CSQueue) -> int:
        """The queue's AM limit in the partition of its AMs: in a labelled one its capacity
        there times its AM percent there, normalised up, with nothing borrowed
        (``calculateAndGetAMResourceLimitPerPartition`` takes the current limit into account
        for the default partition only)."""
        if queue.am_part:
            return multiply_and_normalize_up(
                queue.label_guarantee_mb, self._am_percent(queue), self.cluster.min_alloc_mb
            )
        return am_limit_mb(
            queue.guarantee_mb,
            self.current_limit_mb(queue),
            queue.conf.am_percent,
            self.cluster.min_alloc_mb,
        )

    # app life cycle

    def _leaf_for(self, name: str) -> CSQueue | None:
        q = self.queues.get(name)
        if q is None and "." not in name:
            q = next((lf for lf in self.leaves if lf.conf.path.endswith("." + name)), None)
        return q if q is not None and q.is_leaf else None

    def submit(self, app: App) -> bool:
        leaf = self._leaf_for(app.spec.queue)
        if leaf is None or leaf.apps >= leaf.conf.max_apps:
            return False
        app.leaf = leaf
        leaf.apps += 1
        leaf.pending_containers += 1
        leaf.pending_mb += app.am_memory_mb
        leaf.pending_vcores += app.am_vcores
        if leaf.am_part:
            leaf.label_pending_mb += app.am_memory_mb
        if self.parallel.can_run(leaf, app.user):
            self.parallel.track(leaf, app)
            self._activate(leaf)
        else:
            leaf.nonrunnable.append(app)
            self.parallel.waiting += 1
        return True

    def _promote(self, lists: list[list[App]], most: int) -> None:
        """``updateAppsRunnability``: the apps of ``lists`` (each oldest first) in submission
        order, each made runnable if the limits now allow, at most ``most``; then each leaf that
        got one activates what it can."""
        promoted: set[int] = set()
        touched: list[CSQueue] = []
        for app in heapq.merge(*lists, key=submitted):
            if app.index in promoted:
                continue  # listed twice: under its queue and its user
            leaf: CSQueue = app.leaf  # type: ignore[assignment]
            if self.parallel.can_run(leaf, app.user):
                promoted.add(app.index)
                self.parallel.track(leaf, app)
                if leaf not in touched:
                    touched.append(leaf)
                if len(promoted) >= most:
                    break
        self.parallel.waiting -= len(promoted)
        for leaf in touched:
            leaf.nonrunnable = [a for a in leaf.nonrunnable if a.index not in promoted]
            self._activate(leaf)

    def _activate(self, leaf: CSQueue) -> None:
        if not leaf.pending:
            return
        limit = self.am_limit_mb(leaf)
        busy = leaf.active >= 1 and leaf.am_used_mb > 0
        if busy and leaf.am_used_mb + leaf.min_pending_am > limit:
            self.am_refusals += 1
            return  # not even the smallest pending AM fits: the common case, kept O(1)
        chosen = activations(
            ((a.am_memory_mb, a.user) for a in leaf.pending),
            leaf.am_used_mb,
            limit,
            leaf.active,
            leaf.user_am_used,
            self.user_am_limit_mb(leaf, limit),
            leaf.min_pending_am,
        )
        if len(chosen) < len(leaf.pending):  # each app not chosen was refused by an AM limit
            self.am_refusals += 1
        if not chosen:
            return
        for i in chosen:
            app = leaf.pending[i]
            leaf.active += 1
            leaf.am_used_mb += app.am_memory_mb
            leaf.am_used_vcores += app.am_vcores
            user = app.user
            leaf.user_am_used[user] = leaf.user_am_used.get(user, 0) + app.am_memory_mb
            leaf.user_active[user] = leaf.user_active.get(user, 0) + 1
            heapq.heappush(leaf.heap, (app.index, app))
            app.in_heap = True
        if chosen[-1] == len(chosen) - 1:
            del leaf.pending[: len(chosen)]
        else:
            picked = set(chosen)
            leaf.pending = [a for i, a in enumerate(leaf.pending) if i not in picked]

    def add_demand(self, app: App, containers: int, memory_mb: int, vcores: int) -> None:
        leaf: CSQueue = app.leaf  # type: ignore[assignment]
        leaf.pending_containers += containers
        leaf.pending_mb += memory_mb
        leaf.pending_vcores += vcores
        if leaf.task_part:
            leaf.label_pending_mb += memory_mb
        if not app.in_heap:
            app.in_heap = True
            heapq.heappush(leaf.heap, (app.index, app))

    def on_allocated(
        self, app: App, memory_mb: int, vcores: int, is_am: bool, part: int = 0
    ) -> None:
        leaf: CSQueue = app.leaf  # type: ignore[assignment]
        leaf.pending_containers -= 1
        leaf.pending_mb -= memory_mb
        leaf.pending_vcores -= vcores
        if part:
            leaf.label_used_mb += memory_mb
            leaf.label_used_vcores += vcores
            leaf.label_pending_mb -= memory_mb
            leaf.label_user_used[app.user] = leaf.label_user_used.get(app.user, 0) + memory_mb
            up: CSQueue | None = leaf
            while up is not None:
                up.allocated_containers += 1
                up = up.parent
            return
        user = app.user
        leaf.user_used[user] = leaf.user_used.get(user, 0) + memory_mb
        q: CSQueue | None = leaf
        while q is not None:
            q.used_mb += memory_mb
            q.used_vcores += vcores
            q.allocated_containers += 1
            q = q.parent

    def on_released(self, app: App, memory_mb: int, vcores: int, part: int = 0) -> None:
        leaf: CSQueue = app.leaf  # type: ignore[assignment]
        if part:
            leaf.label_used_mb -= memory_mb
            leaf.label_used_vcores -= vcores
            leaf.label_user_used[app.user] -= memory_mb
            up: CSQueue | None = leaf
            while up is not None:
                up.allocated_containers -= 1
                up = up.parent
            return
        leaf.user_used[app.user] -= memory_mb
        q: CSQueue | None = leaf
        while q is not None:
            q.used_mb -= memory_mb
            q.used_vcores -= vcores
            q.allocated_containers -= 1
            q = q.parent

    def app_finished(self, app: App) -> None:
        leaf: CSQueue = app.leaf  # type: ignore[assignment]
        leaf.apps -= 1
        leaf.active -= 1
        leaf.am_used_mb -= app.am_memory_mb
        leaf.am_used_vcores -= app.am_vcores
        user = app.user
        leaf.user_am_used[user] -= app.am_memory_mb
        if leaf.user_am_used[user] == 0:
            del leaf.user_am_used[user]
        leaf.user_active[user] -= 1
        if not leaf.user_active[user]:
            del leaf.user_active[user]
        self.parallel.untrack(leaf, user)
        if self.parallel.waiting:
            lists = self.parallel.freed(leaf, user, self.leaves)
            if lists:
                self._promote(lists, len(lists))
        self._activate(leaf)

    # allocation

    def headroom(self, app: App) -> Resource:
        """``AbstractLeafQueue.getHeadroom`` (3.4+): the lesser of the user's limit less what
        the user holds and the queue's current limit less what the queue holds, neither below 0,
        rounded down to the minimum allocation; then the cluster's free resources if they are
        no more, by memory (the default resource calculator compares memory alone). The
        rounding makes a resource of memory only, which Hadoop gives one vcore (none at 0 MB):
        an app held by its user limit is told 1 vcore, whatever is free (measured on Hadoop
        3.5.0's RM, ``tests/realyarn/test_real_headroom.py``)."""
        leaf: CSQueue = app.leaf  # type: ignore[assignment]
        cluster = self.cluster
        mb = max(
            min(
                self.user_limit_mb(leaf) - leaf.user_used.get(app.user, 0),
                self.current_limit_mb(leaf) - leaf.used_mb,
            ),
            0,
        )
        mb = mb // cluster.min_alloc_mb * cluster.min_alloc_mb
        free_mb = cluster.part_mb[0] - cluster.part_used_mb[0]
        if free_mb <= mb:
            return free_mb, cluster.total_vcores - cluster.used_vcores
        return mb, 1 if mb > 0 else 0

    def counts_vcores(self) -> bool:
        return False

    def _pick_leaf(self, blocked: set[int]) -> CSQueue | None:
        lone = self._lone_leaf
        if lone is not None:
            # an empty set (nearly every pick) is asked nothing: no id boxed, no lookup
            return lone if lone.heap and not (blocked and id(lone) in blocked) else None
        return self._pick_in(self.queues["root"], blocked)

    def _pick_in(self, queue: CSQueue, blocked: set[int]) -> CSQueue | None:
        """ParentQueue's order from root down: the child using the least of its guarantee
        (used / guarantee) first, ties in configuration order; the first leaf with an app to
        serve wins."""
        if queue.is_leaf:
            return queue if queue.heap and not (blocked and id(queue) in blocked) else None
        children = queue.children
        if len(children) > 1:  # one child needs no order (most clusters: root.default alone)
            total = self.cluster.part_mb[0]

            def used_capacity(child: CSQueue) -> float:
                guarantee = child.conf.absolute_capacity * total
                return child.used_mb / guarantee if guarantee > 0 else math.inf

            children = sorted(children, key=used_capacity)
        for child in children:
            leaf = self._pick_in(child, blocked)
            if leaf is not None:
                return leaf
        return None

    def assign(self, runtime: Runtime) -> None:
        """FIFO inside a leaf; queues in ParentQueue order from root down (`_pick_in`)."""
        cluster = self.cluster
        min_alloc = cluster.min_alloc_mb
        maps_off_switch = cluster.maps_off_switch
        lone = self._lone_leaf
        lone_limit = self.current_limit_mb(lone) if lone is not None else 0
        blocked: set[int] = set()
        skipped: list[tuple[CSQueue, tuple[int, App]]] = []
        labelled = len(cluster.labels) > 1
        while cluster.fits_somewhere(min_alloc) or (labelled and self._label_room(min_alloc)):
            leaf = self._pick_leaf(blocked)
            if leaf is None:
                break
            app = leaf.heap[0][1]
            if app.am_node is None:
                mem, off_switch, part = app.am_memory_mb, True, leaf.am_part
            elif app.pending:
                unit = app.pending[0]
                mem, off_switch = unit.memory_mb, maps_off_switch or not unit.is_map
                part = leaf.task_part
            else:
                heapq.heappop(leaf.heap)
                app.in_heap = False
                continue
            if part:
                if leaf.label_used_mb + mem > leaf.label_max_mb or (
                    leaf.label_user_used.get(app.user, 0) + mem > self.label_user_limit_mb(leaf)
                ):
                    skipped.append((leaf, heapq.heappop(leaf.heap)))
                    continue
            elif leaf.used_mb + mem > (lone_limit if lone else self.current_limit_mb(leaf)):
                blocked.add(id(leaf))
                continue
            elif leaf.user_used.get(app.user, 0) + mem > self.user_limit_mb(leaf):
                skipped.append((leaf, heapq.heappop(leaf.heap)))
                continue
            node = cluster.find(mem, off_switch=off_switch, part=part)
            if node is None:
                skipped.append((leaf, heapq.heappop(leaf.heap)))
                continue
            runtime.launch(app, node)
        for leaf, entry in skipped:
            heapq.heappush(leaf.heap, entry)

    def _label_room(self, min_alloc: int) -> bool:
        cluster = self.cluster
        return any(cluster.fits_in(min_alloc, part) for part in range(1, len(cluster.labels)))

    # view

    def queue_views(self) -> tuple[QueueView, ...]:
        total, labels = self.cluster.part_mb[0], self.cluster.labels
        views = []
        for q in self.queues.values():
            part = q.am_part or q.task_part
            views.append(
                queue_view(
                    q,
                    total,
                    self.limits_in(q, 0) if q.is_leaf else None,
                    (labels[part], self.limits_in(q, part)) if q.is_leaf and part else None,
                )
            )
        return tuple(views)
