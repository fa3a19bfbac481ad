"""Workloads for the simulated cluster: the paper's job groups and SLS, rumen and SWIM traces.

`load_workload(spec)` is the single entry point; the spec prefix picks the reader:

* ``paper:grep|terasort|wordcount|mixed`` — the paper's experiment (30 jobs, 5 maps + 1 reduce
  over 100 MB each, all submitted at t=0, 4 worker nodes), built from `PROFILES`;
  ``paper:GROUP@NODES`` is the same group on a larger cluster with the job count scaled with it
  (see `load_paper`).
* ``phase:small,large,mixed`` — batches of different job kinds one after another, so that no
  single AM share suits every phase (see `load_phases`).
* ``twoqueue:small,large`` — two phases' jobs at once, one per queue (see `load_two_queues`).
* ``poisson:GROUP`` — paper jobs arriving one by one at random instead of in one batch
  (see `load_poisson`); ``stream:GROUP`` the same for half an hour (`STREAM_JOBS`).
* ``sls:PATH`` — a Hadoop Scheduler Load Simulator JSON job trace (see `load_sls`).
* ``swim:PATH`` — a SWIM day trace of Facebook jobs (see `load_swim`).
* ``rumen:PATH`` — a rumen job-history trace, read the way SLS's RUMEN trace type does
  (see `load_rumen`).

Task durations and resource demands come from one cost model (`task_shape`) so that the paper
groups and the byte-only SWIM traces are derived the same way: a task costs a fixed start-up
overhead plus the larger of its CPU time and its local-disk time (the two overlap: Hadoop reads
ahead and spills from a separate thread). Demands are averages over the whole task, so
``cpu_cores × duration`` and ``disk_mbps × duration`` are the task's total CPU and disk work and
processor sharing in the simulator conserves that work.

The paper jobs' tasks alone on an idle node (`profile_table()`, before the ±5 % per-job jitter):

| profile | map s | cores | disk MB/s | red s | cores | disk MB/s | MB map/red/AM | AM s up/down |
|---|---|---|---|---|---|---|---|---|
| grep | 5.0 | 0.60 | 4.0 | 3.0 | 0.33 | 0.2 | 1024/1024/1536 | 5/2 |
| terasort | 3.8 | 0.47 | 10.5 | 6.0 | 0.50 | 50.0 | 1024/1024/1536 | 5/2 |
| wordcount | 7.0 | 0.71 | 3.6 | 3.8 | 0.43 | 21.1 | 1024/1024/1536 | 5/2 |
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from amtuner.sim.spec import JobSpec, TaskGroup, TaskKind, Workload

__all__ = [
    "PAPER_GROUPS",
    "PHASES",
    "PROFILES",
    "Phase",
    "PhaseCost",
    "Profile",
    "WorkloadError",
    "describe",
    "load_paper",
    "load_phases",
    "load_poisson",
    "load_rumen",
    "load_sls",
    "load_swim",
    "load_two_queues",
    "load_workload",
    "nominal_tasks",
    "profile_table",
    "task_shape",
]

MB = 1024 * 1024


class WorkloadError(ValueError):
    """A workload spec or file that cannot be turned into jobs; the message names file:line."""


# --------------------------------------------------------------------------------------------
# The cluster the paper ran on.
# "5 ordinary PCs: one master, four workers" (paper.md). A desktop PC of the 2015-2019 era:
PAPER_NODES = 4
"""Four workers run NodeManagers; the master runs only the NameNode and the RM."""
PAPER_NODE_MEMORY_MB = 8192
"""8 GB of RAM is the typical desktop of the era, and 8192 is also the default of
yarn.nodemanager.resource.memory-mb in Hadoop 2.x (yarn-facts §7), which an ordinary setup keeps."""
PAPER_NODE_VCORES = 8
"""yarn.nodemanager.resource.cpu-vcores default (yarn-facts §7); a 4-core/8-thread desktop CPU.
Kept at the default so that memory, not vcores, limits how many containers fit, as in the paper."""
PAPER_NODE_DISK_MBPS = 100.0
"""One 7200 rpm SATA disk: 100-150 MB/s sequential on the outer tracks; HDFS reads interleaved
with map spills seek, so the low end."""

# --------------------------------------------------------------------------------------------
# Costs shared by every MapReduce profile (Hadoop 2.x defaults unless said otherwise).
MAP_MEMORY_MB = 1024
"""mapreduce.map.memory.mb default (yarn-facts §7)."""
REDUCE_MEMORY_MB = 1024
"""mapreduce.reduce.memory.mb default (yarn-facts §7)."""
AM_MEMORY_MB = 1536
"""yarn.app.mapreduce.am.resource.mb default; the scheduler normalises it to 2048 (§7)."""
TASK_VCORES = 1
"""mapreduce.{map,reduce}.cpu.vcores and yarn.app.mapreduce.am.resource.cpu-vcores defaults."""
TASK_OVERHEAD_S = 3.0
"""Fixed cost of one task container: localisation and launch (~0.5 s), JVM start-up with Hadoop's
class path (~1-2 s), task init over the umbilical protocol and output commit (~0.5-1 s).
Sub-5-second tasks are the floor commonly observed for MapReduce on YARN."""
TASK_OVERHEAD_CPU_S = 1.0
"""Of that overhead, the CPU-bound part: JVM start-up (class loading, verification, JIT) keeps one
core busy for about a second; the rest is waiting on RPCs and the file system."""
AM_STARTUP_S = 5.0
"""MRAppMaster: container launch and JVM start (~2 s), then job init (read job.xml and the splits
from HDFS, start the history writer, register with the RM) before it asks for tasks: several
seconds in practice."""
AM_TEARDOWN_S = 2.0
"""Job commit (FileOutputCommitter renames), copying the job history file to the done dir on HDFS,
unregistering from the RM."""
SLOWSTART = 0.05
"""mapreduce.job.reduce.slowstart.completedmaps default (yarn-facts §7)."""


@dataclass(frozen=True, slots=True)
class PhaseCost:
    """What one MB of a phase's input costs: CPU throughput and local-disk traffic."""

    cpu_mb_per_s: float
    """MB of input one core gets through per second (framework plus user code, cold JVM)."""
    disk_per_input_mb: float
    """Local-disk MB read plus written per MB of input, excluding the phase's output (the map's
    spill, the reduce's HDFS copies), which the `Profile` output ratios account for."""


@dataclass(frozen=True, slots=True)
class Profile:
    """One row of the job-profile table: how a kind of MapReduce job uses CPU and disk."""

    name: str
    description: str
    map: PhaseCost
    reduce: PhaseCost
    map_output_ratio: float
    """Map output MB (after the combiner, i.e. the shuffle) per map input MB."""
    reduce_output_ratio: float
    """Reduce output MB written to HDFS per shuffled MB."""
    output_replication: int
    """HDFS copies of the reduce output. All copies are charged to the writer's node: the
    simulator has no network, and this keeps the cluster's total disk work right."""
    input_mb: float = 100.0
    """Job input in the paper's experiment: 100 MB."""
    maps: int = 5
    reduces: int = 1
    map_memory_mb: int = MAP_MEMORY_MB
    reduce_memory_mb: int = REDUCE_MEMORY_MB
    am_memory_mb: int = AM_MEMORY_MB
    am_startup_s: float = AM_STARTUP_S
    am_teardown_s: float = AM_TEARDOWN_S


PROFILES: Mapping[str, Profile] = MappingProxyType(
    {
        "grep": Profile(
            name="grep",
            description="Hadoop example grep: regex over text, CPU-bound map, near-empty reduce",
            # RegexMapper decodes every line to a String and runs java.util.regex find() on it;
            # tens of MB/s in a warm JVM, but a 20 MB split is done before C2 has compiled the
            # loop, so ~10 MB/s per core.
            map=PhaseCost(cpu_mb_per_s=10.0, disk_per_input_mb=1.0),  # disk: read the split once
            # LongSumReducer over a few KB of combined counts: overhead only.
            reduce=PhaseCost(cpu_mb_per_s=50.0, disk_per_input_mb=2.0),
            map_output_ratio=0.001,  # a selective pattern: few matches, combined per map
            reduce_output_ratio=1.0,
            output_replication=3,  # dfs.replication default
        ),
        "terasort": Profile(
            name="terasort",
            description="TeraSort: identity map and reduce over 100-byte records, I/O-bound",
            # Fixed-width record parse, TotalOrderPartitioner trie lookup, in-memory sort of
            # 200k records (a 20 MB split fits io.sort.mb = 100, one spill): little per-byte work.
            # Disk: read the split once; the spill is the map output (map_output_ratio).
            map=PhaseCost(cpu_mb_per_s=25.0, disk_per_input_mb=1.0),
            # mapreduce.reduce.input.buffer.percent = 0: shuffled segments are merged to disk
            # before reduce() runs, then read back (2 MB per MB); merge + write ~50 MB/s per core.
            reduce=PhaseCost(cpu_mb_per_s=50.0, disk_per_input_mb=2.0),
            map_output_ratio=1.0,  # identity map
            reduce_output_ratio=1.0,  # identity reduce
            output_replication=1,  # mapreduce.terasort.output.replication default 1
        ),
        "wordcount": Profile(
            name="wordcount",
            description="Hadoop example wordcount: CPU-bound map, I/O-bound reduce",
            # StringTokenizer plus one serialised (word, 1) record per ~6 input bytes into the
            # sort buffer, sort and combiner: the slowest of the three per byte, ~5 MB/s per core.
            map=PhaseCost(cpu_mb_per_s=5.0, disk_per_input_mb=1.0),  # read the split once
            # Deserialise and sum IntWritables: cheap per byte, so the merge to disk, the read
            # back and the replicated output dominate.
            reduce=PhaseCost(cpu_mb_per_s=40.0, disk_per_input_mb=2.0),
            # Natural text has a large vocabulary (Heaps' law): the combiner only shrinks a 20 MB
            # split's ~2x-inflated (word, 1) stream to about a quarter of the input.
            map_output_ratio=0.25,
            # Counts of all distinct words across the 5 maps' outputs.
            reduce_output_ratio=0.4,
            output_replication=3,  # dfs.replication default
        ),
    }
)
"""The job-profile table. Numbers are estimates from public figures (cited inline), not fitted."""

PAPER_GROUPS: tuple[str, ...] = ("grep", "terasort", "wordcount", "mixed")
PAPER_JOBS_PER_GROUP = 30
PAPER_JOBS_PER_NODE = PAPER_JOBS_PER_GROUP / PAPER_NODES
"""7.5: a paper group on a larger cluster keeps the paper's 30 jobs per 4 workers."""
PAPER_JITTER = 0.05
"""Each job's task durations are scaled by a factor drawn uniformly from 1 ± this, per seed, so
that 30 identical jobs do not finish in lock-step; demands (rates) are unchanged."""


# --------------------------------------------------------------------------------------------
# The cost model.


def task_shape(cpu_s: float, disk_mb: float, node_disk_mbps: float) -> tuple[float, float, float]:
    """(duration_s, cpu_cores, disk_mbps) of a task alone on an idle node.

    The work after start-up overlaps CPU and disk, so it takes the longer of the two; the demands
    are averaged over the whole duration so that they multiply back to the task's total work.
    """
    duration = TASK_OVERHEAD_S + max(cpu_s, disk_mb / node_disk_mbps)
    cpu_cores = (TASK_OVERHEAD_CPU_S + cpu_s) / duration
    return duration, cpu_cores, disk_mb / duration


def _map_cost(
    profile: Profile, input_mb: float, spill_mb: float, hdfs_output_mb: float
) -> tuple[float, float]:
    """(cpu_s, disk_mb) of one map: its split, its spill, and its HDFS output if map-only."""
    cpu_s = input_mb / profile.map.cpu_mb_per_s
    disk_mb = input_mb * profile.map.disk_per_input_mb + spill_mb
    return cpu_s, disk_mb + hdfs_output_mb * profile.output_replication


def _reduce_cost(profile: Profile, shuffle_mb: float, output_mb: float) -> tuple[float, float]:
    """(cpu_s, disk_mb) of one reduce: merge to disk, read back, write replicated output."""
    cpu_s = shuffle_mb / profile.reduce.cpu_mb_per_s
    disk_mb = shuffle_mb * profile.reduce.disk_per_input_mb + output_mb * profile.output_replication
    return cpu_s, disk_mb


def _group(
    kind: TaskKind,
    count: int,
    memory_mb: int,
    cost: tuple[float, float],
    disk_mbps: float,
) -> TaskGroup:
    duration, cpu, disk = task_shape(cost[0], cost[1], disk_mbps)
    return TaskGroup(
        kind=kind,
        count=count,
        memory_mb=memory_mb,
        vcores=TASK_VCORES,
        duration_s=round(duration, 3),
        cpu_cores=round(cpu, 4),
        disk_mbps=round(disk, 3),
    )


# --------------------------------------------------------------------------------------------
# The paper's groups.


def load_paper(group: str, *, seed: int = 0, nodes: int = PAPER_NODES) -> Workload:
    """The paper's experiment: 30 jobs of one profile, or 10 of each interleaved ("mixed").

    Each job has 5 maps over 20 MB splits (100 MB / 5) and 1 reduce over all maps' output, all
    jobs are submitted at t=0 in order, to root.default on 4 workers.

    On ``nodes`` other than 4 the job count scales with the cluster (`PAPER_JOBS_PER_NODE`, 120
    jobs on 16 nodes, 750 on 100), so the batch is as large against the cluster as in the paper:
    with a fixed 30 jobs, 100 nodes would run every AM and task at once and the AM share would
    not matter. The first 30 jobs are those of the 4-node group for the same seed.
    """
    if nodes < 1:
        raise WorkloadError(f"paper:{group}@{nodes}: need at least one node")
    count = max(1, round(PAPER_JOBS_PER_NODE * nodes))
    names = _group_names(group, count)
    rng = random.Random(f"paper:{group}:{seed}")
    jobs = [_paper_job(i, PROFILES[name], 0.0, "root.default", rng) for i, name in enumerate(names)]
    name = f"paper:{group}" if nodes == PAPER_NODES else f"paper:{group}@{nodes}"
    return _paper_cluster(name, jobs, nodes, ("root.default",))


def _group_names(group: str, count: int) -> list[str]:
    """Profile names of ``count`` jobs of a group; "mixed" cycles grep, terasort, wordcount."""
    if group == "mixed":
        order = list(PROFILES)
        return [order[i % len(order)] for i in range(count)]
    if group in PROFILES:
        return [group] * count
    raise WorkloadError(f"unknown paper group {group!r}; expected one of {PAPER_GROUPS}")


def _paper_job(
    index: int, profile: Profile, submit_s: float, queue: str, rng: random.Random
) -> JobSpec:
    """Job ``index`` (0-based) of `profile`, its map and reduce durations jittered by
    `PAPER_JITTER` (two draws from ``rng``, map first)."""
    map_group, reduce_group = nominal_tasks(profile)
    map_scale = 1.0 + rng.uniform(-PAPER_JITTER, PAPER_JITTER)
    reduce_scale = 1.0 + rng.uniform(-PAPER_JITTER, PAPER_JITTER)
    return JobSpec(
        job_id=f"job_{index + 1:04d}",
        submit_s=submit_s,
        queue=queue,
        maps=(replace(map_group, duration_s=round(map_group.duration_s * map_scale, 3)),),
        reduces=(
            replace(reduce_group, duration_s=round(reduce_group.duration_s * reduce_scale, 3)),
        ),
        profile=profile.name,
        am_memory_mb=profile.am_memory_mb,
        am_vcores=TASK_VCORES,
        am_startup_s=profile.am_startup_s,
        am_teardown_s=profile.am_teardown_s,
        slowstart=SLOWSTART,
    )


def nominal_tasks(profile: Profile) -> tuple[TaskGroup, TaskGroup]:
    """A paper job's map and reduce group without jitter, on the paper's node disk."""
    split_mb = profile.input_mb / profile.maps
    shuffle_mb = profile.input_mb * profile.map_output_ratio / profile.reduces
    map_cost = _map_cost(profile, split_mb, split_mb * profile.map_output_ratio, 0.0)
    reduce_cost = _reduce_cost(profile, shuffle_mb, shuffle_mb * profile.reduce_output_ratio)
    return (
        _group("map", profile.maps, profile.map_memory_mb, map_cost, PAPER_NODE_DISK_MBPS),
        _group(
            "reduce", profile.reduces, profile.reduce_memory_mb, reduce_cost, PAPER_NODE_DISK_MBPS
        ),
    )


def profile_table() -> str:
    """The derived task shapes of `PROFILES` as a Markdown table, for docs and reports."""
    lines = [
        "| profile | map s | cores | disk MB/s | red s | cores | disk MB/s "
        "| MB map/red/AM | AM s up/down |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for p in PROFILES.values():
        m, r = nominal_tasks(p)
        lines.append(
            f"| {p.name} | {m.duration_s:.1f} | {m.cpu_cores:.2f} | {m.disk_mbps:.1f} "
            f"| {r.duration_s:.1f} | {r.cpu_cores:.2f} | {r.disk_mbps:.1f} "
            f"| {p.map_memory_mb}/{p.reduce_memory_mb}/{p.am_memory_mb} "
            f"| {p.am_startup_s:g}/{p.am_teardown_s:g} |"
        )
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Beyond the paper: phases, two queues, Poisson arrivals. Same cost model and cluster as the
# paper groups; only the job shapes and the arrival pattern change.


@dataclass(frozen=True, slots=True)
class Phase:
    """One batch of jobs that all want about the same AM share."""

    name: str
    description: str
    profile: str
    """Row of `PROFILES`; "mixed" cycles through the three."""
    jobs: int
    input_mb: float
    maps: int
    reduces: int


PHASES: Mapping[str, Phase] = MappingProxyType(
    {
        # One 20 MB grep split and one reduce per job: each job is an AM (2048 MB) and one task
        # (1024 MB) at a time, so the cluster is busiest when about 2/3 of it holds AMs. Best
        # fixed A on 4 nodes: 0.8 on both schedulers (makespan 165 / 162 s on the Capacity /
        # FairScheduler; 0.4 takes 1.8x as long).
        "small": Phase("small", "120 one-map grep jobs", "grep", 120, 20.0, 1, 1),
        # 32 maps of 20 MB and 4 reduces per job: one job alone can fill the cluster, so every
        # AM beyond a few only holds memory the maps could use. Best fixed A on 4 nodes: 0.4
        # on both (177 / 185 s); 0.8 is 28 % / 51 % slower.
        "large": Phase("large", "16 terasort jobs of 640 MB", "terasort", 16, 640.0, 32, 4),
        # The paper's mixed group: best fixed A 0.5 / 0.6 (81 / 87 s).
        "mixed": Phase("mixed", "30 paper jobs, grep/terasort/wordcount", "mixed", 30, 100.0, 5, 1),
    }
)
"""The phases of the ``phase:`` and ``twoqueue:`` workloads; the makespans quoted are each phase
alone, seed 0 (tests/bench/test_suite.py checks the best values)."""
PHASE_SPACING_S = 150.0
"""Phase k of a ``phase:`` workload is submitted at k x 150 s: a little less than the small and
large phases take at their best A (162-185 s), so each phase arrives as the previous one drains
and a value that is wrong for a phase delays the next. Wider spacing leaves the cluster idle
between phases (then only the last phase decides the makespan); narrower spacing blends phases
into one mixed backlog. Setting 0.8, 0.4, 0.5 as each phase arrives beats the best fixed A at
150 s (makespan 401 vs 425 s on the CapacityScheduler, 417 vs 483 s on the FairScheduler, seed
0) but not at 180 s."""
TWO_QUEUE_NODES = 8
"""Each of the two equal queues is guaranteed half of 8 nodes, the paper's 4-node cluster."""
TWO_QUEUES = ("root.a", "root.b")
POISSON_JOBS = 90
"""Three times the paper's batch, so arrivals, not the start-up transient, dominate the run."""
POISSON_MEAN_GAP_S = 3.0
"""Mean time between submissions. The paper's mixed group at its best A finishes 30 jobs in about
80 s on 4 nodes (2.7 s a job), so this offers ~90 % of what the cluster can do at a good A and
overloads it at a poor one (the CapacityScheduler default 0.1 manages 8.5 s a job)."""
STREAM_JOBS = 600
STREAM_MEAN_GAP_S = 2.7
"""``stream:``: a steady stream at about what the 4 nodes do at a good A, for about 27 minutes, so
the AM limit binds much of the time: the regime a daemon lives in, where a batch's first second
no longer decides the run and a policy that misreads arrivals shows it."""


def _phase_jobs(
    phase: Phase, first_index: int, submit_s: float, queue: str, rng: random.Random
) -> list[JobSpec]:
    """The phase's jobs, sized like the paper's (20 MB splits of `PROFILES` rows), jittered."""
    names = _group_names(phase.profile, phase.jobs)
    out = []
    for k, name in enumerate(names):
        profile = PROFILES[name]
        if phase.profile != "mixed":
            profile = replace(
                profile, input_mb=phase.input_mb, maps=phase.maps, reduces=phase.reduces
            )
        out.append(_paper_job(first_index + k, profile, submit_s, queue, rng))
    return out


def _phase_list(spec: str, what: str) -> list[Phase]:
    names = [n.strip() for n in spec.split(",")]
    unknown = [n for n in names if n not in PHASES]
    if unknown or not names:
        raise WorkloadError(
            f"{what}:{spec}: unknown phase {unknown[0] if unknown else ''!r}; "
            f"expected a comma-separated list of {', '.join(PHASES)}"
        )
    return [PHASES[n] for n in names]


def _paper_cluster(name: str, jobs: list[JobSpec], nodes: int, queues: tuple[str, ...]) -> Workload:
    return Workload(
        name=name,
        jobs=tuple(jobs),
        nodes=nodes,
        node_memory_mb=PAPER_NODE_MEMORY_MB,
        node_vcores=PAPER_NODE_VCORES,
        node_disk_mbps=PAPER_NODE_DISK_MBPS,
        queues=queues,
    )


def load_phases(spec: str, *, seed: int = 0) -> Workload:
    """``small,large,mixed``: the listed `PHASES`, phase k submitted as one batch at k x
    `PHASE_SPACING_S`, to root.default on the paper's 4 nodes. A single phase alone starts at 0,
    which is how the benchmark finds each phase's own best value."""
    phases = _phase_list(spec, "phase")
    rng = random.Random(f"phase:{spec}:{seed}")
    jobs: list[JobSpec] = []
    for k, phase in enumerate(phases):
        jobs += _phase_jobs(phase, len(jobs), k * PHASE_SPACING_S, "root.default", rng)
    return _paper_cluster(f"phase:{spec}", jobs, PAPER_NODES, ("root.default",))


def load_two_queues(spec: str, *, seed: int = 0) -> Workload:
    """``A,B``: phase A's jobs in root.a and phase B's in root.b, all at t=0, on
    `TWO_QUEUE_NODES` nodes; the queues have equal shares. With ``small,large`` the two queues
    want opposite AM shares (0.8 and 0.3), so one global value cannot suit both."""
    phases = _phase_list(spec, "twoqueue")
    if len(phases) != 2:
        raise WorkloadError(f"twoqueue:{spec}: expected two phases, one per queue")
    rng = random.Random(f"twoqueue:{spec}:{seed}")
    jobs: list[JobSpec] = []
    for phase, queue in zip(phases, TWO_QUEUES, strict=True):
        jobs += _phase_jobs(phase, len(jobs), 0.0, queue, rng)
    return _paper_cluster(f"twoqueue:{spec}", jobs, TWO_QUEUE_NODES, TWO_QUEUES)


def load_poisson(
    group: str,
    *,
    seed: int = 0,
    jobs: int = POISSON_JOBS,
    mean_gap_s: float = POISSON_MEAN_GAP_S,
    kind: str = "poisson",
) -> Workload:
    """``jobs`` jobs of a paper group on the paper's 4 nodes, submitted as a Poisson process
    (exponential gaps, mean ``mean_gap_s``) from t=0; gaps and jitter are drawn from the seed."""
    names = _group_names(group, jobs)
    rng = random.Random(f"{kind}:{group}:{seed}")
    specs = []
    t = 0.0
    for i, name in enumerate(names):
        specs.append(_paper_job(i, PROFILES[name], round(t, 3), "root.default", rng))
        t += rng.expovariate(1.0 / mean_gap_s)
    return _paper_cluster(f"{kind}:{group}", specs, PAPER_NODES, ("root.default",))


# --------------------------------------------------------------------------------------------
# Entry point.


def load_workload(spec: str, *, seed: int = 0) -> Workload:
    """The workload named by ``paper:GROUP[@NODES]``, ``phase:PHASES``, ``twoqueue:A,B``,
    ``poisson:GROUP``, ``stream:GROUP``, ``sls:PATH``, ``swim:PATH`` or ``rumen:PATH``."""
    kinds = "paper, phase, twoqueue, poisson, stream, sls, swim or rumen"
    prefix, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise WorkloadError(
            f"workload spec {spec!r}: expected paper:GROUP[@NODES], phase:PHASES, twoqueue:A,B, "
            "poisson:GROUP, stream:GROUP, sls:PATH, swim:PATH or rumen:PATH"
        )
    if prefix == "paper":
        group, at, nodes = rest.partition("@")
        if not at:
            return load_paper(group, seed=seed)
        if not nodes.isdigit():
            raise WorkloadError(f"workload spec {spec!r}: @{nodes} is not a node count")
        return load_paper(group, seed=seed, nodes=int(nodes))
    if prefix == "phase":
        return load_phases(rest, seed=seed)
    if prefix == "twoqueue":
        return load_two_queues(rest, seed=seed)
    if prefix == "poisson":
        return load_poisson(rest, seed=seed)
    if prefix == "stream":
        return load_poisson(
            rest, seed=seed, jobs=STREAM_JOBS, mean_gap_s=STREAM_MEAN_GAP_S, kind="stream"
        )
    if prefix == "sls":
        return load_sls(rest)
    if prefix == "swim":
        return load_swim(rest)
    if prefix == "rumen":
        return load_rumen(rest)
    raise WorkloadError(f"workload spec {spec!r}: unknown kind {prefix!r}; expected {kinds}")


def describe(workload: Workload) -> str:
    """One-paragraph summary for CLIs: size of the cluster and of the work it is asked to do."""
    maps = sum(g.count for j in workload.jobs for g in j.maps)
    reduces = sum(g.count for j in workload.jobs for g in j.reduces)
    task_s = sum(g.count * g.duration_s for j in workload.jobs for g in (*j.maps, *j.reduces))
    last = max((j.submit_s for j in workload.jobs), default=0.0)
    return (
        f"{workload.name}: {len(workload.jobs):,} jobs, {maps:,} maps + {reduces:,} reduces, "
        f"{task_s:,.0f} task container-seconds (idle-node durations), "
        f"submissions over {last:,.0f} s, queues {', '.join(workload.queues)}; "
        f"cluster {workload.nodes} nodes x {workload.node_memory_mb} MB / "
        f"{workload.node_vcores} vcores / {workload.node_disk_mbps:g} MB/s disk"
    )


# --------------------------------------------------------------------------------------------
# SWIM day traces.

SWIM_NODES = 600
"""The FB-2009 traces were sampled from a 600-machine cluster (SWIM's README); replaying them on
that size needs no byte scaling."""
SWIM_NODE_MEMORY_MB = 8192
"""Hadoop 2.x NodeManager default (yarn-facts §7); the 2009 machines ran Hadoop 0.20 slots."""
SWIM_NODE_VCORES = 8
SWIM_NODE_DISK_MBPS = 100.0
SWIM_BLOCK_BYTES = 128 * MB
"""dfs.blocksize default in Hadoop 2.x: one map per block."""
SWIM_SHUFFLE_PER_REDUCE_BYTES = 1024 * MB
"""One reduce per GB shuffled, the usual rule of thumb for sizing reduces."""
SWIM_REDUCE_SLOTS_PER_NODE = 2
"""mapred.tasktracker.reduce.tasks.maximum default in Hadoop 0.20, the FB-2009 cluster's version."""
SWIM_MAX_REDUCES = math.floor(0.95 * SWIM_NODES * SWIM_REDUCE_SLOTS_PER_NODE)
"""Hadoop's guidance: at most 0.95 x the cluster's reduce slots, so all reduces run in one wave
(1140 on 600 nodes); only the largest shuffles (up to 8 TB) reach it."""

SWIM_PROFILE = Profile(
    name="swim",
    description="FB-2009 job of unknown kind: byte counts from the trace, average per-byte costs",
    # Between terasort's light parsing (25) and the text jobs (5-10): the trace's jobs are mostly
    # Hive scans and aggregations.
    map=PhaseCost(cpu_mb_per_s=20.0, disk_per_input_mb=1.0),  # read the split once
    reduce=PhaseCost(cpu_mb_per_s=40.0, disk_per_input_mb=2.0),  # merge to disk, read back
    map_output_ratio=0.0,  # unused: the trace gives the shuffle bytes of each job
    reduce_output_ratio=0.0,  # unused: the trace gives the output bytes of each job
    output_replication=3,  # dfs.replication default
)


def load_swim(path: str | Path) -> Workload:
    """A SWIM day trace (TAB-separated: id, submit s, gap s, input, shuffle, output bytes …).

    The trace has bytes only; every task quantity is derived, per job:

    * maps = max(1, ceil(input / 128 MB)), each reading input / maps (no 64 MB floor as in
      SWIM's replayer: a tiny job is one map that costs little more than its start-up);
    * reduces = 0 if shuffle is 0 (map-only job), else min(ceil(shuffle / 1 GB), 1140);
    * a map spills shuffle / maps to local disk; in a map-only job it writes output / maps to
      HDFS instead, 3 replicas;
    * a reduce merges shuffle / reduces to disk, reads it back and writes output / reduces to
      HDFS, 3 replicas;
    * durations and demands from `task_shape` with `SWIM_PROFILE`'s per-byte costs (map 20 MB/s,
      reduce 40 MB/s per core) and a 100 MB/s node disk;
    * containers, AM size and start-up, slowstart: Hadoop 2.x defaults as in the paper groups;
    * submit time = column 2; all jobs in root.default; no random jitter (the trace is the data).
    """
    p = SWIM_PROFILE
    jobs = []
    for lineno, fields in _tsv_rows(path):
        where = f"{path}:{lineno}"
        if len(fields) < 6:
            raise WorkloadError(
                f"{where}: expected at least 6 TAB-separated fields, got {len(fields)}"
            )
        try:
            submit_s = float(fields[1])
            input_b, shuffle_b, output_b = (int(f) for f in fields[3:6])
        except ValueError as e:
            raise WorkloadError(f"{where}: not a number: {e}") from None
        if submit_s < 0 or min(input_b, shuffle_b, output_b) < 0:
            raise WorkloadError(f"{where}: negative submit time or byte count")
        n_maps = max(1, math.ceil(input_b / SWIM_BLOCK_BYTES))
        n_reduces = (
            min(math.ceil(shuffle_b / SWIM_SHUFFLE_PER_REDUCE_BYTES), SWIM_MAX_REDUCES)
            if shuffle_b > 0
            else 0
        )
        map_out_mb = (shuffle_b if n_reduces else 0) / MB / n_maps
        hdfs_out_mb = 0.0 if n_reduces else output_b / MB / n_maps
        cost = _map_cost(p, input_b / MB / n_maps, map_out_mb, hdfs_out_mb)
        maps = (_group("map", n_maps, p.map_memory_mb, cost, SWIM_NODE_DISK_MBPS),)
        reduces: tuple[TaskGroup, ...] = ()
        if n_reduces:
            cost = _reduce_cost(p, shuffle_b / MB / n_reduces, output_b / MB / n_reduces)
            reduces = (_group("reduce", n_reduces, p.reduce_memory_mb, cost, SWIM_NODE_DISK_MBPS),)
        jobs.append(
            JobSpec(
                job_id=fields[0],
                submit_s=submit_s,
                queue="root.default",
                maps=maps,
                reduces=reduces,
                profile=p.name,
                am_memory_mb=p.am_memory_mb,
                am_vcores=TASK_VCORES,
                am_startup_s=p.am_startup_s,
                am_teardown_s=p.am_teardown_s,
                slowstart=SLOWSTART,
            )
        )
    if not jobs:
        raise WorkloadError(f"{path}: no jobs in SWIM trace")
    return Workload(
        name=f"swim:{Path(path).name}",
        jobs=tuple(jobs),
        nodes=SWIM_NODES,
        node_memory_mb=SWIM_NODE_MEMORY_MB,
        node_vcores=SWIM_NODE_VCORES,
        node_disk_mbps=SWIM_NODE_DISK_MBPS,
        queues=("root.default",),
    )


def _tsv_rows(path: str | Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of the non-blank lines of a TAB-separated file."""
    text = _read_text(path)
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield lineno, line.split("\t")


def _read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WorkloadError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise WorkloadError(f"{path}: cannot read: {e}") from None


# --------------------------------------------------------------------------------------------
# SLS job traces.

SLS_NODE_MEMORY_MB = 10240
"""yarn.sls.nm.memory.mb default (yarn-facts §6.1)."""
SLS_NODE_VCORES = 10
"""yarn.sls.nm.vcores default."""
SLS_CONTAINER_MEMORY_MB = 1024
"""yarn.sls.container.memory.mb default, for tasks without container.memory-mb."""
SLS_CONTAINER_VCORES = 1
"""yarn.sls.container.vcores default."""
SLS_AM_MEMORY_MB = 1024
"""yarn.sls.am.container.memory default, for jobs without am.memory-mb."""
SLS_AM_VCORES = 1
SLS_SLOWSTART = 1.0
"""SLS's MRAMSimulator asks for reduces only when all maps are done (yarn-facts §6.1)."""


def load_sls(path: str | Path) -> Workload:
    """A Hadoop SLS JSON job trace: a stream of concatenated JSON objects, not an array.

    Read as SLSRunner does (yarn-facts §6.1): ``job.start.ms`` → submit time, ``job.queue.name``
    → queue (``root.`` prefixed unless present), ``job.user``, ``job.count`` copies of the job,
    per task ``count``, ``container.type`` map/reduce, ``container.memory-mb``/``vcores`` (SLS
    defaults 1024/1) and the duration from ``container.duration.ms``, else ``duration.ms``, else
    ``container.end.ms − container.start.ms`` (must be > 0). Identical tasks of a job become one
    TaskGroup. The AM type (``yarn.sls.am.type`` or ``am.type``) must be mapreduce; the AM's size
    is ``am.memory-mb``/``am.vcores`` (SLS defaults 1024/1). A header object with ``num.nodes``
    sets the cluster size; else it is the number of distinct ``container.host`` values.

    Trace durations are replayed as recorded, like SLS does: tasks get zero CPU and disk demand,
    so node sharing never stretches them. Reduces start when all maps are done (SLS's model);
    AM start-up and tear-down are the MapReduce defaults of the profile table. Ignored keys:
    ``container.host`` placement, priorities, ``container.request.delay`` and execution types.
    Rumen job histories, SYNTH descriptions and topology files are refused with the reason.
    """
    jobs: list[JobSpec] = []
    queues: dict[str, None] = {}
    hosts: set[str] = set()
    header_nodes: int | None = None
    for lineno, obj in _json_objects(path):
        where = f"{path}:{lineno}"
        if not isinstance(obj, dict):
            raise WorkloadError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        if "job.tasks" in obj:
            for job in _sls_jobs(obj, where, len(jobs), hosts):
                jobs.append(job)
                queues.setdefault(job.queue)
        elif "num.nodes" in obj:
            header_nodes = _int(obj, "num.nodes", None, where, minimum=1)
        else:
            raise WorkloadError(f"{where}: {_not_a_job(obj)}")
    if not jobs:
        raise WorkloadError(f"{path}: no jobs in SLS trace")
    return Workload(
        name=f"sls:{Path(path).name}",
        jobs=tuple(jobs),
        nodes=header_nodes or max(1, len(hosts)),
        node_memory_mb=SLS_NODE_MEMORY_MB,
        node_vcores=SLS_NODE_VCORES,
        node_disk_mbps=PAPER_NODE_DISK_MBPS,
        queues=tuple(queues),
    )


def _not_a_job(obj: dict[str, Any]) -> str:
    """Why an object without job.tasks is not an SLS job, naming the format it looks like."""
    if "jobID" in obj or "mapTasks" in obj:
        return "a rumen job history, not an SLS job trace (load it as rumen:PATH)"
    if "workloads" in obj or "num_jobs" in obj:
        return "an SLS SYNTH workload description, not an SLS job trace (not supported)"
    if "rack" in obj or "nodes" in obj:
        return "an SLS topology (nodes) file, not a job trace"
    if "job.start.ms" in obj or "job.queue.name" in obj:
        return 'SLS job without job.tasks ("No task for the job!")'
    return f"not an SLS job: no job.tasks (keys: {', '.join(sorted(obj)[:6])})"


def _sls_jobs(obj: dict[str, Any], where: str, first_index: int, hosts: set[str]) -> list[JobSpec]:
    am_type = obj.get("yarn.sls.am.type", obj.get("am.type", "mapreduce"))
    if am_type != "mapreduce":
        raise WorkloadError(f"{where}: AM type {am_type!r} not supported (only mapreduce)")
    start_ms = _number(obj, "job.start.ms", None, where)
    if start_ms < 0:
        raise WorkloadError(f"{where}: job.start.ms must be >= 0")
    queue = obj.get("job.queue.name")
    if not isinstance(queue, str) or not queue:
        raise WorkloadError(f"{where}: job.queue.name must be a non-empty string")
    if queue != "root" and not queue.startswith("root."):
        queue = f"root.{queue}"
    tasks = obj["job.tasks"]
    if not isinstance(tasks, list) or not tasks:
        raise WorkloadError(f'{where}: job.tasks must be a non-empty list ("No task for the job!")')
    counts: dict[tuple[TaskKind, int, int, float], int] = {}
    for i, task in enumerate(tasks):
        twhere = f"{where}: job.tasks[{i}]"
        if not isinstance(task, dict):
            raise WorkloadError(f"{twhere}: expected an object")
        kind = task.get("container.type", "map")
        if kind not in ("map", "reduce"):
            raise WorkloadError(f"{twhere}: container.type {kind!r} is neither map nor reduce")
        key = (
            kind,
            _int(task, "container.memory-mb", SLS_CONTAINER_MEMORY_MB, twhere, minimum=1),
            _int(task, "container.vcores", SLS_CONTAINER_VCORES, twhere, minimum=0),
            _sls_duration_s(task, twhere),
        )
        counts[key] = counts.get(key, 0) + _int(task, "count", 1, twhere, minimum=1)
        host = task.get("container.host")
        if isinstance(host, str) and host:
            hosts.add(host)
    groups = {
        kind: tuple(
            TaskGroup(
                kind=k,
                count=n,
                memory_mb=mem,
                vcores=vc,
                duration_s=dur,
                cpu_cores=0.0,
                disk_mbps=0.0,
            )
            for (k, mem, vc, dur), n in counts.items()
            if k == kind
        )
        for kind in ("map", "reduce")
    }
    if not groups["map"] and groups["reduce"]:
        # The MR AM needs maps before it asks for reduces; a reduce-only job would never finish.
        raise WorkloadError(f"{where}: job has reduce tasks but no map task")
    job_count = _int(obj, "job.count", 1, where, minimum=1)
    job_id = obj.get("job.id")
    user = obj.get("job.user", "default")
    if not isinstance(user, str):
        raise WorkloadError(f"{where}: job.user must be a string")
    out = []
    for k in range(job_count):
        index = first_index + k + 1
        # SLS ignores job.id when job.count > 1 and numbers the copies itself.
        jid = job_id if job_count == 1 and isinstance(job_id, str) and job_id else f"job_{index}"
        out.append(
            JobSpec(
                job_id=jid,
                submit_s=start_ms / 1000.0,
                queue=queue,
                maps=groups["map"],
                reduces=groups["reduce"],
                user=user,
                profile="sls",
                am_memory_mb=_int(obj, "am.memory-mb", SLS_AM_MEMORY_MB, where, minimum=1),
                am_vcores=_int(obj, "am.vcores", SLS_AM_VCORES, where, minimum=0),
                am_startup_s=AM_STARTUP_S,
                am_teardown_s=AM_TEARDOWN_S,
                slowstart=SLS_SLOWSTART,
            )
        )
    return out


def _sls_duration_s(task: dict[str, Any], where: str) -> float:
    if "container.duration.ms" in task:
        ms = _number(task, "container.duration.ms", None, where)
    elif "duration.ms" in task:
        ms = _number(task, "duration.ms", None, where)
    elif "container.start.ms" in task and "container.end.ms" in task:
        ms = _number(task, "container.end.ms", None, where) - _number(
            task, "container.start.ms", None, where
        )
    else:
        raise WorkloadError(
            f"{where}: no duration (container.duration.ms, duration.ms or "
            "container.start.ms + container.end.ms)"
        )
    if ms <= 0:
        raise WorkloadError(f"{where}: duration {ms} ms must be > 0")
    return ms / 1000.0


def _number(obj: dict[str, Any], key: str, default: float | None, where: str) -> float:
    value = obj.get(key, default)
    if value is None:
        raise WorkloadError(f"{where}: missing {key}")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise WorkloadError(f"{where}: {key} is not a number: {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WorkloadError(f"{where}: {key} is not a number: {value!r}")
    return float(value)


def _int(obj: dict[str, Any], key: str, default: int | None, where: str, *, minimum: int) -> int:
    value = _number(obj, key, default, where)
    if value != int(value) or value < minimum:
        raise WorkloadError(f"{where}: {key} must be an integer >= {minimum}, got {value:g}")
    return int(value)


def _json_objects(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line where it starts, value) of each top-level JSON value in a concatenated stream."""
    text = _read_text(path)
    decoder = json.JSONDecoder()
    pos, line, end = 0, 1, len(text)
    while True:
        start = pos
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        line += text.count("\n", start, pos)
        if pos >= end:
            return
        try:
            value, nxt = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise WorkloadError(f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}") from None
        yield line, value
        line += text.count("\n", pos, nxt)
        pos = nxt


# --------------------------------------------------------------------------------------------
# Rumen job histories.


def load_rumen(path: str | Path) -> Workload:
    """A rumen job-history trace (concatenated JSON jobs), read as SLS's RUMEN trace type does.

    Per job (yarn-facts §6.1): submit time = ``submitTime`` minus the first job's ``submitTime``;
    ``queue`` (``root.`` prefixed) and ``user``; one task per entry of ``mapTasks`` and
    ``reduceTasks`` whose duration is its last attempt's ``finishTime − startTime``. Container
    sizes: ``mapreduce.{map,reduce}.memory.mb`` and ``yarn.app.mapreduce.am.resource.mb`` from
    ``jobProperties`` when set (the job's real request), else the SLS defaults (1024). Everything
    else — zero demands, reduces after all maps, AM start-up, nodes from distinct hosts, node size
    — is as for `load_sls`.
    """
    jobs: list[JobSpec] = []
    queues: dict[str, None] = {}
    hosts: set[str] = set()
    baseline_ms: float | None = None
    for lineno, obj in _json_objects(path):
        where = f"{path}:{lineno}"
        if not isinstance(obj, dict) or "mapTasks" not in obj:
            raise WorkloadError(f"{where}: not a rumen job (no mapTasks)")
        submit_ms = _number(obj, "submitTime", None, where)
        if baseline_ms is None:
            baseline_ms = submit_ms
        props = obj.get("jobProperties")
        props = props if isinstance(props, dict) else {}
        groups: dict[TaskKind, tuple[TaskGroup, ...]] = {}
        phases: tuple[tuple[TaskKind, str, str], ...] = (
            ("map", "mapTasks", "mapreduce.map.memory.mb"),
            ("reduce", "reduceTasks", "mapreduce.reduce.memory.mb"),
        )
        for kind, key, mem_key in phases:
            memory_mb = _int(props, mem_key, SLS_CONTAINER_MEMORY_MB, where, minimum=1)
            counts: dict[float, int] = {}
            tasks = obj.get(key, [])
            if not isinstance(tasks, list):
                raise WorkloadError(f"{where}: {key} must be a list")
            for i, task in enumerate(tasks):
                twhere = f"{where}: {obj.get('jobID', '?')} {key}[{i}]"
                attempts = task.get("attempts") if isinstance(task, dict) else None
                if not isinstance(attempts, list) or not attempts:
                    raise WorkloadError(f"{twhere}: no attempts")
                last = attempts[-1]
                if not isinstance(last, dict):
                    raise WorkloadError(f"{twhere}: attempt is not an object")
                ms = _number(last, "finishTime", None, twhere) - _number(
                    last, "startTime", None, twhere
                )
                if ms <= 0:
                    raise WorkloadError(f"{twhere}: duration {ms:g} ms must be > 0")
                counts[ms / 1000.0] = counts.get(ms / 1000.0, 0) + 1
                host = last.get("hostName")
                if isinstance(host, str) and host:
                    hosts.add(host)
            groups[kind] = tuple(
                TaskGroup(kind, n, memory_mb, SLS_CONTAINER_VCORES, dur, 0.0, 0.0)
                for dur, n in counts.items()
            )
        if not groups["map"]:
            raise WorkloadError(f"{where}: job has no map task")
        queue = obj.get("queue")
        if not isinstance(queue, str) or not queue:
            raise WorkloadError(f"{where}: queue must be a non-empty string")
        queue = queue if queue == "root" or queue.startswith("root.") else f"root.{queue}"
        queues.setdefault(queue)
        user = obj.get("user")
        jobs.append(
            JobSpec(
                job_id=str(obj.get("jobID") or f"job_{len(jobs) + 1}"),
                submit_s=(submit_ms - baseline_ms) / 1000.0,
                queue=queue,
                maps=groups["map"],
                reduces=groups["reduce"],
                user=user if isinstance(user, str) and user else "default",
                profile="rumen",
                am_memory_mb=_int(
                    props, "yarn.app.mapreduce.am.resource.mb", SLS_AM_MEMORY_MB, where, minimum=1
                ),
                am_vcores=SLS_AM_VCORES,
                am_startup_s=AM_STARTUP_S,
                am_teardown_s=AM_TEARDOWN_S,
                slowstart=SLS_SLOWSTART,
            )
        )
    if not jobs:
        raise WorkloadError(f"{path}: no jobs in rumen trace")
    return Workload(
        name=f"rumen:{Path(path).name}",
        jobs=tuple(sorted(jobs, key=lambda j: j.submit_s)),
        nodes=max(1, len(hosts)),
        node_memory_mb=SLS_NODE_MEMORY_MB,
        node_vcores=SLS_NODE_VCORES,
        node_disk_mbps=PAPER_NODE_DISK_MBPS,
        queues=tuple(queues),
    )
