"""One control cycle: observe the RM, decide per target, apply (or, in dry-run, show) the change.

`amtuner once`, the daemon and the in-process simulator all run this same cycle; only the
collaborators they hand in differ. In ``mode`` recommend or approve the change decided is
handed back as a `Proposed` instead of written; `amtuner approve` runs the cycle again with
the proposal as an `Approval`, which takes the decision's place and is written by the same
path (write-ahead record, atomic write, refresh, read-back).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from amtuner import cures, guard, readback
from amtuner.config import Config, refresh_mismatch
from amtuner.controller import Policy, get_policy
from amtuner.executor import (
    Disagree,
    Edit,
    ExecutorError,
    NoRefresh,
    Refresher,
    RefreshError,
    RestRefresher,
    SchedulerFile,
    StoreChanged,
    apply_edit,
    restore,
)
from amtuner.executor.refresh import MAY_DISAGREE, refresh_back
from amtuner.executor.source import open_config
from amtuner.model import (
    GLOBAL_TARGET,
    SAME_A,
    ControllerState,
    Decision,
    Observation,
    SchedulerKind,
    same_a,
)
from amtuner.monitor import ObservationError, idle
from amtuner.monitor.waits import UnfinishedApp

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PendingChange:
    """A change amtuner began to write and has not yet seen the RM load: the write-ahead record.

    Saved in the state file before the scheduler configuration is written, and dropped with the
    state saved after the change, in one atomic replace. A process killed between the write and
    the refresh leaves it behind, so the next cycle (of any amtuner process on the same state
    file) knows a refresh may be owed, and that a file holding ``new`` holds amtuner's own
    value, not an admin's edit."""

    id: str
    where: str
    """The file written (or the scheduler-conf path of a mutable store)."""
    targets: Mapping[str, tuple[float | None, float | None]]
    """target -> (value before, value written), as `Edit.targets`."""
    decided_at: float
    """Observation time of the decision: the change's hold-off starts there."""
    audit: tuple[Mapping[str, object], ...] = ()
    """The change's audit lines, written when it is found to have been made."""


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
    change_id: str = ""
    """The id of the change this cycle began (`PendingChange.id`), carried by its audit lines."""
    settled: PendingChange | None = None
    """An earlier cycle's change, interrupted after its write, that this cycle found in place
    and made the RM load: its audit lines are owed."""
    owed: PendingChange | None = None
    """A change whose refresh is still owed: the state file must keep it for the next cycle."""
    mode: str = "auto"
    """The config's ``mode``."""
    proposed: Proposed | None = None
    """In ``mode`` recommend or approve: the change decided and not written."""
    approval: Approval | None = None
    """The approved proposal this cycle wrote instead of deciding (`amtuner approve`)."""

    @property
    def ok(self) -> bool:
        return self.error is None


def fingerprint(data: bytes) -> str:
    """What a proposal names the configuration it was made from by: any change to the file
    (or to the scheduler-conf store's answer) since, an admin's or a config manager's, voids
    it."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class Proposed:
    """A change a cycle in ``mode`` recommend or approve decided and did not write."""

    edit: Edit
    states: Mapping[str, ControllerState]
    """The controller's states of the edit's targets once it is written: the live cycle's."""

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.edit.old_data)


@dataclass(frozen=True, slots=True)
class Approval:
    """A proposal an operator approved: `Cycle.run` writes it in place of a decision, only to
    the configuration it was made from."""

    proposal: str
    """The proposal's id."""
    by: str
    """Who approved it, for the audit line."""
    where: str
    fingerprint: str
    values: Mapping[str, float]
    """target -> the value to write."""
    decisions: tuple[Decision, ...]
    states: Mapping[str, ControllerState]
    """As `Proposed.states`."""
    audit: tuple[Mapping[str, object], ...]
    """The change's audit lines as the cycle that proposed it made them: its inputs."""


States = dict[str, ControllerState]
"""Controller state per target key (``GLOBAL_TARGET`` for the scheduler-wide value)."""

Journal = Callable[[PendingChange, CycleReport, States], None]
"""Saves the write-ahead record before the write, with the audit lines the report (and the
states the cycle decided from) give it; raises `WriteError` when it cannot, and nothing is
written."""


class Monitor(Protocol):
    def observe(self, targets: Sequence[str] = ()) -> Observation: ...

    def unfinished_apps(self) -> tuple[UnfinishedApp, ...]: ...


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
    paused_by: Callable[[], str | None] = lambda: None
    """Why the caller has paused (the daemon: a signal), or None: as with the pause file, decide
    but write nothing. Asked at the start and again just before the write, so a pause that
    arrives while the cycle observes or decides still stops the write."""
    durable: bool = True
    """Whether a write is fsynced (`amtuner.executor.files.replace_file`): off only for a
    simulation's file in its scratch directory, where an fsync is real-time cost and nothing
    needs to survive a power cut."""
    journal: Journal | None = None
    """Where the write-ahead record goes (`amtuner once` and `run`: the state file); None in a
    simulation, which nothing restarts."""
    read_back: bool = False
    """Observe the RM again after a refresh and undo a change it did not take
    (`amtuner.readback`); off in a simulation, whose monitor serves one instant per cycle."""
    name_idle_ams: bool = True
    """List the apps to name idle AMs where an AM limit holds apps (`amtuner.monitor.idle`);
    off in a simulation's controlled run, where it decides nothing and the listing of every
    app each period would be most of the run's cost."""

    def run(
        self,
        states: Mapping[str, ControllerState],
        pending: PendingChange | None = None,
        approval: Approval | None = None,
    ) -> tuple[CycleReport, States]:
        """One cycle from ``states``; ``pending`` is the write-ahead record the state file
        holds, whose refresh this cycle owes before it decides anything; with ``approval``,
        the approved proposal is written instead of what the policy decides."""
        return self._run(dict(states), self.clock(), pending, approval)

    def _pause(self) -> str | None:
        """Why nothing may be written now: the caller's pause, then the pause file."""
        reason = self.paused_by()
        if reason is None and guard.paused(self.config.guard):
            reason = f"{self.config.guard.pause_file} exists"
        return reason

    def _run(
        self,
        states: States,
        started: float,
        pending: PendingChange | None,
        approval: Approval | None,
    ) -> tuple[CycleReport, States]:
        cfg = self.config
        pause = self._pause()
        obs: Observation | None = None
        decisions: tuple[Decision, ...] = ()
        diff = refresh = change_id = ""
        owed, settled, change = pending, None, None
        hypothetical = cfg.dry_run or pause is not None
        proposing = cfg.mode != "auto" and not cfg.dry_run and approval is None

        def report(message: str, error: str | None = None, applied: bool = False) -> CycleReport:
            # Built once, at the end, from what the cycle got to: it runs every period (every
            # 15 simulated seconds of a benchmark), and each dataclasses.replace costs µs.
            if settled is not None and error is None:
                message = f"{_settled_text(settled)}; {message}"
            return CycleReport(
                started=started, duration_s=self.clock() - started, observation=obs,
                decisions=decisions, applied=applied, dry_run=cfg.dry_run,
                paused=pause is not None, diff=diff, refresh=refresh, error=error, message=message,
                change_id=change_id, settled=settled, owed=owed, mode=cfg.mode, approval=approval,
            )  # fmt: skip

        try:
            obs = self._observe()
            store, sched_file = self._open(obs.scheduler)
            if pending is not None and not hypothetical:
                states, settled = self._settle(pending, store, sched_file, states)
                owed = None
            if not sched_file.schedules_vcores:
                obs = replace(obs, vcores_scheduled=False)
            obs = named_from_apps(
                obs, sched_file, self._unfinished_apps, idle_ams=self.name_idle_ams
            )
            decisions, new_states, values = (
                self._decide(obs, sched_file, states, hypothetical)
                if approval is None
                else _approved(approval, sched_file, states)
            )
            # Proposing, the controller moves on only when a change is written (approved).
            kept = states if proposing else new_states
            if not values:
                return report("no change"), kept
            edit = sched_file.edit(values)
            if not edit.changed:
                return report("no change: the file already holds it"), kept
            diff, refresh = edit.diff, self.refresher.describe()
            late = pause or self._pause()
            if approval is not None and late is not None:
                raise _Failed("paused", f"paused ({late}); the proposal is kept, nothing written")
            if proposing:
                proposed = Proposed(edit, {t: new_states[t] for t in edit.targets})
                return _would_apply(report(""), edit, store, late, proposed), kept
            if cfg.dry_run or late is not None:
                return _would_apply(report(""), edit, store, late), new_states
            change_id = secrets.token_hex(16)
            change = PendingChange(change_id, str(edit.path), edit.targets, obs.time)
            if self.journal is not None:
                self.journal(change, report("", applied=True), states)
            owed = change
            self._apply(edit, store)
            self._check_taken(edit, store, sched_file.kind)
            owed = None
        except ObservationError as exc:
            return report(str(exc), error=exc.reason), states
        except (_Failed, ExecutorError) as exc:
            if owed is change and not isinstance(exc, Disagree):
                owed = None  # the previous configuration is back in the file and in the RM
            return report(str(exc), error=exc.label), states
        by = "" if approval is None else f"approved by {approval.by}: "
        written = by + ("" if store else f"wrote {edit.path} and ") + f"refreshed with {refresh}"
        return report(written, applied=True), _mark_written(new_states, edit, values, obs.time)

    def _settle(
        self,
        pending: PendingChange,
        store: RestRefresher | None,
        sched_file: SchedulerFile,
        states: States,
    ) -> tuple[States, PendingChange | None]:
        """Make the RM load what the file holds after a cycle that stopped between its write and
        the RM's reload (a kill -9, a power cut, a refresh that failed twice).

        The file holds the change (``new`` for every target): it is refreshed, and it is
        amtuner's own value, so the state takes it with the change's hold-off; the change is
        returned, its audit lines owed. The file holds the values before it (never written, or
        restored): refreshed too, since the RM may have loaded the change before the restore.
        Anything else is someone's later edit, theirs to load."""
        held = {t: _value_in(sched_file, t) for t in pending.targets}
        written = all(same_a(held[t], new) for t, (_, new) in pending.targets.items())
        before = all(same_a(held[t], old) for t, (old, _) in pending.targets.items())
        if not (written or before):
            return states, None
        targets = dict(pending.targets) if written else {
            t: (new, old) for t, (old, new) in pending.targets.items()
        }  # fmt: skip
        if store is None:
            edit = Edit(sched_file.path, sched_file.data, sched_file.data, "", True, targets)
            try:
                self.refresher.refresh(edit)
            except StoreChanged:
                return states, None  # the RM's store holds someone's later change: theirs
            except RefreshError as exc:
                raise Disagree(
                    f"a change interrupted in an earlier cycle left {pending.where} to be "
                    f"refreshed, and the refresh failed: {exc}; {MAY_DISAGREE}"
                ) from exc
        if not written:
            return states, None
        settled = dict(states)
        for target, (_, new) in pending.targets.items():
            if new is None:
                continue
            base = settled.get(target) or ControllerState(a=new)
            settled[target] = guard.mark_changed(replace(base, a=new), pending.decided_at)
        return settled, pending

    def _check_taken(self, edit: Edit, store: RestRefresher | None, kind: SchedulerKind) -> None:
        """After a refresh, the RM must run with what was written (`amtuner.readback`); a change
        it did not take is undone like a failed refresh, file and RM both."""
        if not self.read_back:
            return
        after = SchedulerFile(edit.path, kind, edit.new_data)
        try:
            obs = self._observe()
        except ObservationError:
            return  # nothing to judge by; the next cycle's `check` will tell
        found = readback.disagreements(after, obs, edit.targets.keys())
        if not found:
            return
        where = "the scheduler-conf store" if store else str(edit.path)
        failure = RefreshError(
            f"the RM did not take the change ({'; '.join(found)}): "
            f"{readback.not_read_hint(where)}"
        )
        if store is None:
            try:
                restore(edit, durable=self.durable)
            except ExecutorError as restore_error:
                raise Disagree(
                    f"{failure}; could NOT restore the previous file {edit.path}: "
                    f"{restore_error}; {MAY_DISAGREE}"
                ) from None
            raise refresh_back(edit, self.refresher, failure, f"restored {edit.path}")
        raise refresh_back(edit, store, failure)

    def _unfinished_apps(self) -> tuple[UnfinishedApp, ...]:
        """Looked up only when asked (`cures.held_by_users_limits`, `idle.with_idle_ams`): a
        monitor of a cluster whose file limits no user's apps and whose AM limits hold no app
        is never asked."""
        return self.monitor.unfinished_apps()

    def _observe(self) -> Observation:
        targets = self.config.scheduler.targets
        return self.monitor.observe([t for t in targets if t != GLOBAL_TARGET])

    def _open(self, kind: SchedulerKind) -> tuple[RestRefresher | None, SchedulerFile]:
        """The configuration to edit, once the RM's scheduler is known to be one this config
        can tune; with a store (no file), a CapacityScheduler's mutable configuration."""
        cfg = self.config
        if cfg.scheduler.kind not in ("auto", kind):
            raise _Failed(
                "scheduler-mismatch",
                f"config says scheduler.kind {cfg.scheduler.kind} but the RM runs the {kind} "
                "scheduler; nothing changed",
            )
        unusable = refresh_mismatch(kind, _method_of(self.refresher))
        if unusable is not None:
            raise _Failed("refresh-unusable", f"refresh.method: {unusable}; nothing changed")
        return open_config(cfg.scheduler.config_file, kind, self.refresher, self.read_file)

    def _decide(
        self, obs: Observation, sched_file: SchedulerFile, states: States, hypothetical: bool
    ) -> tuple[tuple[Decision, ...], States, dict[str, float]]:
        """Policy then guard, per target: the decisions, the states after them, and the values
        to write (the targets whose decided A differs from the file's)."""
        cfg = self.config
        targets = cfg.scheduler.targets or (GLOBAL_TARGET,)
        policy = self.policy or get_policy(cfg.controller.policy)
        # Raises for an undeclared or parent queue, or a value that is not a number.
        in_file = {target: sched_file.effective_value(target) for target in targets}
        decisions: list[Decision] = []
        new_states = dict(states)
        values: dict[str, float] = {}
        for target in targets:
            on_disk = in_file[target]
            state = _baseline(states.get(target), on_disk, cfg, hypothetical=hypothetical)
            decision, new_state = policy(obs, state, cfg.controller, target)
            decision, new_state = guard.apply(
                decision, state, new_state, obs, cfg.guard, am_mb=2 * cfg.controller.unit_mb
            )
            decisions.append(decision)
            new_states[target] = replace(new_state, file_a=on_disk if hypothetical else None)
            if decision.changed and decision.new_a != on_disk:
                values[target] = decision.new_a
        return tuple(decisions), new_states, values

    def _apply(self, edit: Edit, store: RestRefresher | None) -> None:
        cfg = self.config
        if store is None:
            apply_edit(
                edit,
                self.refresher,
                backup_dir=cfg.backup_dir,
                keep_backups=cfg.keep_backups,
                durable=self.durable,
            )
            return
        try:
            store.refresh(edit)
        except StoreChanged:
            raise  # nothing was PUT
        except RefreshError as e:
            # A PUT may be applied after its connection dropped: put the old values back.
            raise refresh_back(edit, store, e) from e


class _Failed(Exception):
    """A cycle that must stop for a reason no collaborator raised (a config that does not fit
    the RM); ``label`` is its report label, as an executor error's is."""

    def __init__(self, label: str, message: str) -> None:
        super().__init__(message)
        self.label = label


def _value_in(sched_file: SchedulerFile, target: str) -> float | None:
    try:
        return sched_file.current_value(target)
    except ExecutorError:
        return None


def _settled_text(change: PendingChange) -> str:
    values = ", ".join(
        f"{t or 'global'} {new:g}" for t, (_, new) in change.targets.items() if new is not None
    )
    return f"refreshed {change.where}, written ({values}) by a cycle stopped before its refresh"


def _would_apply(
    report: CycleReport,
    edit: Edit,
    store: RestRefresher | None,
    pause: str | None,
    proposed: Proposed | None = None,
) -> CycleReport:
    """The dry-run, paused or proposed outcome: what would be written and refreshed."""
    why = "dry-run" if report.dry_run else f"paused ({pause})" if pause else "proposed"
    action = "" if store else f"write {edit.path} and "
    message = f"{why}: would {action}refresh with {report.refresh}"
    if proposed is not None:
        message += (
            "; `amtuner approve` writes it" if report.mode == "approve" else " (mode recommend)"
        )
    return replace(report, paused=pause is not None, message=message, proposed=proposed)


def _approved(
    approval: Approval, sched_file: SchedulerFile, states: States
) -> tuple[tuple[Decision, ...], States, dict[str, float]]:
    """What `Cycle._decide` gives, from an approved proposal: only if the configuration is
    the one it was made from, byte for byte."""
    where = str(sched_file.path)
    if where != approval.where or fingerprint(sched_file.data) != approval.fingerprint:
        raise _Failed(
            "proposal-stale",
            f"{where} changed since proposal {approval.proposal} was made from it (by an admin, "
            "a config manager or another change): refused, nothing written; the next cycle "
            "proposes from what it holds now",
        )
    return approval.decisions, {**states, **approval.states}, dict(approval.values)


def _mark_written(states: States, edit: Edit, values: Mapping[str, float], when: float) -> States:
    """After an applied change: each target's A is what was written, and its hold-off starts."""
    marked = dict(states)
    for target, (_, written) in edit.targets.items():
        changed = replace(marked[target], a=values[target] if written is None else written)
        marked[target] = guard.mark_changed(changed, when)
    return marked


def _baseline(
    state: ControllerState | None, on_disk: float, cfg: Config, *, hypothetical: bool
) -> ControllerState:
    """The state the controller starts this period from.

    The file is the truth: if someone (an admin, a restore from backup) set a value other than
    the one the state was made against, the search restarts from the file's value with the
    widest step, keeping the last P and R. A live state was made against the value it wrote
    (``a``). One a dry-run or paused cycle made holds the value the loop would have set, never
    written, and ``file_a``, the file's value then: a dry run continues from it while the file
    is unchanged, and restarts from the file on an edit, as the live run would. A live cycle
    after a pause or a dry run starts from the file, never from a value it did not write."""
    lo, hi = cfg.controller.a_min, cfg.controller.a_max
    # FairScheduler's maxAMShare -1 means "no limit": the nearest tunable value is the top.
    start = hi if on_disk < 0 else min(max(on_disk, lo), hi)
    if state is None:
        return ControllerState(a=start)
    seen = state.file_a if hypothetical and state.file_a is not None else state.a
    if abs(seen - on_disk) < SAME_A:
        return state
    return replace(state, a=start, n=1, file_a=None)


def named_from_apps(
    obs: Observation,
    sched_file: SchedulerFile,
    unfinished_apps: Callable[[], Sequence[UnfinishedApp]],
    *,
    idle_ams: bool = True,
) -> Observation:
    """The observation with what the apps document says beside the waits named: the apps the
    users' running-apps limits hold (`cures.held_by_users_limits`) and, with ``idle_ams``, the
    idle AMs (`idle.with_idle_ams`). Each asks for the listing only where it has something to
    name, and both share it: ``unfinished_apps`` is called once at most. A cycle and
    `amtuner check` name them alike.

    Raises `ObservationError` where the users' limits need a listing that fails: whose apps
    wait decides what A cures. The idle AMs decide nothing, so a listing that fails for them
    costs only them."""
    listed = functools.cache(unfinished_apps)
    obs = cures.held_by_users_limits(obs, sched_file, listed)
    if not idle_ams:
        return obs
    try:
        return idle.with_idle_ams(obs, listed)
    except ObservationError as exc:
        log.warning("idle AMs not named: %s", exc)
        return obs
