"""`amtuner demo`: the whole loop on one machine, over real HTTP, in under a minute.

It starts `amtuner sim` as a child process (a simulated RM in accelerated time), writes a config
pointing at it, and runs the same `Cycle` the daemon runs, once per control period, printing what
each cycle saw and did until the workload drains. Nothing here is special-cased for the demo: it is
what an operator would do by hand with `amtuner sim` and `amtuner once`.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from amtuner.commands import build_cycle, target_name
from amtuner.config import ControllerSettings, PolicyName, load_config
from amtuner.exitcodes import ExitCode
from amtuner.model import ControllerState

if TYPE_CHECKING:
    from amtuner.cycle import Cycle


class SimStartError(RuntimeError):
    pass


@contextlib.contextmanager
def running_sim(
    argv: list[str], timeout_s: float = 30.0, log_level: str = "WARNING"
) -> Iterator[tuple[str, Path]]:
    """Start `amtuner sim …`, wait for its address and config path, stop it on exit."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "amtuner", "--log-level", log_level, "sim", *argv],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url, config = None, None
        deadline = time.monotonic() + timeout_s
        assert proc.stdout is not None
        while (url is None or config is None) and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            if m := re.match(r"scheduler config: (.+)", line.strip()):
                config = Path(m.group(1))
            if m := re.match(r"listening on (http://\S+)", line.strip()):
                url = m.group(1)
        if url is None or config is None:
            raise SimStartError(f"amtuner sim did not start (exit code {proc.poll()})")
        yield url, config
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def cmd_demo(args: argparse.Namespace) -> int:
    try:
        return _demo(args)
    except SimStartError as exc:
        print(f"amtuner demo: {exc}", file=sys.stderr)
        return ExitCode.FAILED


def _demo(args: argparse.Namespace) -> int:
    import yaml

    period_sim_s = args.period
    sim_argv = [
        "--scheduler", args.scheduler, "--workload", args.workload,
        "--port", "0", "--speed", str(args.speed),
    ]
    with tempfile.TemporaryDirectory(prefix="amtuner-demo-") as tmp:
        work = Path(tmp)
        with running_sim(sim_argv) as (url, sched_path):
            refresh: dict[str, object]
            if args.scheduler == "fair":
                refresh = {"method": "none"}
            else:
                refresh = {
                    "method": "command",
                    "command": [
                        sys.executable, "-m", "amtuner", "sim-admin", "refresh-queues",
                        "--url", url,
                    ],
                }
            doc = {
                "rm": {"urls": [url]},
                "scheduler": {"kind": args.scheduler, "config_file": str(sched_path)},
                "refresh": refresh,
                "controller": {"policy": args.policy, "period_seconds": period_sim_s / args.speed},
                "guard": {"hold_off_seconds": 0},
                "metrics": {"enabled": False},
                "dry_run": args.dry_run,
                "backup_dir": str(work / "backups"),
                "state_file": str(work / "state.json"),
            }
            config_path = work / "amtuner.yaml"
            config_path.write_text(yaml.safe_dump(doc, sort_keys=False))
            cfg = load_config(config_path)
            print(f"simulated RM at {url} ({args.scheduler} scheduler, {args.workload}, "
                  f"{args.speed:g}x); scheduler file {sched_path}")
            print(f"policy {args.policy}; one control period = {period_sim_s:g} simulated s; "
                  f"{'dry-run' if args.dry_run else 'live'}\n")
            print(f"{'cycle':>5} {'sim s':>6} {'P':>4} {'R':>4} {'mem':>5}  A")
            return _loop(build_cycle(cfg), args, period_sim_s)


def _loop(cycle: Cycle, args: argparse.Namespace, period_sim_s: float) -> int:
    states: dict[str, ControllerState] = {}
    started = time.monotonic()
    changes, seen_jobs = 0, False
    for n in range(1, args.max_cycles + 1):
        report, states = cycle.run(states)
        sim_s = (time.monotonic() - started) * args.speed
        obs = report.observation
        if obs is None:
            print(f"{n:>5} {sim_s:>6.0f}  error {report.error}: {report.message}")
        else:
            for d in report.decisions:
                a = f"{d.old_a:g}" if not d.changed else f"{d.old_a:g} -> {d.new_a:g}"
                print(f"{n:>5} {sim_s:>6.0f} {obs.pending_apps:>4} {obs.running_apps:>4} "
                      f"{obs.memory_ratio:>5.2f}  {a:<16} {target_name(d.target)} [{d.rule}]")
                changes += d.changed
            seen_jobs = seen_jobs or obs.pending_apps + obs.running_apps > 0
            if seen_jobs and obs.pending_apps == 0 and obs.running_apps == 0:
                print("\nworkload drained.")
                break
        time.sleep(max(0.0, started + n * period_sim_s / args.speed - time.monotonic()))
    verb = "would have changed" if args.dry_run else "changed"
    print(f"{n} cycles; the controller {verb} A {changes} times.")
    return ExitCode.OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run the control loop against a simulated RM started for the purpose",
        description="Start `amtuner sim`, then run one control cycle per period against it "
        "over HTTP, printing what each cycle saw and did.",
    )
    p.add_argument("--scheduler", choices=["capacity", "fair"], default="capacity",
                   help="the simulated RM's scheduler (default: %(default)s)")
    p.add_argument("--workload", default="paper:mixed", help="default: %(default)s")
    p.add_argument("--policy", choices=get_args(PolicyName), default=ControllerSettings().policy,
                   help="the controller policy (default: %(default)s)")
    p.add_argument("--period", type=float, default=10.0,
                   help="control period in simulated seconds (default: %(default)s)")
    p.add_argument("--speed", type=float, default=10.0,
                   help="simulated seconds per wall second (default: %(default)s)")
    p.add_argument("--max-cycles", type=int, default=120, help="default: %(default)s")
    p.add_argument("--dry-run", action="store_true", help="show the changes, write nothing")
    p.set_defaults(func=cmd_demo)
