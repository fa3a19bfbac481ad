"""The daemon's control cycle, run inside a simulation in virtual time.

This is how the benchmarks judge a policy: the real `Cycle` (monitor, controller, guard, executor)
runs every control period of simulated time, reading the simulated RM through `SimTransport` (the
same bytes the HTTP face serves) and writing a real scheduler file in a scratch directory. The
RM's side of a reload is simulated faithfully: a CapacityScheduler reloads when refreshed, a
FairScheduler finds the changed allocation file on its own 10 s poll once it is 5 s old, the
poll at a phase of its own (`allocation_poll_phase`).

What belongs to real time is left out, not the code: no HTTP client machinery around the
in-process answer, the simulation's state rendered once per observation (`OneInstantMonitor`),
no fsync of the scratch file (the atomic replace stays), and the file parsed again only when it
changed on disk (`UnchangedFileCache`).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from http import HTTPStatus
from pathlib import Path
from urllib.parse import urlencode

from amtuner.config import (
    Config,
    ControllerSettings,
    GuardSettings,
    MetricsSettings,
    RefreshSettings,
    RMSettings,
    SchedulerSettings,
)
from amtuner.controller import get_policy
from amtuner.cycle import Cycle, CycleReport, States
from amtuner.executor import Edit, RefreshError, SchedulerFile
from amtuner.model import Observation, SchedulerKind
from amtuner.monitor import RMClient
from amtuner.monitor.transport import Answer, Budget
from amtuner.monitor.waits import UnfinishedApp
from amtuner.sim import rmapi
from amtuner.sim.adapter import watch_allocation_file
from amtuner.sim.rmapi import FaceOptions, SimLike
from amtuner.sim.server import ALLOC_RELOAD_INTERVAL_S, ALLOC_RELOAD_WAIT_S
from amtuner.sim.simulation import SchedulerConfigError, Simulation
from amtuner.sim.view import AppView, ClusterView, NodeView

SIM_URL = "http://sim"


_GOLDEN = (5**0.5 - 1) / 2


def allocation_poll_phase(seed: int) -> float:
    """When a FairScheduler's first allocation-file poll comes after a controlled run starts:
    in (0, 10) s, a different point of the cycle per seed. Hadoop's ``AllocationFileLoaderService``
    checks the file when the RM starts and then sleeps 10 s between checks, so where its cycle
    falls is set by when the RM started, which nothing ties to the daemon's period. A fixed
    phase would give one reload delay to every write (a write at a period boundary always loaded
    10 s later); a real one is anywhere in 5-15 s, and a value overwritten before its poll is
    never loaded (seen on Hadoop 3.5's own RM: docs/fidelity.md, "The poll's phase"). The seeds
    step through the cycle by the golden ratio, so the first N of them, which a benchmark's mean
    is taken over, cover it evenly (random draws left 2-6.5 s out of the first ten), and none
    falls exactly 5 or 10 s after a period boundary, where a write would be judged exactly 5 s
    old."""
    return ALLOC_RELOAD_INTERVAL_S * (1.0 - ((seed + 1) * _GOLDEN) % 1.0)


UNGUARDED = GuardSettings(max_change_per_cycle=1.0, hold_off_seconds=0.0)
"""The paper's loop has no guard rails; benchmarks of a policy run it as published. What the
guard knows of YARN stays: no raise while only limits A is not part of hold the waiting apps,
and a FairScheduler's floor of one AM."""


class RefreshQueues:
    """`yarn rmadmin -refreshQueues` against the simulation: reload now, or fail as the RM would."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim

    def describe(self) -> str:
        return "refreshQueues (in-process)"

    def refresh(self, edit: Edit) -> None:
        try:
            self.sim.reload_scheduler_config(edit.path.read_bytes())
        except (OSError, SchedulerConfigError) as exc:
            raise RefreshError(f"refreshQueues failed: {exc}") from exc


class FairFileTouched:
    """No refresh, as for a real FairScheduler; remembers when (in simulated time) the file was
    written so the simulated allocation-file poll can apply its 5 s settle rule."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.written_at = 0.0
        self.unloaded = False
        """Written since the last poll that could load it."""

    def describe(self) -> str:
        return "none (the FairScheduler reloads the allocation file itself)"

    def refresh(self, edit: Edit) -> None:
        self.written_at = self.sim.now
        self.unloaded = True

    def poll_due(self) -> bool:
        """Whether the poll at this instant can change anything, so must read the file: only
        the first one more than the settle time after the last write (`AllocationFileWatcher`
        ignores a younger file, and an unwritten file is the one it loaded). Every other poll
        would only stat and read the file, 8,640 times a simulated day. Called once a poll."""
        if not self.unloaded or self.sim.now <= self.written_at + ALLOC_RELOAD_WAIT_S:
            return False
        self.unloaded = False
        return True


class _Instant:
    """``sim`` as it stands at one instant: its `view()` is built once for every request."""

    def __init__(self, sim: SimLike) -> None:
        self.sim = sim
        self.scheduler_kind = sim.scheduler_kind
        self._view: ClusterView | None = None

    def view(self) -> ClusterView:
        if self._view is None:
            self._view = self.sim.view()
        return self._view

    def node_views(self) -> list[NodeView]:
        return self.sim.node_views()

    def app_views(
        self, states: Collection[str] | None = None, limit: int | None = None
    ) -> list[AppView]:
        return self.sim.app_views(states, limit)

    def scheduler_config(self) -> bytes:
        return self.sim.scheduler_config()

    def reload_scheduler_config(self, data: bytes) -> None:
        self._view = None
        self.sim.reload_scheduler_config(data)


class SimTransport:
    """The monitor's GETs answered by `rmapi.handle` on ``sim``, in this thread (the caller
    advances the simulation, as `ControlledRun` does from inside it). In virtual time nothing
    waits, so the budget's time does not run out; its size cap is checked by the monitor."""

    def __init__(self, sim: SimLike, options: FaceOptions | None = None) -> None:
        self.sim = sim
        self.options = options or FaceOptions()
        self._instant: _Instant | None = None

    @contextmanager
    def instant(self) -> Iterator[None]:
        """Requests made within share one `view()` of the simulation: one rendering of the
        RM's state per observation instead of one per request. Only for a caller that does
        not advance the simulation meanwhile (virtual time stands still during one
        observation), so the answers are the same bytes."""
        self._instant = _Instant(self.sim)
        try:
            yield
        finally:
            self._instant = None

    def get(
        self, url: str, accept: str, params: Mapping[str, str] | None, budget: Budget
    ) -> Answer:
        if params:  # as requests would put them on the URL it reports
            url += ("&" if "?" in url else "?") + urlencode(params)
        answer = rmapi.handle(
            self._instant or self.sim,
            "GET",
            rmapi.path_and_query(url),
            b"",
            {"Accept": accept},
            options=self.options,
        )
        return Answer(
            url, answer.status, HTTPStatus(answer.status).phrase, answer.headers, answer.body
        )

    def cancel(self) -> None:
        """Nothing to end: an answer is made in the caller's thread, in no time."""


class UnchangedFileCache:
    """`SchedulerFile.read` that parses again only when the file's stat identity (inode, size,
    mtime, ctime) changed since it was last read.

    Only for the simulation, where nothing but this process writes the scratch file: an editor
    that rewrites a real file in place with as many bytes within one timestamp tick would go
    unseen, so the daemon reads its file every cycle. The stat is taken before the read, so a
    change between the two is seen by the next cycle."""

    def __init__(self) -> None:
        self._key: tuple[Path, SchedulerKind, int, int, int, int] | None = None
        self._file: SchedulerFile | None = None

    def __call__(self, path: Path, kind: SchedulerKind) -> SchedulerFile:
        st = os.stat(path)
        key = (path, kind, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if self._file is None or key != self._key:
            self._file = SchedulerFile.read(path, kind)
            self._key = key
        return self._file


class OneInstantMonitor:
    """The monitor, with the simulation's state rendered once per observation (its requests
    are answered in one instant of virtual time; see `SimTransport.instant`)."""

    def __init__(self, client: RMClient, transport: SimTransport) -> None:
        self.client = client
        self.transport = transport

    def observe(self, targets: Sequence[str] = ()) -> Observation:
        with self.transport.instant():
            return self.client.observe(targets)

    def unfinished_apps(self) -> tuple[UnfinishedApp, ...]:
        with self.transport.instant():
            return self.client.unfinished_apps()


class ControlledRun:
    """Attach a control loop to a simulation; `run()` then advances both together."""

    def __init__(
        self,
        sim: Simulation,
        workdir: Path,
        *,
        controller: ControllerSettings | None = None,
        guard: GuardSettings = UNGUARDED,
        targets: tuple[str, ...] = (),
    ) -> None:
        self.sim = sim
        self.states: States = {}
        self.cycles = 0
        self.applied_at: list[float] = []
        """Simulated times of the cycles that wrote a change."""
        self.errors: Counter[str] = Counter()
        self.last_report: CycleReport | None = None
        controller = controller or ControllerSettings()
        kind = sim.scheduler_kind
        path = workdir / f"{kind}-scheduler.xml"
        path.write_bytes(sim.scheduler_config())
        self.config = Config(
            rm=RMSettings(urls=(SIM_URL,), web_ui_fallback=False),
            scheduler=SchedulerSettings(kind=kind.value, config_file=path, targets=targets),
            refresh=RefreshSettings(method="none"),
            controller=controller,
            guard=guard,
            metrics=MetricsSettings(enabled=False),
            backup_dir=workdir / "backups",
            keep_backups=0,
            state_file=workdir / "state.json",
        )
        transport = SimTransport(sim)
        client = RMClient(
            [SIM_URL], transport=transport, clock=lambda: sim.now, web_ui_fallback=False
        )
        monitor = OneInstantMonitor(client, transport)
        if kind is SchedulerKind.FAIR:
            touched = FairFileTouched(sim)
            watch_allocation_file(
                sim, path, lambda _mtime: touched.written_at, due=touched.poll_due,
                first_poll_s=allocation_poll_phase(sim.seed),
            )  # fmt: skip
            refresher: RefreshQueues | FairFileTouched = touched
        else:
            refresher = RefreshQueues(sim)
        self.cycle = Cycle(
            config=self.config,
            monitor=monitor,
            refresher=refresher,
            policy=get_policy(controller.policy),
            clock=lambda: sim.now,
            read_file=UnchangedFileCache(),
            durable=False,
            name_idle_ams=False,
        )
        sim.schedule_every(controller.period_seconds, self._tick)

    def _tick(self, _: Simulation) -> None:
        report, self.states = self.cycle.run(self.states)
        self.cycles += 1
        if report.applied:
            self.applied_at.append(self.sim.now)
        if report.error:
            self.errors[report.error] += 1
        self.last_report = report
