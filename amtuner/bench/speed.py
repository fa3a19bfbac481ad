"""`amtuner bench speed`: how fast the simulator runs a trace day, against its own event loop.

For each workload (the FB-2009 SWIM day and a generated day of the FB-2010 class, see
`amtuner.sim.workload.generated`) and scheduler, two child processes run:

* a fixed-A run (the global AM share at `FIXED_A`, as `amtuner simulate`'s default ``fixed:0.5``)
  reports events, simulated and wall seconds (the engine's loop only, as `SimResult` counts it)
  and ns per event; before it, the same process times a bare `heapq` loop (`heapq_ns_per_event`),
  so that the ratio of the two is the model's cost per event over the cheapest possible loop on
  this machine, under the same load;
* a controlled run (``--controller``, default ``adaptive``: the real cycle in virtual time, as
  `amtuner simulate --policy adaptive` builds it with `ControlledRun`) reports its wall time over
  the fixed run's, and the µs one control cycle takes.

Each run is its own process (``python -m amtuner.bench.speed``) so that its peak resident set is
its own: the parent reads it from `os.wait4`'s rusage (``ru_maxrss``). Linux folds the launching
process's high-water mark into the child's at exec, so the parent loads no workload and no
simulator; the child also reports its own ``VmHWM`` (/proc/self/status) as a cross-check.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import logging
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amtuner.exitcodes import ExitCode
from amtuner.model import SchedulerKind

FIXED_A = 0.5
"""The AM share of the fixed run: `amtuner simulate`'s default policy, ``fixed:0.5``."""
HEAP_SIZE = 1_000
"""Pending events in the bare loop: each handler pushes one event for each it pops, so the heap
stays this size, the order of a busy day's pending task completions and heartbeats."""
HEAPQ_EVENTS = 1_000_000
HEAPQ_ROUNDS = 3
"""The bare loop runs this many times; its median is reported (one round can meet a busy core)."""
DAY = "day:25000,8000000"
QUICK_DAY = "day:300,6000"
TRACE = Path("fixtures/traces/FB-2009_samples_24_times_1hr_0.tsv")
QUICK_TRACE = Path("fixtures/traces/FB-2009_samples_24_times_1hr_0_first50jobs.tsv")
QUICK_HEAPQ_EVENTS = 100_000


class SpeedError(Exception):
    """A measurement could not be made; the message says which and why."""

    def __init__(self, message: str, code: int = ExitCode.FAILED) -> None:
        super().__init__(message)
        self.code = code


def heapq_ns_per_event(events: int, size: int = HEAP_SIZE) -> float:
    """ns per event of the cheapest event loop `Engine` could be: pop ``(time, seq, fn, arg)``
    from a `heapq`, call ``fn(arg)``, which pushes one event a fixed delay later."""
    rng = random.Random(0)
    seq = itertools.count(size)
    push, pop = heapq.heappush, heapq.heappop
    now = 0.0

    def handler(delay: float) -> None:
        push(queue, (now + delay, next(seq), handler, delay))

    delays = [rng.expovariate(1.0) for _ in range(size)]
    queue = [(d, i, handler, d) for i, d in enumerate(delays)]
    heapq.heapify(queue)
    started = time.perf_counter()
    for _ in range(events):
        now, _, fn, arg = pop(queue)
        fn(arg)
    return (time.perf_counter() - started) / events * 1e9


def own_peak_rss_mb() -> float | None:
    """This process's resident high-water mark since exec (VmHWM), where /proc has it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def measure(spec: str, scheduler: str, controller: str | None, heapq_events: int) -> dict[str, Any]:
    """One run in this process: the fixed-A run when ``controller`` is None, else that policy."""
    from amtuner.config import ControllerSettings
    from amtuner.sim.cli import DEFAULT_MAX_SIM_SECONDS
    from amtuner.sim.control import ControlledRun
    from amtuner.sim.simulation import Simulation, build_simulation, default_scheduler_config
    from amtuner.sim.spec import PERIOD_S
    from amtuner.sim.workload import load_workload

    class TimedRun(ControlledRun):
        """A controlled run that adds up the wall time its cycles take."""

        cycle_seconds = 0.0

        def _tick(self, sim: Simulation) -> None:
            started = time.perf_counter()
            super()._tick(sim)
            self.cycle_seconds += time.perf_counter() - started

    logging.getLogger("amtuner.sim").setLevel(logging.WARNING)
    started = time.perf_counter()
    workload = load_workload(spec)
    load_s = time.perf_counter() - started
    rounds = [heapq_ns_per_event(heapq_events) for _ in range(HEAPQ_ROUNDS if heapq_events else 0)]
    heapq_ns = statistics.median(rounds) if rounds else None
    share = None if controller else FIXED_A
    config = default_scheduler_config(scheduler, workload.queues, share)
    sim = build_simulation(scheduler, workload, config)
    with tempfile.TemporaryDirectory(prefix="amtuner-bench-speed-") as tmp:
        run = None
        if controller:
            settings = ControllerSettings(policy=controller, period_seconds=PERIOD_S)  # type: ignore[arg-type]
            run = TimedRun(sim, Path(tmp), controller=settings)
        result = sim.run(DEFAULT_MAX_SIM_SECONDS)
    return {
        "pid": os.getpid(),
        "parent_pid": os.getppid(),
        "workload": workload.name,
        "scheduler": scheduler,
        "policy": controller or f"fixed:{FIXED_A:g}",
        "jobs": len(workload.jobs),
        "maps": sum(g.count for j in workload.jobs for g in j.maps),
        "load_seconds": round(load_s, 4),
        "finished": result.finished,
        "events": result.events,
        "sim_seconds": result.sim_seconds,
        "wall_seconds": result.wall_seconds,
        "ns_per_event": round(result.wall_seconds / max(1, result.events) * 1e9, 1),
        "heapq_ns_per_event": round(heapq_ns, 1) if heapq_ns is not None else None,
        "cycles": run.cycles if run else 0,
        "cycle_seconds": round(run.cycle_seconds, 6) if run else 0.0,
        "own_peak_rss_mb": own_peak_rss_mb(),
    }


@dataclass(frozen=True)
class Child:
    """What a child process printed, and what the kernel says it used."""

    data: dict[str, Any]
    pid: int
    peak_rss_mb: float


def run_child(args: list[str]) -> Child:
    """``python -m amtuner.bench.speed ARGS`` in its own process; its JSON line and its rusage."""
    cmd = [sys.executable, "-m", "amtuner.bench.speed", *args]
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err)
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.stdout.close()
        pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = err.read().decode(errors="replace").strip().splitlines()
    if code != 0:
        why = lines[-1] if lines else f"exit status {code}"
        raise SpeedError(why, ExitCode.CONFIG if code == ExitCode.CONFIG else ExitCode.FAILED)
    # ru_maxrss is in KiB on Linux.
    return Child(json.loads(out), pid, usage.ru_maxrss / 1024)


def workloads(shared: Path | None, day: str, *, quick: bool) -> tuple[list[str], list[str]]:
    """The specs to measure and a note for each one skipped (the trace when fixtures are absent)."""
    trace = QUICK_TRACE if quick else TRACE
    if shared is not None and (shared / trace).is_file():
        return [f"swim:{shared / trace}", day], []
    where = "no shared fixtures" if shared is None else f"{shared / trace} not present"
    return [day], [f"skipped swim fb-2009: {where}"]


def bench(
    specs: list[str],
    schedulers: list[SchedulerKind],
    controller: str,
    heapq_events: int,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Every measurement, one child each; raises SpeedError at the first that fails."""
    check = run_child(["check", *specs])
    rows = []
    started = time.perf_counter()
    for spec in specs:
        for kind in schedulers:
            if progress:
                progress(f"{spec} on {kind.value}: fixed A = {FIXED_A:g}")
            fixed = run_child(["run", spec, kind.value, "--heapq-events", str(heapq_events)])
            if progress:
                progress(f"{spec} on {kind.value}: {controller}")
            ctl = run_child(["run", spec, kind.value, "--controller", controller])
            rows.append(row(fixed, ctl))
    return {
        "heap_size": HEAP_SIZE,
        "heapq_events": heapq_events,
        "heapq_rounds": HEAPQ_ROUNDS,
        "fixed_a": FIXED_A,
        "controller": controller,
        "parent_pid": os.getpid(),
        "check": check.data,
        "rows": rows,
        "wall_seconds": round(time.perf_counter() - started, 2),
    }


def row(fixed: Child, ctl: Child) -> dict[str, Any]:
    f, c = fixed.data, ctl.data
    return {
        "workload": f["workload"],
        "scheduler": f["scheduler"],
        "jobs": f["jobs"],
        "maps": f["maps"],
        "load_seconds": f["load_seconds"],
        "finished": f["finished"],
        "events": f["events"],
        "sim_seconds": f["sim_seconds"],
        "wall_seconds": f["wall_seconds"],
        "ns_per_event": f["ns_per_event"],
        "heapq_ns_per_event": f["heapq_ns_per_event"],
        "event_cost_ratio": round(f["ns_per_event"] / f["heapq_ns_per_event"], 2),
        "peak_rss_mb": round(fixed.peak_rss_mb, 1),
        "own_peak_rss_mb": f["own_peak_rss_mb"],
        "pid": fixed.pid,
        "parent_pid": f["parent_pid"],
        "controlled": {
            "policy": c["policy"],
            "finished": c["finished"],
            "events": c["events"],
            "wall_seconds": c["wall_seconds"],
            "cost_ratio": round(c["wall_seconds"] / f["wall_seconds"], 2),
            "cycles": c["cycles"],
            "us_per_cycle": round(c["cycle_seconds"] / max(1, c["cycles"]) * 1e6, 1),
            "peak_rss_mb": round(ctl.peak_rss_mb, 1),
            "own_peak_rss_mb": c["own_peak_rss_mb"],
            "pid": ctl.pid,
            "parent_pid": c["parent_pid"],
        },
    }


def format_table(summary: dict[str, Any]) -> str:
    head = (
        "| workload | sched | jobs | maps | events | sim s | wall s | ns/event | heapq ns "
        "| ×heapq | RSS MB | ctl wall s | ctl/fixed | µs/cycle |"
    )
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in summary["rows"]:
        c = r["controlled"]
        lines.append(
            f"| {r['workload']} | {r['scheduler']} | {r['jobs']:,} | {r['maps']:,} "
            f"| {r['events']:,} | {r['sim_seconds']:,.0f} | {r['wall_seconds']:.3f} "
            f"| {r['ns_per_event']:,.0f} | {r['heapq_ns_per_event']:,.0f} "
            f"| {r['event_cost_ratio']:.1f} | {r['peak_rss_mb']:.0f} | {c['wall_seconds']:.3f} "
            f"| {c['cost_ratio']:.2f} | {c['us_per_cycle']:,.0f} |"
        )
    lines.append(
        f"bare loop: heapq of {summary['heap_size']:,} events, median of "
        f"{summary['heapq_rounds']} x {summary['heapq_events']:,} events in the fixed run's "
        f"process; ctl = {summary['controller']} controller, fixed = A {summary['fixed_a']:g}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """The child side: ``check SPEC...`` loads each workload; ``run SPEC SCHEDULER`` measures
    one run. Prints one JSON object; a bad spec exits 2 with the reason on stderr."""
    from amtuner.sim.workload import WorkloadError

    p = argparse.ArgumentParser(prog="python -m amtuner.bench.speed")
    sub = p.add_subparsers(dest="what", required=True)
    c = sub.add_parser("check")
    c.add_argument("specs", nargs="+")
    r = sub.add_parser("run")
    r.add_argument("spec")
    r.add_argument("scheduler", choices=["capacity", "fair"])
    r.add_argument("--controller")
    r.add_argument("--heapq-events", type=int, default=0)
    args = p.parse_args(argv)
    try:
        if args.what == "check":
            data = _check(args.specs)
        else:
            data = measure(args.spec, args.scheduler, args.controller, args.heapq_events)
    except (WorkloadError, OSError) as exc:
        print(f"{exc}", file=sys.stderr)
        return ExitCode.CONFIG
    print(json.dumps(data))
    return ExitCode.OK


def _check(specs: list[str]) -> dict[str, Any]:
    from amtuner.sim.workload import load_workload

    out = {}
    for spec in specs:
        w = load_workload(spec)
        out[spec] = {"jobs": len(w.jobs), "maps": sum(g.count for j in w.jobs for g in j.maps)}
    return out


if __name__ == "__main__":
    sys.exit(main())
