"""The audit trail: one JSON line per applied change of A.

An operator who finds A different tomorrow must be able to tell who changed it (amtuner, or who
approved its proposal), when, from what, to what, and which of the paper's rules fired on which
numbers, without the daemon's log (which journald may have rotated away). Each line is appended,
flushed and fsynced before the cycle is reported done, so a crash right after a change cannot
lose its line. Lines are small single ``write`` calls on an ``O_APPEND`` file, so the daemon and
a hand-run `amtuner once` (or `amtuner approve`) can share it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from amtuner.cures import wait_records
from amtuner.cycle import CycleReport
from amtuner.executor.errors import NotRegularFileError
from amtuner.executor.reading import read_regular, refuse_irregular
from amtuner.model import ControllerState, Observation
from amtuner.monitor.idle import idle_entry
from amtuner.safetext import shown

log = logging.getLogger(__name__)


class AuditError(OSError):
    """The audit log cannot be written; the change it describes was applied all the same."""


def task_memory_ratio(obs: Observation, unit_mb: int) -> float:
    """M_tasks/M_total with the paper's estimate M_AMs = R x Unit x 2 (may be negative)."""
    return (obs.memory_used_mb - obs.running_apps * unit_mb * 2) / obs.memory_total_mb


def iso_time(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def change_entries(
    report: CycleReport, before: Mapping[str, ControllerState], *, unit_mb: int
) -> list[dict[str, object]]:
    """The audit records of one cycle: one per target whose A was written; none otherwise.
    An approved proposal's are the proposal's own, made from the figures it was decided on,
    with who approved it and when."""
    obs = report.observation
    if not report.applied or obs is None:
        return []
    if report.approval is not None:
        approved = {
            "time": iso_time(report.started),
            "approved_by": report.approval.by,
            "proposal": report.approval.proposal,
            "refresh": shown(report.refresh),
            "change": report.change_id,
        }
        return [
            {**line, "proposed_at": line.get("time"), **approved} for line in report.approval.audit
        ]
    inputs: dict[str, object] = {
        "pending_apps": obs.pending_apps,
        "running_apps": obs.running_apps,
        "memory_used_mb": obs.memory_used_mb,
        "memory_total_mb": obs.memory_total_mb,
        "memory_used_ratio": round(obs.memory_ratio, 4),
        "task_memory_ratio": round(task_memory_ratio(obs, unit_mb), 4),
        "source": obs.source,
    }
    entries: list[dict[str, object]] = []
    for d in report.decisions:
        if not d.changed:
            continue
        prev = before.get(d.target)
        entries.append(
            {
                "time": iso_time(report.started),
                "target": d.target or "global",
                "old": d.old_a,
                "new": d.new_a,
                "direction": str(d.direction),
                "rule": str(d.rule),
                "case": d.label,
                "reason": d.reason,
                "inputs": {
                    **inputs,
                    "prev_pending_apps": None if prev is None else prev.prev_pending,
                    "prev_running_apps": None if prev is None else prev.prev_running,
                    "n": None if prev is None else prev.n,
                },
                "waits": wait_records(obs, d.target),
                **idle_entry(obs, d.target),
                "refresh": shown(report.refresh),
                **({"change": report.change_id} if report.change_id else {}),
            }
        )
    return entries


def _settled_entries(path: Path | None, report: CycleReport) -> list[dict[str, object]]:
    """The audit lines of an interrupted change this cycle found written, unless the process
    that wrote it got as far as its audit lines before it stopped."""
    change = report.settled
    if change is None:
        return []
    if path is not None and any(r.get("change") == change.id for r in tail(path, 100)):
        return []
    return [dict(e) for e in change.audit]


def record(
    path: Path | None,
    report: CycleReport,
    before: Mapping[str, ControllerState],
    *,
    unit_mb: int,
) -> int:
    """Log every applied change and append it to `path` (when set); returns the lines written.

    Raises AuditError when the file cannot be written (after logging each change)."""
    entries = _settled_entries(path, report) + change_entries(report, before, unit_mb=unit_mb)
    for e in entries:
        log.info(
            "change %s: %s -> %s [%s] %s", e["target"], e["old"], e["new"], e["rule"], e["reason"]
        )
    if path is None or not entries:
        return 0
    data = "".join(json.dumps(e, sort_keys=True) + "\n" for e in entries).encode()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = _open_append(path)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    except NotRegularFileError as exc:
        raise AuditError(f"cannot append to audit log: {exc}") from exc
    except OSError as exc:
        raise AuditError(f"cannot append to audit log {path}: {exc.strerror or exc}") from exc
    return len(entries)


def _open_append(path: Path) -> int:
    """The audit log opened for appending, only if it is a regular file: opening a FIFO for
    writing blocks until a reader comes (non-blocking, it fails or opens at once, and is then
    refused), and a device is not written to."""
    with contextlib.suppress(FileNotFoundError):
        refuse_irregular(path, os.stat(path).st_mode)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags, 0o640)
    try:
        refuse_irregular(path, os.fstat(fd).st_mode)
    except NotRegularFileError:
        os.close(fd)
        raise
    return fd


def tail(path: Path, count: int) -> list[dict[str, object]]:
    """The last `count` records (oldest first); lines that are not JSON objects are skipped, so
    a hand-edited or truncated file still shows what it can. Raises AuditError when the log
    cannot be read (a FIFO there is refused unopened)."""
    try:
        lines = read_regular(path).decode("utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    except NotRegularFileError as exc:
        raise AuditError(f"cannot read audit log: {exc}") from exc
    except OSError as exc:
        raise AuditError(f"cannot read audit log {path}: {exc.strerror or exc}") from exc
    records: list[dict[str, object]] = []
    for line in reversed(lines):
        if len(records) >= count:
            break
        try:
            doc = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(doc, dict):
            records.append(doc)
    return records[::-1]
