"""The zoo: whole cases drawn from a seed, so a controller is judged on clusters it never saw.

A case is a cluster (nodes, memory, vcores, disks), its queues and their weights, the jobs of
those queues (MapReduce jobs, Spark applications in cluster mode, Tez sessions) and when they
arrive, and the scheduler that runs them. ``zoo:SEED`` is the workload of case SEED
(`load_zoo`); `zoo_case` also gives its scheduler and the simulated time after which a run of
it counts as never finishing. The same seed always draws the same case; `load_workload`'s run
seed only jitters each job's task durations (as the paper groups do, `PAPER_JITTER`), and the
simulation's own seed each task's.

Every range is a module constant with its reason (docs/zoo.md has the table); the draws are
sized so that one simulation of a case stays well under a fifth of a second on the compiled
core: `MAX_JOBS`, `MAX_TASKS` and `MAX_NODE_SECONDS` bound the work, not the ranges.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Literal

from amtuner.model import SchedulerKind
from amtuner.sim.spec import JobSpec, TaskGroup, TaskKind, Workload
from amtuner.sim.workload.costs import TASK_OVERHEAD_S, task_shape
from amtuner.sim.workload.paper import PAPER_JITTER
from amtuner.sim.workload.tracefile import WorkloadError

# --------------------------------------------------------------------------- the cluster
NODES = (3, 500)
"""Drawn log-uniformly: a three-node test cluster up to a mid-sized production one; most draws
are small, where the AM share binds (on 500 nodes the default 10 % already admits hundreds)."""
NODE_MEMORY_GB = (8, 16, 24, 32, 48, 64, 96, 128)
"""What a NodeManager offers (``yarn.nodemanager.resource.memory-mb``): 8 GB is Hadoop's default,
the rest the memory of common server and cloud instance sizes after the OS's share."""
GB_PER_VCORE = (1, 2, 4, 8)
"""Memory per vcore: 1 is Hadoop's defaults (8 GB, 8 vcores), 2, 4 and 8 the compute-,
general- and memory-optimised instance families."""
NODE_VCORES = (4, 64)
"""``yarn.nodemanager.resource.cpu-vcores`` after memory / `GB_PER_VCORE`, clamped here."""
NODE_DISK_MBPS = (100.0, 200.0, 400.0, 800.0)
"""One SATA disk up to a JBOD of several (or an SSD): the local-disk bandwidth tasks share."""

# --------------------------------------------------------------------------- queues
QUEUE_NAMES = ("etl", "adhoc", "reports", "science")
"""Up to four leaves under root; a case with one queue uses root.default."""
QUEUE_WEIGHTS = (1, 2, 3, 4)
"""Each queue's weight (a FairScheduler ``<weight>``, a CapacityScheduler capacity in
proportion): a queue up to four times another's."""
USERS_PER_QUEUE = (1, 5)
"""Users submitting to a queue: one user may hold a CapacityScheduler queue's capacity only
(``user-limit-factor`` 1), several together may borrow up to its maximum."""

# --------------------------------------------------------------------------- job shapes
Family = Literal["mapreduce", "spark", "tez"]


@dataclass(frozen=True, slots=True)
class Shape:
    """How one family of YARN applications uses its containers."""

    family: Family
    am_memory_mb: tuple[int, ...]
    """AM container sizes drawn from (before the scheduler normalises them up)."""
    am_startup_s: tuple[float, float]
    am_teardown_s: tuple[float, float]
    """Log-uniform range: how long the AM holds its container after its last task."""
    task_memory_mb: tuple[int, ...]
    task_vcores: tuple[int, ...]
    median_task_s: float
    """Median over jobs of a job's median task duration (log-normal, σ `TASK_SIGMA`)."""
    small_tasks: tuple[int, int]
    """A small job's task count, uniform."""
    large_min_tasks: int
    """A large job's task count: Pareto from here, α drawn per queue (`PARETO_ALPHA`)."""
    reduce_share: float
    """Probability a job has a second, downstream group (MapReduce reduces, a Tez vertex)."""
    slowstart: float
    """When the downstream group is asked for: ``mapreduce.job.reduce.slowstart.completedmaps``
    0.05; Tez's ``tez.shuffle-vertex-manager.min-src-fraction`` 0.25."""


SHAPES: Mapping[Family, Shape] = MappingProxyType(
    {
        # yarn.app.mapreduce.am.resource.mb 1536 by default; tasks 1 GB by default
        # (mapreduce.{map,reduce}.memory.mb), larger where users raise them. Maps last tens of
        # seconds in the Facebook and Cloudera traces SWIM studies (Chen et al., VLDB 2012).
        "mapreduce": Shape(
            "mapreduce", (1024, 1536, 2048), (4.0, 8.0), (1.0, 3.0), (1024, 2048, 3072, 4096),
            (1,), 20.0, (1, 10), 20, 0.6, 0.05,
        ),
        # A cluster-mode driver runs in the AM container: spark.driver.memory 1 GB plus its
        # overhead (the larger of 384 MB and a tenth) by default, 2-3.5 GB in practice;
        # executors (spark.executor.instances 2 by default, 1 GB plus overhead, 1 core on YARN;
        # up to 7 GB here, within yarn.scheduler.maximum-allocation-mb 8192) live for most of
        # the application, so fewer, longer tasks. No downstream group: stages run inside them.
        "spark": Shape(
            "spark", (1408, 2432, 3456, 3968), (8.0, 20.0), (2.0, 5.0), (1408, 2432, 4505, 7884),
            (1, 2, 4), 120.0, (2, 8), 8, 0.0, 1.0,
        ),
        # tez.am.resource.memory.mb 1024 by default, Hive sets more; a session AM waits for the
        # next DAG up to tez.session.am.dag.submit.timeout.secs (300 s) after its work, so it
        # holds its container well past its tasks. Container reuse makes tasks short.
        "tez": Shape(
            "tez", (512, 1024, 2048, 4096), (5.0, 10.0), (10.0, 300.0), (1024, 2048, 4096),
            (1,), 10.0, (1, 20), 30, 0.7, 0.25,
        ),
    }
)  # fmt: skip
"""The families a queue's jobs come from; each queue draws its own mix of them."""

TASK_SIGMA = 1.0
"""σ of the log-normal median task duration over a family's jobs."""
TASK_S = (4.0, 1800.0)
"""Cap on a task's duration: the launch overhead at least, half an hour at most."""
STRAGGLERS = (0.05, 0.2)
"""Share of a job's tasks that run 1.5-4x longer than the rest (skewed splits, slow nodes)."""
LARGE_SHARE = (0.02, 0.4)
"""Share of large jobs in a queue, uniform: the trace studies' bimodal mix of many tiny jobs
and a few large ones that hold most of the work."""
PARETO_ALPHA = (1.1, 2.0)
"""Tail index of a large job's task count: heavy, as job sizes in the Facebook, Google and
Alibaba traces are."""

# --------------------------------------------------------------------------- load and arrivals
Arrival = Literal["batch", "poisson", "bursts", "diurnal"]
ARRIVALS: tuple[Arrival, ...] = ("batch", "poisson", "bursts", "diurnal")
BUSY_S = (60.0, 1800.0)
"""Log-uniform: how long the whole cluster would be busy with the case's task work at full
memory use: from a minute to half an hour."""
LOAD = (0.5, 2.0)
"""Log-uniform offered load (busy time over the arrival window): half the cluster's pace to
twice it. A batch has no window."""
BURSTS = (2, 8)
BURST_SPREAD_S = 5.0
"""Mean gap between two submissions of one burst (exponential)."""
DIURNAL_SWING = (0.5, 0.95)
"""Peak-to-mean swing of a compressed day's arrival rate: quiet at the start and end, busiest
in the middle, as a real day's load is."""

# --------------------------------------------------------------------------- cost bounds
MAX_JOBS = 400
MAX_TASKS = 6_000
"""Per case: the simulator's cost is per job and per task."""
MAX_NODE_SECONDS = 100_000.0
"""Cap on nodes x `BUSY_S`: a busy node heartbeats every second, the simulator's largest cost
on large clusters."""
MIN_JOBS = 4
LARGE_CAP = MAX_TASKS // (2 * MIN_JOBS)
"""Most tasks in one group of a job: the first `MIN_JOBS` jobs, each with its downstream group
(at most a quarter as many), stay within `MAX_TASKS`."""
HORIZON_FACTOR = 20.0
HORIZON_S = (4 * 3600.0, 24 * 3600.0)
"""A run still going after `HORIZON_FACTOR` x (arrival window + busy time), within these
bounds, counts as never finishing: twenty times what the cluster needs at a good A."""

SCHEDULERS = (SchedulerKind.CAPACITY, SchedulerKind.FAIR)


@dataclass(frozen=True, slots=True)
class ZooCase:
    """One drawn case: the workload ``zoo:SEED`` names and how the bench runs it."""

    seed: int
    workload: Workload
    scheduler: SchedulerKind
    arrival: Arrival
    families: tuple[Family, ...]
    """The families its jobs come from, in the order first drawn."""
    max_sim_seconds: float

    @property
    def spec(self) -> str:
        return f"zoo:{self.seed}"


def parse_zoo(rest: str) -> int:
    if not (rest.isascii() and rest.isdigit()):
        raise WorkloadError(f"workload spec 'zoo:{rest}': expected zoo:SEED, a decimal integer")
    return int(rest)


def load_zoo(rest: str, *, seed: int = 0) -> Workload:
    """The workload of ``zoo:SEED`` (``rest`` is SEED); ``seed`` jitters durations per job."""
    return zoo_case(parse_zoo(rest), run_seed=seed).workload


def zoo_case(case_seed: int, *, run_seed: int = 0) -> ZooCase:
    """Case ``case_seed`` (see the module docstring), its durations jittered by ``run_seed``."""
    rng = random.Random(f"zoo:{case_seed}")
    scheduler = rng.choice(SCHEDULERS)
    nodes = round(_log_uniform(rng, *NODES))
    memory_mb = rng.choice(NODE_MEMORY_GB) * 1024
    vcores = min(max(memory_mb // 1024 // rng.choice(GB_PER_VCORE), NODE_VCORES[0]), NODE_VCORES[1])
    disk = rng.choice(NODE_DISK_MBPS)
    n_queues = rng.randint(1, len(QUEUE_NAMES))
    queues = (
        ("root.default",) if n_queues == 1 else tuple(f"root.{q}" for q in QUEUE_NAMES[:n_queues])
    )
    weights = tuple(float(rng.choice(QUEUE_WEIGHTS)) for _ in queues) if n_queues > 1 else ()
    mixes = [_queue_mix(rng) for _ in queues]
    traffic = [rng.random() + 0.1 for _ in queues]
    arrival = rng.choice(ARRIVALS)
    busy_s = min(_log_uniform(rng, *BUSY_S), MAX_NODE_SECONDS / nodes)
    window_s = 0.0 if arrival == "batch" else busy_s / _log_uniform(rng, *LOAD)
    budget_mb_s = busy_s * nodes * memory_mb
    max_task_mb = memory_mb // 2
    jobs: list[_Draft] = []
    spent = 0.0
    tasks = 0
    while len(jobs) < MAX_JOBS:
        q = rng.choices(range(len(queues)), weights=traffic)[0]
        draft = _draw_job(rng, mixes[q], q, nodes, memory_mb, max_task_mb, disk)
        if tasks + draft.tasks > MAX_TASKS and len(jobs) >= MIN_JOBS:
            break
        jobs.append(draft)
        spent += draft.mb_s
        tasks += draft.tasks
        if spent >= budget_mb_s and len(jobs) >= MIN_JOBS:
            break
    submits = _arrivals(rng, arrival, len(jobs), window_s)
    users = [rng.randint(*USERS_PER_QUEUE) for _ in queues]
    jitter = random.Random(f"zoo:{case_seed}:{run_seed}")
    specs = []
    for i, (draft, submit_s) in enumerate(zip(jobs, submits, strict=True)):
        user = f"{QUEUE_NAMES[draft.queue]}{rng.randrange(users[draft.queue])}"
        scale = 1.0 + jitter.uniform(-PAPER_JITTER, PAPER_JITTER)
        groups = tuple(replace(g, duration_s=round(g.duration_s * scale, 3)) for g in draft.groups)
        specs.append(
            JobSpec(
                job_id=f"zoo_{i + 1:04d}",
                submit_s=round(submit_s, 3),
                queue=queues[draft.queue],
                maps=tuple(g for g in groups if g.kind == "map"),
                reduces=tuple(g for g in groups if g.kind == "reduce"),
                user=user,
                profile=draft.shape.family,
                am_memory_mb=draft.am_memory_mb,
                am_vcores=1,
                am_startup_s=draft.am_startup_s,
                am_teardown_s=draft.am_teardown_s,
                slowstart=draft.shape.slowstart,
            )
        )
    workload = Workload(
        name=f"zoo:{case_seed}",
        jobs=tuple(specs),
        nodes=nodes,
        node_memory_mb=memory_mb,
        node_vcores=vcores,
        node_disk_mbps=disk,
        queues=queues,
        queue_weights=weights,
    )
    families = tuple(dict.fromkeys(d.shape.family for d in jobs))
    horizon = round(min(max(HORIZON_FACTOR * (window_s + busy_s), HORIZON_S[0]), HORIZON_S[1]))
    return ZooCase(case_seed, workload, scheduler, arrival, families, horizon)


@dataclass(frozen=True, slots=True)
class _Mix:
    """What one queue's jobs look like."""

    families: tuple[Family, ...]
    weights: tuple[float, ...]
    large_share: float
    alpha: float


@dataclass(frozen=True, slots=True)
class _Draft:
    queue: int
    shape: Shape
    groups: tuple[TaskGroup, ...]
    am_memory_mb: int
    am_startup_s: float
    am_teardown_s: float

    @property
    def tasks(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def mb_s(self) -> float:
        """Memory-seconds the job holds: its tasks', and its AM's over its start and end."""
        work = sum(g.count * g.memory_mb * g.duration_s for g in self.groups)
        return work + self.am_memory_mb * (self.am_startup_s + self.am_teardown_s)


def _log_uniform(rng: random.Random, low: float, high: float) -> float:
    return math.exp(rng.uniform(math.log(low), math.log(high)))


def _queue_mix(rng: random.Random) -> _Mix:
    """A queue's families (each with a random weight, one or more of them) and size mix."""
    families = tuple(f for f in SHAPES if rng.random() < 0.5) or (rng.choice(tuple(SHAPES)),)
    weights = tuple(rng.random() + 0.05 for _ in families)
    return _Mix(families, weights, rng.uniform(*LARGE_SHARE), rng.uniform(*PARETO_ALPHA))


def _draw_job(
    rng: random.Random,
    mix: _Mix,
    queue: int,
    nodes: int,
    node_memory_mb: int,
    max_task_mb: int,
    disk_mbps: float,
) -> _Draft:
    shape = SHAPES[rng.choices(mix.families, weights=mix.weights)[0]]
    memory = rng.choice([m for m in shape.task_memory_mb if m <= max_task_mb] or [1024])
    vcores = rng.choice(shape.task_vcores)
    if rng.random() < mix.large_share:
        # A large job at most fills the cluster four times over with its first group, and
        # leaves room in `MAX_TASKS` for the other jobs.
        cap = min(max(shape.large_min_tasks, 4 * nodes * node_memory_mb // memory), LARGE_CAP)
        count = min(int(shape.large_min_tasks * rng.paretovariate(mix.alpha)), cap)
    else:
        count = rng.randint(*shape.small_tasks)
    median = shape.median_task_s * rng.lognormvariate(0.0, TASK_SIGMA)
    # A node full of these tasks shares its disks among them: each task's share is its slice.
    disk_share = disk_mbps * memory / node_memory_mb
    groups = _with_stragglers(rng, "map", count, memory, vcores, median, disk_share)
    if rng.random() < shape.reduce_share:
        downstream = max(1, count // rng.choice((4, 10, 20)))
        groups += _with_stragglers(
            rng, "reduce", downstream, memory, vcores, median * rng.uniform(0.5, 2.0), disk_share
        )
    return _Draft(
        queue,
        shape,
        groups,
        rng.choice(shape.am_memory_mb),
        round(rng.uniform(*shape.am_startup_s), 3),
        round(_log_uniform(rng, *shape.am_teardown_s), 3),
    )


def _with_stragglers(
    rng: random.Random,
    kind: TaskKind,
    count: int,
    memory_mb: int,
    vcores: int,
    median_s: float,
    disk_share_mbps: float,
) -> tuple[TaskGroup, ...]:
    """``count`` tasks of about ``median_s``; a few of them (`STRAGGLERS`) longer. Alone on a
    node a task would have its disks to itself; `task_shape` is asked for its duration with the
    slice of the disks it has when its node is full of its like (``disk_share_mbps``), so a
    node of them does not run slower than drawn unless other jobs' tasks crowd it."""
    slow = round(count * rng.uniform(*STRAGGLERS))
    cpu_bound = rng.random() < 0.6
    groups = []
    for n, factor in ((count - slow, 1.0), (slow, rng.uniform(1.5, 4.0))):
        if n <= 0:
            continue
        duration = min(max(median_s * factor, TASK_S[0]), TASK_S[1])
        work = duration - TASK_OVERHEAD_S
        # The cost model's task: the longer of CPU and disk time after start-up, the other a
        # fraction of it, so processor sharing on a busy node slows it as it would a real one.
        other = rng.uniform(0.1, 0.9)
        cpu_s, disk_s = (work, work * other) if cpu_bound else (work * other, work)
        shaped, cpu, disk = task_shape(cpu_s, disk_s * disk_share_mbps, disk_share_mbps)
        groups.append(
            TaskGroup(
                kind=kind,
                count=n,
                memory_mb=memory_mb,
                vcores=vcores,
                duration_s=round(shaped, 3),
                cpu_cores=round(min(cpu * vcores, float(vcores)), 4),
                disk_mbps=round(disk, 3),
            )
        )
    return tuple(groups)


def _arrivals(rng: random.Random, arrival: Arrival, n: int, window_s: float) -> list[float]:
    """Submission times of ``n`` jobs, sorted, the first at 0."""
    if arrival == "batch" or n == 1:
        return [0.0] * n
    if arrival == "poisson":
        times = [0.0]
        while len(times) < n:
            times.append(times[-1] + rng.expovariate(n / window_s))
        return times
    if arrival == "bursts":
        later = (rng.uniform(0.0, window_s) for _ in range(rng.randint(*BURSTS) - 1))
        starts = [0.0, *sorted(later)]
        times = []
        for _ in range(n):
            start = rng.choice(starts)
            times.append(start + rng.expovariate(1.0 / BURST_SPREAD_S))
        times.sort()
        return [t - times[0] for t in times]
    # A compressed day: rate ∝ 1 - swing cos(2πt/window), drawn by thinning.
    swing = rng.uniform(*DIURNAL_SWING)
    times = []
    while len(times) < n:
        t = rng.uniform(0.0, window_s)
        if rng.random() * (1.0 + swing) < 1.0 - swing * math.cos(2.0 * math.pi * t / window_s):
            times.append(t)
    times.sort()
    return [t - times[0] for t in times]
