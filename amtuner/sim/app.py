"""One application's record in the simulated RM: what the job model, the schedulers and the
views read and write per container (compiled with them: `amtuner.sim.native`), and the links
between workflow launchers and the children their AMs submit (`JobSpec.launched_by`)."""

from __future__ import annotations

from dataclasses import replace

from amtuner.sim.cluster import Node, normalise_up
from amtuner.sim.mrallocator import Resource
from amtuner.sim.spec import JobSpec, TaskGroup
from amtuner.sim.units import Unit
from amtuner.sim.view import AppState


class App:
    __slots__ = (
        "am_memory_mb",
        "am_node",
        "am_vcores",
        "app_id",
        "beat_due",
        "beat_phase",
        "children",
        "children_left",
        "finished_s",
        "held_reduces",
        "hkey",
        "hpos",
        "in_heap",
        "index",
        "launcher",
        "leaf",
        "map_ask",
        "maps_asked_s",
        "maps_done",
        "maps_granted",
        "maps_total",
        "mb_seconds",
        "pending",
        "pending_containers",
        "pending_mb",
        "reduce_ask",
        "reduce_started",
        "reduces_asked",
        "reduces_assigned",
        "reduces_done",
        "reduces_kept",
        "reduces_total",
        "reserved",
        "running_containers",
        "runs_done",
        "spec",
        "started_s",
        "state",
        "submitted_s",
        "used_mb",
        "used_since_s",
        "used_vcores",
        "user",
        "vcore_seconds",
    )

    def __init__(self, index: int, app_id: str, spec: JobSpec, min_alloc_mb: int) -> None:
        self.index = index
        """Submission order; FIFO ordering and tie-breaks use it. A launcher's child is given
        its place when it is submitted (`Runtime._submit`), as the RM numbers apps."""
        self.app_id = app_id
        self.spec = spec
        self.user = spec.user
        """The spec's, read per container by the schedulers (a native field, not a lookup)."""
        self.leaf: object = None
        """The scheduler's leaf-queue record this app sits in."""
        self.state: AppState = "NEW"
        self.am_memory_mb = normalise_up(spec.am_memory_mb, min_alloc_mb)
        self.am_vcores = max(1, spec.am_vcores)
        self.am_node: Node | None = None
        self.submitted_s = spec.submit_s
        """When the RM got it: ``spec.submit_s``, or when its launcher submitted it."""
        self.started_s: float | None = None
        self.finished_s: float | None = None
        self.pending: list[Unit] = []
        self.pending_containers = self.pending_mb = 0
        self.maps_total, self.reduces_total, self.reduces_kept, self.map_ask, self.reduce_ask = (
            _work(spec, min_alloc_mb)
        )
        self.maps_done = self.maps_granted = 0
        self.maps_asked_s = -1.0
        """When its AM asked for its maps (-1: not yet)."""
        self.reduces_done = 0
        self.reduces_asked = 0
        self.reduces_assigned = 0
        """Reduces holding a container: held for their maps, or running."""
        self.reduce_started = False
        """Slow start is past (``RMContainerAllocator.reduceStarted``)."""
        self.beat_due = False
        """Its AM's next reduce-scheduling heartbeat is queued."""
        self.beat_phase = 0.0
        """Its AM heartbeats at this time plus whole intervals (`Runtime.to_beat`)."""
        self.held_reduces: list[tuple[Node, Unit, float]] = []
        """(node, request, work) of each reduce given a container before its maps are done."""
        self.used_mb = self.used_vcores = 0
        self.mb_seconds = self.vcore_seconds = self.used_since_s = 0.0
        self.running_containers = 0
        self.hkey = 0.0
        """Its key in its queue's ordering heap, if the scheduler keeps one by a policy."""
        self.hpos = -1
        """Its place in that heap (-1: not in it)."""
        self.in_heap = False
        self.reserved = 0
        """Nodes reserved for its AM (`amtuner.sim.fsreserve`)."""
        self.launcher: App | None = None
        """The launcher whose AM submits it (`JobSpec.launched_by`)."""
        self.children: list[App] = []
        """The apps its AM submits and waits for, as a launcher."""
        self.children_left = 0
        """Of its children, those not ended yet."""
        self.runs_done = 0
        """Runs of its tasks its AM has finished (`JobSpec.runs`)."""

    def hold(self, now: float, mb: int, vcores: int) -> None:
        """Changes what it holds; what it held adds up as the RM's memory/vcoreSeconds do."""
        self.mb_seconds += self.used_mb * (now - self.used_since_s)
        self.vcore_seconds += self.used_vcores * (now - self.used_since_s)
        self.used_since_s = now
        self.used_mb += mb
        self.used_vcores += vcores

    def run_again(self, min_alloc_mb: int) -> None:
        """Its tasks afresh, none asked for yet: its AM's next run (`JobSpec.runs`)."""
        self.runs_done += 1
        self.maps_done = self.maps_granted = self.reduces_done = 0
        self.reduces_asked = self.reduces_assigned = 0
        self.reduce_started = False
        self.maps_asked_s = -1.0
        self.reduces_kept = _units(self.spec.reduces, min_alloc_mb)

    def take_work_of(self, spec: JobSpec, min_alloc_mb: int) -> None:
        """Its tasks become ``spec``'s; its name, queue, user, submission and AM stay its own:
        a model's guess at an app whose AM has not run, of which the RM knows only those."""
        own = self.spec
        self.spec = replace(
            spec, job_id=own.job_id, submit_s=own.submit_s, queue=own.queue, user=own.user,
            am_memory_mb=own.am_memory_mb, am_vcores=own.am_vcores, launched_by=own.launched_by,
        )  # fmt: skip
        self.maps_total, self.reduces_total, self.reduces_kept, self.map_ask, self.reduce_ask = (
            _work(spec, min_alloc_mb)
        )

    @property
    def progress(self) -> float:
        total = self.maps_total + self.reduces_total
        if self.state == "FINISHED":
            return 100.0
        if total == 0:
            return 0.0
        return 100.0 * (self.maps_done + self.reduces_done) / total


def _work(spec: JobSpec, min_alloc_mb: int) -> tuple[int, int, list[Unit], Resource, Resource]:
    """What an app's tasks make of it: maps and reduces in all, the reduces its AM keeps back,
    not yet asked for (``pendingReduces``; no record empty), and the ask of a map and of a
    reduce."""
    return (
        sum(g.count for g in spec.maps), sum(g.count for g in spec.reduces),
        _units(spec.reduces, min_alloc_mb), _ask_of(spec.maps), _ask_of(spec.reduces),
    )  # fmt: skip


def _units(groups: tuple[TaskGroup, ...], min_alloc_mb: int) -> list[Unit]:
    return [Unit.of(g, min_alloc_mb) for g in groups if g.count > 0]


def _ask_of(groups: tuple[TaskGroup, ...]) -> Resource:
    """The resource a MapReduce AM asks per task of a kind (``mapreduce.{map,reduce}.memory.mb``
    and ``.cpu.vcores``, before the RM normalises them): its first group's."""
    return (groups[0].memory_mb, groups[0].vcores) if groups else (0, 0)


def link_launchers(apps: list[App]) -> list[App]:
    """Tie each launcher's child to it (`JobSpec.launched_by`); the apps submitted at their own
    ``submit_s``, in order. Raises ValueError for a launcher no job is, or a chain of
    launchers that never reaches an app submitted by itself."""
    by_id = {app.spec.job_id: app for app in apps}
    roots: list[App] = []
    for app in apps:
        name = app.spec.launched_by
        if not name:
            roots.append(app)
            continue
        launcher = by_id.get(name)
        if launcher is None:
            raise ValueError(f"{app.spec.job_id} is launched by {name}, which is no job")
        app.launcher = launcher
        launcher.children.append(app)
        launcher.children_left += 1
    for app in apps:
        seen = {app.spec.job_id}
        up = app.launcher
        while up is not None:
            if up.spec.job_id in seen:
                raise ValueError(f"{app.spec.job_id}'s launchers launch each other")
            seen.add(up.spec.job_id)
            up = up.launcher
    return roots
