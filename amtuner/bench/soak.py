"""Can amtuner stay on for months, and is one cycle cheap on a big cluster?

* ``soak``: thousands of real cycles (monitor, controller, guard, executor: a real file written
  and reloaded) against an in-process simulation kept busy by a stream of job batches. The
  process's resident memory is sampled after a warm-up and at the end: a leak of a few hundred
  bytes per cycle shows up as growth over 10,000 cycles.
* ``cycle``: the cost of one cycle against a large simulated RM (5,000 nodes, 10,000 apps),
  through the in-process adapter and over loopback HTTP, with the simulation paused so only the
  cycle is timed. The scrape is three requests whatever the number of apps.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import tempfile
import time
from pathlib import Path

import requests

from amtuner.config import ControllerSettings, GuardSettings
from amtuner.model import SchedulerKind
from amtuner.monitor import RMClient
from amtuner.sim.control import ControlledRun
from amtuner.sim.server import SimServer
from amtuner.sim.simulation import Simulation, build_simulation, default_scheduler_config
from amtuner.sim.spec import JobSpec, Workload
from amtuner.sim.workload import load_workload


def rss_bytes() -> int:
    """Current (not peak) resident set size, from /proc."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def batches(count: int, every_s: float, *, group: str = "mixed") -> Workload:
    """The paper's job group submitted again every ``every_s`` seconds, ``count`` times."""
    base = load_workload(f"paper:{group}")
    jobs: list[JobSpec] = []
    for b in range(count):
        jobs += [
            dataclasses.replace(j, job_id=f"{j.job_id}-b{b}", submit_s=j.submit_s + b * every_s)
            for j in base.jobs
        ]
    return dataclasses.replace(base, name=f"{base.name} x{count}", jobs=tuple(jobs))


@dataclasses.dataclass(frozen=True)
class SoakResult:
    cycles: int
    changes: int
    errors: dict[str, int]
    rss_after_warmup_mb: float
    rss_end_mb: float
    wall_seconds: float

    @property
    def rss_growth(self) -> float:
        return self.rss_end_mb / self.rss_after_warmup_mb - 1


def soak(cycles: int, scheduler: SchedulerKind, *, period_s: float = 10.0,
         warmup: int = 500) -> SoakResult:
    # One batch of 30 jobs every 10 periods keeps the loop busy for the whole run.
    workload = batches(cycles // 10 + 2, 10 * period_s)
    sim = build_simulation(scheduler, workload)
    rss: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="amtuner-soak-") as tmp:
        run = ControlledRun(
            sim, Path(tmp), controller=ControllerSettings(period_seconds=period_s),
            guard=GuardSettings(),
        )
        started = time.perf_counter()
        sim.run_until(warmup * period_s)
        rss["warm"] = rss_bytes() / 2**20
        sim.run_until(cycles * period_s - period_s / 2)
        rss["end"] = rss_bytes() / 2**20
        wall = time.perf_counter() - started
    return SoakResult(
        cycles=run.cycles, changes=len(run.applied_at), errors=dict(run.errors),
        rss_after_warmup_mb=round(rss["warm"], 1), rss_end_mb=round(rss["end"], 1),
        wall_seconds=round(wall, 2),
    )


def big_cluster(nodes: int, apps: int, scheduler: SchedulerKind) -> Simulation:
    """``apps`` jobs submitted at once on ``nodes`` nodes, a few seconds in: the RM is busy."""
    base = load_workload("paper:mixed")
    jobs = tuple(
        dataclasses.replace(base.jobs[i % len(base.jobs)], job_id=f"job{i}", submit_s=0.0)
        for i in range(apps)
    )
    workload = dataclasses.replace(base, name=f"{apps} jobs", jobs=jobs, nodes=nodes)
    # A low share keeps most apps pending, so the controller has something to decide.
    config = default_scheduler_config(scheduler, workload.queues, 0.1)
    sim = build_simulation(scheduler, workload, config)
    sim.run_until(8.0)
    return sim


def time_cycles(run: ControlledRun, repeats: int) -> tuple[list[float], int]:
    """Wall seconds of each of ``repeats`` consecutive cycles, and how many wrote a change."""
    out, applied = [], 0
    for _ in range(repeats):
        t = time.perf_counter()
        report, run.states = run.cycle.run(run.states)
        out.append(time.perf_counter() - t)
        if report.error:
            raise RuntimeError(f"cycle failed: {report.error}: {report.message}")
        applied += report.applied
    return out, applied


def cycle_cost(nodes: int, apps: int, scheduler: SchedulerKind, repeats: int) -> dict[str, object]:
    sim = big_cluster(nodes, apps, scheduler)
    view = sim.view()
    out: dict[str, object] = {
        "nodes": nodes, "apps": apps, "scheduler": scheduler.value,
        "apps_pending": view.apps_pending, "apps_running": view.apps_running,
    }
    with tempfile.TemporaryDirectory(prefix="amtuner-cycle-") as tmp:
        run = ControlledRun(sim, Path(tmp), guard=GuardSettings(hold_off_seconds=0))
        timings = {"in_process": time_cycles(run, repeats)}
        with SimServer(sim, run_clock=False) as server:
            http = RMClient([server.url], requests.Session(), web_ui_fallback=False)
            run.cycle = dataclasses.replace(run.cycle, monitor=http)
            timings["http"] = time_cycles(run, repeats)
    for name, (xs, applied) in timings.items():
        out[f"{name}_median_ms"] = round(statistics.median(xs) * 1000, 2)
        out[f"{name}_max_ms"] = round(max(xs) * 1000, 2)
        out[f"{name}_changes"] = applied
    return out
