"""`amtuner bench advise-week`: `amtuner advise` on a week of recorded history of a 1,000-node
cluster, timed, on the local pool and on a Dask LocalCluster, whose answers must be the same.

The week (`week_workload`): SWIM-like jobs (`amtuner.sim.workload.generated.day_rows`: heavy-
tailed sizes, three quarters map-only, every task from the byte counts by the SWIM reader's
rules) on SWIM's node shape (8 GB, 8 vcores) scaled to `NODES`. Facebook's 2009 cluster ran
about 6,000 jobs a day on 600 nodes (the SWIM FB-2009 days); on 1,000 nodes that is
`WEEKDAY_APPS` a weekday, half as many on Saturday and Sunday, 60,000 apps in all. Each
day's submissions follow a diurnal rate, quiet at night and busiest at `PEAK_HOUR`, spread
over three queues.

It is recorded as `amtuner record` records a cluster (`record_week`): run to its end on the
simulated RM at the scheduler's default share, every finished app read through the apps API's
rendering (`apps_info`) into the trace format (`AppRecord.from_app_info`). The AM's size is
left out, as the recorder misses it for an app that runs between two polls.

Then `amtuner advise` on that trace, each time as its own process, as an operator runs it: on
the local pool of ``--workers`` processes, and (``--dask-local``) on a `distributed.LocalCluster`
of as many worker processes, one thread each. Wall and CPU time of each (the CPU of the advise
process and every process it or the cluster ran, reaped).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amtuner.bench import add_json_argument, default_workers, whole_number, write_json
from amtuner.exitcodes import ExitCode

if TYPE_CHECKING:
    from amtuner.sim.spec import Workload

NODES = 1000
WEEKDAY_APPS = 10_000
"""FB-2009's 6,000 a day on 600 nodes, in proportion."""
WEEKEND_APPS = WEEKDAY_APPS // 2
MAPS_PER_APP = 150
"""Mean maps a job: between FB-2009's 35 and FB-2010's 320 (Chen et al., VLDB 2012)."""
QUEUES = ("root.etl", "root.adhoc", "root.reports")
DIURNAL_SWING = 0.8
"""The arrival rate a day: 1 - swing cos(2π (t - peak + 12 h) / 24 h), so at the peak hour
nine times the rate at night."""
PEAK_HOUR = 14
DAY_S = 86_400.0
DAYS = 7


def week_workload(seed: int = 0) -> Workload:
    """The week's jobs, Monday first, in submission order (the same seed, the same week)."""
    from amtuner.sim.workload.generated import day_rows
    from amtuner.sim.workload.swim import max_reduces, swim_job, swim_workload

    rng = random.Random(f"advise-week:{seed}")
    jobs = []
    for day in range(DAYS):
        n = WEEKDAY_APPS if day < 5 else WEEKEND_APPS
        rows = day_rows(n, n * MAPS_PER_APP, seed * DAYS + day)
        for (job_id, _, input_b, shuffle_b, output_b), t in zip(
            rows, _diurnal(rng, n), strict=True
        ):
            job = swim_job(f"w{day}{job_id}", day * DAY_S + t, input_b, shuffle_b, output_b,
                           max_reduces(NODES))  # fmt: skip
            jobs.append(replace(job, queue=rng.choice(QUEUES)))
    jobs.sort(key=lambda j: j.submit_s)
    return replace(swim_workload(f"advise-week:{seed}", tuple(jobs), NODES), queues=QUEUES)


def _diurnal(rng: random.Random, n: int) -> list[float]:
    """``n`` submission times in one day, by thinning a uniform draw to the diurnal rate."""
    times: list[float] = []
    while len(times) < n:
        t = rng.uniform(0.0, DAY_S)
        rate = 1.0 - DIURNAL_SWING * math.cos(2 * math.pi * (t / DAY_S - PEAK_HOUR / 24 + 0.5))
        if rng.random() * (1.0 + DIURNAL_SWING) < rate:
            times.append(t)
    return sorted(times)


def record_week(path: Path, scheduler: str, seed: int = 0) -> dict[str, Any]:
    """The week run at ``scheduler``'s default share and written as `amtuner record` would."""
    from amtuner.apptrace import AppRecord, header_line
    from amtuner.bench.common import DEFAULT_A
    from amtuner.model import SchedulerKind
    from amtuner.sim.rmapi.face import FaceOptions
    from amtuner.sim.rmapi.rest import apps_info
    from amtuner.sim.simulation import build_simulation, default_scheduler_config

    workload = week_workload(seed)
    kind = SchedulerKind(scheduler)
    config = default_scheduler_config(kind, workload.queues, DEFAULT_A[kind])
    sim = build_simulation(kind, workload, config)
    result = sim.run(DAYS * DAY_S * 10)
    if not result.finished:
        raise RuntimeError(f"the week did not finish at the default share: {result.stopped_reason}")
    infos = apps_info(sim.app_views(["FINISHED"]), sim.view(), FaceOptions())["apps"]["app"]
    shape = {"nodes": NODES, "node_memory_mb": workload.node_memory_mb,
             "node_vcores": workload.node_vcores}  # fmt: skip
    lines = [header_line(shape, "http://simulated-rm")]
    lines += [AppRecord.from_app_info(i).line() for i in infos]
    path.write_text("".join(lines), encoding="utf-8")
    return {"apps": len(infos), "maps": sum(g.count for j in workload.jobs for g in j.maps),
            "bytes": path.stat().st_size}  # fmt: skip


def timed_advise(argv: list[str]) -> tuple[dict[str, Any], dict[str, float]]:
    """`amtuner advise ARGV --json` as its own process: its report, and its wall and CPU time
    with its workers'."""
    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "amtuner", "advise", *argv, "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"amtuner advise exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout), {"wall_s": round(wall, 1), **_cpu_since(before)}


def _cpu_since(before: resource.struct_rusage) -> dict[str, float]:
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": round(cpu, 1)}


def on_local_cluster(argv: list[str], workers: int) -> tuple[dict[str, Any], dict[str, float]]:
    """`timed_advise` with ``--dask`` on a LocalCluster of ``workers`` processes started here;
    the workers' CPU is counted once the cluster has closed and they are reaped."""
    from distributed import LocalCluster

    before, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    with LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=":0",  # any free port: never a fixed one
    ) as cluster:  # fmt: skip
        report, _ = timed_advise([*argv, "--dask", cluster.scheduler_address])
    return report, {"wall_s": round(time.monotonic() - t0, 1), **_cpu_since(before)}


def cmd(args: argparse.Namespace) -> int:
    work = args.work or Path(os.environ.get("TMPDIR", "/tmp")) / "amtuner-advise-week"
    work.mkdir(parents=True, exist_ok=True)
    trace = work / f"week-{args.scheduler}.jsonl"
    t0 = time.monotonic()
    recorded = record_week(trace, args.scheduler)
    result: dict[str, Any] = {
        "trace": str(trace), "nodes": NODES, **recorded,
        "record_wall_s": round(time.monotonic() - t0, 1), "seeds": args.seeds,
        "workers": args.workers,
    }  # fmt: skip
    print(f"recorded {recorded['apps']} apps on {NODES} nodes into {trace} "
          f"({result['record_wall_s']} s)", file=sys.stderr)  # fmt: skip
    argv = ["--trace", str(trace), "--scheduler", args.scheduler, "--seeds", str(args.seeds)]
    report, result["local"] = timed_advise([*argv, "--workers", str(args.workers)])
    result["recommended"], result["why"] = report["recommended"], report["why"]
    result["rows"], result["replays"] = report["rows"], report["replays"]
    print(f"local pool of {args.workers}: {result['local']}; recommended {report['recommended']}: "
          f"{report['why']}; replays {report['replays']}")  # fmt: skip
    same = True
    if args.dask_local:
        theirs, result["dask_local"] = on_local_cluster(argv, args.workers)
        same = result["same_answer"] = theirs == report
        print(f"Dask LocalCluster of {args.workers}: {result['dask_local']}; "
              f"the same report: {'yes' if same else 'NO'}")  # fmt: skip
    if args.json and not write_json(args.json, result):
        return ExitCode.FAILED
    return ExitCode.OK if same else ExitCode.FAILED


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "advise-week",
        help="amtuner advise on a recorded week of a 1,000-node cluster, timed, local and Dask",
        description="Record a generated week (60,000 SWIM-like apps, diurnal, three queues) on "
        "a simulated 1,000-node RM into a trace, then time amtuner advise on it on the local "
        "pool and (--dask-local) on a Dask LocalCluster; exit 1 if their reports differ. "
        "See docs/advise.md.",
    )
    p.add_argument("--scheduler", choices=["capacity", "fair"], default="capacity",
                   help="default: %(default)s")  # fmt: skip
    p.add_argument("--seeds", type=whole_number(2), default=5, help="advise's (%(default)s)")
    p.add_argument("--workers", type=whole_number(1), default=default_workers(),
                   help="processes, local and Dask (default: the CPUs available, %(default)s)")
    p.add_argument("--dask-local", action="store_true",
                   help="also on a Dask LocalCluster (needs the dask extra)")  # fmt: skip
    p.add_argument("--work", type=Path, help="where the trace goes (default: $TMPDIR)")
    add_json_argument(p)
    p.set_defaults(func=cmd)
