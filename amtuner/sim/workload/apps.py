"""App traces recorded from an RM (`amtuner record`, format in `amtuner.apptrace`) as a workload.

The apps API reports each app whole: when it was submitted, when its AM started and when it
finished, and the memory it held over its life (``memorySeconds``). It says nothing of its tasks,
so they are estimated, per app, as one wave that kept the app's average width for the whole run:

* submit time: ``submit_ms`` from the trace's first submission;
* the AM: ``am_memory_mb``, else MapReduce's default 1536 MB (the apps API does not report it),
  1 vcore, the profile table's start-up and tear-down;
* run time R = finish - launch; task time T = R - AM start-up - tear-down, at least 1 s;
* task memory-seconds = ``memory_mb_s`` - the AM's allocation (rounded up to 1024 MB, the
  default ``yarn.scheduler.minimum-allocation-mb``) x R;
* tasks = max(1, round(task memory-seconds / (1024 MB x T))) maps of 1024 MB, 1 vcore, T s each,
  with no CPU or disk demand (replayed as recorded, as SLS replays its traces), no reduces; an
  app without ``memory_mb_s`` gets one;
* apps whose AM never started (``launch_ms`` 0: killed or failed while ACCEPTED) did no work and
  are left out; every other app, Spark and Tez too, is replayed as this MapReduce-shaped job.

Where the MapReduce JobHistory server told the recorder an app's tasks (trace version 2:
``maps`` of at least 1, `amtuner.jobhistory`), they replace the estimate: ``maps`` maps of
``map_ms`` each and ``reduces`` reduces of ``shuffle_ms + merge_ms + reduce_ms`` each (at least
1 s), the reduces asked for once the maps are done (slow start 1, as SLS replays its traces:
the recorded shuffle time already holds a reduce's wait for the maps). Their size is the job
configuration's (trace version 3: ``map_mb``, ``map_vcores``, ``reduce_mb``, ``reduce_vcores``),
else 1024 MB and 1 vcore; the estimate's maps take ``map_mb`` and ``map_vcores`` too where the
trace has them.

Where the timeline server told the recorder an app's task containers instead (trace version 3:
``tasks`` and ``task_ms``, `amtuner.timeline`), they replace the estimate for any framework:
``tasks`` maps of ``task_mb`` (else 1024 MB) and ``task_vcores`` (else 1) for ``task_ms`` each
(at least 1 s), asked for together as the one-wave estimate's are, and the AM held past them
for what is left of the recorded run time R (R less its start-up, its tear-down and the tasks'
time, if more than 0): a Tez session or a Spark driver holds its AM between and after its jobs,
which is what the AM share counts. ``tasks`` 0 (an app that ran in its AM alone) is its AM
alone, held so for R.

So what is estimated: the AM's size where it was not seen, the tasks' count, size and length
(only their product, the memory-seconds, is measured; with the JobHistory figures, nothing but
their CPU and disk demand; with the timeline's, their mean stands for each), and when they ran:
side by side, or, for a MapReduce job, its reduces after its maps. A replay is so a model of the
period's load and its arrivals, not of its apps' internals.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from amtuner.apptrace import AppRecord, TraceError, read_trace
from amtuner.model import queue_path
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from amtuner.sim.workload.costs import (
    AM_MEMORY_MB,
    AM_STARTUP_S,
    AM_TEARDOWN_S,
    MAP_MEMORY_MB,
    PAPER_NODE_DISK_MBPS,
    TASK_VCORES,
)
from amtuner.sim.workload.tracefile import WorkloadError

MIN_ALLOCATION_MB = 1024
"""yarn.scheduler.minimum-allocation-mb default: what the RM rounds the AM's ask up to."""


def load_apps(
    path: str | Path,
    *,
    nodes: int | None = None,
    node_memory_mb: int | None = None,
    node_vcores: int | None = None,
) -> Workload:
    """The recorded apps of ``path`` on the cluster given, else on the one its header names
    (nodes, node memory and vcores as the recorder saw them); no node count from either is
    refused with the fix."""
    try:
        header, records = read_trace(path)
    except TraceError as e:
        raise WorkloadError(str(e)) from None
    jobs = apps_jobs(records)
    if not jobs:
        raise WorkloadError(f"{path}: no app whose AM started: nothing to replay")
    shape = {
        key: given if given is not None else header.get(key)
        for key, given in (
            ("nodes", nodes), ("node_memory_mb", node_memory_mb), ("node_vcores", node_vcores)
        )
    }  # fmt: skip
    bad = [k for k, v in shape.items() if v is not None and (not isinstance(v, int) or v < 1)]
    if bad:
        raise WorkloadError(f"{path}: {', '.join(bad)} must be a whole number >= 1")
    if shape["nodes"] is None:
        raise WorkloadError(
            f"{path}: the header names no cluster (nodes): give the cluster's shape "
            "(amtuner advise --nodes, --node-memory-mb)"
        )
    workload = Workload(
        name=f"trace:{Path(path).name}",
        jobs=jobs,
        nodes=shape["nodes"],
        node_disk_mbps=PAPER_NODE_DISK_MBPS,
        queues=tuple(dict.fromkeys(queue_path(j.queue) for j in jobs)),
    )
    if shape["node_memory_mb"] is not None:
        workload = replace(workload, node_memory_mb=shape["node_memory_mb"])
    if shape["node_vcores"] is not None:
        workload = replace(workload, node_vcores=shape["node_vcores"])
    return workload


def apps_jobs(records: list[AppRecord]) -> tuple[JobSpec, ...]:
    """The replayable apps as jobs, by the rules of this module, in submission order."""
    ran = sorted((r for r in records if r.launch_ms > 0), key=lambda r: (r.submit_ms, r.id))
    if not ran:
        return ()
    t0 = ran[0].submit_ms
    return tuple(app_job(r, t0) for r in ran)


def app_job(r: AppRecord, t0_ms: int) -> JobSpec:
    am_mb = r.am_memory_mb or AM_MEMORY_MB
    recorded = recorded_tasks(r)
    linger_s = 0.0
    if recorded is not None:
        maps, reduces = recorded
    elif (told := timeline_tasks(r)) is not None:
        maps, reduces = told, ()
        # The AM holds its container for the run recorded, past its tasks if it outlived them.
        tasks_s = max((g.duration_s for g in maps), default=0.0)
        linger_s = max(0.0, _run_s(r) - AM_STARTUP_S - AM_TEARDOWN_S - tasks_s)
    else:
        maps, reduces = estimated_maps(r, am_mb), ()
    job = JobSpec(
        job_id=r.id,
        submit_s=max(0.0, (r.submit_ms - t0_ms) / 1000),
        queue=r.queue,
        maps=maps,
        reduces=reduces,
        user=r.user,
        profile="trace",
        am_memory_mb=am_mb,
        am_vcores=TASK_VCORES,
        am_startup_s=AM_STARTUP_S,
        am_teardown_s=AM_TEARDOWN_S,
        linger_s=linger_s,
    )
    return replace(job, slowstart=1.0) if reduces else job


def _run_s(r: AppRecord) -> float:
    return max(0.0, (r.finish_ms - r.launch_ms) / 1000)


def estimated_maps(r: AppRecord, am_mb: int) -> tuple[TaskGroup, ...]:
    """One wave of maps that kept the app's average width (the module's estimate)."""
    run_s = _run_s(r)
    task_s = max(1.0, run_s - AM_STARTUP_S - AM_TEARDOWN_S)
    map_mb = r.map_mb or MAP_MEMORY_MB
    tasks = 1
    if r.memory_mb_s is not None:
        am_alloc_mb = math.ceil(am_mb / MIN_ALLOCATION_MB) * MIN_ALLOCATION_MB
        task_mb_s = r.memory_mb_s - am_alloc_mb * run_s
        tasks = max(1, round(task_mb_s / (map_mb * task_s)))
    return (TaskGroup("map", tasks, map_mb, r.map_vcores or TASK_VCORES, task_s, 0.0, 0.0),)


def recorded_tasks(r: AppRecord) -> tuple[tuple[TaskGroup, ...], tuple[TaskGroup, ...]] | None:
    """The maps and reduces the JobHistory server reported, None where it did not (or told
    of no map: an app with nothing for the replay to run but its estimate)."""
    if r.maps is None or r.maps < 1 or r.map_ms is None:
        return None
    map_mb, map_vcores = r.map_mb or MAP_MEMORY_MB, r.map_vcores or TASK_VCORES
    maps = (TaskGroup("map", r.maps, map_mb, map_vcores, _s(r.map_ms), 0.0, 0.0),)
    phases = (r.shuffle_ms, r.merge_ms, r.reduce_ms)
    if not r.reduces or any(p is None for p in phases):
        return maps, ()
    reduce_s = _s(sum(p for p in phases if p is not None))
    reduce_mb, reduce_vcores = r.reduce_mb or MAP_MEMORY_MB, r.reduce_vcores or TASK_VCORES
    reduces = (TaskGroup("reduce", r.reduces, reduce_mb, reduce_vcores, reduce_s, 0.0, 0.0),)
    return maps, reduces


def timeline_tasks(r: AppRecord) -> tuple[TaskGroup, ...] | None:
    """The task containers the timeline server reported, as maps (none for ``tasks`` 0); None
    where it did not report them."""
    if r.tasks == 0:
        return ()
    if not r.tasks or r.task_ms is None:
        return None
    mb, vcores = r.task_mb or MAP_MEMORY_MB, r.task_vcores or TASK_VCORES
    return (TaskGroup("map", r.tasks, mb, vcores, _s(r.task_ms), 0.0, 0.0),)


def _s(ms: int) -> float:
    return max(1.0, ms / 1000)
