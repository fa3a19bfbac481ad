"""`amtuner bench zoo`: policies judged on a distribution of drawn clusters, not on rows.

The paper bench and the suite are a few dozen hand-made rows, and a policy tuned row by row can
fit them and fail on a cluster it never saw. Here each case is drawn whole from a seed
(`amtuner.sim.workload.zoo`: cluster, weighted queues, MapReduce, Spark and Tez jobs, arrivals,
scheduler), and a policy is judged by the distribution of its figures over many cases: the
mean, the 90th percentile and the worst of its mean job completion time over the best fixed
value's, case by case, and how many cases it makes worse than the scheduler's default beyond
the noise of the run seeds.

Per case and run seed: the default A, every fixed A of a coarse grid (0.1 … 1.0), each policy
from the default, then the two values `FINE_STEP` either side of the coarse best by mean JCT; the
best fixed value is the best of all of them. Each (case, value, run seed) is one job of the
process pool. Policies tune the global value (``targets`` empty, as `amtuner run` does unless
configured, and as `amtuner simulate --policy` replays), so they are compared with fixed global
values: a fixed grid per queue would be a grid of grids.

Case seeds `ZOO_DEVELOPMENT_SEEDS` are for developing and tuning a policy; judge it on seeds
from `ZOO_JUDGING_FIRST_SEED` up, which it was never run on.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from amtuner.bench import ZOO_DEVELOPMENT_SEEDS, ZOO_JUDGING_FIRST_SEED, ZOO_RUN_SEEDS
from amtuner.bench.common import (
    DEFAULT_A,
    Progress,
    mean_or_none,
    paired_se,
    ratio,
    run_all,
    simulate,
)
from amtuner.model import SchedulerKind
from amtuner.sim.spec import PERIOD_S
from amtuner.sim.workload import ZooCase, zoo_case

COARSE_VALUES = tuple(round(i / 10, 1) for i in range(1, 11))
"""0.1 … 1.0: A = 0 starts no AM on a FairScheduler and one at a time on a CapacityScheduler."""
FINE_STEP = 0.05
"""The coarse best's neighbours at this step are run too, so the best found is within it."""
NOISE_SES = 2.0
"""A policy worse than the default by more than this many standard errors of the run seeds'
paired ratio (`paired_se`) is worse; by less, it may be the seeds' luck."""
WORST_SHOWN = 5

SchedulerChoice = str
"""``case`` (each case's own), ``capacity``, ``fair`` or ``both``."""


@dataclass(frozen=True, slots=True)
class Run:
    """One simulation: the unit of work the pool runs."""

    case_seed: int
    scheduler: SchedulerKind
    a: float | None
    """A fixed global AM share, or None for ``policy`` from the scheduler's default."""
    run_seed: int
    policy: str = ""


@dataclass(frozen=True, slots=True)
class Outcome:
    mean_jct_s: float | None
    """None: the run did not finish by the case's horizon."""
    makespan_s: float | None
    cpu_s: float
    """CPU time of the whole run (drawing the case, building and simulating it) in its worker:
    what it costs, whatever else the machine runs."""


@dataclass(slots=True)
class CaseResult:
    """One case on one scheduler: every value's outcome per run seed."""

    seed: int
    scheduler: SchedulerKind
    about: dict[str, Any]
    fixed: dict[float, list[Outcome]] = field(default_factory=dict)
    policies: dict[str, list[Outcome]] = field(default_factory=dict)


@dataclass(slots=True)
class ZooResult:
    first_seed: int
    seeds: int
    policies: list[str]
    scheduler: SchedulerChoice
    cases: list[CaseResult]
    workers: int
    wall_seconds: float


def run_one(run: Run) -> Outcome:
    started = time.process_time()
    case = zoo_case(run.case_seed, run_seed=run.run_seed)
    result = simulate(
        case.workload, run.scheduler, run.a, run.run_seed,
        max_sim_seconds=case.max_sim_seconds, policy=run.policy or "paper",
    )  # fmt: skip
    cpu = time.process_time() - started
    if not result.finished:
        return Outcome(None, None, cpu)
    return Outcome(result.mean_jct_s, result.makespan_s, cpu)


def schedulers_for(case: ZooCase, choice: SchedulerChoice) -> list[SchedulerKind]:
    if choice == "case":
        return [case.scheduler]
    if choice == "both":
        return list(SchedulerKind)
    return [SchedulerKind(choice)]


def about(case: ZooCase) -> dict[str, Any]:
    """What a report says of a case: its cluster, queues, jobs and arrivals."""
    w = case.workload
    return {
        "nodes": w.nodes,
        "node_memory_mb": w.node_memory_mb,
        "node_vcores": w.node_vcores,
        "queues": list(w.queues),
        "queue_weights": list(w.queue_weights),
        "jobs": len(w.jobs),
        "tasks": sum(g.count for j in w.jobs for g in (*j.maps, *j.reduces)),
        "arrival": case.arrival,
        "families": list(case.families),
        "case_scheduler": case.scheduler.value,
        "max_sim_seconds": case.max_sim_seconds,
    }


def run_zoo(
    first_seed: int,
    cases: int,
    seeds: int = ZOO_RUN_SEEDS,
    policies: Sequence[str] = ("adaptive", "paper"),
    workers: int = 1,
    scheduler: SchedulerChoice = "case",
    progress: Progress[Outcome] | None = None,
) -> ZooResult:
    """Cases ``first_seed`` … ``first_seed + cases - 1``, each over ``seeds`` run seeds: the
    coarse grid, the default and ``policies`` first, then the fine values around each case's
    coarse best; every simulation one job of ``workers`` processes."""
    started = time.perf_counter()
    results: list[CaseResult] = []
    for seed in range(first_seed, first_seed + cases):
        case = zoo_case(seed)
        results += [CaseResult(seed, kind, about(case)) for kind in schedulers_for(case, scheduler)]
    first: list[Run] = []
    for c in results:
        values = sorted({*COARSE_VALUES, DEFAULT_A[c.scheduler]})
        for s in range(seeds):
            # Controlled runs first: they take longest, and the pool should not end on them.
            first += [Run(c.seed, c.scheduler, None, s, p) for p in policies]
            first += [Run(c.seed, c.scheduler, a, s) for a in values]
    first.sort(key=lambda r: r.a is not None)
    done = run_all(run_one, first, workers, progress, chunksize=4)
    _fill(results, done)
    second = [
        Run(c.seed, c.scheduler, a, s)
        for c in results
        for a in _fine_values(c)
        for s in range(seeds)
    ]
    _fill(results, run_all(run_one, second, workers, progress, chunksize=4))
    return ZooResult(
        first_seed, seeds, list(policies), scheduler, results, workers,
        round(time.perf_counter() - started, 2),
    )  # fmt: skip


def _fill(results: list[CaseResult], done: dict[Run, Outcome]) -> None:
    by_case = {(c.seed, c.scheduler): c for c in results}
    for run in sorted(done, key=lambda r: r.run_seed):
        c = by_case[(run.case_seed, run.scheduler)]
        if run.a is None:
            c.policies.setdefault(run.policy, []).append(done[run])
        else:
            c.fixed.setdefault(run.a, []).append(done[run])


def _fine_values(c: CaseResult) -> list[float]:
    """The values `FINE_STEP` either side of the coarse best by mean JCT, within (0, 1], not
    run yet."""
    best = best_fixed(c.fixed, _jct)
    if best is None:
        return []
    out = []
    for a in (best[0] - FINE_STEP, best[0] + FINE_STEP):
        a = round(a, 2)
        if 0 < a <= 1 and a not in c.fixed:
            out.append(a)
    return out


def _jct(o: Outcome) -> float | None:
    return o.mean_jct_s


def _makespan(o: Outcome) -> float | None:
    return o.makespan_s


Metric = Callable[[Outcome], float | None]


def best_fixed(
    fixed: dict[float, list[Outcome]], metric: Metric
) -> tuple[float, float] | None:
    """(A, mean over run seeds) of the fixed value with the smallest mean, among those that
    finished on every seed; the lowest A on a tie."""
    means = {a: mean_or_none(metric(o) for o in runs) for a, runs in fixed.items()}
    finished = {a: m for a, m in means.items() if m is not None}
    if not finished:
        return None
    a = min(finished, key=lambda k: (finished[k], k))
    return a, finished[a]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile by nearest rank (as `SimResult.p95_jct_s`): the smallest value with at
    least a share ``q`` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def spread(ratios: Sequence[float | None]) -> dict[str, Any]:
    """Mean, p90 and worst of per-case ratios; a case that never finished counts as worse than
    any finite ratio (``never`` in p90 and worst when it reaches them) and is left out of the
    mean, and counted."""
    finite = [r for r in ratios if r is not None]
    ranked = [r if r is not None else math.inf for r in ratios]
    if not ranked:
        return {"cases": 0, "never": 0, "mean": None, "p90": None, "worst": None}

    def shown(x: float) -> float | str:
        return "never" if math.isinf(x) else round(x, 4)

    return {
        "cases": len(ranked),
        "never": len(ranked) - len(finite),
        "mean": round(mean(finite), 4) if finite else None,
        "p90": shown(percentile(ranked, 0.9)),
        "worst": shown(max(ranked)),
    }


def against_default(
    policy: Sequence[float | None], default: Sequence[float | None]
) -> tuple[float | None, float | None, str]:
    """(ratio of the means, its paired standard error, verdict) of a policy's per-seed figures
    against the default's: ``worse`` or ``better`` beyond `NOISE_SES` standard errors, ``within``
    the noise, ``worse`` when only the default finished, ``unjudged`` with one run seed or when
    the default never finished."""
    p, d = mean_or_none(policy), mean_or_none(default)
    if d is None:
        return None, None, "unjudged"
    if p is None:
        return None, None, "worse"
    r = ratio(p, d)
    se = paired_se(policy, default)
    if r is None or se is None:
        return r, se, "unjudged"
    if r - 1 > NOISE_SES * se:
        return r, se, "worse"
    if 1 - r > NOISE_SES * se:
        return r, se, "better"
    return r, se, "within"


def replay(seed: int, scheduler: SchedulerKind, policy: str, run_seed: int, horizon: float) -> str:
    """The command that runs one simulation of the bench again, alone."""
    return (
        f"amtuner simulate --workload zoo:{seed} --scheduler {scheduler.value} "
        f"--policy {policy} --seed {run_seed} --max-sim-seconds {horizon:g}"
    )


def case_summary(c: CaseResult, policies: Sequence[str]) -> dict[str, Any]:
    """One case's figures: best fixed values, and the default and each policy against them and
    against the default."""
    default_a = DEFAULT_A[c.scheduler]
    best_jct = best_fixed(c.fixed, _jct)
    best_mk = best_fixed(c.fixed, _makespan)
    horizon = c.about["max_sim_seconds"]
    rows: dict[str, dict[str, Any]] = {}
    named = {"default": c.fixed.get(default_a, []), **{p: c.policies[p] for p in policies}}
    for name, runs in named.items():
        jcts = [o.mean_jct_s for o in runs]
        mks = [o.makespan_s for o in runs]
        row: dict[str, Any] = {
            "mean_jct_s_per_seed": jcts,
            "mean_jct_s": mean_or_none(jcts),
            "makespan_s": mean_or_none(mks),
            "jct_vs_best": ratio(mean_or_none(jcts), best_jct[1]) if best_jct else None,
            "makespan_vs_best": ratio(mean_or_none(mks), best_mk[1]) if best_mk else None,
        }
        if name != "default":
            defaults = [o.mean_jct_s for o in c.fixed.get(default_a, [])]
            r, se, verdict = against_default(jcts, defaults)
            row |= {"jct_vs_default": r, "jct_vs_default_se": se, "vs_default": verdict}
            worst_seed = _worst_seed(runs, c.fixed.get(best_jct[0], []) if best_jct else [])
            row["replay"] = replay(c.seed, c.scheduler, name, worst_seed, horizon)
            row["best_replay"] = (
                replay(c.seed, c.scheduler, f"fixed:{best_jct[0]:g}", worst_seed, horizon)
                if best_jct else None
            )  # fmt: skip
        rows[name] = row
    return {
        "seed": c.seed,
        "scheduler": c.scheduler.value,
        "about": c.about,
        "default_a": default_a,
        "best_jct_a": best_jct[0] if best_jct else None,
        "best_mean_jct_s": best_jct[1] if best_jct else None,
        "best_jct_s_per_seed": [o.mean_jct_s for o in c.fixed[best_jct[0]]] if best_jct else None,
        "best_makespan_a": best_mk[0] if best_mk else None,
        "best_makespan_s": best_mk[1] if best_mk else None,
        "fixed_mean_jct_s": {
            f"{a:g}": mean_or_none(_jct(o) for o in runs) for a, runs in sorted(c.fixed.items())
        },
        "rows": rows,
    }


def _worst_seed(runs: Sequence[Outcome], best: Sequence[Outcome]) -> int:
    """The run seed on which ``runs`` did worst against the best fixed value (never: first)."""

    def badness(s: int) -> float:
        got = runs[s].mean_jct_s
        ref = best[s].mean_jct_s if s < len(best) else None
        if got is None:
            return math.inf
        return got / ref if ref else got

    return max(range(len(runs)), key=badness)


def summarize(result: ZooResult) -> dict[str, Any]:
    """The figures of a run as a dict (what ``--json`` writes): per case, and per policy and the
    default over every judged case (a case is judged when some fixed value finished on every
    run seed)."""
    cases = [case_summary(c, result.policies) for c in result.cases]
    judged = [c for c in cases if c["best_mean_jct_s"] is not None]
    names = ["default", *result.policies]
    overall: dict[str, Any] = {}
    for name in names:
        rows = [c["rows"][name] for c in judged]
        entry: dict[str, Any] = {
            "jct_vs_best": spread([r["jct_vs_best"] for r in rows]),
            "makespan_vs_best": spread([r["makespan_vs_best"] for r in rows]),
        }
        if name != "default":
            verdicts = [r["vs_default"] for r in rows]
            entry["vs_default"] = {v: verdicts.count(v)
                                   for v in ("worse", "within", "better", "unjudged")}  # fmt: skip
            ranked = sorted(judged, key=lambda c: _rank(c["rows"][name]["jct_vs_best"]))
            entry["worst"] = [
                {
                    "case": f"zoo:{c['seed']}",
                    "scheduler": c["scheduler"],
                    "jct_vs_best": c["rows"][name]["jct_vs_best"],
                    "best_jct_a": c["best_jct_a"],
                    "replay": c["rows"][name]["replay"],
                    "best_replay": c["rows"][name]["best_replay"],
                }
                for c in ranked[:WORST_SHOWN]
            ]
        overall[name] = entry
    fixed_cpu = [o.cpu_s for c in result.cases for runs in c.fixed.values() for o in runs]
    policy_cpu = [o.cpu_s for c in result.cases for runs in c.policies.values() for o in runs]
    return {
        "parameters": {
            "first_seed": result.first_seed,
            "cases": len({c.seed for c in result.cases}),
            "run_seeds": result.seeds,
            "policies": result.policies,
            "scheduler": result.scheduler,
            "coarse_values": list(COARSE_VALUES),
            "fine_step": FINE_STEP,
            "default_a": {k.value: DEFAULT_A[k] for k in SchedulerKind},
            "period_s": PERIOD_S,
            "noise_ses": NOISE_SES,
            "development_seeds": [ZOO_DEVELOPMENT_SEEDS.start, ZOO_DEVELOPMENT_SEEDS.stop - 1],
            "judging_first_seed": ZOO_JUDGING_FIRST_SEED,
        },
        "judged": len(judged),
        "unjudged": [f"zoo:{c['seed']} {c['scheduler']}" for c in cases if c not in judged],
        "schedulers": {
            k.value: sum(c["scheduler"] == k.value for c in cases) for k in SchedulerKind
        },
        "overall": overall,
        "cost": {
            "simulations": len(fixed_cpu) + len(policy_cpu),
            "workers": result.workers,
            "wall_seconds": result.wall_seconds,
            "fixed_cpu_seconds": _times(fixed_cpu),
            "policy_cpu_seconds": _times(policy_cpu),
        },
        "cases": cases,
    }


def _rank(r: float | None) -> float:
    """Worst first: a run that never finished, then the largest ratio."""
    return -math.inf if r is None else -r


def _times(seconds: Sequence[float]) -> dict[str, float | int]:
    if not seconds:
        return {"runs": 0}
    return {
        "runs": len(seconds),
        "median": round(percentile(seconds, 0.5), 4),
        "p90": round(percentile(seconds, 0.9), 4),
        "p99": round(percentile(seconds, 0.99), 4),
        "max": round(max(seconds), 4),
        "total": round(sum(seconds), 1),
    }


def cell(x: Any, spec: str = ".3f") -> str:
    if x is None:
        return "-"
    return x if isinstance(x, str) else format(x, spec)


def format_report(summary: dict[str, Any]) -> str:
    """The plain-text report: per policy and the default, the spread of its ratios to the best
    fixed value, its cases against the default, and its worst cases with their replay."""
    p = summary["parameters"]
    last = p["first_seed"] + p["cases"] - 1
    dev = p["development_seeds"]
    where = (
        "development range" if dev[0] <= p["first_seed"] and last <= dev[1]
        else "judging range" if p["first_seed"] >= p["judging_first_seed"] else "mixed range"
    )  # fmt: skip
    sched = ", ".join(f"{n} {k}" for k, n in summary["schedulers"].items() if n)
    lines = [
        f"zoo: {p['cases']} cases, seeds {p['first_seed']}..{last} ({where}); {p['run_seeds']} "
        f"run seeds each; scheduler: {p['scheduler']} ({sched}); {summary['judged']} judged",
    ]
    if summary["unjudged"]:
        lines.append(f"  no fixed value finished every run seed: {', '.join(summary['unjudged'])}")
    for title, key in (
        ("mean JCT / best fixed value's mean JCT, per case", "jct_vs_best"),
        ("makespan / best fixed value's makespan, per case", "makespan_vs_best"),
    ):
        lines.append(title)
        header = f"  {'':<10} {'mean':>7} {'p90':>7} {'worst':>7} {'never':>6}"
        if key == "jct_vs_best":
            header += f"   vs default (mean JCT, {p['noise_ses']:g} SE): worse / within / better"
        lines.append(header)
        for name, entry in summary["overall"].items():
            s = entry[key]
            row = (
                f"  {name:<10} {cell(s['mean']):>7} {cell(s['p90']):>7} "
                f"{cell(s['worst']):>7} {s['never']:>6}"
            )
            if key == "jct_vs_best" and "vs_default" in entry:
                v = entry["vs_default"]
                row += f"   {v['worse']} / {v['within']} / {v['better']}"
                if v["unjudged"]:
                    row += f" ({v['unjudged']} unjudged)"
            lines.append(row)
    for name, entry in summary["overall"].items():
        if "worst" not in entry:
            continue
        lines.append(f"worst cases for {name} (mean JCT / best fixed; replay the worst run seed):")
        for w in entry["worst"]:
            lines.append(
                f"  {w['case']:<10} {w['scheduler']:<8} {cell(w['jct_vs_best'] or 'never'):>6}"
                f"  (best fixed A {cell(w['best_jct_a'], 'g')})"
            )
            lines.append(f"      {w['replay']}")
            lines.append(f"      {w['best_replay']}")
    cost = summary["cost"]
    for what in ("fixed", "policy"):
        t = cost[f"{what}_cpu_seconds"]
        if t.get("runs"):
            lines.append(
                f"{what} runs: {t['runs']}, CPU s per run median {t['median']:.3f}, "
                f"p90 {t['p90']:.3f}, p99 {t['p99']:.3f}, max {t['max']:.3f}"
            )
    lines.append(
        f"{cost['simulations']} simulations in {cost['wall_seconds']:.1f} s with "
        f"{cost['workers']} worker(s)"
    )
    return "\n".join(lines)
