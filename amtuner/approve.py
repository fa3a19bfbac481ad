"""`amtuner approve`: write the standing proposal, as the cycle that made it would have.

Only with ``mode: approve``. Under the cycle lock (`amtuner.lock`), so the daemon's cycle and
the approval never interleave: the proposal is read once the lock is held, and refused when it
is not the one ``--id`` names, has expired, or was made from a configuration that has changed
since (`amtuner.cycle.Approval`); nothing is written then. Otherwise the cycle writes it by the
path every change takes (write-ahead record, backup, atomic write, refresh, read-back), its
audit line the proposal's own with the approver's name, and withdraws it.
"""

from __future__ import annotations

import argparse
import os
import pwd
import sys
import time
from typing import TYPE_CHECKING

from amtuner import lock
from amtuner.commands import add_config_option, build_cycle, print_report, startup_errors
from amtuner.config import Config, load_config
from amtuner.exitcodes import ExitCode

if TYPE_CHECKING:
    from amtuner.cycle import Cycle


def os_user() -> str:
    """Who runs the command: the real user's login name; run through sudo (as the service's
    user, which may write what the daemon writes), the one who ran sudo (``SUDO_USER``)."""
    try:
        name = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        name = f"uid {os.getuid()}"
    sudo = os.environ.get("SUDO_USER")
    return f"{sudo} (sudo as {name})" if sudo and sudo != name else name


def cmd_approve(args: argparse.Namespace) -> int:
    from amtuner.proposals import ProposalError

    try:
        cfg = load_config(args.config)
        if cfg.mode != "approve":
            print(
                f"amtuner approve: mode is {cfg.mode}, not approve: "
                + ("amtuner writes its changes itself" if cfg.mode == "auto" else
                   "its proposals are advice, written by nobody"),
                file=sys.stderr,
            )  # fmt: skip
            return ExitCode.CONFIG
        if cfg.dry_run:
            print("amtuner approve: dry_run is on: nothing may be written", file=sys.stderr)
            return ExitCode.CONFIG
        cycle = build_cycle(cfg)
        with lock.held(lock.path_for(cfg.state_file)):
            return _approve(cfg, cycle, args.by or os_user(), args.id)
    except lock.LockUnavailable as exc:
        print(f"error     {exc.label}: {exc}")
        return ExitCode.for_error(exc.label)
    except ProposalError as exc:
        print(f"amtuner approve: {exc}; nothing written", file=sys.stderr)
        return ExitCode.REFUSED
    except startup_errors() as exc:
        print(f"amtuner approve: {exc}", file=sys.stderr)
        return ExitCode.CONFIG


def _approve(cfg: Config, cycle: Cycle, by: str, wanted: str | None) -> int:
    from amtuner import audit, proposals
    from amtuner.state import StateError, load_pending, load_states, save_states, summarize

    path = proposals.path_for(cfg.state_file)
    proposal = proposals.load(path)
    if proposal is None:
        print(f"refused   no proposal stands in {path}: the last cycle decided no change")
        return ExitCode.REFUSED
    print(f"proposal  {proposals.describe(proposal)}")
    refused = None
    if wanted is not None and proposal.id != wanted:
        refused = f"the standing proposal is {proposal.id}, not {wanted}: read it again"
    elif proposal.expired(time.time()):
        refused = (
            f"proposal {proposal.id} expired at {proposal.expires_at}: the figures it was "
            "decided from are too old; a running daemon proposes again each period"
        )
    if refused is not None:
        print(f"refused   {refused}; nothing written")
        return ExitCode.REFUSED
    states = load_states(cfg.state_file)
    report, new_states = cycle.run(
        states, load_pending(cfg.state_file), approval=proposal.approval(by)
    )
    print_report(report)
    code = ExitCode.for_error(report.error)
    if not (report.change_id or report.settled):
        return code  # refused or failed before anything was written: nothing to record
    try:
        audit.record(cfg.audit_log, report, states, unit_mb=cfg.controller.unit_mb)
    except audit.AuditError as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        code = code or ExitCode.RECORD
    try:
        save_states(cfg.state_file, new_states, summarize(report, new_states), report.owed)
        if report.applied:
            proposals.save(path, None)
    except (StateError, proposals.ProposalError) as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return code or ExitCode.RECORD
    return code


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "approve",
        help="write the change the daemon proposes (mode: approve)",
        description="Show the standing proposal and write it as the cycle would have: only "
        "the one --id names, before it expires, and to a scheduler file unchanged since it "
        "was made; the audit line names the approver.",
    )
    add_config_option(p)
    p.add_argument("--id", help="approve only this proposal (its id in `amtuner status`)")
    p.add_argument(
        "--by", metavar="NAME", help="who approves, for the audit line (default: the OS user)"
    )
    p.set_defaults(func=cmd_approve)
