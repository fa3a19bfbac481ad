"""The daemon's control cycle, run inside a simulation in virtual time.

This is how the benchmarks judge a policy: the real `Cycle` (monitor, controller, guard, executor)
runs every control period of simulated time, reading the simulated RM through `SimAdapter` (the
same bytes the HTTP face serves) and writing a real scheduler file in a scratch directory. The
RM's side of a reload is simulated faithfully: a CapacityScheduler reloads when refreshed, a
FairScheduler finds the changed allocation file on its own 10 s poll once it is 5 s old.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import requests

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
from amtuner.executor import Edit, RefreshError
from amtuner.model import SchedulerKind
from amtuner.monitor import RMClient
from amtuner.sim.adapter import SimAdapter, watch_allocation_file
from amtuner.sim.simulation import SchedulerConfigError, Simulation

SIM_URL = "http://sim"


UNGUARDED = GuardSettings(max_change_per_cycle=1.0, hold_off_seconds=0.0)
"""The paper's loop has no guard rails; benchmarks of a policy run it as published."""


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

    def describe(self) -> str:
        return "none (the FairScheduler reloads the allocation file itself)"

    def refresh(self, edit: Edit) -> None:
        self.written_at = self.sim.now


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
        session = requests.Session()
        session.trust_env = False  # no proxy or netrc lookups: nothing leaves the process
        session.mount(SIM_URL, SimAdapter(sim))
        monitor = RMClient([SIM_URL], session, clock=lambda: sim.now, web_ui_fallback=False)
        if kind is SchedulerKind.FAIR:
            touched = FairFileTouched(sim)
            watch_allocation_file(sim, path, lambda _mtime: touched.written_at)
            refresher: RefreshQueues | FairFileTouched = touched
        else:
            refresher = RefreshQueues(sim)
        self.cycle = Cycle(
            config=self.config, monitor=monitor, refresher=refresher,
            policy=get_policy(controller.policy), clock=lambda: sim.now,
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
