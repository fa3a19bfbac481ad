"""`amtuner bench advise`: is `amtuner advise`'s recommendation as good as the best fixed value,
on traces from outside the project, judged on seeds the advice never saw?

Each trace (a SWIM day on a cluster small enough for the AM limit to bind, Hadoop SLS's sample
traces, the jobs SLS's synthetic descriptions draw, scaled up: `SYNTH_TRACES`) is cut into
periods of ``window`` seconds of submissions, each advised as an operator would advise on an
hour of recorded history. Per period and scheduler:

1. `amtuner advise`'s sweep on the advice seeds (``0 …``): its recommendation, as the command
   gives it (the current value kept when the best gain is within the noise);
2. the same sweep of every fixed value 0.1 … 1.0 (then 0.05 either side of the best), the
   recommendation and the scheduler's default on the judging seeds (from
   `JUDGING_FIRST_SEED`), which jitter task lengths and heartbeat phases differently;
3. the recommendation's mean JCT on the judging seeds over the best fixed value's there, and
   the noise of that ratio: two standard errors of its per-seed ratios (`NOISE_SE`).

Per trace, the mean, p90 and worst of that ratio over its periods (`zoo.spread`), beside the
scheduler default's: how much there was to gain. A period of fewer apps than advice needs is
refused as `amtuner advise` refuses it, and counted. The bar: every trace's mean ratio within
`BAR` of 1.

``judge_value`` judges a fixed value of the caller's in place of the recommendation, so that a
value known to be wrong shows the judgement failing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amtuner.advise import (
    NOISE_SE,
    Period,
    Row,
    Sweep,
    best_fixed,
    coarse_labels,
    label_of,
    recommend,
    sweep,
    too_short,
)
from amtuner.bench.common import DEFAULT_A, Progress
from amtuner.bench.suite import RUMEN_TRACE, SLS_TRACE, SMALL_CLUSTERS, SWIM_SECOND_DAY, SWIM_TRACE
from amtuner.bench.zoo import spread
from amtuner.model import SchedulerKind
from amtuner.sim.workload import load_workload

JUDGING_FIRST_SEED = 1000
"""Judging seeds start here, far from the advice seeds (0 up): no run of the judgement was
seen by the advice."""
BAR = 0.03
"""How far above the best fixed value's mean JCT a trace's mean may lie: the bar the
recommendation is held to."""
WINDOW_S = 3600.0
"""One hour of submissions a period: the SWIM days are 24 one-hour samples of Facebook's
2009 cluster, so each period is one sample, as drawn."""
SYNTH_TRACES = (
    (Path("fixtures/sls/syn.json"), 300),
    (Path("fixtures/sls/syn_generic.json"), 300),
    (Path("fixtures/sls/syn_stream.json"), 100),
)
"""Hadoop SLS's synthetic descriptions and the jobs drawn from each, on its own 20 nodes of
10 GB: 30 times syn.json's 10 MapReduce jobs (1 GB AMs arriving within a minute, 300 GB of
them against 200 GB), 20 times syn_stream.json's 5 stream jobs (9 GB each, all at once). At
their own 10 and 5 jobs no AM limit binds, and advice needs 30 apps (`MIN_APPS`)."""
SYNTH_DRAWS = (1, 2, 3, 4)
"""The generator seeds each description is drawn with: each draw is a trace of its own."""


def synth_traces(shared: Path) -> list[str]:
    """Each of `SYNTH_TRACES` drawn with each of `SYNTH_DRAWS`."""
    return [
        f"synth:{shared / path}@jobs={jobs},seed={seed}"
        for path, jobs in SYNTH_TRACES
        for seed in SYNTH_DRAWS
    ]


def default_traces(shared: Path) -> list[str]:
    """The SWIM days on the suite's small clusters (on their 600 nodes no AM limit binds),
    SLS's sample job trace and rumen history, and its synthetic descriptions' draws."""
    specs = [
        f"swim:{shared / day}@{nodes}"
        for day in (SWIM_TRACE, SWIM_SECOND_DAY)
        for nodes in SMALL_CLUSTERS
    ]
    return [
        *specs, f"sls:{shared / SLS_TRACE}", f"rumen:{shared / RUMEN_TRACE}",
        *synth_traces(shared),
    ]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Case:
    trace: str
    period: Period
    scheduler: SchedulerKind
    apps: int
    refused: str | None = None
    """Why the period is too short to advise on (as `amtuner advise` says), or None."""


def periods(spec: str, window_s: float) -> list[tuple[Period, int]]:
    """``spec``'s submissions cut into windows of ``window_s`` (0: the whole trace), with the
    apps in each; windows without a submission are left out."""
    workload = load_workload(spec)
    if window_s <= 0:
        return [(Period(spec), len(workload.jobs))]
    counts: dict[int, int] = {}
    for j in workload.jobs:
        k = int(j.submit_s // window_s)
        counts[k] = counts.get(k, 0) + 1
    return [
        (Period(spec, k * window_s, (k + 1) * window_s), n) for k, n in sorted(counts.items())
    ]


def cases(
    traces: Sequence[str], schedulers: Sequence[SchedulerKind], window_s: float
) -> list[Case]:
    out = []
    for spec in traces:
        for period, _ in periods(spec, window_s):
            workload = period.load()
            refused = too_short(workload)
            out += [Case(spec, period, kind, len(workload.jobs), refused) for kind in schedulers]
    return out


def _row(table: list[Row], label: str) -> Row:
    return next(r for r in table if r.label == label)


def run_bench(
    traces: Sequence[str],
    schedulers: Sequence[SchedulerKind],
    *,
    window_s: float = WINDOW_S,
    advice_seeds: int = 5,
    judging_seeds: int = 5,
    workers: int = 1,
    judge_value: float | None = None,
    progress: Progress[dict[str, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """Advise on every period of ``traces`` on each of ``schedulers``, judge each
    recommendation (or ``judge_value``) on the judging seeds, and summarize per trace."""
    todo = cases(traces, schedulers, window_s)
    judged = [c for c in todo if c.refused is None]
    current = [label_of(DEFAULT_A[c.scheduler]) for c in judged]
    advice = sweep(
        [
            Sweep(c.period, c.scheduler, coarse_labels(cur), cur)
            for c, cur in zip(judged, current, strict=True)
        ],
        range(advice_seeds),
        workers,
        progress,
    )
    picks = [recommend(table, cur) for table, cur in zip(advice, current, strict=True)]
    chosen = [label_of(judge_value) if judge_value is not None else v for v, _ in picks]
    fixed = tuple(f"{i / 10:g}" for i in range(1, 11))
    seeds = range(JUDGING_FIRST_SEED, JUDGING_FIRST_SEED + judging_seeds)
    judging = sweep(
        [
            Sweep(c.period, c.scheduler, tuple(dict.fromkeys([*fixed, cur, v])), v)
            for c, cur, v in zip(judged, current, chosen, strict=True)
        ],
        seeds,
        workers,
        progress,
    )
    rows = []
    for c, cur, v, (rec, why), table in zip(judged, current, chosen, picks, judging, strict=True):
        best = best_fixed(table)
        mine, default = _row(table, v), _row(table, cur)
        rows.append(
            {
                "trace": c.trace, "scheduler": c.scheduler.value, "window": _window(c.period),
                "apps": c.apps, "recommended": rec, "why": why, "judged": v,
                "best_fixed": best.label if best else None,
                "jct_vs_best": _ratio(mine.jct_s, best),
                "noise": _noise(best),
                "default_vs_best": _ratio(default.jct_s, best),
                "judging_jct_s": {r.label: r.jct_s for r in table},
            }
        )  # fmt: skip
    refused = [
        {"trace": c.trace, "scheduler": c.scheduler.value, "window": _window(c.period),
         "apps": c.apps, "why": c.refused}
        for c in todo if c.refused is not None
    ]  # fmt: skip
    return {
        "parameters": {
            "traces": list(traces), "schedulers": [k.value for k in schedulers],
            "window_s": window_s, "advice_seeds": [0, advice_seeds - 1],
            "judging_seeds": [seeds.start, seeds.stop - 1], "bar": BAR,
            "judged_value": judge_value,
        },
        "traces": summarize(rows, traces, schedulers),
        "cases": rows,
        "refused": refused,
    }  # fmt: skip


def _noise(best: Row | None) -> float | None:
    """Two standard errors of the per-seed ratios, the best value's JCT to the judged value's
    (the judging table's base): how far the judged ratio moves with the seeds alone."""
    if best is None or best.jct_se is None:
        return None
    return round(NOISE_SE * best.jct_se, 4)


def _window(p: Period) -> list[float] | None:
    return None if math.isinf(p.end_s) else [p.first_s, p.end_s]


def _ratio(jct_s: float | None, best: Row | None) -> float | None:
    if jct_s is None or best is None or best.jct_s is None:
        return None
    return round(jct_s / best.jct_s, 4)


def summarize(
    rows: list[dict[str, Any]], traces: Sequence[str], schedulers: Sequence[SchedulerKind]
) -> list[dict[str, Any]]:
    """Per trace and scheduler: the spread of the recommendation's ratio to the best fixed
    value over its periods, the default's, how often the advice moved off the default, and
    whether the trace meets the bar (None: no period could be advised on)."""
    out = []
    for spec in traces:
        for kind in schedulers:
            mine = [r for r in rows if r["trace"] == spec and r["scheduler"] == kind.value]
            advised = spread([r["jct_vs_best"] for r in mine])
            mean = advised["mean"]
            out.append(
                {
                    "trace": spec, "scheduler": kind.value, "advised": advised,
                    "default": spread([r["default_vs_best"] for r in mine]),
                    "changed": sum(r["recommended"] != label_of(DEFAULT_A[kind]) for r in mine),
                    "meets_bar": None if not mine else (
                        advised["never"] == 0 and mean is not None and mean <= 1 + BAR
                    ),
                }
            )  # fmt: skip
    return out


def passed(summary: dict[str, Any]) -> bool:
    """Every trace with an advised period meets the bar."""
    return all(t["meets_bar"] is not False for t in summary["traces"])


def format_report(summary: dict[str, Any]) -> str:
    p = summary["parameters"]
    what = (
        f"fixed {p['judged_value']:g} in place of the recommendation"
        if p["judged_value"] is not None
        else "advise's recommendation"
    )
    lines = [
        f"bench advise: {what}; periods of {p['window_s']:g} s of submissions; advice seeds "
        f"{p['advice_seeds'][0]}..{p['advice_seeds'][1]}, judged on seeds "
        f"{p['judging_seeds'][0]}..{p['judging_seeds'][1]}; bar: mean within {p['bar']:.0%}",
        "mean JCT / best fixed value's mean JCT on the judging seeds, over each trace's periods",
        f"  {'trace':<58} {'sched':<8} {'n':>3}  {'advised mean':>12} {'p90':>6} {'worst':>6}"
        f"  {'default mean':>12} {'p90':>6} {'worst':>6}  {'moved':>5}  bar",
    ]

    def cell(x: Any) -> str:
        return "-" if x is None else x if isinstance(x, str) else f"{x:.3f}"

    for t in summary["traces"]:
        a, d = t["advised"], t["default"]
        if not a["cases"]:
            continue
        bar = {True: "ok", False: "FAIL", None: "-"}[t["meets_bar"]]
        lines.append(
            f"  {_short(t['trace']):<58} {t['scheduler']:<8} {a['cases']:>3}  "
            f"{cell(a['mean']):>12} {cell(a['p90']):>6} {cell(a['worst']):>6}  "
            f"{cell(d['mean']):>12} {cell(d['p90']):>6} {cell(d['worst']):>6}  "
            f"{t['changed']:>5}  {bar}"
        )
    refused: dict[str, dict[str, int]] = {}
    for r in summary["refused"]:  # one row per scheduler: count each period once
        refused.setdefault(r["trace"], {})[str(r["window"])] = r["apps"]
    for trace, periods in refused.items():
        apps = periods.values()
        lines.append(
            f"  refused (fewer apps than advice needs): {_short(trace)}: {len(periods)} "
            f"period(s) of {min(apps)}-{max(apps)} apps"
        )
    lines.append("bar: " + ("met" if passed(summary) else "NOT met"))
    return "\n".join(lines)


def _short(spec: str) -> str:
    kind, _, rest = spec.partition(":")
    return f"{kind}:{Path(rest).name}"
