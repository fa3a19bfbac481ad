"""The simulated ResourceManager as one object: build it, advance it, look at it, reconfigure it.

Everything outside `amtuner.sim` (the RM face, the benchmark, `amtuner simulate`) goes through
this facade; it owns the clock and is the only place that reads the wall clock (for the
``wall_seconds`` figure of a result).
"""

from __future__ import annotations

import gc
import math
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from amtuner.model import SchedulerKind
from amtuner.sim.app import App
from amtuner.sim.capacity import CapacityScheduler
from amtuner.sim.cluster import Cluster, normalise_up
from amtuner.sim.csview import default_partition
from amtuner.sim.engine import Engine, make_rng
from amtuner.sim.fair import FairScheduler
from amtuner.sim.jobs import Runtime
from amtuner.sim.placement import AM_NODE_LABEL
from amtuner.sim.sched_config import SchedulerConfigError, default_scheduler_config
from amtuner.sim.spec import HADOOP_3, Heartbeats, JobSpec, TaskGroup, Workload
from amtuner.sim.view import AppView, ClusterView, NodeView, Res

__all__ = [
    "SchedulerConfigError",
    "SimResult",
    "Simulation",
    "build_simulation",
    "default_scheduler_config",
    "most_at_once",
]

CLUSTER_TIMESTAMP = 1_700_000_000_000
"""The RM start time in application ids (``application_<ts>_<seq>``); fixed so runs repeat."""
GC_EVERY_ALLOCATIONS = 50_000
"""Generation-0 threshold while the clock runs (CPython's default: 700)."""
PERIODIC_RUN_LIMIT_S = 30 * 86400.0
"""`Simulation.run()` without a limit stops here when periodic tasks keep the clock going."""


def _asks(app: App) -> tuple[tuple[int, int, int, int], ...]:
    """`AppView.asks`: the AM's while it has none, then the pending tasks' by kind and size."""
    if app.state == "ACCEPTED" and app.started_s is None:
        return ((0, app.am_memory_mb, app.am_vcores, 1),)
    asks: dict[tuple[int, int, int], int] = {}
    for unit in app.pending:
        key = (20 if unit.is_map else 10, unit.memory_mb, unit.vcores)
        asks[key] = asks.get(key, 0) + unit.count
    return tuple((*key, n) for key, n in asks.items() if n)


def _mean_s(groups: Sequence[TaskGroup]) -> float:
    """One task's run time, the mean over the groups of one kind (weighted by their counts)."""
    count = sum(g.count for g in groups)
    return sum(g.count * g.duration_s for g in groups) / count if count else 0.0


def _sizes(spec: JobSpec) -> dict[str, int]:
    """A job's container asks as its configuration would state them: one size a kind, its
    first group's (`AppView`)."""
    out = {"am_mb": spec.am_memory_mb}
    for kind, groups in (("map", spec.maps), ("reduce", spec.reduces)):
        if groups:
            out[f"{kind}_mb"] = groups[0].memory_mb
            out[f"{kind}_vcores"] = groups[0].vcores
    return out


@dataclass(frozen=True, slots=True)
class SimResult:
    scheduler: str
    workload: str
    seed: int
    finished: bool
    """All jobs reached a final state."""
    stopped_reason: str | None
    """Why the run ended before every job finished (limit reached, or nothing could move)."""
    jobs_total: int
    jobs_completed: int
    jobs_failed: int
    """Rejected at submission (CapacityScheduler ``maximum-applications``, unknown queue, AM
    larger than a node) or killed by their AM (a task larger than a node)."""
    makespan_s: float | None
    """First submission to last completion; None when the run did not finish."""
    mean_jct_s: float | None
    p95_jct_s: float | None
    """Job completion time (finish - submit) of completed jobs; p95 by nearest rank."""
    sim_seconds: float
    wall_seconds: float
    """The only figure that differs between two runs with the same seed."""
    events: int
    mean_memory_utilisation: float
    """Allocated / total memory, averaged over simulated time."""
    a_trace: list[list[float]] = field(default_factory=list)
    """[t, A] each time the global AM share changed, starting at t = 0."""
    queue_a_trace: dict[str, list[list[float]]] = field(default_factory=dict)
    """Per leaf queue, [t, A] each time its effective AM share changed: a controller tuning
    queues one by one moves these and leaves the global value alone."""
    ams_at_once: int = 0
    """The most apps that held their AM container at the same time: what the AM limit let
    run together (`most_at_once` of each app's AM allocation to its finish)."""
    mean_wait_s: float | None = None
    """Submission to AM container (ACCEPTED), over the apps that got one: where a low AM share
    makes apps wait."""
    jcts_s: tuple[float, ...] = field(default=(), repr=False)
    """Each completed job's completion time, shortest first: the distribution the mean and
    p95 summarize."""
    waits_s: tuple[float, ...] = field(default=(), repr=False)
    """Each started app's wait in ACCEPTED, shortest first."""
    am_refusals: int = 0
    """Times an AM limit held an app back (`Scheduler.am_refusals`): 0, and every larger AM
    share would have run the same."""

    def to_json_dict(self) -> dict[str, object]:
        """The figures, without the per-job distributions (a SWIM day has thousands)."""
        out = asdict(self)
        del out["jcts_s"], out["waits_s"]
        return out


def _r(x: float) -> float:
    return round(x, 3)


def most_at_once(intervals: Collection[tuple[float, float]]) -> int:
    """The most [start, end) intervals that overlap at one instant: one ending when another
    starts does not overlap it (an AM released and the next one placed in the same instant)."""
    edges = sorted([(end, -1) for _, end in intervals] + [(start, 1) for start, _ in intervals])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


class Simulation:
    def __init__(
        self,
        scheduler: SchedulerKind,
        workload: Workload,
        config: bytes,
        *,
        nodes: int,
        node_memory_mb: int,
        node_vcores: int,
        seed: int,
        heartbeats: Heartbeats = HADOOP_3,
        hadoop: str = "3",
        site: Mapping[str, str] | None = None,
        labelled: Sequence[tuple[str, int]] = (),
    ) -> None:
        self.scheduler_kind = scheduler
        self.heartbeats = heartbeats
        fair = scheduler is SchedulerKind.FAIR
        # A CapacityScheduler scheduling asynchronously places containers on its own passes.
        cs_async = not fair and heartbeats.node_s > 0 and heartbeats.cs_async_s > 0
        passes_on_beats = heartbeats.node_s > 0 and not cs_async
        self.workload = workload
        self.seed = seed
        self.engine = Engine(line_s=heartbeats.am_s)
        self.cluster = Cluster(
            self.engine,
            nodes=nodes,
            memory_mb=node_memory_mb,
            vcores=node_vcores,
            disk_mbps=workload.node_disk_mbps,
            per_node=heartbeats.per_node if fair and heartbeats.node_s > 0 else 0,
            offswitch_per_node=(
                heartbeats.offswitch_per_node if not fair and passes_on_beats else 0
            ),
            maps_off_switch=heartbeats.maps_off_switch,
            labelled=labelled,
        )
        self.scheduler: CapacityScheduler | FairScheduler
        if scheduler is SchedulerKind.CAPACITY:
            am_label = (site or {}).get(AM_NODE_LABEL, "").strip()
            self.scheduler = CapacityScheduler(config, self.cluster, am_label)
        else:
            self.scheduler = FairScheduler(
                config, self.cluster, hadoop=hadoop, site=site, reserve=heartbeats.fs_reserve
            )
        # A launcher's children after every other app: they are numbered when submitted.
        order = sorted(
            range(len(workload.jobs)),
            key=lambda i: (bool(workload.jobs[i].launched_by), workload.jobs[i].submit_s),
        )
        min_alloc = self.cluster.min_alloc_mb
        self.apps = [
            App(n, f"application_{CLUSTER_TIMESTAMP}_{n + 1:04d}", workload.jobs[i], min_alloc)
            for n, i in enumerate(order)
        ]
        self.runtime = Runtime(
            self.engine, self.cluster, self.scheduler, self.apps, make_rng(seed, "tasks"),
            heartbeats, heartbeats.cs_async_s if cs_async else heartbeats.node_s,
        )
        self.a_trace: list[list[float]] = [[0.0, self.scheduler.global_am_share]]
        self.queue_a_trace: dict[str, list[list[float]]] = {
            path: [[0.0, a]] for path, a in self.scheduler.leaf_am_shares.items()
        }
        self.wall_seconds = 0.0
        self._periodic = 0
        if not self.apps:
            self.engine.halted = True

    @property
    def now(self) -> float:
        return self.engine.now

    @property
    def done(self) -> bool:
        return self.runtime.unfinished == 0

    def run_until(self, t: float) -> None:
        """Advance to ``t`` even when every job is done: a served RM keeps its clock going."""
        self._advance(t, stop_when_done=False)

    def run(self, max_sim_seconds: float | None = None) -> SimResult:
        """Run until every job is done (the clock stops at the last finish) or the limit."""
        limit = max_sim_seconds
        if limit is None:
            limit = PERIODIC_RUN_LIMIT_S if self._periodic else math.inf
        self._advance(limit, stop_when_done=True)
        return self.result()

    def _advance(self, t: float, *, stop_when_done: bool) -> None:
        """The cyclic garbage collector runs 70x less often meanwhile: events leave only
        acyclic garbage (tuples), which reference counting frees, and each collection walked
        every young object for nothing: 8 % of a FairScheduler run."""
        thresholds = gc.get_threshold()
        gc.set_threshold(GC_EVERY_ALLOCATIONS, *thresholds[1:])
        started = time.perf_counter()
        try:
            self.engine.run_until(t, stop_when_halted=stop_when_done)
        finally:
            self.wall_seconds += time.perf_counter() - started
            gc.set_threshold(*thresholds)

    def schedule_every(
        self, period_s: float, fn: Callable[[Simulation], None], first_at: float = 0.0
    ) -> None:
        if period_s <= 0:
            raise ValueError(f"period_s must be positive, got {period_s}")
        self._periodic += 1

        def tick(_: object) -> None:
            fn(self)
            self.engine.after(period_s, tick)

        self.engine.at(first_at, tick)

    def scheduler_config(self) -> bytes:
        return self.scheduler.data

    def reload_scheduler_config(self, data: bytes) -> None:
        self.scheduler.reload(data)
        a = self.scheduler.global_am_share
        if a != self.a_trace[-1][1]:
            self.a_trace.append([_r(self.now), a])
        for path, a in self.scheduler.leaf_am_shares.items():
            trace = self.queue_a_trace.setdefault(path, [])
            if not trace or a != trace[-1][1]:
                trace.append([_r(self.now), a])
        self.runtime.mark_dirty()

    def view(self) -> ClusterView:
        rt = self.runtime
        cluster = self.cluster
        queues = self.scheduler.queue_views()
        root = queues[0]  # pre-order: its reservations are every queue's
        total = Res(cluster.total_mb, cluster.total_vcores)
        allocated = Res(cluster.used_mb, cluster.used_vcores)
        containers, across = cluster.containers, None
        if len(cluster.labels) > 1:
            across = (total, allocated, containers)
            total, allocated, containers = default_partition(cluster)
        return ClusterView(
            now_s=self.now,
            scheduler=self.scheduler_kind.value,  # type: ignore[arg-type]
            total=total,
            allocated=allocated,
            across_partitions=across,
            reserved=root.reserved,
            containers_reserved=root.reserved_containers,
            active_nodes=len(cluster.nodes),
            apps_submitted=rt.apps_submitted,
            apps_completed=rt.apps_completed,
            apps_pending=rt.apps_pending,
            apps_running=rt.apps_running,
            apps_failed=rt.apps_failed,
            apps_killed=0,
            containers_allocated=containers,
            containers_pending=rt.containers_pending,
            queues=queues,
        )

    def node_views(self) -> list[NodeView]:
        """Every node (O(nodes): the RM's nodes document lists them all)."""
        labels = self.cluster.labels
        return [
            NodeView(
                name=n.name,
                total=Res(n.memory_mb, n.vcores),
                used=Res(n.memory_mb - n.free_mb, n.vcores - n.free_vcores),
                containers=n.containers,
                label=labels[n.part],
            )
            for n in self.cluster.nodes
        ]

    def app_views(
        self, states: Collection[str] | None = None, limit: int | None = None
    ) -> list[AppView]:
        """Apps the RM knows (submitted so far), in submission order."""
        out: list[AppView] = []
        now = self.now
        for app in self.apps:
            if app.state == "NEW" or (states is not None and app.state not in states):
                continue
            if limit is not None and len(out) >= limit:
                break
            leaf = app.leaf
            runs, alloc = app.spec.runs, self.cluster.min_alloc_mb
            out.append(
                AppView(
                    app_id=app.app_id,
                    name=app.spec.job_id,
                    queue=leaf.conf.path if leaf is not None else app.spec.queue,  # type: ignore[attr-defined]
                    user=app.spec.user,
                    state=app.state,
                    submitted_s=app.submitted_s,
                    started_s=app.started_s,
                    finished_s=app.finished_s,
                    allocated=Res(app.used_mb, app.used_vcores),
                    running_containers=app.running_containers,
                    progress=app.progress,
                    memory_seconds=round(app.mb_seconds + app.used_mb * (now - app.used_since_s)),
                    vcore_seconds=round(
                        app.vcore_seconds + app.used_vcores * (now - app.used_since_s)
                    ),
                    maps=app.maps_total,
                    reduces=app.reduces_total,
                    maps_done=app.maps_done,
                    reduces_done=app.reduces_done,
                    map_s=_mean_s(app.spec.maps),
                    reduce_s=_mean_s(app.spec.reduces),
                    **_sizes(app.spec),
                    am_container_mb=app.am_memory_mb,
                    am_vcores=app.am_vcores,
                    am_startup_s=app.spec.am_startup_s,
                    task_groups=tuple(
                        (runs * g.count, normalise_up(g.memory_mb, alloc), g.vcores, g.duration_s)
                        for g in (*app.spec.maps, *app.spec.reduces)
                    ),
                    asks=_asks(app),
                )
            )
        return out

    def _am_lives(self) -> list[tuple[float, float]]:
        """When each app that got its AM container held it: allocation to finish (now, if it
        still runs)."""
        now = self.now
        return [
            (a.started_s, now if a.finished_s is None else a.finished_s)
            for a in self.apps
            if a.started_s is not None
        ]

    def result(self) -> SimResult:
        self.cluster.account_until_now()
        now = self.now
        jcts = sorted(
            a.finished_s - a.submitted_s
            for a in self.apps
            if a.state == "FINISHED" and a.finished_s is not None
        )
        finished = self.done
        reason = None
        if not finished:
            waiting = self.runtime.unfinished
            if self.engine.peek() is None:
                reason = f"stalled at {now:.0f} s: {waiting} jobs can never get what they wait for"
            else:
                reason = f"max_sim_seconds reached at {now:.0f} s with {waiting} jobs unfinished"
        waits = [a.started_s - a.submitted_s for a in self.apps if a.started_s is not None]
        first_submit = min((a.submitted_s for a in self.apps), default=0.0)
        last_finish = max((a.finished_s or 0.0 for a in self.apps), default=0.0)
        total_mb = self.cluster.total_mb
        return SimResult(
            scheduler=self.scheduler_kind.value,
            workload=self.workload.name,
            seed=self.seed,
            finished=finished,
            stopped_reason=reason,
            jobs_total=len(self.apps),
            jobs_completed=self.runtime.apps_completed,
            jobs_failed=self.runtime.apps_failed,
            makespan_s=_r(last_finish - first_submit) if finished else None,
            mean_jct_s=_r(sum(jcts) / len(jcts)) if jcts else None,
            p95_jct_s=_r(jcts[math.ceil(0.95 * len(jcts)) - 1]) if jcts else None,
            sim_seconds=_r(now),
            wall_seconds=round(self.wall_seconds, 6),
            events=self.engine.events,
            mean_memory_utilisation=(
                round(self.cluster.memory_seconds / (total_mb * now), 6) if now > 0 else 0.0
            ),
            a_trace=[list(p) for p in self.a_trace],
            queue_a_trace={q: [list(p) for p in t] for q, t in self.queue_a_trace.items()},
            ams_at_once=most_at_once(self._am_lives()),
            mean_wait_s=_r(sum(waits) / len(waits)) if waits else None,
            jcts_s=tuple(_r(j) for j in jcts),
            waits_s=tuple(sorted(_r(w) for w in waits)),
            am_refusals=self.scheduler.am_refusals,
        )


def build_simulation(
    scheduler: SchedulerKind | str,
    workload: Workload,
    scheduler_config: bytes | None = None,
    *,
    nodes: int | None = None,
    node_memory_mb: int | None = None,
    node_vcores: int | None = None,
    seed: int = 0,
    heartbeats: Heartbeats = HADOOP_3,
    hadoop: str = "3",
    site: Mapping[str, str] | None = None,
    labelled: Sequence[tuple[str, int]] = (),
) -> Simulation:
    """A simulation at t = 0 with every job's submission scheduled; raises SchedulerConfigError
    for an unusable scheduler file and ValueError for an impossible cluster. ``site``: the RM's
    yarn-site.xml properties the simulator reads (a FairScheduler's placement defaults and the
    AM's node label, `amtuner.sim.placement`); Hadoop's defaults where absent. ``labelled``:
    exclusive node labels and how many nodes carry each (the first ones)."""
    kind = SchedulerKind(scheduler)
    if scheduler_config is None:
        scheduler_config = default_scheduler_config(
            kind, workload.queues, weights=workload.queue_weights
        )
    return Simulation(
        kind,
        workload,
        scheduler_config,
        nodes=nodes if nodes is not None else workload.nodes,
        node_memory_mb=node_memory_mb if node_memory_mb is not None else workload.node_memory_mb,
        node_vcores=node_vcores if node_vcores is not None else workload.node_vcores,
        seed=seed,
        heartbeats=heartbeats,
        hadoop=hadoop,
        site=site,
        labelled=labelled,
    )
