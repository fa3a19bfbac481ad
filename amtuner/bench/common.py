"""What the benchmarks share: one simulated run, a process pool, progress, and figures.

A run is a workload spec on one scheduler with either a fixed AM share or a controller policy
starting from the scheduler's default; the benchmarks differ only in which runs they ask for and
how they set the results side by side.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from statistics import mean, stdev
from typing import TYPE_CHECKING, Any, TypeVar

from amtuner.config import ControllerSettings
from amtuner.executor import SchedulerFile
from amtuner.model import GLOBAL_TARGET, SchedulerKind
from amtuner.sim.sched_config import with_capacity_properties
from amtuner.sim.simulation import SimResult, build_simulation, default_scheduler_config
from amtuner.sim.spec import HADOOP_3, PERIOD_S, Heartbeats, Workload
from amtuner.sim.workload import load_workload

if TYPE_CHECKING:
    from distributed import Client

T = TypeVar("T")
R = TypeVar("R")

FIXED_VALUES = tuple(round(i / 10, 1) for i in range(11))
"""The paper's grid {0, 0.1, …, 1.0}."""
DEFAULT_A = {SchedulerKind.CAPACITY: 0.1, SchedulerKind.FAIR: 0.5}
"""The schedulers' defaults: maximum-am-resource-percent 0.1, maxAMShare 0.5."""

Progress = Callable[[Iterable[T], int], Iterable[T]]


def simulate(
    spec: str | Workload,
    scheduler: SchedulerKind,
    a: float | None,
    seed: int,
    *,
    max_sim_seconds: float,
    policy: str = "paper",
    period_s: float = PERIOD_S,
    targets: tuple[str, ...] = (),
    lead_s: float = 0.0,
    node_vcores: int | None = None,
    heartbeats: Heartbeats = HADOOP_3,
    hadoop: str = "3",
    properties: Mapping[str, str] | None = None,
    config: bytes | None = None,
    target: str = GLOBAL_TARGET,
    site: Mapping[str, str] | None = None,
    labelled: Sequence[tuple[str, int]] = (),
) -> SimResult:
    """``spec`` (a workload, or its name for `load_workload`) with the global AM share fixed at
    ``a``, or (``a`` None) under ``policy`` every
    ``period_s`` simulated seconds from the scheduler's default, tuning ``targets`` (empty: the
    global value), its first cycle ``lead_s`` before the first job (0: with it); on nodes with
    ``node_vcores`` vcores instead of the workload's; ``properties``: more settings of a
    CapacityScheduler's file (a queue's ``max-parallel-apps``); ``site`` and ``labelled``: the
    RM's properties and its labelled nodes (`build_simulation`).

    ``config``: the cluster's own scheduler file instead of a default one for the workload's
    queues; a fixed ``a`` is then set for ``target`` (the global value unless a queue is named)
    as the executor would write it, and a policy starts from the file's values."""
    workload = load_workload(spec, seed=seed) if isinstance(spec, str) else spec
    if a is None and lead_s:
        # Makespan and job completion times are measured from submissions, so they do not move.
        jobs = [dataclasses.replace(j, submit_s=j.submit_s + lead_s) for j in workload.jobs]
        workload = dataclasses.replace(workload, jobs=tuple(jobs))
    if config is None:
        config = default_scheduler_config(
            scheduler, workload.queues, DEFAULT_A[scheduler] if a is None else a,
            weights=workload.queue_weights,
        )  # fmt: skip
    elif a is not None:
        config = with_a(scheduler, config, a, target)
    if properties:
        config = with_capacity_properties(config, properties)
    sim = build_simulation(
        scheduler, workload, config, seed=seed, node_vcores=node_vcores,
        heartbeats=heartbeats, hadoop=hadoop, site=site, labelled=labelled,
    )  # fmt: skip
    if a is not None:
        return sim.run(max_sim_seconds)
    from amtuner.sim.control import ControlledRun  # amtuner's own loop: only with a controller

    with tempfile.TemporaryDirectory(prefix="amtuner-bench-") as tmp:
        settings = ControllerSettings(policy=policy, period_seconds=period_s)  # type: ignore[arg-type]
        ControlledRun(sim, Path(tmp), controller=settings, targets=targets)
        return sim.run(max_sim_seconds)


def with_a(
    scheduler: SchedulerKind, config: bytes, a: float, target: str = GLOBAL_TARGET
) -> bytes:
    """``config`` with ``target``'s AM share set to ``a``, as the executor writes it."""
    path = Path(f"{scheduler}-scheduler.xml")
    return SchedulerFile(path, scheduler, config).edit({target: a}).new_data


def staggered_lead(period_s: float, seed: int, seeds: int) -> float:
    """How long before the first job the daemon starts, for benchmarks run ``--stagger``.

    The paper started its controller with the batch, so the first cycle sees the jobs the moment
    they arrive. A deployed daemon is already running, and jobs arrive anywhere in its period:
    it first sees the cluster idle, then reacts up to a period late. More than one period, at a
    different point of the period per seed, measures that.
    """
    return period_s * (1 + (seed + 0.5) / seeds)


def run_all(
    fn: Callable[[T], R],
    todo: Sequence[T],
    workers: int,
    progress: Progress[R] | None = None,
    chunksize: int = 8,
    client: Client | None = None,
) -> dict[T, R]:
    """``fn`` over ``todo`` in ``workers`` processes (in this one when 1), or on the Dask
    cluster of ``client`` (`amtuner.bench.daskpool`), results by input."""
    if client is not None:
        from amtuner.bench import daskpool

        return daskpool.run(client, fn, todo, progress)
    if workers <= 1:
        results: Iterable[R] = map(fn, todo)
        if progress:
            results = progress(results, len(todo))
        return dict(zip(todo, results, strict=True))
    with ProcessPoolExecutor(max_workers=workers) as pool:
        results = pool.map(fn, todo, chunksize=chunksize)
        if progress:
            results = progress(results, len(todo))
        return dict(zip(todo, results, strict=True))


def reader(key: str, name: str | None = None) -> Callable[[dict[str, Any]], float | None]:
    """Reads one figure of a summary row (``row[key]``, or ``row[key][name]``), for a plot."""

    def read(row: dict[str, Any]) -> float | None:
        value = row[key]
        return value if name is None else value[name]  # type: ignore[no-any-return]

    return read


def tqdm_progress(results: Iterable[T], total: int) -> Iterable[T]:
    """A progress bar on a terminal; nothing in a pipe or a log."""
    if not sys.stderr.isatty():
        return results
    try:
        from tqdm import tqdm  # type: ignore[import-untyped]
    except ImportError:
        return results
    return tqdm(results, total=total, unit="run", file=sys.stderr)


def mean_of(values: Iterable[float]) -> float:
    """A mean as the benchmarks report one: to the thousandth."""
    return round(mean(values), 3)


def mean_or_none(values: Iterable[float | None]) -> float | None:
    """A value that fails on any seed never finishes: report that, do not average it away."""
    values = list(values)
    if not values or any(v is None for v in values):
        return None
    return mean_of(v for v in values if v is not None)


def paired_se(xs: Sequence[float | None], ys: Sequence[float | None]) -> float | None:
    """The standard error of the mean of the per-seed ratios x / y: how far a ratio of the
    means over these seeds would move with other seeds. Pairing by seed (the same seed draws
    the same jobs for both runs) leaves out the workload's own spread, so a difference smaller
    than about two of these is noise of the sample, not of the policy. None for one seed or a
    run that did not finish."""
    if len(xs) != len(ys) or len(xs) < 2:
        return None
    ratios = []
    for x, y in zip(xs, ys, strict=True):
        if x is None or not y:
            return None
        ratios.append(x / y)
    return round(stdev(ratios) / math.sqrt(len(ratios)), 4)


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 4)


def fmt(x: float | None, spec: str = ".1f") -> str:
    return "never" if x is None else format(x, spec)
