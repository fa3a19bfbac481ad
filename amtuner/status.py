"""`amtuner status`: what the daemon last did and why, without reading its log.

It reads only files: the state file (the controller state per target and the daemon's summary of
its last cycle), the proposal file (`amtuner.proposals`) and the audit log (the applied
changes). So it works whether or not the daemon is
running, from any shell that can read /var/lib/amtuner, and never touches the RM.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from amtuner.commands import (
    add_config_option,
    decision_names,
    decision_names_help,
    mode_suffix,
    target_name,
)
from amtuner.config import ConfigError, load_config
from amtuner.exitcodes import ExitCode
from amtuner.safetext import shown

if TYPE_CHECKING:
    from amtuner.cycle import States
    from amtuner.proposals import Proposal


def print_status(
    states: States,
    last: Mapping[str, Any] | None,
    changes: list[dict[str, Any]],
    out: TextIO,
    proposal: Proposal | None = None,
) -> None:
    if last is None:
        print("last cycle  (no summary: the state file was written by `amtuner once`)", file=out)
    else:
        mode = mode_suffix(
            bool(last.get("dry_run")), bool(last.get("paused")), str(last.get("mode", "auto"))
        )
        outcome = f"{last.get('result')}{mode}"
        if last.get("error"):
            outcome += f" {last['error']}"
        print(f"last cycle  {last.get('time')} {outcome}: {last.get('message')}", file=out)
        obs = last.get("observation")
        if obs:
            ratio = obs["memory_used_mb"] / obs["memory_total_mb"]
            print(
                f"observed    P={obs['pending_apps']} R={obs['running_apps']} memory "
                f"{obs['memory_used_mb']}/{obs['memory_total_mb']} MB ({ratio:.2f})",
                file=out,
            )
            if obs.get("labelled_partitions"):
                from amtuner.risks import untuned_partitions

                print(f"partitions  {untuned_partitions(obs['labelled_partitions'])}", file=out)
        for d in last.get("decisions", []):
            print(
                f"decision    {target_name(d['target'])}: {d['old_a']:g} -> {d['new_a']:g} "
                f"[{_label(d)}] {d['reason']}",
                file=out,
            )
            if d.get("waits"):
                from amtuner.cures import describe

                print(f"waiting     {target_name(d['target'])}: {describe(d['waits'])}", file=out)
            if isinstance(d.get("idle_ams"), dict):
                from amtuner.monitor.idle import describe_idle

                idle = describe_idle(d["idle_ams"])
                print(f"idle AMs    {target_name(d['target'])}: {idle}", file=out)
    for target, s in sorted(states.items()):
        hist = f"P(t-1)={s.prev_pending} R(t-1)={s.prev_running}"
        print(f"state       {target_name(target)}: A={s.a:g} n={s.n} {hist}", file=out)
    if proposal is not None:
        _print_proposal(proposal, out)
    if changes:
        print(f"changes     last {len(changes)} from the audit log:", file=out)
    for c in changes:
        print(
            f"  {c.get('time')} {c.get('target')}: {c.get('old')} -> {c.get('new')} "
            f"[{_label(c)}] {c.get('reason')}",
            file=out,
        )
    named = [*(last or {}).get("decisions", []), *(proposal.changes if proposal else ()), *changes]
    for name, meaning in _meanings(named):
        print(f"meaning     {name}: {meaning}", file=out)


def _print_proposal(proposal: Proposal, out: TextIO) -> None:
    from amtuner.proposals import describe

    expired = " EXPIRED" if proposal.expired(time.time()) else ""
    print(f"proposal    {describe(proposal)}{expired}", file=out)
    for c in proposal.changes:
        print(
            f"  {c.get('target')}: {c.get('old')} -> {c.get('new')} [{_label(c)}] "
            f"{c.get('reason')}",
            file=out,
        )
    for line in proposal.diff.rstrip("\n").splitlines():
        print(f"  {shown(line)}", file=out)
    if proposal.mode == "approve" and not expired:
        print(f"  to write it: amtuner approve --id {proposal.id}", file=out)


def _meanings(decisions: list[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The rules and cases named above, each explained once."""
    known = decision_names()
    names = dict.fromkeys(str(d.get(key)) for d in decisions for key in ("rule", "case"))
    return [(name, known[name]) for name in names if name in known]


def cmd_status(args: argparse.Namespace) -> int:
    from amtuner import audit
    from amtuner.proposals import ProposalError, load, path_for
    from amtuner.state import StateError, load_last_cycle, load_states

    try:
        cfg = load_config(args.config)
        states = load_states(cfg.state_file)
        last = load_last_cycle(cfg.state_file)
    except (ConfigError, StateError) as exc:
        print(f"amtuner status: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    try:
        proposal = load(path_for(cfg.state_file))
    except ProposalError as exc:
        print(f"amtuner status: {exc}; no proposal shown", file=sys.stderr)
        proposal = None
    if not states and last is None:
        print(
            f"amtuner status: no state yet in {cfg.state_file}: no cycle has completed with this "
            "config (is the daemon running, and is state_file the one it uses?)",
            file=sys.stderr,
        )
        return ExitCode.FAILED
    try:
        changes = audit.tail(cfg.audit_log, args.lines) if cfg.audit_log else []
    except audit.AuditError as exc:
        print(f"amtuner status: {exc}; no changes shown", file=sys.stderr)
        changes = []
    if args.json:
        doc = status_document(cfg.state_file, states, last, changes, proposal)
        json.dump(doc, sys.stdout, indent=2)
        print()
        return ExitCode.OK
    print(f"state file  {cfg.state_file}")
    print_status(states, last, changes, sys.stdout, proposal)
    return ExitCode.OK


def status_document(
    state_file: Path,
    states: States,
    last: Mapping[str, Any] | None,
    changes: list[dict[str, Any]],
    proposal: Proposal | None = None,
) -> dict[str, Any]:
    """`status --json`: what the text shows, for a script or a monitoring probe; the keys are
    the state file's, the audit log's and the proposal file's own, targets by their names in
    the config ("" is the scheduler-wide value)."""
    from amtuner.proposals import to_doc

    standing = None
    if proposal is not None:
        standing = {**to_doc(proposal), "expired": proposal.expired(time.time())}
    return {
        "state_file": str(state_file),
        "last_cycle": None if last is None else dict(last),
        "targets": {
            target: {
                "a": s.a,
                "n": s.n,
                "prev_pending": s.prev_pending,
                "prev_running": s.prev_running,
            }
            for target, s in sorted(states.items())
        },
        "changes": changes,
        "proposal": standing,
    }


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "status",
        help="show what the daemon last did and why (from the state file and audit log)",
        description="What the last cycle saw and decided, the controller's state per target and "
        "the last changes from the audit log, each rule and case named explained.",
        epilog=decision_names_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_option(p)
    p.add_argument(
        "--lines", "-n", type=int, default=5, help="audit lines to show (default: %(default)s)"
    )
    p.add_argument(
        "--json", action="store_true", help="print one JSON document instead of the text"
    )
    p.set_defaults(func=cmd_status)


def _label(decision: Mapping[str, Any]) -> str:
    """``rule`` or, where the policy named a finer case, ``rule: case`` (older records have
    no case)."""
    rule, case = decision.get("rule"), decision.get("case")
    return f"{rule}: {case}" if case and case != rule else str(rule)
