"""One control cycle: observe the RM, decide per target, apply (or, in dry-run, show) the change.

`amtuner once`, the daemon and the in-process simulator all run this same cycle; only the
collaborators they hand in differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from amtuner import guard
from amtuner.config import Config, refresh_mismatch
from amtuner.controller import Policy, get_policy
from amtuner.executor import (
    ExecutorError,
    NoRefresh,
    Refresher,
    RefreshError,
    RestRefresher,
    SchedulerFile,
    apply_edit,
)
from amtuner.executor.refresh import SCHEDULER_CONF_PATH, refresh_back
from amtuner.model import GLOBAL_TARGET, ControllerState, Decision, Observation, SchedulerKind
from amtuner.monitor import ObservationError


@dataclass(frozen=True, slots=True)
class CycleReport:
    """Everything an operator (or the metrics) may want to know about one cycle."""

    started: float
    """Clock time the cycle started (seconds since the epoch, or simulated seconds)."""
    duration_s: float
    observation: Observation | None
    decisions: tuple[Decision, ...] = ()
    """One per target, including holds."""
    applied: bool = False
    """A change was written and the RM told to reload it."""
    dry_run: bool = False
    paused: bool = False
    diff: str = ""
    """Unified diff of the scheduler file (written, or that would be written in dry-run)."""
    refresh: str = ""
    """The refresh that ran (or would run), e.g. ``yarn rmadmin -refreshQueues``."""
    error: str | None = None
    """Short reason label when the cycle failed (``rm-unreachable``, ``refresh-failed`` …)."""
    message: str = ""
    """Human sentence for the error or the outcome."""

    @property
    def ok(self) -> bool:
        return self.error is None


States = dict[str, ControllerState]
"""Controller state per target key (``GLOBAL_TARGET`` for the scheduler-wide value)."""


class Monitor(Protocol):
    def observe(self, targets: Sequence[str] = ()) -> Observation: ...


def _method_of(refresher: Refresher) -> str:
    """The ``refresh.method`` a refresher stands for (the simulator hands in its own, which
    tells its simulated RM to reload as a command would)."""
    if isinstance(refresher, NoRefresh):
        return "none"
    return "rest" if isinstance(refresher, RestRefresher) else "command"


@dataclass
class Cycle:
    """Observe → decide per target → guard → apply (or show). Never raises for an RM or file
    problem: those become a CycleReport with `error` set and the states handed back unchanged,
    so one bad cycle cannot stop the daemon or move the controller on false data."""

    config: Config
    monitor: Monitor
    refresher: Refresher
    policy: Policy | None = None
    clock: Callable[[], float] = time.time
    read_file: Callable[[Path, SchedulerKind], SchedulerFile] = SchedulerFile.read
    pause_reason: str | None = None
    """Why the daemon paused (e.g. a signal): as with the pause file, decide but write nothing."""

    def run(self, states: Mapping[str, ControllerState]) -> tuple[CycleReport, States]:
        started = self.clock()
        report, new_states = self._run(dict(states))
        return replace(report, started=started, duration_s=self.clock() - started), new_states

    def _run(self, states: States) -> tuple[CycleReport, States]:
        cfg = self.config
        targets = cfg.scheduler.targets or (GLOBAL_TARGET,)
        paused = self.pause_reason is not None or guard.paused(cfg.guard)
        blank = CycleReport(
            started=0.0, duration_s=0.0, observation=None, dry_run=cfg.dry_run, paused=paused
        )

        def failed(error: str, message: str, **kw: object) -> tuple[CycleReport, States]:
            return replace(blank, error=error, message=message, **kw), states

        try:
            obs = self.monitor.observe([t for t in targets if t != GLOBAL_TARGET])
        except ObservationError as exc:
            return failed(exc.reason, str(exc))
        blank = replace(blank, observation=obs)

        kind = obs.scheduler
        if cfg.scheduler.kind not in ("auto", kind):
            return failed(
                "scheduler-mismatch",
                f"config says scheduler.kind {cfg.scheduler.kind} but the RM runs the {kind} "
                "scheduler; nothing changed",
            )
        unusable = refresh_mismatch(kind, _method_of(self.refresher))
        if unusable is not None:
            return failed("refresh-unusable", f"refresh.method: {unusable}; nothing changed")
        # Without a file, a CapacityScheduler's mutable store is the configuration (refresh rest).
        store: RestRefresher | None = None
        if cfg.scheduler.config_file is None:
            if not (isinstance(self.refresher, RestRefresher) and kind is SchedulerKind.CAPACITY):
                return failed(
                    "scheduler-file",
                    "scheduler.config_file is not set, and only a CapacityScheduler with "
                    "refresh.method rest can be tuned without it; nothing changed",
                )
            store = self.refresher
        try:
            if store is not None:
                sched_file = SchedulerFile(Path(SCHEDULER_CONF_PATH), kind, store.fetch())
            else:
                sched_file = self.read_file(cfg.scheduler.config_file, kind)  # type: ignore[arg-type]
        except ExecutorError as exc:
            return failed(exc.label, str(exc))
        if not sched_file.schedules_vcores:
            obs = replace(obs, vcores_scheduled=False)
            blank = replace(blank, observation=obs)

        policy = self.policy or get_policy(cfg.controller.policy)
        decisions: list[Decision] = []
        new_states = dict(states)
        values: dict[str, float] = {}
        hypothetical = cfg.dry_run or paused
        try:  # an undeclared or parent queue, a value that is not a number
            in_file = {target: sched_file.effective_value(target) for target in targets}
        except ExecutorError as exc:
            return failed(exc.label, str(exc))
        for target in targets:
            on_disk = in_file[target]
            state = _baseline(states.get(target), on_disk, cfg, trust_state=hypothetical)
            decision, new_state = policy(obs, state, cfg.controller, target)
            decision, new_state = guard.apply(
                decision, state, new_state, obs, cfg.guard, am_mb=2 * cfg.controller.unit_mb
            )
            decisions.append(decision)
            new_states[target] = new_state
            if decision.changed and decision.new_a != on_disk:
                values[target] = decision.new_a
        blank = replace(blank, decisions=tuple(decisions))

        if not values:
            return replace(blank, message="no change"), new_states
        try:
            edit = sched_file.edit(values)
        except ExecutorError as exc:
            return failed(exc.label, str(exc))
        if not edit.changed:
            return replace(blank, message="no change: the file already holds it"), new_states
        refresh = self.refresher.describe()
        blank = replace(blank, diff=edit.diff, refresh=refresh)
        if hypothetical:
            why = "dry-run" if cfg.dry_run else (
                f"paused ({self.pause_reason or f'{cfg.guard.pause_file} exists'})"
            )
            action = "" if store else f"write {edit.path} and "
            message = f"{why}: would {action}refresh with {refresh}"
            return replace(blank, message=message), new_states
        try:
            if store is not None:
                try:
                    store.refresh(edit)
                except RefreshError as e:
                    # A PUT may be applied after its connection dropped: put the old values back.
                    raise refresh_back(edit, store, e) from e
            else:
                apply_edit(
                    edit, self.refresher, backup_dir=cfg.backup_dir, keep_backups=cfg.keep_backups
                )
        except ExecutorError as exc:
            return failed(exc.label, str(exc), diff=edit.diff, refresh=refresh)
        for target, (_, written) in edit.targets.items():
            changed = replace(new_states[target], a=values[target] if written is None else written)
            new_states[target] = guard.mark_changed(changed, obs.time)
        message = ("" if store else f"wrote {edit.path} and ") + f"refreshed with {refresh}"
        return replace(blank, applied=True, message=message), new_states


SAME_VALUE = 5e-5
"""Values closer than this are the same A: files hold at most 4 decimals."""


def _baseline(
    state: ControllerState | None, on_disk: float, cfg: Config, *, trust_state: bool
) -> ControllerState:
    """The state the controller starts this period from.

    The file is the truth: if someone (an admin, a restore from backup) set a different value,
    the search restarts from that value with the widest step, keeping the last P and R. In
    dry-run or while paused nothing is written, so the remembered value is the one the loop would
    have set, and the file's value is only the starting point."""
    lo, hi = cfg.controller.a_min, cfg.controller.a_max
    # FairScheduler's maxAMShare -1 means "no limit": the nearest tunable value is the top.
    start = hi if on_disk < 0 else min(max(on_disk, lo), hi)
    if state is None:
        return ControllerState(a=start)
    if trust_state or abs(state.a - on_disk) < SAME_VALUE:
        return state
    return replace(state, a=start, n=1)


