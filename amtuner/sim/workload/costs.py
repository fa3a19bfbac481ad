"""The cost model shared by every workload: the paper's cluster, Hadoop's container defaults,
the job-profile table and the shape of one task.

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

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from amtuner.sim.spec import TaskGroup, TaskKind

MB = 1024 * 1024

# The cluster the paper ran on.
# "5 ordinary PCs: one master, four workers" (Lian & Liu). A desktop PC of the 2015-2019 era:
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


def task_shape(cpu_s: float, disk_mb: float, node_disk_mbps: float) -> tuple[float, float, float]:
    """(duration_s, cpu_cores, disk_mbps) of a task alone on an idle node.

    The work after start-up overlaps CPU and disk, so it takes the longer of the two; the demands
    are averaged over the whole duration so that they multiply back to the task's total work.
    """
    duration = TASK_OVERHEAD_S + max(cpu_s, disk_mb / node_disk_mbps)
    cpu_cores = (TASK_OVERHEAD_CPU_S + cpu_s) / duration
    return duration, cpu_cores, disk_mb / duration


def map_task_cost(
    profile: Profile, input_mb: float, spill_mb: float, hdfs_output_mb: float
) -> tuple[float, float]:
    """(cpu_s, disk_mb) of one map: its split, its spill, and its HDFS output if map-only."""
    cpu_s = input_mb / profile.map.cpu_mb_per_s
    disk_mb = input_mb * profile.map.disk_per_input_mb + spill_mb
    return cpu_s, disk_mb + hdfs_output_mb * profile.output_replication


def reduce_task_cost(profile: Profile, shuffle_mb: float, output_mb: float) -> tuple[float, float]:
    """(cpu_s, disk_mb) of one reduce: merge to disk, read back, write replicated output."""
    cpu_s = shuffle_mb / profile.reduce.cpu_mb_per_s
    disk_mb = shuffle_mb * profile.reduce.disk_per_input_mb + output_mb * profile.output_replication
    return cpu_s, disk_mb


def task_group(
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


def nominal_tasks(profile: Profile) -> tuple[TaskGroup, TaskGroup]:
    """A paper job's map and reduce group without jitter, on the paper's node disk."""
    split_mb = profile.input_mb / profile.maps
    shuffle_mb = profile.input_mb * profile.map_output_ratio / profile.reduces
    map_cost = map_task_cost(profile, split_mb, split_mb * profile.map_output_ratio, 0.0)
    reduce_cost = reduce_task_cost(profile, shuffle_mb, shuffle_mb * profile.reduce_output_ratio)
    return (
        task_group("map", profile.maps, profile.map_memory_mb, map_cost, PAPER_NODE_DISK_MBPS),
        task_group(
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
