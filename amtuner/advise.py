"""`amtuner advise`: what each AM share would have done to a recorded period, before any is set.

The period (an app trace from `amtuner record`, `amtuner.sim.workload.apps`) is replayed through
the simulator on the cluster given, under the current value, the fixed values 0.1 … 1.0, then
0.05 either side of the best of those, and the adaptive policy, each over the same seeds (a seed
jitters task lengths and heartbeat phases, not the arrivals: those are the record). Every run is
one process of `run_all`'s pool, on every core unless told.

Per value: the mean over seeds of the mean job completion time, the mean wait in ACCEPTED
(submission to AM container) and the makespan, and each against the current value's as a
ratio with its spread (two paired standard errors, `paired_se`). The recommendation is the value
with the best mean JCT, unless its gain over the current value is within that spread: then the
current value is as good as the record can tell.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amtuner.bench import whole_number
from amtuner.exitcodes import ExitCode

if TYPE_CHECKING:
    from amtuner.model import SchedulerKind
    from amtuner.sim.spec import Workload

MIN_APPS = 30
"""Fewer replayable apps than the paper's batch of 30 is refused: a handful of apps gives a mean
JCT that one app's length moves, whatever the share."""
MIN_SEEDS = 2
"""The spread needs two seeds at least."""
ADAPTIVE = "adaptive"
NOISE_SE = 2.0
"""A change within two standard errors is not told apart from the seeds' noise."""

Key = tuple[str, int]
"""(the value's label, seed): one run."""


@dataclass(frozen=True, slots=True)
class Row:
    label: str
    a: float | None
    """None for a policy."""
    jct_s: float | None
    wait_s: float | None
    makespan_s: float | None
    jct_ratio: float | None
    jct_se: float | None
    wait_ratio: float | None
    wait_se: float | None
    makespan_ratio: float | None
    makespan_se: float | None
    """Each figure against the current value's, with the standard error of the per-seed ratios."""


def label_of(a: float | str) -> str:
    return a if isinstance(a, str) else f"{a:g}"


def _run(
    workload: Workload, scheduler: SchedulerKind, max_sim_seconds: float, key: Key
) -> dict[str, float | None]:
    """One replay, in a worker process: the figures the advice compares."""
    from amtuner.bench.common import simulate

    label, seed = key
    policy = label if label == ADAPTIVE else "paper"
    a = None if label == ADAPTIVE else float(label)
    r = simulate(
        workload, scheduler, a, seed, max_sim_seconds=max_sim_seconds, policy=policy
    )
    # A run that never finished (every AM holding the memory its tasks need) has no mean wait
    # worth comparing: the apps that never got an AM are not in it.
    wait = r.mean_wait_s if r.finished else None
    return {"jct": r.mean_jct_s, "wait": wait, "makespan": r.makespan_s}


def rows(
    results: dict[Key, dict[str, float | None]], labels: list[str], seeds: int, current: str
) -> list[Row]:
    from amtuner.bench.common import mean_or_none, paired_se, ratio

    def series(label: str, figure: str) -> list[float | None]:
        return [results[(label, s)][figure] for s in range(seeds)]

    out = []
    for label in labels:
        figures: dict[str, Any] = {}
        for figure in ("jct", "wait", "makespan"):
            mine, base = series(label, figure), series(current, figure)
            figures[figure] = mean_or_none(mine)
            figures[f"{figure}_ratio"] = ratio(mean_or_none(mine), mean_or_none(base))
            figures[f"{figure}_se"] = paired_se(mine, base)
        out.append(
            Row(
                label=label,
                a=None if label == ADAPTIVE else float(label),
                jct_s=figures["jct"],
                wait_s=figures["wait"],
                makespan_s=figures["makespan"],
                jct_ratio=figures["jct_ratio"],
                jct_se=figures["jct_se"],
                wait_ratio=figures["wait_ratio"],
                wait_se=figures["wait_se"],
                makespan_ratio=figures["makespan_ratio"],
                makespan_se=figures["makespan_se"],
            )
        )
    return out


def best_fixed(table: list[Row]) -> Row | None:
    finished = [r for r in table if r.a is not None and r.jct_s is not None]
    return min(finished, key=lambda r: (r.jct_s, r.a)) if finished else None


def recommend(table: list[Row], current: str) -> tuple[str, str]:
    """(the value to set, why): the best mean JCT of all rows, unless it is within the noise of
    the current value's."""
    done = [r for r in table if r.jct_s is not None]
    if not done:
        return current, "no value finished the period: nothing to compare"
    best = min(done, key=lambda r: (r.jct_s, r.label != current))
    if best.label == current:
        return current, f"the current value {current} has the best mean JCT"
    assert best.jct_ratio is not None
    gain = 1 - best.jct_ratio
    if best.jct_se is None or gain <= NOISE_SE * best.jct_se:
        return current, (
            f"{best.label} has the best mean JCT, {gain:+.1%} against the current {current}, "
            f"within the noise (2 SE = {NOISE_SE * (best.jct_se or 0):.1%}): keep {current}"
        )
    return best.label, (
        f"mean JCT {gain:.1%} shorter than under the current {current} "
        f"(2 SE = {NOISE_SE * best.jct_se:.1%})"
    )


def refinements(best: float) -> list[float]:
    """0.05 either side of the best of the coarse grid, within (0, 1]."""
    return [v for v in (round(best - 0.05, 2), round(best + 0.05, 2)) if 0 < v <= 1]


def cmd_advise(args: argparse.Namespace) -> int:
    from amtuner.bench import default_workers
    from amtuner.bench.common import DEFAULT_A, run_all, tqdm_progress
    from amtuner.model import SchedulerKind
    from amtuner.sim.workload import WorkloadError
    from amtuner.sim.workload.apps import load_apps

    kind = SchedulerKind(args.scheduler)
    try:
        workload = load_apps(
            args.trace, nodes=args.nodes, node_memory_mb=args.node_memory_mb,
            node_vcores=args.node_vcores,
        )  # fmt: skip
    except WorkloadError as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    if len(workload.jobs) < MIN_APPS:
        print(
            f"amtuner: {args.trace}: {len(workload.jobs)} apps whose AM started; advice needs "
            f"at least {MIN_APPS}: record a longer period",
            file=sys.stderr,
        )
        return ExitCode.FAILED
    current = label_of(DEFAULT_A[kind] if args.current is None else args.current)
    last_submit = max(j.submit_s for j in workload.jobs)
    work_s = sum(j.am_startup_s + j.maps[0].duration_s for j in workload.jobs)
    limit_s = last_submit + 10 * work_s + 3600
    run = functools.partial(_run, workload, kind, limit_s)
    workers = args.workers or default_workers()
    seeds = range(args.seeds)
    coarse = list(dict.fromkeys([current, *(f"{i / 10:g}" for i in range(1, 11)), ADAPTIVE]))
    results = run_all(run, [(v, s) for v in coarse for s in seeds], workers, tqdm_progress, 1)
    best = best_fixed(rows(results, coarse, args.seeds, current))
    fine = [label_of(v) for v in refinements(best.a)] if best and best.a else []
    fine = [v for v in fine if v not in coarse]
    if fine:
        results |= run_all(run, [(v, s) for v in fine for s in seeds], workers, tqdm_progress, 1)
    labels = sorted(
        [*coarse, *fine], key=lambda v: (v == ADAPTIVE, math.inf if v == ADAPTIVE else float(v))
    )
    table = rows(results, labels, args.seeds, current)
    value, why = recommend(table, current)
    report = {
        "trace": str(args.trace),
        "workload": {
            "apps": len(workload.jobs), "nodes": workload.nodes,
            "node_memory_mb": workload.node_memory_mb, "queues": list(workload.queues),
        },
        "scheduler": kind.value,
        "seeds": args.seeds,
        "current": current,
        "recommended": value,
        "why": why,
        "rows": [asdict(r) for r in table],
    }  # fmt: skip
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_table(report, table)
    return ExitCode.OK


def print_table(report: dict[str, Any], table: list[Row]) -> None:
    from amtuner.bench.common import fmt

    w = report["workload"]
    print(
        f"{report['trace']}: {w['apps']} apps on {w['nodes']} nodes x {w['node_memory_mb']} MB, "
        f"{report['scheduler']} scheduler, {report['seeds']} seeds; current value "
        f"{report['current']}"
    )

    def change(r: float | None, se: float | None) -> str:
        if r is None:
            return "never"
        spread = "" if se is None else f" ±{NOISE_SE * se:.1%}"
        return f"{r - 1:+.1%}{spread}"

    print(f"{'value':>8} {'JCT s':>9} {'vs current':>16} {'wait s':>8} {'vs current':>16} "
          f"{'makespan s':>10} {'vs current':>16}")  # fmt: skip
    for r in table:
        mark = " <" if r.label == report["recommended"] else ""
        print(
            f"{r.label:>8} {fmt(r.jct_s):>9} {change(r.jct_ratio, r.jct_se):>16} "
            f"{fmt(r.wait_s):>8} {change(r.wait_ratio, r.wait_se):>16} "
            f"{fmt(r.makespan_s):>10} {change(r.makespan_ratio, r.makespan_se):>16}{mark}"
        )
    print(f"recommended: {report['recommended']}: {report['why']}")


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not an AM share in (0, 1]")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "advise",
        help="replay a recorded period under each AM share and say which would have served best",
        description="Replay an app trace (amtuner record) through the simulator under the "
        "current AM share, fixed values 0.1-1.0 (0.05 around the best) and the adaptive "
        "policy, over several seeds, and recommend the value with the best mean JCT unless its "
        f"gain is within the noise. Refuses a trace of fewer than {MIN_APPS} apps (exit 1). "
        "See docs/advise.md.",
    )
    p.add_argument("--trace", type=Path, required=True, help="the app trace to replay")
    p.add_argument(
        "--scheduler", choices=["capacity", "fair"], required=True,
        help="the cluster's scheduler, whose AM share is advised",
    )  # fmt: skip
    p.add_argument("--nodes", type=whole_number(1), help="nodes (default: the trace header's)")
    p.add_argument("--node-memory-mb", type=whole_number(1), help="default: the trace header's")
    p.add_argument("--node-vcores", type=whole_number(1), help="default: the trace header's")
    p.add_argument(
        "--current", type=_fraction,
        help="the AM share the cluster runs now (default: the scheduler's, 0.1 or 0.5)",
    )  # fmt: skip
    p.add_argument(
        "--seeds", type=whole_number(MIN_SEEDS), default=5, help="default: %(default)s"
    )
    p.add_argument("--workers", type=whole_number(1), help="processes (default: every core)")
    p.add_argument("--json", action="store_true", help="the report as JSON, for programs")
    p.set_defaults(func=cmd_advise, compiled_core=True)
