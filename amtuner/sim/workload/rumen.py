"""Rumen job-history traces, read the way SLS's RUMEN trace type does."""

from __future__ import annotations

from pathlib import Path

from amtuner.model import queue_path
from amtuner.sim.spec import NO_USER, JobSpec, TaskGroup, TaskKind, Workload
from amtuner.sim.workload.costs import AM_STARTUP_S, AM_TEARDOWN_S, PAPER_NODE_DISK_MBPS
from amtuner.sim.workload.sls import (
    SLS_AM_MEMORY_MB,
    SLS_AM_VCORES,
    SLS_CONTAINER_MEMORY_MB,
    SLS_CONTAINER_VCORES,
    SLS_NODE_MEMORY_MB,
    SLS_NODE_VCORES,
    SLS_SLOWSTART,
)
from amtuner.sim.workload.tracefile import WorkloadError, integer, json_objects, number


def load_rumen(path: str | Path) -> Workload:
    """A rumen job-history trace (concatenated JSON jobs), read as SLS's RUMEN trace type does.

    Per job (yarn-facts §6.1): submit time = ``submitTime`` minus the first job's ``submitTime``;
    ``queue`` (asked for, as for `load_sls`) and ``user``; one task per entry of ``mapTasks`` and
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
    for lineno, obj in json_objects(path):
        where = f"{path}:{lineno}"
        if not isinstance(obj, dict) or "mapTasks" not in obj:
            raise WorkloadError(f"{where}: not a rumen job (no mapTasks)")
        submit_ms = number(obj, "submitTime", None, where)
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
            memory_mb = integer(props, mem_key, SLS_CONTAINER_MEMORY_MB, where, minimum=1)
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
                ms = number(last, "finishTime", None, twhere) - number(
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
        queues.setdefault(queue_path(queue))
        user = obj.get("user")
        jobs.append(
            JobSpec(
                job_id=str(obj.get("jobID") or f"job_{len(jobs) + 1}"),
                submit_s=(submit_ms - baseline_ms) / 1000.0,
                queue=queue,
                maps=groups["map"],
                reduces=groups["reduce"],
                user=user if isinstance(user, str) and user else NO_USER,
                profile="rumen",
                am_memory_mb=integer(
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
