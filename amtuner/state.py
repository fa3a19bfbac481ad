"""The controller's memory between cycles, kept in a small JSON file.

The paper's bisection depends on n, P(t-1) and R(t-1); without them every restart (and every
`amtuner once`) would begin the search again from the widest step. The file is rewritten
atomically, so a crash leaves the previous state, never half of one.

A change in flight is there too ("pending", `PendingChange`): saved before the scheduler file
is written and dropped with the state saved after it, so a process killed between the write and
the refresh leaves the next cycle a record that a refresh is owed.

The daemon also keeps a summary of its last cycle there ("last_cycle": what it saw, decided and
why), for `amtuner status`, in dry-run too (where the states in the file are left as they
were). The key is optional, so files written before it existed, or by `amtuner once`, still load.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from amtuner import audit
from amtuner.cures import wait_records
from amtuner.cycle import CycleReport, Journal, PendingChange, States
from amtuner.executor.errors import NotRegularFileError, WriteError
from amtuner.executor.files import replace_file
from amtuner.executor.reading import read_regular
from amtuner.model import ControllerState
from amtuner.monitor.idle import idle_entry
from amtuner.safetext import shown

FORMAT_VERSION = 1


class StateError(OSError):
    """The state file cannot be read or written; the message says which file and why."""


def _read(path: Path) -> dict[str, Any] | None:
    """The file's document; a FIFO or a device is refused unopened (a FIFO would block)."""
    try:
        raw = read_regular(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except NotRegularFileError as exc:
        raise StateError(f"state file: {exc}") from exc
    except OSError as exc:
        raise StateError(f"cannot read state file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise StateError(
            f"state file {path} is not UTF-8 text ({exc.reason} at byte {exc.start}); move it "
            "aside to restart the search"
        ) from exc
    try:
        doc = json.loads(raw)
        if doc.get("version") != FORMAT_VERSION:
            raise ValueError(f"unknown format version {doc.get('version')!r}")
        return doc
    except (ValueError, AttributeError) as exc:
        raise StateError(
            f"state file {path} is not valid ({exc}); move it aside to restart the search"
        ) from exc
    except RecursionError as exc:
        raise StateError(
            f"state file {path} is not valid (JSON nested too deep); move it aside to restart "
            "the search"
        ) from exc


def _finite(value: object, what: str) -> float:
    """A JSON number that is finite (Python's json reads NaN and Infinity literals)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} is {value!r}, not a number")
    if isinstance(value, int) and abs(value) > 2**53:  # float() of it may overflow
        raise ValueError(f"{what} is an integer beyond 2**53, out of range")
    if not math.isfinite(value):
        raise ValueError(f"{what} is {value}, not a finite number")
    return float(value)


def _count(value: object, what: str) -> int:
    number = _finite(value, what)
    if number < 0 or number != int(number):
        raise ValueError(f"{what} is {value!r}, not a whole number >= 0")
    return int(number)


def parse_state(target: str, s: Mapping[str, Any]) -> ControllerState:
    """One target's state, refusing values the controller would act on wrongly (an A of NaN
    compares false with everything, a negative count moves the bisection the wrong way)."""
    where = f"target {target!r}:"
    a = _finite(s["a"], f"{where} a")
    if not 0.0 <= a <= 1.0:
        raise ValueError(f"{where} a is {a}, not in [0, 1]")
    pending, running = s.get("prev_pending"), s.get("prev_running")
    return ControllerState(
        a=a,
        n=_count(s["n"], f"{where} n"),
        prev_pending=None if pending is None else _count(pending, f"{where} prev_pending"),
        prev_running=None if running is None else _count(running, f"{where} prev_running"),
        extra={k: _finite(v, f"{where} extra.{k}") for k, v in s.get("extra", {}).items()},
    )


def load_states(path: Path) -> States:
    """Missing file = a first start. A corrupt file is an error, not a silent reset: an operator
    should know the bisection restarted."""
    doc = _read(path)
    if doc is None:
        return {}
    try:
        return {target: parse_state(target, s) for target, s in doc["targets"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StateError(
            f"state file {path} is not valid ({exc}); move it aside to restart the search"
        ) from exc


def _optional_a(value: object, what: str) -> float | None:
    return None if value is None else _finite(value, what)


def _pending(doc: Mapping[str, Any]) -> PendingChange:
    targets = {
        str(t): (_optional_a(v[0], f"pending {t!r} before"), _optional_a(v[1], f"pending {t!r}"))
        for t, v in doc["targets"].items()
    }
    audit_lines = doc.get("audit", [])
    if not isinstance(audit_lines, list) or not all(isinstance(a, dict) for a in audit_lines):
        raise ValueError("pending.audit is not a list of mappings")
    return PendingChange(
        id=str(doc["id"]),
        where=str(doc["where"]),
        targets=targets,
        decided_at=_finite(doc["decided_at"], "pending.decided_at"),
        audit=tuple(audit_lines),
    )


def load_pending(path: Path) -> PendingChange | None:
    """The change a killed process left between its write and its refresh, if any."""
    doc = _read(path)
    raw = None if doc is None else doc.get("pending")
    if raw is None:
        return None
    try:
        return _pending(raw)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise StateError(
            f"state file {path} is not valid (pending: {exc}); move it aside to restart the "
            "search, then run `amtuner check`"
        ) from exc


def _pending_doc(change: PendingChange) -> dict[str, Any]:
    return {
        "id": change.id,
        "where": change.where,
        "targets": {t: list(v) for t, v in change.targets.items()},
        "decided_at": change.decided_at,
        "audit": [dict(a) for a in change.audit],
    }


def save_pending(path: Path, change: PendingChange) -> None:
    """Record ``change`` before it is written, keeping the rest of the file as it is."""
    doc = _read(path) or {"version": FORMAT_VERSION, "targets": {}}
    doc["pending"] = _pending_doc(change)
    _write(path, doc)


def journal_to(path: Path, unit_mb: int) -> Journal:
    """The write-ahead journal of `amtuner once` and `run`: the state file's "pending"."""

    def journal(change: PendingChange, report: CycleReport, before: States) -> None:
        lines = audit.change_entries(report, before, unit_mb=unit_mb)
        try:
            save_pending(path, replace(change, audit=tuple(lines)))
        except StateError as exc:
            raise WriteError(
                f"{exc}; a change is not written before its record is; nothing changed"
            ) from exc

    return journal


def load_last_cycle(path: Path) -> dict[str, Any] | None:
    """The daemon's summary of its last cycle; None when no file or no summary in it."""
    doc = _read(path)
    summary = None if doc is None else doc.get("last_cycle")
    if summary is not None and not isinstance(summary, dict):
        raise StateError(f"state file {path} is not valid (last_cycle is not a mapping)")
    return summary


def save_states(
    path: Path,
    states: States,
    last_cycle: Mapping[str, Any] | None = None,
    pending: PendingChange | None = None,
) -> None:
    """The states (and the last cycle's summary), with ``pending`` the change whose refresh is
    still owed, if any: saving without one is what settles a change."""
    doc: dict[str, Any] = {
        "version": FORMAT_VERSION,
        "targets": {target: state_doc(s) for target, s in sorted(states.items())},
    }
    if last_cycle is not None:
        doc["last_cycle"] = dict(last_cycle)
    if pending is not None:
        doc["pending"] = _pending_doc(pending)
    _write(path, doc)


def state_doc(s: ControllerState) -> dict[str, Any]:
    """One target's state as the file holds it (`parse_state` reads it back)."""
    return {
        "a": s.a,
        "n": s.n,
        "prev_pending": s.prev_pending,
        "prev_running": s.prev_running,
        "extra": dict(s.extra),
    }


def _write(path: Path, doc: Mapping[str, Any]) -> None:
    try:
        write_document(path, doc)
    except (OSError, WriteError) as exc:
        raise StateError(f"cannot write state file {path}: {exc}") from exc


def write_document(path: Path, doc: Mapping[str, Any]) -> None:
    """``doc`` as amtuner's own files hold JSON (sorted, indented, one trailing newline),
    replacing ``path`` atomically; OSError or WriteError as they come."""
    data = (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, data)


def summarize(report: CycleReport, states: States) -> dict[str, Any]:
    """The "last_cycle" record kept in the state file for `amtuner status` (plain JSON)."""
    obs = report.observation
    result = "error" if report.error else "applied" if report.applied else "ok"
    return {
        "time": audit.iso_time(report.started),
        "duration_s": round(report.duration_s, 4),
        "result": result,
        "error": report.error,
        "message": shown(report.message),
        "dry_run": report.dry_run,
        "paused": report.paused,
        "mode": report.mode,
        "observation": None
        if obs is None
        else {
            "pending_apps": obs.pending_apps,
            "running_apps": obs.running_apps,
            "memory_used_mb": obs.memory_used_mb,
            "memory_total_mb": obs.memory_total_mb,
            "source": obs.source,
            "labelled_partitions": list(obs.labelled_partitions),
        },
        "decisions": [
            {
                "target": d.target,
                "old_a": d.old_a,
                "new_a": d.new_a,
                "rule": str(d.rule),
                "case": d.label,
                "reason": d.reason,
                "n": states[d.target].n if d.target in states else None,
                "waits": [] if obs is None else wait_records(obs, d.target),
                **idle_entry(obs, d.target),
            }
            for d in report.decisions
        ],
    }
