"""`amtuner advise`: what each AM share would have done to a recorded period, before any is set.

The period (an app trace from `amtuner record`, `amtuner.sim.workload.apps`) is replayed through
the simulator on the cluster given, under the current value, the fixed values 0.1 … 1.0, then
0.05 either side of the best of those, and the adaptive policy, each over the same seeds (a seed
jitters task lengths and heartbeat phases, not the arrivals: those are the record). A seed's
fixed values run smallest first, and the first whose run no AM limit held an app back gives
every larger value its run: they would replay it event for event (`Replay`); the report counts
the runs reused. Each chain of fixed values, and each adaptive run, is one job of `run_all`: a
process of its pool, on every core unless told, or a task on the Dask cluster ``--dask`` names
(`amtuner.bench.daskpool`); the same runs and figures either way.

Per value: the mean over seeds of the mean job completion time, the mean wait in ACCEPTED
(submission to AM container) and the makespan, and each against the current value's as a
ratio with its spread (two paired standard errors, `paired_se`). The recommendation is the value
with the best mean JCT, unless its gain over the current value is within that spread: then the
current value is as good as the record can tell.

With the cluster's scheduler file (given, the one amtuner's config names, the RM's configuration
store, or the file the queue tree the RM reports stands for: `amtuner.advicecluster`) the replay
runs that file: its queues, capacities, weights, user and app limits, and every AM share it
sets. Each target is then advised on its own: its value swept, every other value as the file has
it, the current value the file's.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amtuner.bench import am_share, plot_file, whole_number
from amtuner.bench.daskpool import EngineError
from amtuner.exitcodes import ExitCode
from amtuner.model import GLOBAL_TARGET, SchedulerKind

if TYPE_CHECKING:
    from distributed import Client

    from amtuner.bench.common import Progress
    from amtuner.sim.spec import Workload

MIN_APPS = 30
"""Fewer replayable apps than the paper's batch of 30 is refused: a handful of apps gives a mean
JCT that one app's length moves, whatever the share."""
MIN_SEEDS = 2
"""The spread needs two seeds at least."""
ADAPTIVE = "adaptive"
NOISE_SE = 2.0
"""A change within two standard errors is not told apart from the seeds' noise."""


@dataclass(frozen=True, slots=True)
class Period:
    """What is replayed, small enough to send to a worker, which loads it once (`load`): a
    workload spec (`load_workload`'s; ``trace:PATH`` a recorded one), the submissions from
    ``first_s`` to before ``end_s`` only (shifted to start at 0), on the cluster given where
    it is not the workload's own."""

    spec: str
    first_s: float = 0.0
    end_s: float = math.inf
    nodes: int | None = None
    node_memory_mb: int | None = None
    node_vcores: int | None = None

    def load(self) -> Workload:
        from amtuner.sim.workload import WorkloadError, load_apps, load_workload

        kind, _, path = self.spec.partition(":")
        if kind == "trace":  # its header names the cluster, which the flags may override
            workload = load_apps(
                path, nodes=self.nodes, node_memory_mb=self.node_memory_mb,
                node_vcores=self.node_vcores,
            )  # fmt: skip
        else:
            workload = load_workload(self.spec)
            workload = dataclasses.replace(
                workload, nodes=self.nodes or workload.nodes,
                node_memory_mb=self.node_memory_mb or workload.node_memory_mb,
                node_vcores=self.node_vcores or workload.node_vcores,
            )  # fmt: skip
        if self.first_s == 0 and math.isinf(self.end_s):
            return workload
        jobs = [j for j in workload.jobs if self.first_s <= j.submit_s < self.end_s]
        if not jobs:
            raise WorkloadError(
                f"{self.spec}: no submission in [{self.first_s:g}, {self.end_s:g}) s"
            )
        t0 = min(j.submit_s for j in jobs)
        jobs = [dataclasses.replace(j, submit_s=j.submit_s - t0) for j in jobs]
        return dataclasses.replace(workload, jobs=tuple(jobs))


def horizon_s(workload: Workload) -> float:
    """How long a replay may run before it counts as never finishing: the last submission, ten
    times as long as the jobs would take one after another, each one wave of its tasks, and an
    hour."""
    last_submit = max(j.submit_s for j in workload.jobs)
    work_s = sum(
        j.am_startup_s + max(g.duration_s for g in j.maps)
        + max((g.duration_s for g in j.reduces), default=0.0)
        for j in workload.jobs
    )  # fmt: skip
    return last_submit + 10 * work_s + 3600


@dataclass(frozen=True, slots=True)
class Sweep:
    """One period on one scheduler under ``labels``, each against ``base``'s figures; the
    values 0.05 either side of the best of them are run too. With the cluster's scheduler file
    (``config``) a value is set for ``target`` alone, every other queue keeping the file's,
    and the adaptive policy tunes ``targets`` (empty: the global value), as configured."""

    period: Period
    scheduler: SchedulerKind
    labels: tuple[str, ...]
    base: str
    config: bytes | None = None
    target: str = GLOBAL_TARGET
    targets: tuple[str, ...] = ()
    distributions: bool = False
    """Keep every job's completion time and wait of each run too (``jcts``, ``waits``), for
    the plot: a long period's are many."""


@dataclass(frozen=True, slots=True)
class Replay:
    """The unit of work of the pool: the runs of ``labels`` on ``seed``, in this order. Fixed
    values go together, smallest first, so that the first run no AM limit held an app back
    (`SimResult.am_refusals` 0) ends the chain: every larger value would run the same, event for
    event (the AM share reaches the schedulers only through the AM limits, each growing with
    it), and takes that run's figures (``reused_from``)."""

    sweep: Sweep
    labels: tuple[str, ...]
    seed: int


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


@functools.lru_cache(maxsize=4)
def _loaded(period: Period) -> tuple[Workload, float]:
    workload = period.load()
    return workload, horizon_s(workload)


def _run(replay: Replay) -> dict[str, dict[str, Any]]:
    """One chain of runs (`Replay`), in a worker process: each label's figures."""
    out: dict[str, dict[str, Any]] = {}
    for i, label in enumerate(replay.labels):
        figures = _run_one(replay.sweep, label, replay.seed)
        out[label] = figures
        if label != ADAPTIVE and figures["am_refusals"] == 0:
            for rest in replay.labels[i + 1 :]:
                out[rest] = {**figures, "reused_from": label}
            break
    return out


def _run_one(w: Sweep, label: str, seed: int) -> dict[str, Any]:
    """One replay: the figures the advice compares."""
    from amtuner.bench.common import simulate

    workload, limit_s = _loaded(w.period)
    policy = label if label == ADAPTIVE else "paper"
    a = None if label == ADAPTIVE else float(label)
    r = simulate(
        workload, w.scheduler, a, seed, max_sim_seconds=limit_s, policy=policy,
        config=w.config, target=w.target, targets=w.targets,
    )  # fmt: skip
    # A run that never finished (every AM holding the memory its tasks need) has no mean JCT
    # or wait worth comparing: the apps stuck in it are not in them, so they would look best.
    figures: dict[str, Any] = (
        {"jct": r.mean_jct_s, "wait": r.mean_wait_s, "makespan": r.makespan_s}
        if r.finished
        else {"jct": None, "wait": None, "makespan": None}
    )
    figures["am_refusals"] = r.am_refusals
    if w.distributions:  # the apps that did complete, drawn as the value's that never finished
        figures |= {"jcts": r.jcts_s, "waits": r.waits_s}
    return figures


Results = dict[tuple[str, int], dict[str, Any]]
"""Each run's figures by (the value's label, seed)."""


def rows(results: Results, labels: Sequence[str], seeds: Sequence[int], current: str) -> list[Row]:
    from amtuner.bench.common import mean_or_none, paired_se, ratio

    def series(label: str, figure: str) -> list[float | None]:
        return [results[(label, s)][figure] for s in seeds]

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


def coarse_labels(current: str) -> tuple[str, ...]:
    """The current value, 0.1 … 1.0 and the adaptive policy."""
    return tuple(dict.fromkeys([current, *(f"{i / 10:g}" for i in range(1, 11)), ADAPTIVE]))


def sweep(
    sweeps: Sequence[Sweep],
    seeds: Sequence[int],
    workers: int,
    progress: Progress[dict[str, dict[str, Any]]] | None = None,
    kept: dict[Sweep, Results] | None = None,
    client: Client | None = None,
    *,
    reuse: bool = True,
) -> list[list[Row]]:
    """Each sweep's table: its labels over ``seeds``, then the values 0.05 either side of its
    best fixed one; the runs of every sweep jobs of ``workers`` processes, or of the Dask
    cluster of ``client``. ``kept``, if given, receives each sweep's runs.

    ``reuse``: a seed's fixed values run as one chain, smallest first, each value above the
    smallest one no AM limit held back taking its run (`Replay`); the refinements likewise,
    after the runs of the coarse grid. Without it every run is a job of its own: the same
    figures, the way to check that they are."""
    from amtuner.bench.common import run_all

    results: dict[Sweep, Results] = {} if kept is None else kept

    def free_at(w: Sweep, seed: int) -> str | None:
        """The smallest value whose run on ``seed`` no AM limit held back (None: none yet)."""
        free = [label for (label, s), f in results.get(w, {}).items()
                if s == seed and label != ADAPTIVE and float(label) >= 0
                and f["am_refusals"] == 0]  # fmt: skip
        return min(free, key=float, default=None)

    def run(todo: dict[int, Sequence[str]]) -> None:
        replays = []
        for i, labels in todo.items():
            w = sweeps[i]
            fixed = sorted((v for v in labels if v != ADAPTIVE), key=float)
            # A FairScheduler's -1 is no AM limit at all, not the smallest: it runs on its own.
            alone = [v for v in fixed if not reuse or float(v) < 0]
            chained = [v for v in fixed if v not in alone]
            for seed in seeds:
                if ADAPTIVE in labels:
                    replays.append(Replay(w, (ADAPTIVE,), seed))
                replays += [Replay(w, (v,), seed) for v in alone]
                free = free_at(w, seed)
                top = math.inf if free is None else float(free)
                for v in chained:
                    if free is not None and float(v) > top:  # ``free``'s run is this one's too
                        results[w][(v, seed)] = {**results[w][(free, seed)], "reused_from": free}
                chain = tuple(v for v in chained if float(v) <= top)
                if chain:
                    replays.append(Replay(w, chain, seed))
        # Long jobs first (a chain, then a controlled run): the pool should not end on them.
        replays.sort(key=lambda r: (-len(r.labels), r.labels[0] != ADAPTIVE))
        for r, out in run_all(_run, replays, workers, progress, 1, client).items():
            for label, figures in out.items():
                results.setdefault(r.sweep, {})[(label, r.seed)] = figures

    run({i: w.labels for i, w in enumerate(sweeps)})
    fine: dict[int, list[str]] = {}
    for i, w in enumerate(sweeps):
        best = best_fixed(rows(results[w], w.labels, seeds, w.base))
        values = [label_of(v) for v in refinements(best.a)] if best and best.a else []
        fine[i] = [v for v in values if v not in w.labels]
    run({i: labels for i, labels in fine.items() if labels})
    tables = []
    for i, w in enumerate(sweeps):
        labels = sorted(
            [*w.labels, *fine[i]],
            key=lambda v: (v == ADAPTIVE, math.inf if v == ADAPTIVE else float(v)),
        )
        tables.append(rows(results[w], labels, seeds, w.base))
    return tables


def reused(runs: Results) -> int:
    """How many of ``runs`` took a smaller value's run instead of a replay of their own."""
    return sum("reused_from" in f for f in runs.values())


def too_short(workload: Workload) -> str | None:
    """Why the period is too short to advise on, or None."""
    if len(workload.jobs) < MIN_APPS:
        return (
            f"{len(workload.jobs)} apps whose AM started; advice needs at least {MIN_APPS}: "
            "record a longer period"
        )
    return None


def engine(args: argparse.Namespace) -> Client | None:
    """The Dask cluster ``--dask`` names (None: the local pool); raises EngineError before any
    replay."""
    if args.dask is None:
        return None
    if args.workers is not None:
        raise EngineError("--workers is the local pool's: a Dask cluster has its own workers")
    from amtuner.bench import daskpool

    return daskpool.connect(args.dask or None, args.trace.resolve())


def cmd_advise(args: argparse.Namespace) -> int:
    from amtuner.advicecluster import ClusterError, read_cluster, report_fields, unknown_queues
    from amtuner.bench import default_workers
    from amtuner.bench.common import DEFAULT_A, tqdm_progress
    from amtuner.sim.sched_config import SchedulerConfigError
    from amtuner.sim.workload import WorkloadError

    try:
        cluster = read_cluster(args)
    except ClusterError as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return exc.code
    shape = cluster.shape  # the RM's, when read from it; the flags' first, the trace's last
    period = Period(
        f"trace:{args.trace.resolve()}", nodes=args.nodes or shape.get("nodes"),
        node_memory_mb=args.node_memory_mb or shape.get("node_memory_mb"),
        node_vcores=args.node_vcores or shape.get("node_vcores"),
    )  # fmt: skip
    try:
        workload = period.load()
        unknown = unknown_queues(workload, cluster)
    except (WorkloadError, SchedulerConfigError) as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    if unknown:
        print(
            f"amtuner: {args.trace}: queue(s) {', '.join(unknown)} are no leaf of "
            f"{cluster.source}: the apps did not run under this file",
            file=sys.stderr,
        )
        return ExitCode.CONFIG
    if cluster.config is not None and args.current is not None:
        print("amtuner: --current is the file's value when a scheduler file is given",
              file=sys.stderr)  # fmt: skip
        return ExitCode.CONFIG
    short = too_short(workload)
    if short:
        print(f"amtuner: {args.trace}: {short}", file=sys.stderr)
        return ExitCode.FAILED
    kind = cluster.kind
    currents = [label_of(v) for v in cluster.currents] or [
        label_of(DEFAULT_A[kind] if args.current is None else args.current)
    ]
    sweeps = [
        Sweep(period, kind, coarse_labels(cur), cur, cluster.config, t, cluster.targets,
              distributions=args.plot is not None)
        for t, cur in zip(cluster.targets, currents, strict=True)
    ]  # fmt: skip
    try:
        client = engine(args)
    except EngineError as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    kept: dict[Sweep, Results] = {}
    try:
        tables = sweep(
            sweeps, range(args.seeds), args.workers or default_workers(), tqdm_progress, kept,
            client,
        )  # fmt: skip
    finally:
        if client is not None:
            client.close()
    per_target = []
    for w, table in zip(sweeps, tables, strict=True):
        value, why = recommend(table, w.base)
        runs = kept[w]
        per_target.append({"target": w.target, "current": w.base, "recommended": value,
                           "why": why, "rows": [asdict(r) for r in table],
                           "replays": {"run": len(runs) - reused(runs),
                                       "reused": reused(runs)}})  # fmt: skip
    report = {
        "trace": str(args.trace),
        "workload": {
            "apps": len(workload.jobs), "nodes": workload.nodes,
            "node_memory_mb": workload.node_memory_mb, "queues": list(workload.queues),
        },
        "scheduler": kind.value,
        **report_fields(cluster, args),
        "seeds": args.seeds,
        "targets": per_target,
    }  # fmt: skip
    if len(per_target) == 1:  # one value to advise on: its answer at the top
        report |= {k: v for k, v in per_target[0].items() if k != "target"}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        print_report(report, tables)
    if args.plot is not None:
        from amtuner.adviceplot import plot

        plot(report, [kept[w] for w in sweeps], args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return ExitCode.OK


def print_report(report: dict[str, Any], tables: list[list[Row]]) -> None:
    from amtuner.advicecluster import describe
    from amtuner.bench.common import fmt

    w = report["workload"]
    queues = describe(report["queues_from"], report["scheduler_file"])
    shape = {"rm": " (the RM's)", "flags": "", "trace": " (the trace's)"}[report["shape_from"]]
    print(
        f"{report['trace']}: {w['apps']} apps on {w['nodes']} nodes x {w['node_memory_mb']} MB"
        f"{shape}, {report['scheduler']} scheduler, {queues}, {report['seeds']} seeds"
    )
    for note in report["notes"]:
        print(f"note: {note}")

    def change(r: float | None, se: float | None) -> str:
        if r is None:
            return "never"
        spread = "" if se is None else f" ±{NOISE_SE * se:.1%}"
        return f"{r - 1:+.1%}{spread}"

    for t, table in zip(report["targets"], tables, strict=True):
        print(f"{t['target'] or 'global'}: current value {t['current']}")
        print(f"{'value':>8} {'JCT s':>9} {'vs current':>16} {'wait s':>8} {'vs current':>16} "
              f"{'makespan s':>10} {'vs current':>16}")  # fmt: skip
        for r in table:
            mark = " <" if r.label == t["recommended"] else ""
            print(
                f"{r.label:>8} {fmt(r.jct_s):>9} {change(r.jct_ratio, r.jct_se):>16} "
                f"{fmt(r.wait_s):>8} {change(r.wait_ratio, r.wait_se):>16} "
                f"{fmt(r.makespan_s):>10} {change(r.makespan_ratio, r.makespan_se):>16}{mark}"
            )
        n = t["replays"]
        print(f"replays: {n['run']} run, {n['reused']} reused (the run of a smaller value no AM "
              "limit held back)")  # fmt: skip
        which = f" for {t['target']}" if t["target"] else ""
        print(f"recommended{which}: {t['recommended']}: {t['why']}")


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
        "--scheduler", choices=["capacity", "fair"],
        help="the cluster's scheduler, whose AM share is advised (default: the config's "
        "scheduler.kind)",
    )  # fmt: skip
    p.add_argument(
        "--scheduler-file", type=Path,
        help="the cluster's capacity-scheduler.xml or fair-scheduler.xml: the replay has its "
        "queues, capacities, weights, limits and AM shares (default: the config's)",
    )  # fmt: skip
    p.add_argument(
        "--config", type=Path,
        help="amtuner's config: the scheduler, its targets and its file (scheduler.config_file, "
        "else the RM's configuration store through the rm section)",
    )  # fmt: skip
    p.add_argument(
        "--target", action="append", metavar="QUEUE",
        help="a leaf whose AM share is advised, every other value as the file has it; "
        "repeatable; '' the global value (default: the config's scheduler.targets, else global)",
    )  # fmt: skip
    p.add_argument(
        "--rm", action="append", metavar="URL",
        help="read the queues and the cluster's shape from this RM's REST API, not a file; "
        "repeatable (HA); with --config its rm section's TLS, Kerberos and user.name",
    )  # fmt: skip
    p.add_argument(
        "--from-rm", action="store_true",
        help="read the queues and the cluster's shape from the RMs of the config's rm section",
    )  # fmt: skip
    p.add_argument(
        "--nodes", type=whole_number(1),
        help="nodes (default: the RM's when read from it, else the trace header's)",
    )  # fmt: skip
    p.add_argument("--node-memory-mb", type=whole_number(1), help="default: as --nodes")
    p.add_argument("--node-vcores", type=whole_number(1), help="default: as --nodes")
    p.add_argument(
        "--current", type=am_share,
        help="the AM share the cluster runs now (default: the scheduler's, 0.1 or 0.5)",
    )  # fmt: skip
    p.add_argument(
        "--seeds", type=whole_number(MIN_SEEDS), default=5, help="default: %(default)s"
    )
    p.add_argument("--workers", type=whole_number(1), help="processes (default: every core)")
    p.add_argument(
        "--dask", nargs="?", const="", metavar="ADDRESS",
        help="run the replays on the Dask cluster whose scheduler is at ADDRESS "
        "(tcp://host:8786; alone: DASK_SCHEDULER_ADDRESS), not in local processes; needs the "
        "dask extra, and the trace at the same path on every worker",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="the report as JSON, for programs")
    p.add_argument(
        "--plot", type=plot_file, metavar="PNG",
        help="draw each value's JCT and wait distributions, per target, into this PNG (needs "
        "the plot extra)",
    )  # fmt: skip
    p.set_defaults(func=cmd_advise, compiled_core=True)
