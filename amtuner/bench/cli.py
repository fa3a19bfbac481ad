"""`amtuner bench …`: experiments as commands, so every number in the README can be re-made."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from amtuner.bench import (
    REAL_RUNS,
    SHARED,
    SUITE_SEEDS,
    ZOO_DEVELOPMENT_SEEDS,
    ZOO_JUDGING_FIRST_SEED,
    ZOO_RUN_SEEDS,
    add_json_argument,
    advise_week,
    am_share,
    default_workers,
    oraclecmd,
    plot_file,
    whole_number,
    write_json,
)
from amtuner.controller import POLICIES
from amtuner.exitcodes import ExitCode
from amtuner.model import SchedulerKind
from amtuner.sim.spec import DEFAULT_HEARTBEATS, HADOOP_VERSIONS, HEARTBEATS, PERIOD_S

GUARD_NOTE = (
    "guard off: no clip or hold-off, controllers move A as their policy says (the paper's loop "
    "as published), but not up while only limits A is not part of hold the waiting apps"
)
"""Printed under every controller table. `amtuner run`'s default guard, at its default period
(the benchmarks' 15 s), holds and clips none of these moves; a tighter one would."""


def _schedulers(text: str) -> list[SchedulerKind]:
    return list(SchedulerKind) if text == "both" else [SchedulerKind(text)]


def _periods(text: str) -> list[float]:
    try:
        values = sorted({float(p) for p in text.split(",") if p.strip()} | {PERIOD_S})
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of seconds: {text!r}") from None
    if any(p <= 0 for p in values):
        raise argparse.ArgumentTypeError("periods must be positive")
    return values


def _policies(text: str) -> list[str]:
    names = ["paper", *(n.strip() for n in text.split(",") if n.strip() and n.strip() != "paper")]
    unknown = [n for n in names if n not in POLICIES]
    if unknown:
        known = ", ".join(sorted(POLICIES))
        raise argparse.ArgumentTypeError(f"unknown policy {unknown[0]!r}; known: {known}")
    return names


def _heartbeats_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--heartbeats", choices=sorted(HEARTBEATS), default=DEFAULT_HEARTBEATS,
        help="how the simulated RM hands out containers, as `amtuner simulate --heartbeats`: "
        "hadoop3 (Hadoop 3.5.0's defaults, the default), hadoop3-sync (a CapacityScheduler on "
        "node heartbeats), hadoop3-mr (with MapReduce's reduce ramp-up), hadoop3-no-reserve (a "
        "FairScheduler that reserves no node for an AM) or none (at once)",
    )  # fmt: skip


def _stagger_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--stagger",
        action="store_true",
        help="start each controller one to two periods before the first job, at a different "
        "point of its period per seed, as a running daemon meets new jobs (default: with the "
        "first job, as the paper did)",
    )


def cmd_paper(args: argparse.Namespace) -> int:
    from amtuner.bench import common, paper

    kinds = _schedulers(args.scheduler)
    # Thousands of simulated reloads are not news on a terminal.
    logging.getLogger("amtuner.sim").setLevel(logging.WARNING)
    todo = paper.scenarios(
        kinds, args.seeds, args.periods, args.policies, stagger=args.stagger,
        heartbeats=HEARTBEATS[args.heartbeats], hadoop=args.hadoop,
    )  # fmt: skip
    started = time.perf_counter()
    runs = paper.run_all(todo, args.workers, common.tqdm_progress)
    wall = time.perf_counter() - started
    summary = paper.summarise(
        runs, kinds, args.seeds, args.periods, args.policies, stagger=args.stagger
    )
    summary["heartbeats"] = args.heartbeats
    summary["wall_seconds"] = round(wall, 2)
    print(paper.format_table(summary, kinds))
    print(GUARD_NOTE)
    print(f"{len(todo)} simulations in {wall:.1f} s with {args.workers} worker(s)")
    written = not args.json or write_json(args.json, summary)
    if args.plot:
        paper.plot(summary, kinds, args.plot)
        print(f"wrote {args.plot}")
    return ExitCode.OK if written else ExitCode.FAILED


def cmd_suite(args: argparse.Namespace) -> int:
    from amtuner.bench import common, suite

    kinds = _schedulers(args.scheduler)
    logging.getLogger("amtuner.sim").setLevel(logging.WARNING)
    shared = args.shared if args.shared.is_dir() else None
    benches, notes = suite.benches(shared, quick=args.quick)
    for note in notes:
        print(note)
    seeds = 1 if args.quick and args.seeds is None else args.seeds or SUITE_SEEDS
    todo = suite.cases(
        benches, kinds, seeds, args.policies, stagger=args.stagger,
        heartbeats=HEARTBEATS[args.heartbeats],
    )  # fmt: skip
    started = time.perf_counter()
    runs = common.run_all(suite.run_case, todo, args.workers, common.tqdm_progress, chunksize=1)
    wall = time.perf_counter() - started
    summary = suite.summarise(runs, benches, kinds, seeds, args.policies, stagger=args.stagger)
    summary["skipped"] = notes
    summary["heartbeats"] = args.heartbeats
    summary["wall_seconds"] = round(wall, 2)
    print(suite.format_table(summary, kinds))
    print(GUARD_NOTE)
    print(f"{len(todo)} simulations in {wall:.1f} s with {args.workers} worker(s)")
    written = not args.json or write_json(args.json, summary)
    if args.plot:
        suite.plot(summary, kinds, args.plot)
        print(f"wrote {args.plot}")
    return ExitCode.OK if written else ExitCode.FAILED


def cmd_real(args: argparse.Namespace) -> int:
    from amtuner.bench import real
    from amtuner.realyarn import Unavailable

    kinds = _schedulers(args.scheduler)
    logging.getLogger("amtuner.sim").setLevel(logging.WARNING)
    if args.rerun and not args.resimulate:
        print("amtuner bench real: --rerun runs rows of the table --resimulate names again",
              file=sys.stderr)  # fmt: skip
        return ExitCode.CONFIG
    try:
        if args.resimulate:
            work = _work_dir(args) if args.rerun else None
            try:
                recorded = json.loads(args.resimulate.read_text())
                summary = real.resimulate(recorded, _progress, args.rerun, work, args.runs)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                print(f"amtuner bench real: cannot resimulate {args.resimulate}: {exc!r}",
                      file=sys.stderr)  # fmt: skip
                return ExitCode.CONFIG
            return _report_real(summary, args)
        work = _work_dir(args)
        print(f"{len(real.cases(kinds))} rows of {args.runs} runs on Hadoop's own RM, each row "
              f"also simulated; work in {work}", file=sys.stderr)  # fmt: skip
        summary = real.run(kinds, work, _progress, args.runs)
    except Unavailable as exc:
        print(f"amtuner bench real: no real RM can run here: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    return _report_real(summary, args)


def cmd_advise_real(args: argparse.Namespace) -> int:
    from amtuner.bench import advise_real
    from amtuner.realyarn import Unavailable

    logging.getLogger("amtuner.sim").setLevel(logging.WARNING)
    recorded = None
    if args.fixed_from:
        try:
            recorded = json.loads(args.fixed_from.read_text())
            for kind in _schedulers(args.scheduler):
                if not advise_real.bench_fixed_rows(recorded, kind):
                    raise ValueError(f"no {kind} fixed rows")
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            print(f"amtuner bench advise-real: cannot read fixed rows from {args.fixed_from}: "
                  f"{exc!r}", file=sys.stderr)  # fmt: skip
            return ExitCode.CONFIG
    work = _work_dir(args)
    print(f"advise checked on Hadoop's own RM; work in {work}", file=sys.stderr)
    try:
        summary = advise_real.run(
            _schedulers(args.scheduler), work, _progress, args.seeds, args.workers, recorded,
            args.runs,
        )
    except Unavailable as exc:
        print(f"amtuner bench advise-real: no real RM can run here: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    for result in summary["results"]:
        print(advise_real.format_result(result))
    if args.json and not write_json(args.json, summary):
        return ExitCode.FAILED
    return ExitCode.OK


def _work_dir(args: argparse.Namespace) -> Path:
    """Where real clusters keep their files: ``--work``, or a new temporary directory."""
    return args.work or Path(tempfile.mkdtemp(prefix="amtuner-bench-real-"))


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _report_real(summary: dict[str, Any], args: argparse.Namespace) -> int:
    from amtuner.bench import real

    print(real.format_table(summary))
    print(GUARD_NOTE)
    print(f"{len(summary['rows'])} rows in {summary['wall_seconds']:.0f} s")
    written = not args.json or write_json(args.json, summary)
    if args.plot:
        real.plot(summary, args.plot)
        print(f"wrote {args.plot}")
    return ExitCode.OK if written else ExitCode.FAILED


def cmd_soak(args: argparse.Namespace) -> int:
    from amtuner.bench import soak

    logging.getLogger("amtuner").setLevel(logging.WARNING)
    results = []
    for kind in _schedulers(args.scheduler):
        r = soak.soak(args.cycles, kind)
        results.append({"scheduler": kind.value, **dataclasses.asdict(r),
                        "rss_growth": round(r.rss_growth, 4)})
        print(f"{kind.value}: {r.cycles} cycles ({r.changes} changes, errors {r.errors or 0}) "
              f"in {r.wall_seconds:.1f} s; RSS {r.rss_after_warmup_mb} MB after warm-up -> "
              f"{r.rss_end_mb} MB at the end ({r.rss_growth:+.1%})")
    if args.json and not write_json(args.json, results):
        return ExitCode.FAILED
    return ExitCode.OK


def cmd_cycle(args: argparse.Namespace) -> int:
    from amtuner.bench import soak

    logging.getLogger("amtuner").setLevel(logging.WARNING)
    results = []
    for kind in _schedulers(args.scheduler):
        r = soak.cycle_cost(args.nodes, args.apps, kind, args.repeats)
        results.append(r)
        print(f"{kind.value}: {args.nodes} nodes, {r['apps_running']} apps running and "
              f"{r['apps_pending']} pending; one cycle: median {r['in_process_median_ms']} ms "
              f"in process, {r['http_median_ms']} ms over loopback HTTP "
              f"(max {r['in_process_max_ms']} / {r['http_max_ms']} ms, {args.repeats} cycles)")
    if args.json and not write_json(args.json, results):
        return ExitCode.FAILED
    return ExitCode.OK


def cmd_speed(args: argparse.Namespace) -> int:
    from amtuner.bench import speed

    shared = args.shared if args.shared.is_dir() else None
    day = args.day or (speed.QUICK_DAY if args.quick else speed.DAY)
    specs, notes = speed.workloads(shared, day, quick=args.quick)
    for note in notes:
        print(note)
    events = args.heapq_events or (speed.QUICK_HEAPQ_EVENTS if args.quick else speed.HEAPQ_EVENTS)
    try:
        kinds = _schedulers(args.scheduler)
        summary = speed.bench(specs, kinds, args.controller, events, _progress)
    except speed.SpeedError as exc:
        print(f"amtuner bench speed: {exc}", file=sys.stderr)
        return exc.code
    summary["skipped"] = notes
    print(speed.format_table(summary))
    if args.json and not write_json(args.json, summary):
        return ExitCode.FAILED
    return ExitCode.OK


def cmd_zoo(args: argparse.Namespace) -> int:
    from amtuner.bench import common, zoo

    logging.getLogger("amtuner.sim").setLevel(logging.WARNING)
    result = zoo.run_zoo(
        args.first_seed, args.cases, args.seeds, args.policies, args.workers, args.scheduler,
        common.tqdm_progress,
    )  # fmt: skip
    summary = zoo.summarize(result)
    print(zoo.format_report(summary))
    print(GUARD_NOTE)
    if args.json and not write_json(args.json, summary):
        return ExitCode.FAILED
    return ExitCode.OK


def cmd_advise(args: argparse.Namespace) -> int:
    from amtuner.bench import advise, common
    from amtuner.sim.workload import WorkloadError

    logging.getLogger("amtuner.sim").setLevel(logging.WARNING)
    traces = args.trace or advise.default_traces(args.shared)
    try:
        summary = advise.run_bench(
            traces, args.scheduler, window_s=args.window, advice_seeds=args.advice_seeds,
            judging_seeds=args.judging_seeds, workers=args.workers,
            judge_value=args.judge_value, progress=common.tqdm_progress,
        )  # fmt: skip
    except WorkloadError as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    print(advise.format_report(summary))
    if args.json and not write_json(args.json, summary):
        return ExitCode.FAILED
    return ExitCode.OK if advise.passed(summary) else ExitCode.FAILED


def _zoo_policies(text: str) -> list[str]:
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in POLICIES]
    if unknown or not names:
        known = ", ".join(sorted(POLICIES))
        raise argparse.ArgumentTypeError(f"unknown policy {unknown[0] if unknown else ''!r}; "
                                         f"known: {known}")  # fmt: skip
    return names


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = subparsers.add_parser(
        "bench",
        help="run the experiments behind the documented numbers",
        description="Re-make every measured number: the paper's grid, the suite, Hadoop's own RM "
        "against the simulator, the soak, the cost of one cycle and the simulator's speed.",
    )
    bench.set_defaults(compiled_core=True)
    sub = bench.add_subparsers(dest="bench", metavar="BENCH", required=True)
    p = sub.add_parser(
        "paper",
        help="the paper's experiment: default, every fixed A and the controller per job group",
        description="The paper's experiment on the simulator: the default, every fixed value "
        "and the controller, per job group and scheduler, averaged over seeds.",
    )
    p.add_argument("--scheduler", choices=["capacity", "fair", "both"], default="both",
                   help="the scheduler(s) to run (default: %(default)s)")
    add_json_argument(p)
    p.add_argument("--plot", type=plot_file, help="write a bar chart (PNG) here")
    p.add_argument("--workers", type=int, default=default_workers(),
                   help="parallel processes (default: the CPUs available, %(default)s)")
    p.add_argument("--seeds", type=int, default=10,
                   help="runs per scenario, averaged (default: %(default)s)")
    p.add_argument("--periods", type=_periods, default=[PERIOD_S],
                   help=f"control periods to compare, comma-separated seconds (always includes "
                   f"{PERIOD_S:g})")
    p.add_argument("--policies", type=_policies, default=["paper"],
                   help="controller policies to compare, comma-separated (always includes "
                   f"paper; known: {', '.join(sorted(POLICIES))})")
    _stagger_option(p)
    _heartbeats_option(p)
    p.add_argument(
        "--hadoop", choices=HADOOP_VERSIONS, default="3",
        help="scheduler semantics, as `amtuner simulate --hadoop` (default: %(default)s)",
    )  # fmt: skip
    p.set_defaults(func=cmd_paper)

    p = sub.add_parser(
        "suite",
        help="workloads beyond the paper: larger clusters, phases, two queues, Poisson, traces",
        description="Workloads beyond the paper: larger clusters, phases, two queues, Poisson "
        "arrivals, real traces; the default, every fixed value and each controller.",
    )
    p.add_argument("--scheduler", choices=["capacity", "fair", "both"], default="both",
                   help="the scheduler(s) to run (default: %(default)s)")
    add_json_argument(p)
    p.add_argument("--plot", type=plot_file, help="write a chart (PNG) here")
    p.add_argument("--workers", type=int, default=default_workers(),
                   help="parallel processes (default: the CPUs available, %(default)s)")
    p.add_argument("--seeds", type=int, default=None,
                   help=f"runs per generated workload, averaged (default: {SUITE_SEEDS}; "
                   "1 with --quick); traces run once")
    p.add_argument("--policies", type=_policies, default=["paper"],
                   help="controller policies to compare, comma-separated (always includes "
                   f"paper; known: {', '.join(sorted(POLICIES))})")
    p.add_argument("--quick", action="store_true",
                   help="a small subset (one larger cluster, phases, vcores, two queues, Poisson, "
                   "SLS)")
    p.add_argument("--shared", type=Path, default=SHARED,
                   help="the fixtures directory holding the traces (default: %(default)s); "
                   "trace workloads are skipped when absent")
    _stagger_option(p)
    _heartbeats_option(p)
    p.set_defaults(func=cmd_suite)

    p = sub.add_parser(
        "real",
        help="one batch on Hadoop's own RM (needs Java and Maven) and on the simulator",
        description=(
            "The default A, fixed values and the controllers on a real MiniYARNCluster, each "
            "beside the same batch simulated on the same cluster shape."
        ),
    )
    p.add_argument("--scheduler", choices=["capacity", "fair", "both"], default="both",
                   help="the scheduler(s) to run (default: %(default)s)")
    p.add_argument("--runs", type=whole_number(1), default=REAL_RUNS,
                   help="real runs per row, compared by their mean (default: %(default)s)")
    add_json_argument(p)
    p.add_argument("--plot", type=plot_file, help="write a bar chart (PNG) here")
    p.add_argument("--work", type=Path,
                   help="directory for the clusters' files and logs (default: a new temporary one)")
    p.add_argument("--resimulate", type=Path, metavar="JSON",
                   help="keep the real runs an earlier --json recorded and simulate every row "
                        "again: a change to the simulator against the real RM in a minute")
    p.add_argument("--rerun", action="append", default=[], metavar="SCHEDULER:ROW",
                   help="with --resimulate: run this row again on the real RM (e.g. "
                        "capacity:adaptive after a change to that policy); repeatable")
    p.set_defaults(func=cmd_real)

    p = sub.add_parser(
        "advise-real",
        help="amtuner advise checked on Hadoop's own RM: record, advise, run the advice",
        description="Per scheduler: the real bench's batch on a real MiniYARNCluster at the "
        "default AM share while amtuner record records it; amtuner advise on that trace; the "
        "batch again at the recommended value. Reports the gain advise predicted against the "
        "gain measured, and the recommended value against the best real fixed row "
        "(docs/advise.md).",
    )
    p.add_argument("--scheduler", choices=["capacity", "fair", "both"], default="both",
                   help="the scheduler(s) to run (default: %(default)s)")
    p.add_argument("--fixed-from", type=Path, metavar="JSON",
                   help="take the fixed rows from an earlier `bench real --json` of the same "
                        "batch (docs/real-bench.json) instead of running them here")
    p.add_argument("--runs", type=whole_number(1), default=2,
                   help="rounds of real runs, each value once a round, compared by their mean "
                        "(default: %(default)s)")
    p.add_argument("--seeds", type=whole_number(2), default=5,
                   help="advise's seeds (default: %(default)s)")
    p.add_argument("--workers", type=whole_number(1), default=default_workers(),
                   help="advise's processes (default: the CPUs available, %(default)s)")
    add_json_argument(p)
    p.add_argument("--work", type=Path,
                   help="directory for the clusters' files, logs and the trace (default: a new "
                        "temporary one)")
    p.set_defaults(func=cmd_advise_real)

    p = sub.add_parser(
        "soak",
        help="thousands of real cycles in process; resident memory growth",
        description="Run thousands of real cycles (monitor, controller, guard, executor, a real "
        "file) against an in-process simulated RM and report resident memory growth.",
    )
    p.add_argument("--cycles", type=int, default=10_000, help="default: %(default)s")
    p.add_argument("--scheduler", choices=["capacity", "fair", "both"], default="both",
                   help="the scheduler(s) to run (default: %(default)s)")
    add_json_argument(p)
    p.set_defaults(func=cmd_soak)

    p = sub.add_parser(
        "cycle",
        help="the cost of one cycle against a large simulated RM",
        description="Time one cycle against a simulated RM with many nodes and apps, in process "
        "and over loopback HTTP.",
    )
    p.add_argument("--nodes", type=int, default=5000, help="default: %(default)s")
    p.add_argument("--apps", type=int, default=10_000, help="default: %(default)s")
    p.add_argument("--repeats", type=int, default=50, help="default: %(default)s")
    p.add_argument("--scheduler", choices=["capacity", "fair", "both"], default="both",
                   help="the scheduler(s) to run (default: %(default)s)")
    add_json_argument(p)
    p.set_defaults(func=cmd_cycle)

    p = sub.add_parser(
        "speed",
        help="ns per simulated event against a bare heapq loop, peak RSS, controller cost",
        description="Run the FB-2009 SWIM day and a generated day of the FB-2010 class, each "
        "in its own process: ns per event of the simulator and of a bare heapq loop in the same "
        "process, events, peak RSS, and a controlled run's wall time over the fixed run's.",
    )
    p.add_argument("--scheduler", choices=["capacity", "fair", "both"], default="capacity",
                   help="the scheduler(s) to run (default: %(default)s)")
    p.add_argument("--day", metavar="SPEC",
                   help="the generated day (default: day:25000,8000000; day:300,6000 with "
                   "--quick); any workload spec works")
    p.add_argument("--controller", choices=sorted(POLICIES), default="adaptive",
                   help="the policy of the controlled run (default: %(default)s)")
    p.add_argument("--heapq-events", type=whole_number(1),
                   help="events per round of the bare loop (default: 1,000,000; 100,000 with "
                   "--quick)")
    p.add_argument("--quick", action="store_true",
                   help="small workloads (the FB-2009 trace's first 50 jobs, day:300,6000), in "
                   "seconds")
    p.add_argument("--shared", type=Path, default=SHARED,
                   help="the fixtures directory holding the FB-2009 trace (default: "
                   "%(default)s); the trace is skipped when absent")
    add_json_argument(p)
    p.set_defaults(func=cmd_speed)

    dev = ZOO_DEVELOPMENT_SEEDS
    p = sub.add_parser(
        "zoo",
        help="policies over a distribution of drawn clusters: ratios to the best fixed A",
        description="Draw whole cases (cluster, weighted queues, MapReduce, Spark and Tez jobs, "
        "arrivals, scheduler) from seeds and run each over run seeds: the default A, fixed A "
        "0.1..1.0 then 0.05 either side of the best, and each policy. Reports, per policy and "
        "the default, the mean, p90 and worst of mean JCT (and makespan) over the best fixed "
        "value's, the cases worse than the default beyond 2 standard errors, and the worst "
        f"cases with the command that replays each. Case seeds {dev.start}-{dev.stop - 1} are "
        f"for development; judge a policy on seeds from {ZOO_JUDGING_FIRST_SEED} up.",
    )
    p.add_argument("--cases", type=whole_number(1), default=200,
                   help="cases to draw, one a seed (default: %(default)s)")
    p.add_argument("--first-seed", type=whole_number(0), default=dev.start, metavar="FIRST",
                   help=f"the cases are seeds FIRST..FIRST+CASES-1 (default: %(default)s; "
                   f"{dev.start}-{dev.stop - 1} are for development, {ZOO_JUDGING_FIRST_SEED}+ "
                   "for judging)")
    p.add_argument("--seeds", type=whole_number(1), default=ZOO_RUN_SEEDS,
                   help="run seeds per case, each jittering task durations (default: %(default)s)")
    p.add_argument("--policies", type=_zoo_policies, default=["adaptive", "paper"],
                   help="controller policies, comma-separated (default: adaptive,paper; known: "
                   f"{', '.join(sorted(POLICIES))})")
    p.add_argument("--scheduler", choices=["case", "capacity", "fair", "both"], default="case",
                   help="each case's own scheduler (the default), one for every case, or both")
    p.add_argument("--workers", type=whole_number(1), default=default_workers(),
                   help="parallel processes (default: the CPUs available, %(default)s)")
    add_json_argument(p)
    p.set_defaults(func=cmd_zoo)

    oraclecmd.register(sub)

    p = sub.add_parser(
        "advise",
        help="amtuner advise's recommendation on SWIM and SLS traces, judged on unseen seeds",
        description="Cut each trace into periods of --window seconds of submissions; advise on "
        "each (amtuner advise's sweep and recommendation, on the advice seeds), then run every "
        "fixed value 0.1..1.0 (0.05 either side of the best), the recommendation and the "
        "default on the judging seeds, which the advice never saw. Reports per trace the mean, "
        "p90 and worst of the recommendation's mean JCT over the best fixed value's, beside the "
        "default's. Exit 1 when a trace's mean is more than 3%% above 1. See docs/advise.md.",
    )
    p.add_argument("--trace", action="append", metavar="SPEC",
                   help="a workload spec (swim:PATH@NODES, sls:PATH, rumen:PATH, "
                   "synth:PATH@jobs=N,seed=N, trace:PATH); repeatable (default: the SWIM "
                   "FB-2009 days on 25 and 50 nodes, SLS's samples and draws of its synthetic "
                   "descriptions, from --shared)")
    p.add_argument("--shared", type=Path, default=SHARED,
                   help="the fixtures' folder (default: %(default)s)")
    p.add_argument("--scheduler", type=_schedulers, default=list(SchedulerKind),
                   metavar="{capacity,fair,both}", help="default: both")
    p.add_argument("--window", type=float, default=3600.0, metavar="SECONDS",
                   help="each period's span of submissions; 0: the whole trace (default: "
                   "%(default)s)")
    p.add_argument("--advice-seeds", type=whole_number(2), default=5,
                   help="seeds advise runs on, 0..N-1 (default: %(default)s)")
    p.add_argument("--judging-seeds", type=whole_number(2), default=5,
                   help="seeds the recommendation is judged on, from 1000 (default: %(default)s)")
    p.add_argument("--judge-value", type=am_share, metavar="A",
                   help="judge this fixed AM share in place of each recommendation: a value "
                   "known to be wrong must fail the bar")
    p.add_argument("--workers", type=whole_number(1), default=default_workers(),
                   help="parallel processes (default: the CPUs available, %(default)s)")
    add_json_argument(p)
    p.set_defaults(func=cmd_advise)
    advise_week.register(sub)


