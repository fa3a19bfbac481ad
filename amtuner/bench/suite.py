"""Workloads beyond the paper: larger clusters, phases, two queues, Poisson arrivals, real traces.

The paper judged its controller on four batches of 30 jobs on 4 nodes. A controller worth
deploying must also hold up when the batch is bigger, when the job mix changes under it, when
queues want different values, when jobs trickle in, and on a production day. For each workload
and scheduler this runs the default, every fixed AM share 0.1 … 1.0 and each controller policy,
and reports makespan (first submission to last finish) and mean job completion time (finish -
submit, averaged over jobs), each averaged over seeds.

Control period per workload (simulated seconds), chosen as for the paper bench: longer than the
FairScheduler's 5-15 s reload delay, and short against how fast the workload changes:

* 15 s for every generated workload: their jobs live 15-60 s, as in the paper's groups, and the
  phases change every 150 s, so the loop sees each phase ten times.
* 60 s for the SWIM day: its load changes over hours, and 15 s would be 5,760 cycles (about 2 ms
  each through the HTTP-shaped adapter and a file write), four times the control overhead for
  no new information.
* 15 s for the SLS and rumen samples: a few jobs over minutes.

"Best fixed" is the fixed value with the smallest mean makespan (ties: the lowest A); the best
value for mean job completion time is reported beside it, since it can differ. The SWIM days on
25 and 50 nodes (both public FB-2009 samples) are judged by mean and p95 job completion time
instead, in a table of their own: their makespan is the last job's. Each policy's rows over the
default close its table, each with the standard error of its per-seed ratio (`paired_se`): on
the paper's groups 10 seeds leave about half a percent, so a row 1 % over may be the sample's.

Cost: the full suite is 4,728 simulations with the shared fixtures (26 workloads; with one
policy beside ``paper``: 12 runs a workload, scheduler and seed), most of its wall time the SWIM
days on small clusters; ``--quick`` is 144 (6 workloads, one seed). The wall times are
docs/results.md's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import mean

from amtuner.bench import SHARED, SUITE_SEEDS
from amtuner.bench.common import (
    DEFAULT_A,
    FIXED_VALUES,
    fmt,
    mean_or_none,
    paired_se,
    ratio,
    reader,
    simulate,
    staggered_lead,
)
from amtuner.model import SchedulerKind
from amtuner.sim.spec import HADOOP_3, PERIOD_S, Heartbeats, Workload
from amtuner.sim.workload import PAPER_GROUPS, describe, load_workload

SWIM_TRACE = Path("fixtures/traces/FB-2009_samples_24_times_1hr_0.tsv")
SWIM_SECOND_DAY = Path("fixtures/traces/FB-2009_samples_24_times_1hr_1.tsv")
SMALL_CLUSTERS = (25, 50)
"""Node counts on which a SWIM day binds the AM limit (it never does on its 600 nodes)."""
SLS_TRACE = Path("fixtures/sls/inputsls.json")
RUMEN_TRACE = Path("fixtures/sls/2jobs2min-rumen-jh.json")

SUITE_FIXED_VALUES = tuple(a for a in FIXED_VALUES if a > 0)
"""0.1 … 1.0: A = 0 starts no AM at all on the FairScheduler and only one at a time on the
CapacityScheduler, never a candidate for best."""
SEEDS = SUITE_SEEDS
SWIM_PERIOD_S = 60.0
MAX_SIM_SECONDS = 4 * 3600.0
"""As in the paper bench: a generated workload still running after four simulated hours (the
slowest finishing run takes minutes) is stuck."""
SWIM_MAX_SIM_SECONDS = 2 * 86400.0
"""The SWIM day submits its last job near 86,400 s; a day more than that is stuck."""
LARGER_CLUSTERS = (16, 100)


@dataclass(frozen=True, slots=True)
class Bench:
    """One workload of the suite and how to run it."""

    name: str
    spec: str
    why: str
    period_s: float = PERIOD_S
    targets: tuple[str, ...] = ()
    """Queues the policy tunes one by one; empty: the global value."""
    max_sim_seconds: float = MAX_SIM_SECONDS
    seeded: bool = True
    """False for a trace: one run per value."""
    node_vcores: int | None = None
    """Vcores per node instead of the workload's."""
    by_jct: bool = False
    """Judged by job completion time (mean and p95) rather than makespan: a day's makespan is
    set by its last jobs, what its users feel is how long each job takes."""

    def workload(self) -> Workload:
        """The workload as this bench runs it (seed 0)."""
        w = load_workload(self.spec)
        return w if self.node_vcores is None else replace(w, node_vcores=self.node_vcores)


@dataclass(frozen=True, slots=True)
class Case:
    bench: Bench
    scheduler: SchedulerKind
    a: float | None
    """Fixed AM share, or None for ``policy`` starting from the scheduler's default."""
    seed: int
    policy: str = "paper"
    lead_s: float = field(default=0.0, compare=False)
    """The controller's first cycle this long before the first job (see `staggered_lead`); how
    a case is run, not which one it is, so results are looked up without it."""
    heartbeats: Heartbeats = field(default=HADOOP_3, compare=False)


@dataclass(frozen=True, slots=True)
class Outcome:
    makespan_s: float | None
    """None: the run did not finish (stuck, or past the limit)."""
    mean_jct_s: float | None
    """None when the run did not finish: the jobs that did are the lucky ones."""
    p95_jct_s: float | None = None


def benches(shared: Path | None = SHARED, *, quick: bool = False) -> tuple[list[Bench], list[str]]:
    """The suite's workloads, and a note for each one skipped because its trace is absent."""
    out: list[Bench] = []
    if quick:
        out.append(Bench("mixed@16", "paper:mixed@16", "the paper's mixed group on 16 nodes"))
    else:
        for nodes in LARGER_CLUSTERS:
            out += [
                Bench(
                    f"{group}@{nodes}",
                    f"paper:{group}@{nodes}",
                    f"the paper's {group} group on {nodes} nodes, 30 jobs per 4 nodes",
                )
                for group in PAPER_GROUPS
            ]
    out.append(
        Bench(
            "phases",
            "phase:small,large,mixed",
            "small jobs, then large, then mixed, 150 s apart: no fixed A suits every phase",
        )
    )
    if not quick:
        out += [
            Bench(f"phase {name}", f"phase:{name}", f"the {name} phase alone: its own best A")
            for name in ("small", "large", "mixed")
        ]
    out += [
        Bench(
            "two queues",
            "twoqueue:small,large",
            "small jobs in root.a, large in root.b; the policy tunes each queue",
            targets=("root.a", "root.b"),
        ),
        Bench(
            "mixed, 3 vcores",
            "paper:mixed",
            "the paper's mixed group on nodes with 3 vcores instead of 8: vcores run out before "
            "memory. A FairScheduler counts them when it places containers and admits AMs; a "
            "CapacityScheduler with the default resource calculator places by memory alone",
            node_vcores=3,
        ),
        Bench(
            "poisson",
            "poisson:mixed",
            "the paper's mixed jobs arriving as a Poisson process; the last arrival sets most of "
            "the makespan, so mean JCT is the figure that tells values apart",
        ),
    ]
    if not quick:
        out.append(
            Bench(
                "stream",
                "stream:mixed",
                "600 of the paper's mixed jobs arriving for half an hour at about what the "
                "cluster does at a good A: the AM limit binds much of the time, the regime a "
                "daemon lives in",
            )
        )
        out += [
            Bench(name, f"{name}:{n}", why)
            for name, n, why in (
                ("sessions", 3, "Tez sessions of three DAGs, idle between and past the last"),
                ("drivers", 3, "Spark drivers in cluster mode, computing in their AM"),
                ("services", 6, "long-lived service AMs, as many jobs behind them"),
            )
        ]
    notes: list[str] = []
    traces = [
        (
            Bench(
                "sls sample",
                f"sls:{(shared or Path()) / SLS_TRACE}",
                "Hadoop SLS's sample job trace",
                seeded=False,
            ),
            SLS_TRACE,
        ),
    ]
    if not quick:
        traces += [
            (
                Bench(
                    "rumen sample",
                    f"rumen:{(shared or Path()) / RUMEN_TRACE}",
                    "Hadoop SLS's sample rumen job history",
                    seeded=False,
                ),
                RUMEN_TRACE,
            ),
            (
                Bench(
                    "swim fb-2009",
                    f"swim:{(shared or Path()) / SWIM_TRACE}",
                    "the SWIM FB-2009 day (5,894 jobs) on 600 nodes: no AM limit from 0.1 up "
                    "binds there, so every value gives the same figures; a check that a "
                    "controller does no harm",
                    period_s=SWIM_PERIOD_S,
                    max_sim_seconds=SWIM_MAX_SIM_SECONDS,
                    seeded=False,
                ),
                SWIM_TRACE,
            ),
        ]
        traces += [
            (
                Bench(
                    f"swim {day} @{nodes}",
                    f"swim:{(shared or Path()) / trace}@{nodes}",
                    f"the SWIM FB-2009 day sample {day} on {nodes} nodes, the same bytes (reduces "
                    "capped for the cluster): the AM limit binds for hours; judged by job "
                    "completion time",
                    period_s=SWIM_PERIOD_S,
                    max_sim_seconds=SWIM_MAX_SIM_SECONDS,
                    seeded=False,
                    by_jct=True,
                ),
                trace,
            )
            for day, trace in ((0, SWIM_TRACE), (1, SWIM_SECOND_DAY))
            for nodes in SMALL_CLUSTERS
        ]
    for bench, rel in traces:
        if shared is not None and (shared / rel).is_file():
            out.append(bench)
        else:
            where = "no shared fixtures" if shared is None else f"{shared / rel} not present"
            notes.append(f"skipping {bench.name}: {where}")
    return out, notes


def cases(
    suite: Sequence[Bench],
    schedulers: Sequence[SchedulerKind],
    seeds: int,
    policies: Sequence[str] = ("paper",),
    *,
    stagger: bool = False,
    heartbeats: Heartbeats = HADOOP_3,
) -> list[Case]:
    """Every fixed value and every policy, per workload, scheduler and seed; the largest
    workloads first, so the process pool does not end waiting on one long run. Controllers
    start with the first job, or (``stagger``) before it."""
    size = {b: len(load_workload(b.spec).jobs) for b in suite}
    out = []
    for b in sorted(suite, key=lambda b: -size[b]):
        for kind in schedulers:
            runs = seeds if b.seeded else 1
            for seed in range(runs):
                lead = staggered_lead(b.period_s, seed, runs) if stagger else 0.0
                out += [Case(b, kind, a, seed, heartbeats=heartbeats) for a in SUITE_FIXED_VALUES]
                out += [Case(b, kind, None, seed, name, lead, heartbeats) for name in policies]
    return out


def run_case(case: Case) -> Outcome:
    b = case.bench
    result = simulate(
        b.spec,
        case.scheduler,
        case.a,
        case.seed,
        max_sim_seconds=b.max_sim_seconds,
        policy=case.policy,
        period_s=b.period_s,
        targets=b.targets,
        lead_s=case.lead_s,
        node_vcores=b.node_vcores,
        heartbeats=case.heartbeats,
    )
    if not result.finished:
        return Outcome(None, None)
    return Outcome(result.makespan_s, result.mean_jct_s, result.p95_jct_s)


def _best(values: dict[str, float | None]) -> tuple[float | None, float | None]:
    """(A, value) of the smallest finished value; the lowest A on a tie."""
    finished = {a: v for a, v in values.items() if v is not None}
    if not finished:
        return None, None
    a = min(finished, key=lambda k: (finished[k], float(k)))
    return float(a), finished[a]


def summarise(
    runs: dict[Case, Outcome],
    suite: Sequence[Bench],
    schedulers: Sequence[SchedulerKind],
    seeds: int,
    policies: Sequence[str] = ("paper",),
    *,
    stagger: bool = False,
) -> dict[str, object]:
    out: dict[str, object] = {
        "parameters": {
            "seeds": seeds,
            "stagger": stagger,
            "fixed_values": list(SUITE_FIXED_VALUES),
            "policies": list(policies),
            "schedulers": [k.value for k in schedulers],
            "default_a": {k.value: DEFAULT_A[k] for k in schedulers},
        },
        "workloads": {
            b.name: {
                "spec": b.spec,
                "why": b.why,
                "description": describe(b.workload()),
                "control_period_s": b.period_s,
                "targets": list(b.targets),
                "seeds": seeds if b.seeded else 1,
                "max_sim_seconds": b.max_sim_seconds,
            }
            for b in suite
        },
    }
    for kind in schedulers:
        per_bench: dict[str, object] = {}
        for b in suite:
            n = seeds if b.seeded else 1

            def seeds_of(
                a: float | None,
                metric: Callable[[Outcome], float | None],
                policy: str = "paper",
                b: Bench = b,
                n: int = n,
                kind: SchedulerKind = kind,
            ) -> list[float | None]:
                return [metric(runs[Case(b, kind, a, s, policy)]) for s in range(n)]

            def figure(
                a: float | None, metric: Callable[[Outcome], float | None], policy: str = "paper"
            ) -> float | None:
                return mean_or_none(seeds_of(a, metric, policy))

            def noise(
                metric: Callable[[Outcome], float | None], policy: str, a: float | None
            ) -> float | None:
                if a is None:
                    return None
                return paired_se(seeds_of(None, metric, policy), seeds_of(a, metric))

            def makespan(o: Outcome) -> float | None:
                return o.makespan_s

            def jct(o: Outcome) -> float | None:
                return o.mean_jct_s

            def p95(o: Outcome) -> float | None:
                return o.p95_jct_s

            fixed_mk = {f"{a:.1f}": figure(a, makespan) for a in SUITE_FIXED_VALUES}
            fixed_jct = {f"{a:.1f}": figure(a, jct) for a in SUITE_FIXED_VALUES}
            best_a, best_mk = _best(fixed_mk)
            best_jct_a, best_jct = _best(fixed_jct)
            at_best = fixed_jct[f"{best_a:.1f}"] if best_a is not None else None
            default = f"{DEFAULT_A[kind]:.1f}"
            pol_mk = {p: figure(None, makespan, p) for p in policies}
            pol_jct = {p: figure(None, jct, p) for p in policies}
            fixed_p95 = {f"{a:.1f}": figure(a, p95) for a in SUITE_FIXED_VALUES}
            best_p95_a, best_p95 = _best(fixed_p95)
            pol_p95 = {p: figure(None, p95, p) for p in policies}
            per_bench[b.name] = {
                "default_a": DEFAULT_A[kind],
                "default_makespan_s": fixed_mk[default],
                "default_mean_jct_s": fixed_jct[default],
                "fixed_makespan_s": fixed_mk,
                "fixed_mean_jct_s": fixed_jct,
                "best_fixed_a": best_a,
                "best_fixed_makespan_s": best_mk,
                "best_fixed_jct_a": best_jct_a,
                "best_fixed_mean_jct_s": best_jct,
                "best_fixed_a_mean_jct_s": at_best,
                "policy_makespan_s": pol_mk,
                "policy_mean_jct_s": pol_jct,
                "policy_vs_best": {p: ratio(pol_mk[p], best_mk) for p in policies},
                "policy_jct_vs_best": {p: ratio(pol_jct[p], best_jct) for p in policies},
                "policy_vs_default": {p: ratio(pol_mk[p], fixed_mk[default]) for p in policies},
                "by_jct": b.by_jct,
                "default_p95_jct_s": fixed_p95[default],
                "fixed_p95_jct_s": fixed_p95,
                "best_fixed_p95_a": best_p95_a,
                "best_fixed_p95_jct_s": best_p95,
                "policy_p95_jct_s": pol_p95,
                "policy_p95_vs_best": {p: ratio(pol_p95[p], best_p95) for p in policies},
                "policy_jct_vs_default": {
                    p: ratio(pol_jct[p], fixed_jct[default]) for p in policies
                },
                "policy_vs_default_se": {
                    p: noise(makespan, p, DEFAULT_A[kind]) for p in policies
                },
                "policy_vs_best_se": {p: noise(makespan, p, best_a) for p in policies},
                "policy_jct_vs_default_se": {p: noise(jct, p, DEFAULT_A[kind]) for p in policies},
                "policy_jct_vs_best_se": {p: noise(jct, p, best_jct_a) for p in policies},
            }
        out[kind.value] = per_bench
    return out


def _pair(mk: float | None, jct: float | None) -> str:
    return f"{fmt(mk)} / {fmt(jct)}"


def format_table(summary: dict[str, object], schedulers: Sequence[SchedulerKind]) -> str:
    params = summary["parameters"]
    assert isinstance(params, dict)
    policies: list[str] = params["policies"]
    lines = []
    for kind in schedulers:
        table = summary[kind.value]
        assert isinstance(table, dict)
        lines.append(
            f"{kind.value} scheduler (simulated seconds: makespan / mean job completion time; "
            f"x/best = policy / best fixed value)"
        )
        header = (
            f"  {'workload':<15} {f'default A={DEFAULT_A[kind]:g}':>17} "
            f"{'best fixed (A)':>17} {'best JCT (A)':>15}"
        )
        for p in policies:
            header += f" {p:>17} {f'{p}/best':>13}"
        lines.append(header)
        worse: dict[str, list[float]] = {p: [] for p in policies}
        for name, g in table.items():
            if g.get("by_jct"):
                continue
            best = f"{fmt(g['best_fixed_makespan_s'])} ({fmt(g['best_fixed_a'])})"
            best_jct = f"{fmt(g['best_fixed_mean_jct_s'])} ({fmt(g['best_fixed_jct_a'])})"
            row = (
                f"  {name:<15} "
                f"{_pair(g['default_makespan_s'], g['default_mean_jct_s']):>17} "
                f"{best:>17} {best_jct:>15}"
            )
            for p in policies:
                vs = g["policy_vs_best"][p]
                vs_jct = g["policy_jct_vs_best"][p]
                row += (
                    f" {_pair(g['policy_makespan_s'][p], g['policy_mean_jct_s'][p]):>17} "
                    f"{fmt(vs, '.3f') + ' / ' + fmt(vs_jct, '.2f'):>13}"
                )
                if vs is not None:
                    worse[p].append(vs)
            lines.append(row)
        for p in policies:
            if worse[p]:
                lines.append(
                    f"  {p}: makespan / best fixed, mean {mean(worse[p]):.3f}, "
                    f"worst {max(worse[p]):.3f}"
                )
        lines += _by_jct_rows(table, kind, policies)
        lines += [_over_the_default(table, p) for p in policies]
        lines.append("")
    return "\n".join(lines)


NOISE_SES = 2.0
"""A policy over the default by more than this many standard errors of the seeds
(`paired_se`) is over it; by less, it may be the sample's luck."""


def _over_the_default(table: dict, policy: str) -> str:
    """The rows where ``policy`` is over the default on the figure the row is judged by, split
    by whether the difference stands out of the seeds' noise: 10 seeds leave about half a
    percent of it on the paper's groups, the size of the differences judged there. A trace runs
    once, so its rows have no noise to judge by."""
    groups: dict[str, list[str]] = {
        f"beyond {NOISE_SES:g} standard errors of the seeds": [],
        f"within {NOISE_SES:g} standard errors": [],
        "run once": [],
    }
    clear, within, once = groups.values()
    for name, g in table.items():
        key = "policy_jct_vs_default" if g.get("by_jct") else "policy_vs_default"
        vs, se = g[key][policy], g[f"{key}_se"][policy]
        if vs is None or vs <= 1:
            continue
        if se is None:
            once.append(f"{name} {vs:.3f}")
        else:
            (clear if vs - 1 > NOISE_SES * se else within).append(f"{name} {vs:.3f} (± {se:.3f})")
    parts = [f"{label}: {', '.join(rows)}" for label, rows in groups.items() if rows]
    if not parts:
        return f"  {policy}: never over the default"
    return f"  {policy} over the default " + "; ".join(parts)


def _by_jct_rows(table: dict, kind: SchedulerKind, policies: Sequence[str]) -> list[str]:
    """The rows judged by job completion time: mean / p95 of the default, the best fixed value
    of each (its A) and each policy, and the policy over the best."""
    rows = {name: g for name, g in table.items() if g.get("by_jct")}
    if not rows:
        return []
    lines = [
        "  judged by job completion time (mean / p95 seconds; x/best = policy / best fixed "
        "value of each)",
        f"  {'workload':<15} {f'default A={DEFAULT_A[kind]:g}':>17} {'best mean (A)':>15} "
        f"{'best p95 (A)':>15}" + "".join(f" {p:>17} {f'{p}/best':>13}" for p in policies),
    ]
    for name, g in rows.items():
        best = f"{fmt(g['best_fixed_mean_jct_s'])} ({fmt(g['best_fixed_jct_a'])})"
        best_p95 = f"{fmt(g['best_fixed_p95_jct_s'])} ({fmt(g['best_fixed_p95_a'])})"
        default = _pair(g["default_mean_jct_s"], g["default_p95_jct_s"])
        row = f"  {name:<15} {default:>17} {best:>15} {best_p95:>15}"
        for p in policies:
            vs = fmt(g["policy_jct_vs_best"][p], ".3f") + " / "
            vs += fmt(g["policy_p95_vs_best"][p], ".2f")
            row += f" {_pair(g['policy_mean_jct_s'][p], g['policy_p95_jct_s'][p]):>17} {vs:>13}"
        lines.append(row)
    return lines


def plot(summary: dict[str, object], schedulers: Sequence[SchedulerKind], path: Path) -> None:
    """Makespan (top) and mean JCT (bottom) per workload, normalised to the best fixed value of
    that metric (the line at 1): below 1 beats every fixed setting."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    params = summary["parameters"]
    assert isinstance(params, dict)
    policies: list[str] = params["policies"]
    first = summary[schedulers[0].value]
    assert isinstance(first, dict)
    names = list(first)
    fig = Figure(
        figsize=(max(8.0, 0.75 * len(names)), 4.0 * 2 * len(schedulers)), layout="constrained"
    )
    axes = fig.subplots(2 * len(schedulers), 1, squeeze=False)
    palette = ["#dd8452", "#55a868", "#c44e52", "#8172b3"]
    metrics = [
        ("makespan", "default_makespan_s", "best_fixed_makespan_s", "best_fixed_a"),
        ("mean JCT", "default_mean_jct_s", "best_fixed_mean_jct_s", "best_fixed_jct_a"),
    ]
    ceiling = 5.0
    """Ratios above this (a default 5x slower than the best) are cut and labelled instead."""
    for col, kind in enumerate(schedulers):
        table = summary[kind.value]
        assert isinstance(table, dict)
        for row, (label, default_key, best_key, best_a_key) in enumerate(metrics):
            policy_key = "policy_makespan_s" if row == 0 else "policy_mean_jct_s"
            ax = axes[2 * col + row][0]
            series: list[tuple[str, Callable[[dict], float | None], str]] = [
                (f"default (A={DEFAULT_A[kind]:g})", reader(default_key), "#9e9e9e"),
            ]
            series += [
                (name, reader(policy_key, name), palette[i % len(palette)])
                for i, name in enumerate(policies)
            ]
            width = 0.8 / len(series)
            top = 1.0
            for i, (series_label, value, color) in enumerate(series):
                xs, ys, never = [], [], []
                for x, name in enumerate(names):
                    r = ratio(value(table[name]), table[name][best_key])
                    offset = x + (i - (len(series) - 1) / 2) * width
                    if r is None:
                        never.append(offset)
                        continue
                    xs.append(offset)
                    ys.append(min(r, ceiling))
                    top = max(top, r)
                    if r > ceiling:
                        ax.text(offset, ceiling, f"{r:.1f}", fontsize=7, ha="center", va="top")
                ax.bar(xs, ys, width, label=series_label, color=color)
                for at in never:
                    ax.text(at, 1.02, "never", rotation=90, fontsize=7, ha="center", va="bottom")
            ax.axhline(1.0, color="#4c72b0", linewidth=1.2, label="best fixed A")
            ticks = [f"{n}\nA={fmt(table[n][best_a_key], 'g')}" for n in names]
            ax.set_xticks(range(len(names)), ticks, fontsize=7, rotation=45, ha="right")
            ax.set_ylim(0, min(top, ceiling) * 1.1)
            ax.set_ylabel(f"{label} / best fixed value")
            title = "CapacityScheduler" if kind is SchedulerKind.CAPACITY else "FairScheduler"
            ax.set_title(f"{title}: {label}")
            ax.grid(axis="y", alpha=0.3)
            ax.legend(fontsize=7)
    fig.savefig(path, dpi=110)
