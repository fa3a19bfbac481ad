"""`amtuner bench advise-real`: `amtuner advise` checked on Hadoop's own ResourceManager.

Per scheduler: `amtuner bench real`'s batch runs on a fresh real cluster at the scheduler's
default AM share while `amtuner record` records it (as an operator would run it, beside the
cluster); `amtuner advise` replays that trace (`amtuner.advise.sweep`) and recommends; the same
batch then runs on a fresh real cluster at the recommended value. Two checks follow:

* the gain advise predicted against the default (its replay at the recommended value against
  its replay at the default) and the gain measured (the real run at the recommended value
  against the recorded real run at the default), each a fraction of the default's mean JCT,
  agree within `GAIN_TOLERANCE`;
* the recommended value's real mean JCT is within `BEST_TOLERANCE` of the best real fixed row:
  the default's, measured here, and `amtuner.bench.real.FIXED_VALUES`, measured here or taken
  from an earlier `bench real --json` of the same batch.

The batch is 16 apps, under `amtuner.advise.MIN_APPS`: the floor is for a recorded period whose
advice is to serve the periods after it, which a handful of apps cannot stand for; here the
advice is judged on the very apps it was made from, run again, so no other period is spoken for.
Each real run's load average (the machine's other work slows a real RM's AMs and tasks, not the
simulator's) is kept beside its figures.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from statistics import mean
from typing import Any

from amtuner.advise import ADAPTIVE, Period, Sweep, coarse_labels, label_of, recommend, sweep
from amtuner.bench import real
from amtuner.bench.common import DEFAULT_A
from amtuner.bench.real import FIXED_VALUES
from amtuner.model import SchedulerKind
from amtuner.realyarn.build import Build

GAIN_TOLERANCE = 0.10
"""Predicted and measured gain agree within 10 % of the default's mean JCT (issue 38's bar)."""
BEST_TOLERANCE = 0.05
"""The recommended value's real mean JCT within 5 % of the best real fixed row's."""


def measured(
    kind: SchedulerKind,
    a: float | None,
    where: Path,
    build: Build,
    progress: Callable[[str], None],
    record_to: Path | None = None,
) -> dict[str, Any]:
    """One real run of the batch at ``a`` (None: the adaptive policy), with the load average
    before and after it; a run with a stuck app (`real.StuckApp`) is made once more on a fresh
    cluster, into a fresh trace."""
    policy = ADAPTIVE if a is None else "paper"
    load_before = os.getloadavg()[0]
    try:
        run = real.run_real(kind, a, policy, where, build, record_to=record_to)
    except real.StuckApp as exc:
        progress(f"{kind} {label_of(a or ADAPTIVE)}: {exc}; again, fresh cluster")
        if record_to is not None:
            record_to.unlink(missing_ok=True)
        again = where.with_name(f"{where.name}-again")
        run = real.run_real(kind, a, policy, again, build, record_to=record_to)
    return {
        "mean_jct_s": run.figures.mean_jct_s,
        "makespan_s": run.figures.makespan_s,
        "ams_at_once": run.figures.ams_at_once,
        "load": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "hadoop_version": run.hadoop_version,
    }


def advice(
    trace: Path, kind: SchedulerKind, current: str, seeds: int, workers: int
) -> dict[str, Any]:
    """`amtuner advise` on ``trace`` as its ``--json`` has it for one target (the global value,
    a default leaf per queue of the trace): every value's row and the recommendation."""
    period = Period(f"trace:{trace}")
    apps = len(period.load().jobs)
    (table,) = sweep([Sweep(period, kind, coarse_labels(current), current)], range(seeds), workers)
    value, why = recommend(table, current)
    return {"apps": apps, "current": current, "recommended": value, "why": why,
            "rows": [asdict(r) for r in table]}  # fmt: skip


def bench_fixed_rows(summary: dict[str, Any], kind: SchedulerKind) -> dict[str, float]:
    """The real mean JCT of each fixed row (``fixed:A``) an earlier `bench real` recorded."""
    return {
        label_of(float(r["policy"].removeprefix("fixed:"))): r["real_mean_jct_s"]
        for r in summary["rows"]
        if r["scheduler"] == kind.value and r["policy"].startswith("fixed:")
    }


def check(
    kind: SchedulerKind,
    work: Path,
    build: Build,
    progress: Callable[[str], None],
    seeds: int,
    workers: int,
    recorded: dict[str, Any] | None = None,
    runs: int = 1,
) -> dict[str, Any]:
    """Record, advise, run the recommendation; ``recorded``: an earlier `bench real` summary
    whose fixed rows stand in for measuring them again. ``runs`` rounds of real runs, each
    round the default, the fixed values (unless ``recorded``) and the recommendation in turn, so
    the machine's load weighs on each value alike; the first round's default is the one
    recorded and advised on."""
    default = label_of(DEFAULT_A[kind])
    trace = work / "trace.jsonl"
    labels = [default, *(map(label_of, FIXED_VALUES) if recorded is None else ())]
    each: dict[str, list[dict[str, Any]]] = {}
    report: dict[str, Any] = {}
    for i in range(1, runs + 1):
        for label in labels:
            first = i == 1 and label == default
            where = work / f"{label}-run-{i}"
            a = None if label == ADAPTIVE else float(label)
            one = measured(kind, a, where, build, progress, trace if first else None)
            each.setdefault(label, []).append(one)
            progress(f"{kind} {label} run {i}: {one}")
            if first:
                report = advice(trace, kind, default, seeds, workers)
                progress(f"{kind} advise: {report['recommended']} ({report['why']})")
                if report["recommended"] not in labels:
                    labels.append(report["recommended"])
    rec = report["recommended"]
    real_jct = {label: round(mean(r["mean_jct_s"] for r in rs), 3) for label, rs in each.items()}
    if recorded is not None:
        fixed = {**bench_fixed_rows(recorded, kind), default: real_jct[default]}
    else:
        fixed = {label: real_jct[label] for label in (default, *map(label_of, FIXED_VALUES))}
    row = next(r for r in report["rows"] if r["label"] == rec)
    predicted = 1 - row["jct_ratio"]
    gain = 1 - real_jct[rec] / real_jct[default]
    best = min(fixed, key=lambda label: fixed[label])
    off_best = real_jct[rec] / fixed[best] - 1
    return {
        "scheduler": kind.value,
        "default": default,
        "recommended": rec,
        "why": report["why"],
        "runs": runs,
        "predicted_gain": round(predicted, 4),
        "measured_gain": round(gain, 4),
        "gain_difference": round(predicted - gain, 4),
        "real_mean_jct_s": real_jct,
        "fixed_from": "this run" if recorded is None else "bench real, the default this run",
        "fixed_jct_s": fixed,
        "best_fixed": best,
        "recommended_vs_best": round(off_best, 4),
        "gains_agree": abs(predicted - gain) <= GAIN_TOLERANCE,
        "near_best": off_best <= BEST_TOLERANCE,
        "real": each,
        "advice": report,
    }


def format_result(r: dict[str, Any]) -> str:
    return (
        f"{r['scheduler']:<9} default {r['default']:>4}  recommended {r['recommended']:>8}  "
        f"gain predicted {r['predicted_gain']:+.1%} measured {r['measured_gain']:+.1%} "
        f"(difference {r['gain_difference']:+.1%}, {'within' if r['gains_agree'] else 'OVER'} "
        f"{GAIN_TOLERANCE:.0%})  real JCT {r['real_mean_jct_s'][r['recommended']]:.1f} s vs "
        f"best fixed {r['best_fixed']} {r['fixed_jct_s'][r['best_fixed']]:.1f} s "
        f"({r['recommended_vs_best']:+.1%}, {'within' if r['near_best'] else 'OVER'} "
        f"{BEST_TOLERANCE:.0%})"
    )


def run(
    kinds: Sequence[SchedulerKind],
    work: Path,
    progress: Callable[[str], None],
    seeds: int,
    workers: int,
    recorded: dict[str, Any] | None = None,
    runs: int = 1,
) -> dict[str, Any]:
    from amtuner.realyarn.build import ensure_built

    build = ensure_built()
    results = []
    for kind in kinds:
        one = check(kind, work / kind.value, build, progress, seeds, workers, recorded, runs)
        results.append(one)
        progress(format_result(results[-1]))
    return {
        "parameters": real.parameters(
            [one["hadoop_version"] for r in results for rs in r["real"].values() for one in rs],
            real.host_shape(),
        ),
        "seeds": seeds,
        "runs": runs,
        "results": results,
    }
