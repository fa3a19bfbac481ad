"""FairScheduler semantics: fair shares, maxAMShare, maxRunningApps, ordering.

Rules from yarn-facts §2 (Hadoop 2.9+/3.x): the AM check happens when the AM container is placed,
against maxAMShare × the queue's instantaneous fair share, with the zero-fair-share fallback and
-1 disabling it; maxRunningApps is enforced from the leaf up to root, where queueMaxAppsDefault
applies too (the root pitfall). The arithmetic on plain values is in `amtuner.sim.fairshare`, the
queue tree in `amtuner.sim.fsqueue`, and the allocation file is read by
`amtuner.sim.sched_config.fair`.

An app goes where the placement rules put it (`amtuner.sim.placement`: the file's, else
yarn-site's ``user-as-default-queue`` and ``allow-undeclared-pools``); a queue they name that does
not exist is created as a leaf, as Hadoop does.

An AM that fits no node reserves one (`amtuner.sim.fsreserve`, Hadoop 2.8+ and 3.x) unless
``reserve`` is off (``--heartbeats hadoop3-no-reserve``, ``none``). Not modelled: preemption
(off by default in FS too), ACLs, maxChildResources, the fair-share update interval (shares are
recomputed whenever the set of active queues changes), the order of children under a parent's
drf policy (they are compared by memory; the shares themselves follow the parent's policy).
Placement is one scheduling pass over the cluster, not a node heartbeat at a time; a
container goes where both its memory and its vcores fit (``fitsIn``), whatever the policy.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import replace

from amtuner.model import SchedulerKind
from amtuner.sim.app import App
from amtuner.sim.cluster import Cluster
from amtuner.sim.fairshare import (
    can_run_am,
    compute_fair_shares,
    max_am_memory_2_8,
    max_am_resource,
)
from amtuner.sim.fsqueue import FSQueue, check_busy_leaves, rebuilt_queues, recount_parents
from amtuner.sim.fsreserve import Reservations
from amtuner.sim.jobs import Runtime, Scheduler
from amtuner.sim.mrallocator import Resource
from amtuner.sim.placement import Rejected, place, rules_from_site
from amtuner.sim.sched_config import UNLIMITED
from amtuner.sim.sched_config.fair import (
    FSConf,
    FSQueueConf,
    ResourceSpec,
    parse_allocation_file,
)
from amtuner.sim.view import QueueView, Res


def _set_fair(q: FSQueue, mb: int, vcores: int) -> None:
    q.fair_mb, q.fair_vcores = mb, vcores


def _set_steady(q: FSQueue, mb: int, vcores: int) -> None:
    q.steady_mb, q.steady_vcores = mb, vcores


class FairScheduler(Scheduler):
    kind = SchedulerKind.FAIR

    def __init__(
        self,
        data: bytes,
        cluster: Cluster,
        *,
        hadoop: str = "3",
        site: Mapping[str, str] | None = None,
        reserve: bool = False,
    ) -> None:
        self.cluster = cluster
        self.reservations = Reservations(cluster) if reserve else None
        """Nodes reserved for AMs, where reservations are modelled."""
        self.site_rules = rules_from_site(site or {})
        """Where apps go when the allocation file has no placement policy."""
        self.am_check_2_8 = hadoop == "2.8"
        """Check AMs as Hadoop 2.7/2.8 does (memory only); 2.9+ and 3.x check every resource."""
        self.conf = parse_allocation_file(data)
        self.data = data
        self.queues: dict[str, FSQueue] = {}
        self.user_runnable: dict[str, int] = {}
        self._nonrunnable = 0
        self._shares_dirty = True
        self.am_refusals = 0
        self._build(self.conf, {})

    @property
    def global_am_share(self) -> float:
        return self.conf.queue_max_am_share_default

    @property
    def leaf_am_shares(self) -> dict[str, float]:
        """Each leaf's effective maxAMShare (its own, else queueMaxAMShareDefault)."""
        return {path: q.max_am_share for path, q in self.queues.items() if q.is_leaf}

    def _apply_settings(self, q: FSQueue) -> None:
        c, conf = q.conf, self.conf
        total_mb, total_vc = self.cluster.total_mb, self.cluster.total_vcores
        q.max_am_share = (
            c.max_am_share if c.max_am_share is not None else (conf.queue_max_am_share_default)
        )
        q.max_running = (
            c.max_running_apps if c.max_running_apps is not None else conf.queue_max_apps_default
        )
        q.min_mb, q.min_vcores = (c.min_resources or ResourceSpec()).resolve(total_mb, total_vc, 0)
        max_spec = c.max_resources or conf.queue_max_resources_default or ResourceSpec()
        # Unbounded unless configured (``Resources.unbounded()``): a queue's usage plus a request
        # is checked against it (``fitsInMaxShare``), not against the cluster's size.
        q.max_mb, q.max_vcores = max_spec.resolve(total_mb, total_vc, UNLIMITED)
        q.policy = c.policy or conf.default_policy

    def _build(self, conf: FSConf, old: dict[str, FSQueue]) -> None:
        """Swap in ``conf``, keeping the leaves (and their apps) that stay leaves; a busy leaf the
        file no longer names stays, with default settings, as FS keeps dynamically created
        queues. Checks first, so a refused configuration leaves every queue as it was."""
        check_busy_leaves(conf, old)
        queues = rebuilt_queues(conf, old)
        recount_parents(queues)
        self.conf = conf
        self._declared = frozenset(q.path for q in conf.queues)
        self.queues = queues
        for q in queues.values():
            self._apply_settings(q)
        self._link()
        self._shares_dirty = True

    def _link(self) -> None:
        """Children and leaves as objects, so a pick walks no names; after every change of the
        tree (a reload, a queue created for an app)."""
        for q in self.queues.values():
            q.children = [self.queues[c] for c in q.conf.children]
        self.leaves = [q for q in self.queues.values() if q.is_leaf]
        self._lone_leaf = self.leaves[0] if len(self.leaves) == 1 else None
        """The leaf of a tree that is one chain of queues: the only pick there is."""

    def reload(self, data: bytes) -> None:
        conf = parse_allocation_file(data)
        self._build(conf, self.queues)
        self.data = data
        self._promote_nonrunnable()

    # queues and fair shares

    def _configured(self, path: str) -> bool:
        """Whether the allocation file declares the queue (``FSPlacementRule.configuredQueue``:
        one that exists and was not created for an app)."""
        return path in self._declared

    def _leaf_for(self, path: str) -> FSQueue | None:
        q = self.queues.get(path)
        if q is not None:
            return q if q.is_leaf else None
        parent_path, _, leaf = path.rpartition(".")
        parent = self._leaf_for_parent(parent_path)
        if parent is None or not leaf:
            return None
        q = FSQueue(FSQueueConf(path=path), parent)
        self._apply_settings(q)
        self.queues[path] = q
        parent.conf = replace(parent.conf, children=(*parent.conf.children, path))
        self._link()
        return q

    def _leaf_for_parent(self, path: str) -> FSQueue | None:
        q = self.queues.get(path)
        if q is not None:
            return None if q.is_leaf else q
        grand, _, name = path.rpartition(".")
        gp = self._leaf_for_parent(grand) if grand else None
        if gp is None or not name:
            return None
        q = FSQueue(FSQueueConf(path=path, parent_type=True), gp)
        self._apply_settings(q)
        self.queues[path] = q
        gp.conf = replace(gp.conf, children=(*gp.conf.children, path))
        self._link()
        return q

    def _update_shares(self) -> None:
        """Instantaneous fair shares among active queues (those with runnable apps), top down;
        steady shares the same among all queues.

        A parent shares out what its own policy computes (``FSParentQueue.recomputeShares``):
        ``fair`` passes only memory to ComputeFairShares (FairSharePolicy), so under it a
        child's vcore share stays 0 as in Hadoop 2.7-3.5, and the AM limit's vcores fall back to
        what is available (`max_am_resource`); ``drf`` shares every resource
        (DominantResourceFairnessPolicy). Only root holds the whole cluster."""
        cluster = self.cluster
        root = self.queues["root"]
        root.fair_mb, root.fair_vcores = cluster.total_mb, cluster.total_vcores
        root.steady_mb, root.steady_vcores = root.fair_mb, root.fair_vcores
        children: dict[str, list[FSQueue]] = {}
        for q in self.queues.values():
            if q.parent is not None:
                children.setdefault(q.parent.conf.path, []).append(q)
        for q in self.queues.values():
            kids = children.get(q.conf.path, [])
            if not kids:
                continue
            active = [k for k in kids if k.runnable > 0]
            for k in kids:
                k.fair_mb = k.fair_vcores = 0
            for group, of_mb, of_vc, set_share in (
                (active, q.fair_mb, q.fair_vcores, _set_fair),
                (kids, q.steady_mb, q.steady_vcores, _set_steady),
            ):
                mems = compute_fair_shares(
                    of_mb, [(k.conf.weight, k.min_mb, k.max_mb) for k in group]
                )
                vcs = (
                    compute_fair_shares(
                        of_vc, [(k.conf.weight, k.min_vcores, k.max_vcores) for k in group]
                    )
                    if q.policy == "drf"
                    else [0] * len(group)
                )
                for k, m, v in zip(group, mems, vcs, strict=True):
                    set_share(k, m, v)
        self._shares_dirty = False

    # runnability (maxRunningApps)

    def _can_be_runnable(self, leaf: FSQueue, user: str) -> bool:
        user_max = self.conf.user_max_apps.get(user, self.conf.user_max_apps_default)
        if self.user_runnable.get(user, 0) >= user_max:
            return False
        q: FSQueue | None = leaf
        while q is not None:
            if q.runnable >= q.max_running:
                return False
            q = q.parent
        return True

    def _make_runnable(self, leaf: FSQueue, app: App) -> None:
        user = app.user
        self.user_runnable[user] = self.user_runnable.get(user, 0) + 1
        if leaf.runnable == 0:
            self._shares_dirty = True
        q: FSQueue | None = leaf
        while q is not None:
            q.runnable += 1
            q = q.parent
        heapq.heappush(leaf.am_heap, (app.index, app))

    def _promote_nonrunnable(self) -> None:
        """Make waiting apps runnable in submission order while the limits allow."""
        if not self._nonrunnable:
            return
        waiting = sorted(
            (a for leaf in self.leaves for a in leaf.nonrunnable), key=lambda a: a.index
        )
        promoted: set[int] = set()
        for app in waiting:
            root = self.queues["root"]
            if root.runnable >= root.max_running:
                break
            leaf: FSQueue = app.leaf  # type: ignore[assignment]
            if self._can_be_runnable(leaf, app.user):
                promoted.add(app.index)
                self._nonrunnable -= 1
                self._make_runnable(leaf, app)
        if promoted:
            for leaf in self.leaves:
                leaf.nonrunnable = [a for a in leaf.nonrunnable if a.index not in promoted]

    # app life cycle

    def submit(self, app: App) -> bool:
        rules = self.conf.placement or self.site_rules
        try:
            path = place(rules, app.spec.queue, app.user, self._configured)
        except Rejected:
            return False
        leaf = self._leaf_for(path)
        if leaf is None:
            return False
        app.leaf = leaf
        # Its AM's ask is pending and in the queue's demand whether or not it may run yet
        # (AppSchedulingInfo; FSLeafQueue.updateDemand sums the non-runnable apps too).
        leaf.pending_containers += 1
        leaf.pending_mb += app.am_memory_mb
        leaf.pending_vcores += app.am_vcores
        if self._can_be_runnable(leaf, app.user):
            self._make_runnable(leaf, app)
        else:
            leaf.nonrunnable.append(app)
            self._nonrunnable += 1
        return True

    def _key(self, leaf: FSQueue, app: App) -> float:
        if leaf.policy == "fifo":
            return 0.0
        if leaf.policy == "drf":
            return max(
                app.used_mb / self.cluster.total_mb, app.used_vcores / self.cluster.total_vcores
            )
        return float(app.used_mb)

    def _push(self, leaf: FSQueue, app: App) -> None:
        app.in_heap = True
        leaf.place(app, self._key(leaf, app))

    def add_demand(self, app: App, containers: int, memory_mb: int, vcores: int) -> None:
        leaf: FSQueue = app.leaf  # type: ignore[assignment]
        leaf.pending_containers += containers
        leaf.pending_mb += memory_mb
        leaf.pending_vcores += vcores
        if not app.in_heap:
            self._push(leaf, app)

    def on_allocated(
        self, app: App, memory_mb: int, vcores: int, is_am: bool, part: int = 0
    ) -> None:
        leaf: FSQueue = app.leaf  # type: ignore[assignment]
        leaf.pending_containers -= 1
        leaf.pending_mb -= memory_mb
        leaf.pending_vcores -= vcores
        if is_am:
            leaf.am_used_mb += memory_mb
            leaf.am_used_vcores += vcores
            leaf.with_am += 1
        q: FSQueue | None = leaf
        while q is not None:
            q.used_mb += memory_mb
            q.used_vcores += vcores
            q.allocated_containers += 1
            q = q.parent

    def on_released(self, app: App, memory_mb: int, vcores: int, part: int = 0) -> None:
        leaf: FSQueue = app.leaf  # type: ignore[assignment]
        q: FSQueue | None = leaf
        while q is not None:
            q.used_mb -= memory_mb
            q.used_vcores -= vcores
            q.allocated_containers -= 1
            q = q.parent
        if app.in_heap and leaf.policy != "fifo":
            self._push(leaf, app)

    def app_finished(self, app: App) -> None:
        leaf: FSQueue = app.leaf  # type: ignore[assignment]
        leaf.am_used_mb -= app.am_memory_mb
        leaf.am_used_vcores -= app.am_vcores
        leaf.with_am -= 1
        self.user_runnable[app.user] -= 1
        q: FSQueue | None = leaf
        while q is not None:
            q.runnable -= 1
            q = q.parent
        if leaf.runnable == 0:
            self._shares_dirty = True
        self._promote_nonrunnable()

    # allocation

    def headroom(self, app: App) -> Resource:
        """``FSAppAttempt.getHeadroom``: what the cluster and the leaf's maximum have free,
        with memory also capped by the leaf's fair share less its usage
        (``SchedulingPolicy.getHeadroom``); under ``drf`` vcores are capped the same way."""
        if self._shares_dirty:
            self._update_shares()
        leaf: FSQueue = app.leaf  # type: ignore[assignment]
        cluster = self.cluster
        free_mb = min(cluster.total_mb - cluster.used_mb, leaf.max_mb - leaf.used_mb)
        free_vc = min(
            cluster.total_vcores - cluster.used_vcores, leaf.max_vcores - leaf.used_vcores
        )
        if leaf.policy == "drf":
            free_vc = min(free_vc, max(leaf.fair_vcores - leaf.used_vcores, 0))
        return min(free_mb, max(leaf.fair_mb - leaf.used_mb, 0)), free_vc

    def counts_vcores(self) -> bool:
        return True

    def _pick_leaf(self, blocked: set[int], am_blocked: set[int]) -> FSQueue | None:
        lone = self._lone_leaf
        if lone is not None:  # only leaves are ever blocked
            # an empty set (nearly every pick) is asked nothing: no id boxed, no lookup
            if blocked and id(lone) in blocked:
                return None
            if lone.heap or (lone.am_heap and not (am_blocked and id(lone) in am_blocked)):
                return lone
            return None
        return self._pick_in(self.queues["root"], blocked, am_blocked)

    def _pick_in(self, queue: FSQueue, blocked: set[int], am_blocked: set[int]) -> FSQueue | None:
        """From root down, children in FairSharePolicy's order (needy ones, below their min
        share, first by usage / min share, then by usage / weight; ties in configuration
        order); the first leaf with an app to serve wins."""
        if blocked and id(queue) in blocked:
            return None
        if queue.is_leaf:
            if queue.heap or (queue.am_heap and not (am_blocked and id(queue) in am_blocked)):
                return queue
            return None
        children = queue.children
        if len(children) > 1:  # one child needs no order (most clusters: root.default alone)
            children = sorted(children, key=self._order)
        for child in children:
            leaf = self._pick_in(child, blocked, am_blocked)
            if leaf is not None:
                return leaf
        return None

    def _pending_mb(self, queue: FSQueue) -> int:
        if queue.is_leaf:
            return queue.pending_mb
        return sum(self._pending_mb(c) for c in queue.children)

    def _order(self, queue: FSQueue) -> tuple[int, float]:
        min_share = min(queue.min_mb, queue.used_mb + self._pending_mb(queue))
        if queue.used_mb < min_share:
            return (0, queue.used_mb / min_share)
        weight = queue.conf.weight
        return (1, queue.used_mb / weight if weight > 0 else math.inf)

    def _fits_max(self, leaf: FSQueue, mem: int, vc: int) -> bool:
        q: FSQueue | None = leaf
        while q is not None:
            if q.used_mb + mem > q.max_mb or q.used_vcores + vc > q.max_vcores:
                return False
            q = q.parent
        return True

    def am_allowed(self, leaf: FSQueue, app: App) -> bool:
        """``canRunAppAM``: records the limit it computed, as the RM's metrics do, and counts a
        refusal."""
        if self._am_allowed(leaf, app):
            return True
        self.am_refusals += 1
        return False

    def _am_allowed(self, leaf: FSQueue, app: App) -> bool:
        if self._shares_dirty:
            self._update_shares()
        if self.am_check_2_8:
            leaf.am_limit = (max_am_memory_2_8(leaf.fair_mb, leaf.max_am_share), 0)
            return abs(leaf.max_am_share + 1.0) < 0.0001 or (
                leaf.am_used_mb + app.am_memory_mb <= leaf.am_limit[0]
            )
        cluster = self.cluster
        limit = max_am_resource(
            (leaf.fair_mb, leaf.fair_vcores),
            (leaf.max_mb, leaf.max_vcores),
            (cluster.free_mb, cluster.total_vcores - cluster.used_vcores),
            leaf.max_am_share,
        )
        leaf.am_limit = limit
        return can_run_am(
            (leaf.am_used_mb, leaf.am_used_vcores),
            (app.am_memory_mb, app.am_vcores),
            limit,
            leaf.max_am_share,
        )

    def assign(self, runtime: Runtime) -> None:
        """Place containers until nothing more fits. An AM refused in a leaf (by maxAMShare or
        for want of a node) stops AMs behind it in that leaf for this pass: with equal AM sizes,
        as MapReduce's are, they would be refused too. maxAMShare is asked first, as
        ``FSAppAttempt.assignContainer`` asks ``canRunAppAM`` before it looks at room: an AM
        it refuses leaves the leaf's tasks free to take what is left."""
        if self._shares_dirty:
            self._update_shares()
        cluster = self.cluster
        min_alloc = cluster.min_alloc_mb
        blocked: set[int] = set()
        am_blocked: set[int] = set()
        skipped: list[tuple[FSQueue, App]] = []
        reservations = self.reservations
        if reservations is not None and reservations.nodes:
            reservations.serve(self._admits, runtime.launch)
        while cluster.fits_somewhere(min_alloc):
            leaf = self._pick_leaf(blocked, am_blocked)
            if leaf is None:
                break
            if self._am_next(leaf, am_blocked):
                self._place_am(leaf, runtime, blocked, am_blocked)
                continue
            app = leaf.heap[0]
            if not app.pending:
                leaf.drop_first()
                app.in_heap = False
                continue
            unit = app.pending[0]  # its AM runs: it is in the heap for tasks
            mem, vc = unit.memory_mb, unit.vcores
            if not self._fits_max(leaf, mem, vc):
                leaf.place(app, self._key(leaf, app))
                blocked.add(id(leaf))
                continue
            node = cluster.find(mem, vc)
            if node is None:
                leaf.drop_first()
                skipped.append((leaf, app))
                continue
            runtime.launch(app, node)
            if app.pending:
                self._push(leaf, app)
            else:
                leaf.drop_first()
                app.in_heap = False
        for leaf, app in skipped:
            self._push(leaf, app)
        if reservations is not None:  # a full node heartbeats too, and is reserved
            for leaf in self.leaves:
                while leaf.am_heap and not (id(leaf) in am_blocked or id(leaf) in blocked):
                    self._place_am(leaf, runtime, blocked, am_blocked)

    def _place_am(
        self, leaf: FSQueue, runtime: Runtime, blocked: set[int], am_blocked: set[int]
    ) -> None:
        """The leaf's next AM: placed, or the leaf's AMs held back this pass (the AM limit, the
        queues' maximum, no node with room: then the waiting apps reserve nodes)."""
        app = leaf.am_heap[0][1]
        if app.am_node is not None:  # its AM went to a node reserved for it
            heapq.heappop(leaf.am_heap)
            return
        if not self._admits(app):
            am_blocked.add(id(leaf))
            return
        node = self.cluster.find(app.am_memory_mb, app.am_vcores)
        if node is None:
            if self.reservations is not None:
                self.reservations.reserve_for_waiting(leaf.am_heap, self._admits)
            am_blocked.add(id(leaf))
            return
        heapq.heappop(leaf.am_heap)
        runtime.launch(app, node)

    def _admits(self, app: App) -> bool:
        """Whether the AM limit and the queues' maximum take ``app``'s AM now. Over the maximum
        only this app fails (``hasContainerForNode``): the leaf's tasks, smaller, may still fit."""
        leaf: FSQueue = app.leaf  # type: ignore[assignment]
        return self.am_allowed(leaf, app) and self._fits_max(leaf, app.am_memory_mb, app.am_vcores)

    def _reserved_by_queue(self) -> dict[str, tuple[int, int, int]]:
        """(MB, vcores, containers) reserved by each queue's apps and its children's."""
        out: dict[str, tuple[int, int, int]] = {}
        for node in self.reservations.nodes if self.reservations is not None else ():
            app: App = node.reserved
            q: FSQueue | None = app.leaf  # type: ignore[assignment]
            while q is not None:
                mb, vc, n = out.get(q.conf.path, (0, 0, 0))
                out[q.conf.path] = (mb + app.am_memory_mb, vc + app.am_vcores, n + 1)
                q = q.parent
        return out

    @staticmethod
    def _am_next(leaf: FSQueue, am_blocked: set[int]) -> bool:
        if not leaf.am_heap or (am_blocked and id(leaf) in am_blocked):
            return False
        if not leaf.heap or leaf.policy != "fifo":
            return True
        return leaf.am_heap[0][0] < leaf.heap[0].index

    # view

    def queue_views(self) -> tuple[QueueView, ...]:
        if self._shares_dirty:
            self._update_shares()
        reserved = self._reserved_by_queue()
        views = []
        for q in self.queues.values():
            c = q.conf
            mb, vc, n = reserved.get(c.path, (0, 0, 0))
            pending_apps = q.runnable - q.with_am + len(q.nonrunnable) if q.is_leaf else 0
            views.append(
                QueueView(
                    path=c.path,
                    is_leaf=q.is_leaf,
                    children=c.children,
                    used=Res(q.used_mb, q.used_vcores),
                    am_used=Res(q.am_used_mb, q.am_used_vcores),
                    am_limit=Res(*q.am_limit),
                    num_pending_apps=pending_apps,
                    num_active_apps=q.with_am if q.is_leaf else 0,
                    max_apps=q.max_running,
                    pending_containers=q.pending_containers,
                    allocated_containers=q.allocated_containers,
                    max_am_percent=q.max_am_share,
                    weight=c.weight,
                    min_resources=Res(q.min_mb, q.min_vcores),
                    max_resources=Res(q.max_mb, q.max_vcores),
                    fair_share=Res(q.fair_mb, q.fair_vcores),
                    steady_fair_share=Res(q.steady_mb, q.steady_vcores),
                    # FSLeafQueue.updateDemand caps what the apps hold and ask at maxShare.
                    demand=Res(
                        min(q.used_mb + q.pending_mb, q.max_mb),
                        min(q.used_vcores + q.pending_vcores, q.max_vcores),
                    ),
                    scheduling_policy=q.policy,
                    reserved=Res(mb, vc),
                    reserved_containers=n,
                )
            )
        return tuple(views)
