"""Hadoop Scheduler Load Simulator (SLS) JSON job traces, replayed as SLSRunner reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amtuner.model import queue_path
from amtuner.sim.spec import NO_USER, JobSpec, TaskGroup, TaskKind, Workload
from amtuner.sim.workload.costs import AM_STARTUP_S, AM_TEARDOWN_S, PAPER_NODE_DISK_MBPS
from amtuner.sim.workload.tracefile import WorkloadError, integer, json_objects, number

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
    → the queue the job asks for, as SLS submits it (``default`` names none: a FairScheduler's
    placement rules decide, `amtuner.sim.placement`), ``job.user``, ``job.count`` copies of the job,
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
    Rumen job histories, SYNTH descriptions (`synth:`) and topology files are refused with the
    reason.
    """
    jobs: list[JobSpec] = []
    queues: dict[str, None] = {}
    hosts: set[str] = set()
    header_nodes: int | None = None
    for lineno, obj in json_objects(path):
        where = f"{path}:{lineno}"
        if not isinstance(obj, dict):
            raise WorkloadError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        if "job.tasks" in obj:
            for job in _sls_jobs(obj, where, len(jobs), hosts):
                jobs.append(job)
                queues.setdefault(queue_path(job.queue))
        elif "num.nodes" in obj:
            header_nodes = integer(obj, "num.nodes", None, where, minimum=1)
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
        return "an SLS SYNTH workload description, not an SLS job trace (load it as synth:PATH)"
    if "rack" in obj or "nodes" in obj:
        return "an SLS topology (nodes) file, not a job trace"
    if "job.start.ms" in obj or "job.queue.name" in obj:
        return 'SLS job without job.tasks ("No task for the job!")'
    return f"not an SLS job: no job.tasks (keys: {', '.join(sorted(obj)[:6])})"


def _sls_jobs(obj: dict[str, Any], where: str, first_index: int, hosts: set[str]) -> list[JobSpec]:
    am_type = obj.get("yarn.sls.am.type", obj.get("am.type", "mapreduce"))
    if am_type != "mapreduce":
        raise WorkloadError(f"{where}: AM type {am_type!r} not supported (only mapreduce)")
    start_ms = number(obj, "job.start.ms", None, where)
    if start_ms < 0:
        raise WorkloadError(f"{where}: job.start.ms must be >= 0")
    queue = obj.get("job.queue.name")
    if not isinstance(queue, str) or not queue:
        raise WorkloadError(f"{where}: job.queue.name must be a non-empty string")
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
            integer(task, "container.memory-mb", SLS_CONTAINER_MEMORY_MB, twhere, minimum=1),
            integer(task, "container.vcores", SLS_CONTAINER_VCORES, twhere, minimum=0),
            _sls_duration_s(task, twhere),
        )
        counts[key] = counts.get(key, 0) + integer(task, "count", 1, twhere, minimum=1)
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
    job_count = integer(obj, "job.count", 1, where, minimum=1)
    job_id = obj.get("job.id")
    user = obj.get("job.user", NO_USER)
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
                am_memory_mb=integer(obj, "am.memory-mb", SLS_AM_MEMORY_MB, where, minimum=1),
                am_vcores=integer(obj, "am.vcores", SLS_AM_VCORES, where, minimum=0),
                am_startup_s=AM_STARTUP_S,
                am_teardown_s=AM_TEARDOWN_S,
                slowstart=SLS_SLOWSTART,
            )
        )
    return out


def _sls_duration_s(task: dict[str, Any], where: str) -> float:
    if "container.duration.ms" in task:
        ms = number(task, "container.duration.ms", None, where)
    elif "duration.ms" in task:
        ms = number(task, "duration.ms", None, where)
    elif "container.start.ms" in task and "container.end.ms" in task:
        ms = number(task, "container.end.ms", None, where) - number(
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
