"""The FairScheduler's queue tree: a queue's counters, and how a reload rebuilds the tree.

A reload keeps the leaves that stay leaves (with their apps), as Hadoop's ``QueueManager.
updateAllocationConfiguration`` does, and refuses what it refuses: a leaf with applications turned
into a parent, or left without its parent.
"""

from __future__ import annotations

from dataclasses import replace

from amtuner.sim.app import App
from amtuner.sim.sched_config import FS_DEFAULT_AM_SHARE, UNLIMITED, SchedulerConfigError
from amtuner.sim.sched_config.fair import FSConf, FSQueueConf


class FSQueue:
    __slots__ = (
        "allocated_containers",
        "am_heap",
        "am_limit",
        "am_used_mb",
        "am_used_vcores",
        "children",
        "conf",
        "fair_mb",
        "fair_vcores",
        "heap",
        "is_leaf",
        "max_am_share",
        "max_mb",
        "max_running",
        "max_vcores",
        "min_mb",
        "min_vcores",
        "nonrunnable",
        "parent",
        "pending_containers",
        "pending_mb",
        "pending_vcores",
        "policy",
        "runnable",
        "steady_mb",
        "steady_vcores",
        "used_mb",
        "used_vcores",
        "with_am",
    )

    def __init__(self, conf: FSQueueConf, parent: FSQueue | None) -> None:
        self.conf = conf
        self.parent = parent
        self.is_leaf = not conf.parent_type
        self.children: list[FSQueue] = []
        """In configuration order, as `conf.children` names them."""
        self.used_mb = self.used_vcores = 0
        self.allocated_containers = self.pending_containers = self.pending_mb = 0
        self.pending_vcores = 0
        self.am_used_mb = self.am_used_vcores = 0
        self.am_limit = (0, 0)
        self.fair_mb = self.fair_vcores = self.steady_mb = self.steady_vcores = 0
        self.runnable = 0
        """Runnable apps in this queue and below (what maxRunningApps counts)."""
        self.with_am = 0
        self.nonrunnable: list[App] = []
        self.heap: list[App] = []
        """Apps with a running AM wanting a task container, a heap by (policy key `App.hkey`,
        submission). Each app knows its place (`App.hpos`), so a new key moves it there: one
        sift, where a heap of tuples needs a pop and a push per container and keeps the
        superseded entries until they come up."""
        self.am_heap: list[tuple[int, App]] = []
        """Runnable apps waiting for their AM, by submission. They use nothing, so every policy
        ranks them first (fifo: by submission among all); apart, a long queue of AM-blocked
        apps is not walked on every pass."""
        self.max_am_share = FS_DEFAULT_AM_SHARE
        self.max_running = UNLIMITED
        self.min_mb = self.min_vcores = 0
        self.max_mb = self.max_vcores = UNLIMITED
        self.policy = "fair"

    def place(self, app: App, key: float) -> None:
        """Into the heap under ``key``, or moved to where ``key`` puts it if it is in."""
        app.hkey = key
        heap = self.heap
        i = app.hpos
        if i < 0:
            i = len(heap)
            heap.append(app)
        self._sift_down(app, self._sift_up(app, i))

    def drop_first(self) -> None:
        heap = self.heap
        heap[0].hpos = -1
        last = heap.pop()
        if heap:
            self._sift_down(last, 0)

    def _sift_up(self, app: App, i: int) -> int:
        heap = self.heap
        key, index = app.hkey, app.index
        while i > 0:
            up = (i - 1) >> 1
            parent = heap[up]
            if key < parent.hkey or (key == parent.hkey and index < parent.index):
                heap[i] = parent
                parent.hpos = i
                i = up
            else:
                break
        heap[i] = app
        app.hpos = i
        return i

    def _sift_down(self, app: App, i: int) -> None:
        heap = self.heap
        n = len(heap)
        key, index = app.hkey, app.index
        child = 2 * i + 1
        while child < n:
            low = heap[child]
            right = child + 1
            if right < n:
                other = heap[right]
                if other.hkey < low.hkey or (other.hkey == low.hkey and other.index < low.index):
                    child = right
                    low = other
            if low.hkey < key or (low.hkey == key and low.index < index):
                heap[i] = low
                low.hpos = i
                i = child
                child = 2 * i + 1
            else:
                break
        heap[i] = app
        app.hpos = i


def check_busy_leaves(conf: FSConf, old: dict[str, FSQueue]) -> None:
    """A leaf with apps may not become a parent, nor lose its parent."""
    kinds = {qc.path: qc.parent_type for qc in conf.queues}
    for path, q in old.items():
        if not q.is_leaf or not (q.runnable or q.nonrunnable):
            continue
        parent_path = path.rsplit(".", 1)[0]
        if kinds.get(path) is True:
            raise SchedulerConfigError(f"queue {path} has applications and cannot be a parent")
        if path not in kinds and kinds.get(parent_path) is not True:
            raise SchedulerConfigError(
                f"queue {path} has applications and its parent {parent_path} is gone"
            )


def rebuilt_queues(conf: FSConf, old: dict[str, FSQueue]) -> dict[str, FSQueue]:
    """The queues of ``conf``, reusing the old leaves that stay leaves; busy leaves the file no
    longer names are kept under their parent with default settings."""
    queues: dict[str, FSQueue] = {}
    for qc in conf.queues:
        parent = queues.get(qc.path.rsplit(".", 1)[0]) if qc.path != "root" else None
        reused = old.get(qc.path)
        if reused is not None and reused.is_leaf and not qc.parent_type:
            reused.conf, reused.parent = qc, parent
            queues[qc.path] = reused
        else:
            queues[qc.path] = FSQueue(qc, parent)
    for path, q in old.items():
        if not q.is_leaf or path in queues:
            continue
        if q.runnable or q.nonrunnable:
            parent = queues[path.rsplit(".", 1)[0]]
            parent.conf = replace(parent.conf, children=(*parent.conf.children, path))
            q.conf = FSQueueConf(path=path)
            q.parent = parent
            queues[path] = q
    return queues


def recount_parents(queues: dict[str, FSQueue]) -> None:
    """Parents' usage and runnable counts summed afresh from their leaves."""
    for q in queues.values():
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
