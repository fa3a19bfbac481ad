"""SWIM day traces of Facebook jobs: byte counts turned into tasks by the shared cost model."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from amtuner.sim.workload.costs import (
    MB,
    SLOWSTART,
    TASK_VCORES,
    PhaseCost,
    Profile,
    map_task_cost,
    reduce_task_cost,
    task_group,
)
from amtuner.sim.workload.tracefile import WorkloadError, read_text

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


def max_reduces(nodes: int) -> int:
    """Hadoop's guidance for the reduce count (the MapReduce tutorial, ``mapreduce.job.reduces``):
    at most 0.95 x the cluster's reduce slots, so all reduces run in one wave; at least one. The
    count a user of a cluster of ``nodes`` nodes would have set for the largest shuffles."""
    return max(1, math.floor(0.95 * nodes * SWIM_REDUCE_SLOTS_PER_NODE))


SWIM_MAX_REDUCES = max_reduces(SWIM_NODES)
"""1,140 on the trace's 600 nodes; only the largest shuffles (up to 8 TB) reach it."""

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


def load_swim(path: str | Path, nodes: int = SWIM_NODES) -> Workload:
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

    On ``nodes`` other than the 600 it was sampled on (``swim:PATH@NODES``) the jobs keep their
    bytes, so a smaller cluster carries the same day's work, and only the reduce cap follows
    the cluster (`max_reduces`: 47 on 25 nodes), as its users would have set it. SWIM's own
    replayer (``GenerateReplayScript``) scales every byte count by the ratio of the cluster
    sizes instead, which keeps the load per node and so never lets the AM limit bind where the
    600-node day does not.
    """
    if nodes < 1:
        raise WorkloadError(f"swim:{path}@{nodes}: a cluster needs at least one node")
    cap = max_reduces(nodes)
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
        jobs.append(swim_job(fields[0], submit_s, input_b, shuffle_b, output_b, cap))
    if not jobs:
        raise WorkloadError(f"{path}: no jobs in SWIM trace")
    name = f"swim:{Path(path).name}" + (f"@{nodes}" if nodes != SWIM_NODES else "")
    return swim_workload(name, tuple(jobs), nodes)


def swim_job(
    job_id: str,
    submit_s: float,
    input_b: int,
    shuffle_b: int,
    output_b: int,
    reduce_cap: int = SWIM_MAX_REDUCES,
) -> JobSpec:
    """One job of a SWIM day from its three byte counts, by the rules `load_swim` lists; shared
    with the generated days (`amtuner.sim.workload.generated`) so both derive tasks alike."""
    p = SWIM_PROFILE
    n_maps = max(1, math.ceil(input_b / SWIM_BLOCK_BYTES))
    n_reduces = (
        min(math.ceil(shuffle_b / SWIM_SHUFFLE_PER_REDUCE_BYTES), reduce_cap)
        if shuffle_b > 0
        else 0
    )
    map_out_mb = (shuffle_b if n_reduces else 0) / MB / n_maps
    hdfs_out_mb = 0.0 if n_reduces else output_b / MB / n_maps
    cost = map_task_cost(p, input_b / MB / n_maps, map_out_mb, hdfs_out_mb)
    maps = (task_group("map", n_maps, p.map_memory_mb, cost, SWIM_NODE_DISK_MBPS),)
    reduces: tuple[TaskGroup, ...] = ()
    if n_reduces:
        cost = reduce_task_cost(p, shuffle_b / MB / n_reduces, output_b / MB / n_reduces)
        reduces = (task_group("reduce", n_reduces, p.reduce_memory_mb, cost, SWIM_NODE_DISK_MBPS),)
    return JobSpec(
        job_id=job_id,
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


def swim_workload(name: str, jobs: tuple[JobSpec, ...], nodes: int = SWIM_NODES) -> Workload:
    """SWIM's jobs on SWIM's cluster (600 nodes unless told), Hadoop 2.x NodeManager defaults,
    one queue."""
    return Workload(
        name=name,
        jobs=jobs,
        nodes=nodes,
        node_memory_mb=SWIM_NODE_MEMORY_MB,
        node_vcores=SWIM_NODE_VCORES,
        node_disk_mbps=SWIM_NODE_DISK_MBPS,
        queues=("root.default",),
    )


def _tsv_rows(path: str | Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of the non-blank lines of a TAB-separated file."""
    text = read_text(path)
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            yield lineno, line.split("\t")
