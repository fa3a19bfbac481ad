"""`amtuner bench oracle`: its command line, apart from `amtuner.bench.oracle`, which imports the
simulator (building the parser must not)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from amtuner.bench import add_json_argument, default_workers, whole_number, write_json
from amtuner.exitcodes import ExitCode

KNOWS = ("all", "present", "started")
"""`amtuner.bench.oracle.Knows`'s values, named here so that building the parser does not import
the simulator (tests/bench/test_oracle.py holds the two together)."""


def cmd(args: argparse.Namespace) -> int:
    from amtuner.sim import native

    if not native.use_python_core():
        print(f"amtuner: {native.COMPILED_CANNOT_COPY}", file=sys.stderr)
        return ExitCode.FAILED
    from amtuner.bench import common, oracle

    logging.getLogger("amtuner.sim").setLevel(logging.WARNING)
    try:
        record = json.loads(args.record.read_text())
        summary = oracle.judge(
            record, args.scheduler, args.run_seed, args.workers, common.tqdm_progress,
            oracle.Knows(args.knows),
        )
    except OSError as exc:
        print(f"amtuner: {args.record}: {exc.strerror or exc}", file=sys.stderr)
        return ExitCode.CONFIG
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        print(f"amtuner: {args.record}: not a `bench zoo --json` record: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    print(oracle.format_report(summary))
    if args.json and not write_json(args.json, summary):
        return ExitCode.FAILED
    return ExitCode.OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "oracle",
        help="the ceiling of a twin controller: the cluster itself simulated ahead, on a zoo "
        "record's cases",
        description="Run each case of a `bench zoo --json` record under an oracle that, every "
        "minute, copies the simulation (every job's true size and the arrivals ahead, or less "
        "with --knows), runs candidate values of A for an hour and keeps the best: what a "
        "controller that simulates the cluster ahead reaches with a perfect model. Reports its "
        "mean JCT over the best fixed value's on one run seed beside the record's rows. Runs "
        "the simulator's Python core (compiled classes do not copy). See docs/policies.md, "
        "\"An oracle twin\".",
    )
    p.add_argument("record", type=Path, help="a `bench zoo --json` record")
    p.add_argument("--scheduler", choices=["case", "capacity", "fair"], default="case",
                   help="the record's cases on this scheduler, or all (default: %(default)s)")
    p.add_argument("--run-seed", type=whole_number(0), default=0,
                   help="the record's run seed to run and compare on (default: %(default)s)")
    p.add_argument("--knows", choices=KNOWS, default="all",
                   help="what the copies know: every job, arrivals to come included; only the "
                   "apps submitted so far; or those, with the apps whose AM has not run taken "
                   "to be like the last ones started (default: %(default)s)")
    p.add_argument("--workers", type=whole_number(1), default=default_workers(),
                   help="parallel processes (default: the CPUs available, %(default)s)")
    add_json_argument(p)
    p.set_defaults(func=cmd)
