"""Framework AMs that hold AM share beyond their tasks: sessions, drivers and services.

A MapReduce AM holds its container for its job's tasks and no longer; other frameworks' AMs do
not. Three shapes, each a batch submitted at t = 0 to root.default on the cluster of
`launchers` (where the CapacityScheduler's default 0.1 admits two 1 GB AMs):

* ``sessions:N`` — Tez sessions (``org.apache.tez.dag.app.DAGAppMaster`` in session mode, as Hive
  on Tez runs them): each AM runs `SESSION_DAGS` DAGs, one per query, idle `SESSION_GAP_S`
  between queries, and stays `SESSION_TIMEOUT_S` past its last DAG
  (``tez.session.am.dag.submit.timeout.secs``, 300 s by default; shorter here, so that a batch
  ends in minutes) holding its AM container all the while.
* ``drivers:N`` — Spark apps in cluster mode (``org.apache.spark.deploy.yarn.ApplicationMaster``
  runs the driver in the AM container): each driver computes on its own for `DRIVER_WORK_S`
  before each of its `DRIVER_JOBS` jobs asks for executors, its AM counting against the AM
  limit throughout.
* ``services:N`` — long-lived service AMs (a YARN service's
  ``org.apache.hadoop.yarn.service.ServiceMaster``, a Livy or Kyuubi engine): N AMs with no tasks
  that live `SERVICE_LIFE_S`, then N MapReduce jobs submitted a second later behind them. The
  services fill the AM limit first (a queue admits apps in the order they came:
  ``LeafQueue.activateApplications``), so a higher share admits the services still waiting
  before any job.

Each ends (the simulator's runs stop when every app has), so that a makespan compares values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from amtuner.sim.workload.launchers import NODE_MB, NODES
from amtuner.sim.workload.tracefile import WorkloadError

SESSION_DAGS = 3
SESSION_GAP_S = 6.0
SESSION_TIMEOUT_S = 10.0
DRIVER_JOBS = 2
DRIVER_WORK_S = 5.0
SERVICE_LIFE_S = 60.0


def _maps(count: int, seconds: float, task_mb: int) -> tuple[TaskGroup, ...]:
    return (TaskGroup("map", count, task_mb, 1, seconds, 0.0, 0.0),)


def _reduce(seconds: float, task_mb: int) -> tuple[TaskGroup, ...]:
    return (TaskGroup("reduce", 1, task_mb, 1, seconds, 0.0, 0.0),)


def sessions(
    count: int,
    *,
    dags: int = SESSION_DAGS,
    gap_s: float = SESSION_GAP_S,
    timeout_s: float = SESSION_TIMEOUT_S,
    am_mb: int = 1024,
    task_mb: int = 1024,
    maps: int = 2,
    map_s: float = 4.0,
    reduce_s: float = 2.0,
    am_startup_s: float = 1.0,
    am_teardown_s: float = 1.0,
    nodes: int = NODES,
    node_memory_mb: int = NODE_MB,
) -> Workload:
    """``count`` Tez sessions at t = 0, each ``dags`` DAGs of ``maps`` maps and one reduce."""
    _positive("sessions", count)
    jobs = tuple(
        JobSpec(
            job_id=f"session-{i:02d}", submit_s=0.0, queue="root.default", profile="session",
            am_memory_mb=am_mb, am_startup_s=am_startup_s, am_teardown_s=am_teardown_s,
            runs=dags, idle_s=gap_s, linger_s=timeout_s, maps=_maps(maps, map_s, task_mb),
            reduces=_reduce(reduce_s, task_mb),
        )
        for i in range(count)
    )
    return Workload(f"sessions:{count}", jobs, nodes=nodes, node_memory_mb=node_memory_mb)


def drivers(
    count: int,
    *,
    jobs: int = DRIVER_JOBS,
    work_s: float = DRIVER_WORK_S,
    am_mb: int = 1024,
    executor_mb: int = 2048,
    executors: int = 2,
    executor_s: float = 6.0,
    am_startup_s: float = 1.0,
    am_teardown_s: float = 1.0,
    nodes: int = NODES,
    node_memory_mb: int = NODE_MB,
) -> Workload:
    """``count`` Spark drivers at t = 0, each computing ``work_s`` before each of its ``jobs``
    jobs of ``executors`` executors (no reduce: a Spark job's stages run inside them)."""
    _positive("drivers", count)
    specs = tuple(
        JobSpec(
            job_id=f"driver-{i:02d}", submit_s=0.0, queue="root.default", profile="driver",
            am_memory_mb=am_mb, am_startup_s=am_startup_s + work_s,
            am_teardown_s=am_teardown_s, runs=jobs, idle_s=work_s,
            maps=_maps(executors, executor_s, executor_mb),
        )
        for i in range(count)
    )
    return Workload(f"drivers:{count}", specs, nodes=nodes, node_memory_mb=node_memory_mb)


def services(
    count: int,
    *,
    life_s: float = SERVICE_LIFE_S,
    jobs: int = -1,
    am_mb: int = 1024,
    task_mb: int = 1024,
    maps: int = 2,
    map_s: float = 4.0,
    reduce_s: float = 2.0,
    am_startup_s: float = 1.0,
    am_teardown_s: float = 1.0,
    nodes: int = NODES,
    node_memory_mb: int = NODE_MB,
) -> Workload:
    """``count`` services at t = 0, each an AM alone for ``life_s``, and ``jobs`` (-1: as
    many) MapReduce jobs of ``maps`` maps and one reduce at t = 1."""
    _positive("services", count)
    base = JobSpec(
        job_id="", submit_s=0.0, queue="root.default", maps=(), am_memory_mb=am_mb,
        am_startup_s=am_startup_s, am_teardown_s=am_teardown_s,
    )  # fmt: skip
    specs = [
        replace(base, job_id=f"service-{i:02d}", profile="service", linger_s=life_s)
        for i in range(count)
    ]
    specs += [
        replace(
            base, job_id=f"job-{i:02d}", submit_s=1.0, profile="job",
            maps=_maps(maps, map_s, task_mb), reduces=_reduce(reduce_s, task_mb),
        )
        for i in range(count if jobs < 0 else jobs)
    ]
    return Workload(f"services:{count}", tuple(specs), nodes=nodes, node_memory_mb=node_memory_mb)


def _positive(kind: str, count: int) -> None:
    if count < 1:
        raise WorkloadError(f"{kind}: {count} is not a positive count")


def load_framework(kind: str, spec: str) -> Workload:
    """``sessions:N``, ``drivers:N`` or ``services:N``."""
    if not spec.isdigit():
        raise WorkloadError(f"{kind}:{spec}: expected a count of apps")
    return FRAMEWORKS[kind](int(spec))


FRAMEWORKS: dict[str, Callable[[int], Workload]] = {
    "sessions": sessions, "drivers": drivers, "services": services,
}
"""The workload kinds of this module, by their spec prefix."""
