"""Proposals: the changes a loop in ``mode`` recommend or approve decided and did not write.

Each cycle that decides a change publishes it in a small JSON file beside the state file
(``state.json`` -> ``state.proposal.json``), written atomically, replacing the one before; a cycle
that decides no change withdraws it, and a failed cycle leaves it to expire. So the file holds
at most one proposal: the whole edit one live cycle would have written, every target in it.

A proposal carries what it was made from: the configuration's path and a fingerprint of its
bytes (`amtuner.cycle.fingerprint`), each target's value there and the value decided, and per
target the audit line a live cycle would have written (the RM's figures, the controller's
previous P, R and step, the rule, the case and its reason, why apps wait). `amtuner approve`
writes it only to the configuration it was made from, before it expires, and its audit line is
that one, with who approved it.

The id is made of the fingerprint and the values, so a daemon that decides the same change
again next period republishes the same id with fresh figures and a later expiry: an operator
who read ``--id`` in `amtuner status` approves exactly what they read.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from amtuner import audit
from amtuner.commands import target_name
from amtuner.config import Config
from amtuner.cycle import Approval, CycleReport, States
from amtuner.executor.errors import NotRegularFileError, WriteError
from amtuner.executor.reading import read_regular
from amtuner.model import GLOBAL_TARGET, ControllerState, Decision, Rule
from amtuner.state import parse_state, state_doc, write_document

FORMAT_VERSION = 1


class ProposalError(OSError):
    """The proposal file cannot be read or written; the message says which and why."""


def path_for(state_file: Path) -> Path:
    return state_file.with_suffix(".proposal.json")


@dataclass(frozen=True, slots=True)
class Proposal:
    id: str
    mode: str
    made_at: str
    """When the cycle that made it started (UTC, as the audit log writes times)."""
    expires_at: str
    where: str
    """The scheduler file (or the scheduler-conf store's path) it was made from."""
    fingerprint: str
    targets: Mapping[str, tuple[float | None, float]]
    """target -> (the value there when it was made, None if unset; the value proposed)."""
    diff: str
    refresh: str
    changes: tuple[Mapping[str, Any], ...]
    """One audit line per target, as a live cycle would have written it: the inputs."""
    states: Mapping[str, ControllerState]
    """The controller's states of its targets once written (`amtuner.cycle.Proposed`)."""

    def expired(self, now: float) -> bool:
        return now >= _epoch(self.expires_at)

    def decisions(self) -> tuple[Decision, ...]:
        return tuple(
            Decision(
                old_a=float(c["old"]), new_a=float(c["new"]), rule=Rule(c["rule"]),
                reason=str(c["reason"]), target=_target(str(c["target"])), case=str(c["case"]),
            )
            for c in self.changes
        )  # fmt: skip

    def approval(self, by: str) -> Approval:
        return Approval(
            proposal=self.id,
            by=by,
            where=self.where,
            fingerprint=self.fingerprint,
            values={t: new for t, (_, new) in self.targets.items()},
            decisions=self.decisions(),
            states=self.states,
            audit=self.changes,
        )


def _target(name: str) -> str:
    """An audit line's target name as the config's key: "global" is the scheduler-wide value
    (a queue target is a path under root)."""
    return GLOBAL_TARGET if name == "global" else name


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def make(report: CycleReport, before: States, cfg: Config) -> Proposal | None:
    """The proposal of a cycle that decided a change and did not write it, else None."""
    proposed, obs = report.proposed, report.observation
    if proposed is None or obs is None:
        return None
    edit = proposed.edit
    targets = {t: (old, new) for t, (old, new) in edit.targets.items() if new is not None}
    key = json.dumps([proposed.fingerprint, sorted(targets.items())])
    applied = replace(report, applied=True)
    return Proposal(
        id=hashlib.sha256(key.encode()).hexdigest()[:16],
        mode=report.mode,
        made_at=audit.iso_time(report.started),
        expires_at=audit.iso_time(report.started + cfg.proposal_ttl_s),
        where=str(edit.path),
        fingerprint=proposed.fingerprint,
        targets=targets,
        diff=edit.diff,
        refresh=report.refresh,
        changes=tuple(audit.change_entries(applied, before, unit_mb=cfg.controller.unit_mb)),
        states=dict(proposed.states),
    )


def publish(cfg: Config, report: CycleReport, before: States) -> Proposal | None:
    """After a cycle in ``mode`` recommend or approve: the cycle's proposal replaces the one
    standing, or withdraws it when the cycle decided no change. A failed cycle leaves it (it
    expires); so does a dry run, which publishes nothing. Returns what now stands (None in
    ``mode`` auto, whose cycles leave the file alone)."""
    path = path_for(cfg.state_file)
    if cfg.mode == "auto":
        return None
    if report.error is not None or report.dry_run:
        return load(path)
    proposal = make(report, before, cfg)
    save(path, proposal)
    return proposal


def describe(p: Proposal) -> str:
    values = ", ".join(
        f"{target_name(t)} {'unset' if old is None else f'{old:g}'} -> {new:g}"
        for t, (old, new) in p.targets.items()
    )
    return f"{p.id} ({values} in {p.where}), made {p.made_at}, expires {p.expires_at}"


def to_doc(p: Proposal) -> dict[str, Any]:
    return {
        "id": p.id,
        "mode": p.mode,
        "made_at": p.made_at,
        "expires_at": p.expires_at,
        "where": p.where,
        "fingerprint": p.fingerprint,
        "targets": {t: {"from": old, "to": new} for t, (old, new) in p.targets.items()},
        "diff": p.diff,
        "refresh": p.refresh,
        "changes": [dict(c) for c in p.changes],
        "states": {t: state_doc(s) for t, s in p.states.items()},
    }


def _from_doc(doc: Mapping[str, Any]) -> Proposal:
    changes = doc["changes"]
    if not isinstance(changes, list) or not all(isinstance(c, dict) for c in changes):
        raise ValueError("changes is not a list of mappings")
    proposal = Proposal(
        id=str(doc["id"]),
        mode=str(doc["mode"]),
        made_at=str(doc["made_at"]),
        expires_at=str(doc["expires_at"]),
        where=str(doc["where"]),
        fingerprint=str(doc["fingerprint"]),
        targets={
            str(t): (None if v["from"] is None else float(v["from"]), float(v["to"]))
            for t, v in doc["targets"].items()
        },
        diff=str(doc["diff"]),
        refresh=str(doc["refresh"]),
        changes=tuple(changes),
        states={str(t): parse_state(t, s) for t, s in doc["states"].items()},
    )
    for when in (proposal.made_at, proposal.expires_at):
        _epoch(when)
    proposal.decisions()
    return proposal


def load(path: Path) -> Proposal | None:
    """The standing proposal; None when there is none (no file, or one withdrawn)."""
    try:
        raw = read_regular(path)
    except FileNotFoundError:
        return None
    except (NotRegularFileError, OSError) as exc:
        raise ProposalError(f"cannot read the proposal file {path}: {exc}") from exc
    try:
        doc = json.loads(raw.decode("utf-8"))
        if doc.get("version") != FORMAT_VERSION:
            raise ValueError(f"unknown format version {doc.get('version')!r}")
        body = doc["proposal"]
        return None if body is None else _from_doc(body)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise ProposalError(
            f"the proposal file {path} is not valid ({exc}); the next cycle writes it anew"
        ) from exc


def save(path: Path, proposal: Proposal | None) -> None:
    """Replace the standing proposal (None: withdraw it), atomically: `amtuner approve` never
    reads half of one."""
    doc = {"version": FORMAT_VERSION, "proposal": None if proposal is None else to_doc(proposal)}
    try:
        write_document(path, doc)
    except (OSError, WriteError) as exc:
        raise ProposalError(f"cannot write the proposal file {path}: {exc}") from exc
