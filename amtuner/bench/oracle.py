"""The oracle twin: what a controller that simulates the cluster's next hour under a few values
of A reaches when its model of the cluster is perfect, and how much of that it keeps as the
model knows less.

A twin controller would build the cluster as the RM reports it each period, simulate ahead
under candidate values of A and move to the best. Before anyone builds that model from what the
RM reports (the running apps' containers and asks, but neither the waiting apps' sizes nor the
arrivals to come), this measures its ceiling: every `EVERY_S` it copies the simulation itself
(every job's true sizes and durations, and the arrivals ahead), runs each candidate value for
`HORIZON_S`, and keeps the one with the fewest job-seconds in that window (by Little's law, the
window's mean job completion time times its jobs), moving only where that beats the value in
force by `MARGIN`. A value it sets is loaded at once, even by a FairScheduler, which reloads its
file on a poll: another advantage no daemon has. `Knows` takes knowledge away from the copies
one piece at a time (the arrivals, then the waiting apps' tasks), so that what each piece is
worth is measured before a model has to estimate it.

A simulation's copy needs the simulator's Python modules: mypyc's compiled classes do not copy
(`amtuner.sim.native.use_python_core`)."""

from __future__ import annotations

import copy
import enum
import math
import sys
import threading
import time
from typing import Any

from amtuner.bench.common import DEFAULT_A, Progress, ratio, run_all, with_a
from amtuner.bench.zoo import COARSE_VALUES, FINE_STEP, cell, spread
from amtuner.model import SchedulerKind
from amtuner.sim import native
from amtuner.sim.sched_config import default_scheduler_config
from amtuner.sim.simulation import SimResult, Simulation, build_simulation
from amtuner.sim.spec import Workload
from amtuner.sim.workload import zoo_case

HORIZON_S = 3600.0
"""How far each candidate runs. AMs admitted in excess hold their memory until their jobs end,
so what a value costs can show an hour later: with a quarter of an hour the oracle chose values
whose cost came after its window (docs/policies.md, "An oracle twin")."""
EVERY_S = 60.0
"""How often it decides: every fourth control period of the daemon's 15 s, for cost (each
decision runs every candidate for `HORIZON_S`)."""
MARGIN = 0.01
"""A candidate replaces the value in force only when it saves more than this share of the
window's job-seconds, so that A does not move between values that score alike (where a twin
built from the RM's figures would be chasing its own model's errors)."""
NEAR = 2
"""Candidates: the grid's values this many steps either side of the value in force, and every
other coarse value, so that a value far off is seen too."""
GRID = tuple(sorted({*COARSE_VALUES, *(round(FINE_STEP * i, 2) for i in range(1, 6))}))
"""The zoo's grid: 0.05 steps up to 0.25, tenths above."""
STACK_BYTES = 1 << 29
"""A copy recurses through the event queue's linked objects deeper than Python's default
stack allows on the larger clusters."""


class Knows(enum.Enum):
    """What the oracle's copies know of the future."""

    ALL = "all"
    """Every job, the arrivals to come included."""
    PRESENT = "present"
    """Only the apps submitted so far (with their true sizes and durations), as the RM knows
    them: what is left of the ceiling once a twin cannot see arrivals."""
    STARTED = "started"
    """As PRESENT, but an app whose AM has not run is taken to be like the apps started in the
    last window (`like_recent`): the RM knows nothing of its tasks until its AM asks."""


class OracleError(RuntimeError):
    """The oracle cannot run here: the compiled simulator core is loaded."""


def job_seconds(sim: Simulation, start: float, end: float) -> float:
    """Seconds that apps submitted before ``end`` spent unfinished within [start, end]."""
    total = 0.0
    for app in sim.apps:
        if app.submitted_s >= end or app.state == "NEW":
            continue
        done = app.finished_s if app.state == "FINISHED" and app.finished_s is not None else end
        total += max(0.0, min(done, end) - max(app.submitted_s, start))
    return total


def like_recent(sim: Simulation, now: float) -> None:
    """Each app waiting for its AM takes the tasks of an app started in the window before
    ``now`` (the latest started first, round again where more wait), or of the last started
    if none was; before any has started, its own. Launchers and their children keep theirs:
    their tasks come with the apps they submit."""
    started = sorted(
        (a for a in sim.apps if a.started_s is not None and not a.children and not a.launcher),
        key=lambda a: a.started_s or 0.0, reverse=True,
    )  # fmt: skip
    recent = [a.spec for a in started if (a.started_s or 0.0) >= now - HORIZON_S]
    recent = recent or [a.spec for a in started[:1]]
    if not recent:
        return
    waiting = [
        a for a in sim.apps
        if a.state == "ACCEPTED" and a.am_node is None and not a.children and not a.launcher
    ]  # fmt: skip
    for i, app in enumerate(waiting):
        app.take_work_of(recent[i % len(recent)], sim.cluster.min_alloc_mb)


def stalled(sim: Simulation) -> bool:
    """Apps wait that nothing will ever move: no event is due, bar arrivals held back. A
    copy ending so scores worse than any that still moves, whatever its job-seconds: a stall
    in a window's last minutes costs those minutes only, and every minute after it."""
    due = sim.engine.peek()
    return (due is None or due == math.inf) and any(
        app.state in ("ACCEPTED", "RUNNING") for app in sim.apps
    )


def candidates(a: float) -> list[float]:
    i = min(range(len(GRID)), key=lambda k: abs(GRID[k] - a))
    near = GRID[max(0, i - NEAR) : i + NEAR + 1]
    return sorted({a, *near, *COARSE_VALUES[::2]})


def run(
    workload: Workload, scheduler: SchedulerKind, default_a: float, run_seed: int,
    max_sim_seconds: float, knows: Knows = Knows.ALL,
) -> SimResult:  # fmt: skip
    """``workload`` under the oracle from ``default_a``, until every job is done or the
    limit. Raises OracleError where the compiled core is loaded."""
    if native.loaded():
        raise OracleError(native.COMPILED_CANNOT_COPY)
    out: list[SimResult] = []
    errors: list[BaseException] = []

    def body() -> None:
        try:
            out.append(_run(workload, scheduler, default_a, run_seed, max_sim_seconds, knows))
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 1_000_000))
    size = threading.stack_size(STACK_BYTES)
    try:
        worker = threading.Thread(target=body, name="oracle")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(size)
        sys.setrecursionlimit(limit)
    if errors:
        raise errors[0]
    return out[0]


def _run(
    workload: Workload, kind: SchedulerKind, a: float, run_seed: int, max_sim_seconds: float,
    knows: Knows,
) -> SimResult:  # fmt: skip
    config = default_scheduler_config(kind, workload.queues, a, weights=workload.queue_weights)
    sim = build_simulation(kind, workload, config, seed=run_seed)
    now = 0.0
    while not sim.done and now < max_sim_seconds:
        scores = {}
        for value in candidates(a):
            twin = copy.deepcopy(sim)
            if knows is not Knows.ALL:
                twin.runtime.forget_arrivals()
            if knows is Knows.STARTED:
                like_recent(twin, now)
            twin.reload_scheduler_config(with_a(kind, config, value))
            twin.run_until(now + HORIZON_S)
            scores[value] = (stalled(twin), job_seconds(twin, now, now + HORIZON_S))
        best = min(scores, key=lambda v: (*scores[v], v != a))
        stall, seconds = scores[best]
        if (scores[a][0] and not stall) or seconds < scores[a][1] * (1 - MARGIN):
            a = best
            sim.reload_scheduler_config(with_a(kind, config, a))
        now = min(now + EVERY_S, max_sim_seconds)
        sim.run_until(now)
    return sim.result()


def _one(job: tuple[int, str, int, Knows]) -> tuple[float | None, float]:
    """One recorded case under the oracle, in a pool's worker: (mean JCT or None, CPU s)."""
    seed, scheduler, run_seed, knows = job
    started = time.process_time()
    case = zoo_case(seed, run_seed=run_seed)
    kind = SchedulerKind(scheduler)
    done = run(case.workload, kind, DEFAULT_A[kind], run_seed, case.max_sim_seconds, knows)
    return (done.mean_jct_s if done.finished else None), time.process_time() - started


def judge(
    record: dict[str, Any],
    scheduler: str = "case",
    run_seed: int = 0,
    workers: int = 1,
    progress: Progress[tuple[float | None, float]] | None = None,
    knows: Knows = Knows.ALL,
) -> dict[str, Any]:
    """The oracle on a `bench zoo` record's cases (those on ``scheduler``, or all for "case"),
    one run seed, beside the record's own rows on that seed: each one's spread of mean JCT over
    the best fixed value's on that seed (`zoo.spread`)."""
    if not 0 <= run_seed < record["parameters"]["run_seeds"]:
        raise ValueError(f"the record has run seeds 0..{record['parameters']['run_seeds'] - 1}")
    cases = [
        c for c in record["cases"]
        if scheduler == "case" or c["scheduler"] == scheduler
    ]  # fmt: skip
    jobs = [(c["seed"], c["scheduler"], run_seed, knows) for c in cases]
    started = time.perf_counter()
    done = run_all(_one, jobs, workers, progress, chunksize=1)
    rows: dict[str, list[float | None]] = {"oracle": []}
    for c, job in zip(cases, jobs, strict=True):
        best = c["best_jct_s_per_seed"][run_seed] if c["best_jct_s_per_seed"] else None
        jct, _ = done[job]
        rows["oracle"].append(ratio(jct, best))
        for name, row in c["rows"].items():
            rows.setdefault(name, []).append(ratio(row["mean_jct_s_per_seed"][run_seed], best))
    cpu = [done[j][1] for j in jobs]
    return {
        "parameters": {
            "record_first_seed": record["parameters"]["first_seed"], "cases": len(cases),
            "scheduler": scheduler, "run_seed": run_seed, "horizon_s": HORIZON_S,
            "every_s": EVERY_S, "margin": MARGIN, "knows": knows.value,
        },
        "jct_vs_best": {name: spread(ratios) for name, ratios in rows.items()},
        "cases": [
            {"case": f"zoo:{c['seed']}", "scheduler": c["scheduler"], "oracle": r}
            for c, r in zip(cases, rows["oracle"], strict=True)
        ],
        "cost": {
            "wall_seconds": round(time.perf_counter() - started, 2),
            "cpu_seconds": round(sum(cpu), 1), "max_cpu_seconds": round(max(cpu, default=0), 1),
            "workers": workers,
        },
    }  # fmt: skip


def format_report(summary: dict[str, Any]) -> str:
    p, cost = summary["parameters"], summary["cost"]
    lines = [
        f"oracle twin: {p['cases']} cases of the record from seed {p['record_first_seed']} "
        f"({p['scheduler']}), run seed {p['run_seed']}; horizon {p['horizon_s']:g} s, a "
        f"decision every {p['every_s']:g} s; knows {p['knows']} jobs",
        "mean JCT / best fixed value's mean JCT on that run seed, per case",
        f"  {'':<10} {'mean':>7} {'p90':>7} {'worst':>7} {'never':>6}",
    ]
    for name, s in summary["jct_vs_best"].items():
        lines.append(
            f"  {name:<10} {cell(s['mean']):>7} {cell(s['p90']):>7} {cell(s['worst']):>7} "
            f"{s['never']:>6}"
        )
    lines.append(
        f"{cost['cpu_seconds']:g} CPU s (at most {cost['max_cpu_seconds']:g} a case), "
        f"{cost['wall_seconds']:.1f} s with {cost['workers']} worker(s)"
    )
    return "\n".join(lines)
