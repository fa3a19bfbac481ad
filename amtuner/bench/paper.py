"""The paper's experiment on the simulator: default, every fixed value, and the controller.

Lian & Liu ran four job groups (30 Grep, 30 Terasort, 30 Wordcount, 10 of each; 5 maps + 1 reduce
over 100 MB per job, all submitted at once) on four workers, and compared the total completion
time under the default AM share, the best of {0, 0.1, …, 1.0}, and their controller. This module
runs exactly that grid on the simulated cluster, averaged over several seeds (each seed jitters
task durations), and sets the result beside the paper's own numbers.

Control period: 15 s of simulated time. It has to be longer than the FairScheduler's reload delay
(5-15 s after the file changes, yarn-facts §2.3), or the controller judges a value the RM has not
loaded yet and keeps pushing the same way; and not much longer than a job's life here (AM start-up
5 s + a map wave + a reduce ≈ 15-25 s), or the loop sees the batch only a few times before it
drains. The README's results section shows 5, 10, 15 and 30 s side by side.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import mean

from amtuner.bench.common import (
    DEFAULT_A,
    FIXED_VALUES,
    Progress,
    fmt,
    mean_or_none,
    ratio,
    reader,
    simulate,
    staggered_lead,
)
from amtuner.bench.common import run_all as run_each
from amtuner.model import SchedulerKind
from amtuner.sim.spec import HADOOP_3, PERIOD_S, Heartbeats

GROUPS = ("grep", "terasort", "wordcount", "mixed")
MAX_SIM_SECONDS = 4 * 3600.0
"""A run still going after four simulated hours (the slowest finishing run takes minutes) is
stuck: AMs hold every container (A near 1) or none can start (FairScheduler, A = 0)."""

PAPER_BEST_FIXED = {
    SchedulerKind.CAPACITY: {"grep": 0.6, "terasort": 0.5, "wordcount": 0.3, "mixed": 0.5},
    SchedulerKind.FAIR: {"grep": 0.8, "terasort": 0.9, "wordcount": 0.6, "mixed": 0.8},
}
PAPER_REDUCTION_VS_DEFAULT = {SchedulerKind.CAPACITY: 0.53, SchedulerKind.FAIR: 0.14}
PAPER_WITHIN_BEST = 0.07


@dataclass(frozen=True, slots=True)
class Scenario:
    scheduler: SchedulerKind
    group: str
    a: float | None
    """Fixed AM share, or None for a controller (starting from the scheduler's default)."""
    seed: int
    period_s: float = PERIOD_S
    policy: str = "paper"
    """The controller policy when ``a`` is None."""
    lead_s: float = field(default=0.0, compare=False)
    """The controller's first cycle this long before the batch (see `staggered_lead`); how a
    scenario is run, not which one it is, so results are looked up without it."""
    heartbeats: Heartbeats = field(default=HADOOP_3, compare=False)
    """How the simulated RM hands out containers; the same for every scenario of a run."""
    hadoop: str = field(default="3", compare=False)
    """Scheduler semantics (`HADOOP_VERSIONS`); the same for every scenario of a run."""


def run_scenario(sc: Scenario) -> float | None:
    """Makespan in simulated seconds, or None when the run never finishes."""
    result = simulate(
        f"paper:{sc.group}",
        sc.scheduler,
        sc.a,
        sc.seed,
        max_sim_seconds=MAX_SIM_SECONDS,
        policy=sc.policy,
        period_s=sc.period_s,
        lead_s=sc.lead_s,
        heartbeats=sc.heartbeats,
        hadoop=sc.hadoop,
    )
    return result.makespan_s if result.finished else None


def scenarios(
    schedulers: Sequence[SchedulerKind],
    seeds: int,
    periods: Sequence[float] = (PERIOD_S,),
    policies: Sequence[str] = ("paper",),
    *,
    stagger: bool = False,
    heartbeats: Heartbeats = HADOOP_3,
    hadoop: str = "3",
) -> list[Scenario]:
    """Every fixed value, the paper controller at each period, other policies at PERIOD_S;
    controllers start with the batch, or (``stagger``) before it."""

    def lead(period_s: float, seed: int) -> float:
        return staggered_lead(period_s, seed, seeds) if stagger else 0.0

    out = []
    for kind in schedulers:
        for group in GROUPS:
            for seed in range(seeds):
                out += [Scenario(kind, group, a, seed) for a in FIXED_VALUES]
                out += [
                    Scenario(kind, group, None, seed, p, lead_s=lead(p, seed)) for p in periods
                ]
                out += [
                    Scenario(kind, group, None, seed, PERIOD_S, name, lead(PERIOD_S, seed))
                    for name in policies
                    if name != "paper"
                ]
    return [dataclasses.replace(sc, heartbeats=heartbeats, hadoop=hadoop) for sc in out]


def run_all(
    todo: Sequence[Scenario], workers: int, progress: Progress[float | None] | None = None
) -> dict[Scenario, float | None]:
    return run_each(run_scenario, todo, workers, progress)


def summarise(
    runs: dict[Scenario, float | None],
    schedulers: Sequence[SchedulerKind],
    seeds: int,
    periods: Sequence[float] = (PERIOD_S,),
    policies: Sequence[str] = ("paper",),
    *,
    stagger: bool = False,
) -> dict[str, object]:
    out: dict[str, object] = {
        "parameters": {
            "seeds": seeds,
            "control_period_s": PERIOD_S,
            "stagger": stagger,
            "controller": {
                "t1": 1.0,
                "t2": 0.5,
                "t3": 0.8,
                "step": 0.05,
                "a_min": 0.05,
                "a_max": 0.95,
            },
            "cluster": "4 nodes x 8192 MB x 8 vcores (paper:* workloads)",
            "max_sim_seconds": MAX_SIM_SECONDS,
        },
        "paper": {
            "best_fixed_a": {k.value: v for k, v in PAPER_BEST_FIXED.items()},
            "reduction_vs_default": {k.value: v for k, v in PAPER_REDUCTION_VS_DEFAULT.items()},
            "controller_within_best": PAPER_WITHIN_BEST,
        },
    }
    for kind in schedulers:
        per_group: dict[str, object] = {}
        for group in GROUPS:

            def makespan(
                a: float | None,
                period: float = PERIOD_S,
                policy: str = "paper",
                kind: SchedulerKind = kind,
                group: str = group,
            ) -> float | None:
                return mean_or_none(
                    [
                        runs[
                            Scenario(
                                kind, group, a, s, PERIOD_S if a is not None else period, policy
                            )
                        ]
                        for s in range(seeds)
                    ]
                )

            fixed = {f"{a:.1f}": makespan(a) for a in FIXED_VALUES}
            finished = {a: m for a, m in fixed.items() if m is not None}
            best_a = min(finished, key=lambda a: finished[a]) if finished else None
            best = finished.get(best_a) if best_a else None
            default = fixed[f"{DEFAULT_A[kind]:.1f}"]
            ctrl = makespan(None)
            per_group[group] = {
                "default_a": DEFAULT_A[kind],
                "default_makespan_s": default,
                "fixed_makespan_s": fixed,
                "best_fixed_a": None if best_a is None else float(best_a),
                "best_fixed_makespan_s": best,
                "controller_makespan_s": ctrl,
                "controller_by_period_s": {f"{p:g}": makespan(None, p) for p in periods},
                "policy_makespan_s": {name: makespan(None, policy=name) for name in policies},
                "policy_vs_best": {
                    name: ratio(makespan(None, policy=name), best) for name in policies
                },
                "controller_vs_best": ratio(ctrl, best),
                "reduction_vs_default": None
                if ratio(ctrl, default) is None
                else round(1 - ratio(ctrl, default), 4),  # type: ignore[operator]
                "paper_best_fixed_a": PAPER_BEST_FIXED[kind][group],
            }
        out[kind.value] = per_group
    return out


def format_table(summary: dict[str, object], schedulers: Sequence[SchedulerKind]) -> str:
    lines = []
    for kind in schedulers:
        groups = summary[kind.value]
        assert isinstance(groups, dict)
        lines.append(f"{kind.value} scheduler (makespan, simulated seconds; period {PERIOD_S:g} s)")
        lines.append(
            f"  {'group':<10} {'default':>8} {'best fixed (A)':>15} {'paper A':>8} "
            f"{'controller':>10} {'ctrl/best':>9} {'vs default':>10}"
        )
        reductions = []
        for group in GROUPS:
            g = groups[group]
            red = g["reduction_vs_default"]
            if red is not None:
                reductions.append(red)
            best = f"{fmt(g['best_fixed_makespan_s'])} ({fmt(g['best_fixed_a'])})"
            others = "".join(
                f"  {name} {fmt(g['policy_makespan_s'][name])} "
                f"({fmt(g['policy_vs_best'][name], '.3f')})"
                for name in g["policy_makespan_s"]
                if name != "paper"
            )
            lines.append(
                f"  {group:<10} {fmt(g['default_makespan_s']):>8} {best:>15} "
                f"{g['paper_best_fixed_a']:>8.1f} {fmt(g['controller_makespan_s']):>10} "
                f"{fmt(g['controller_vs_best'], '.3f'):>9} "
                f"{'n/a' if red is None else f'{-red:+.1%}':>10}{others}"
            )
        avg = f"{-mean(reductions):+.1%}" if reductions else "n/a"
        paper = PAPER_REDUCTION_VS_DEFAULT[kind]
        lines.append(
            f"  controller vs default, mean: {avg} (the paper: {-paper:+.0%}, its controller "
            f"within {PAPER_WITHIN_BEST:.0%} of its best fixed value)"
        )
        lines.append("")
    return "\n".join(lines)


def plot(summary: dict[str, object], schedulers: Sequence[SchedulerKind], path: Path) -> None:
    """Bars per group (default, best fixed, controller), one panel per scheduler, like the
    paper's Figures 3 and 4."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5 * len(schedulers), 4.2), layout="constrained")
    axes = fig.subplots(1, len(schedulers), squeeze=False)[0]
    for ax, kind in zip(axes, schedulers, strict=True):
        groups = summary[kind.value]
        assert isinstance(groups, dict)
        policies = [n for n in groups[GROUPS[0]]["policy_makespan_s"] if n != "paper"]
        series: list[tuple[str, Callable[[dict], float | None], str]] = [
            ("scheduler default", lambda g: g["default_makespan_s"], "#9e9e9e"),
            ("best fixed A", lambda g: g["best_fixed_makespan_s"], "#4c72b0"),
            ("paper controller", lambda g: g["controller_makespan_s"], "#dd8452"),
        ]
        palette = ["#55a868", "#c44e52", "#8172b3"]
        series += [
            (name, reader("policy_makespan_s", name), palette[i % len(palette)])
            for i, name in enumerate(policies)
        ]
        width = 0.8 / len(series)
        for i, (label, value, color) in enumerate(series):
            values = [value(groups[g]) or 0.0 for g in GROUPS]
            xs = [x + (i - (len(series) - 1) / 2) * width for x in range(len(GROUPS))]
            bars = ax.bar(xs, values, width, label=label, color=color)
            if label == "best fixed A":
                ax.bar_label(
                    bars,
                    [f"A={groups[g]['best_fixed_a']:g}" for g in GROUPS],
                    fontsize=7,
                    padding=2,
                )
        ax.set_xticks(range(len(GROUPS)), [g.capitalize() for g in GROUPS])
        ax.set_ylabel("total completion time (simulated s)")
        name = "CapacityScheduler" if kind is SchedulerKind.CAPACITY else "FairScheduler"
        ax.set_title(f"{name} (default A = {DEFAULT_A[kind]:g})")
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    # Below the panels, where no bar can hide behind it.
    fig.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize=8)
    fig.savefig(path, dpi=120)
