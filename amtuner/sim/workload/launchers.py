"""Workflow launchers: one AM each that submits a child job and waits for it (``launchers:N``).

Oozie runs each Hive, Pig, Sqoop or Java action through a launcher: a YARN app whose AM
(``org.apache.oozie.action.hadoop.LauncherAM``, Oozie 5) runs the action's main class, which
submits the real job and waits for it to end. The launcher's AM holds AM share all that time, in
the queue its child is submitted to unless an operator gives launchers a queue of their own
(``oozie.launcher.queue``). When many launchers arrive at once their AMs fill the queue's AM
limit, their children's AMs wait behind the same limit, and nothing moves: the launcher
deadlock. A higher AM share lets the children in.
"""

from __future__ import annotations

from dataclasses import replace

from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from amtuner.sim.workload.tracefile import WorkloadError

NODES = 2
NODE_MB = 8192
"""Two 8 GB nodes: at the CapacityScheduler's default 0.1 the AM limit holds two 1 GB AMs, so
three launchers deadlock it."""


def launchers(
    count: int,
    *,
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
    """``count`` launchers submitted at t = 0 to root.default, each with one child (``maps``
    maps and one reduce, AMs of ``am_mb`` for both) submitted to the same queue."""
    if count < 1:
        raise WorkloadError(f"launchers: {count} is not a positive count")
    jobs: list[JobSpec] = []
    for i in range(count):
        launcher = f"launcher-{i:02d}"
        base = JobSpec(
            job_id=launcher, submit_s=0.0, queue="root.default", maps=(), profile="launcher",
            am_memory_mb=am_mb, am_startup_s=am_startup_s, am_teardown_s=am_teardown_s,
        )  # fmt: skip
        child = replace(
            base, job_id=f"child-{i:02d}", profile="child", launched_by=launcher,
            maps=(TaskGroup("map", maps, task_mb, 1, map_s, 0.0, 0.0),),
            reduces=(TaskGroup("reduce", 1, task_mb, 1, reduce_s, 0.0, 0.0),),
        )  # fmt: skip
        jobs += [base, child]
    return Workload(f"launchers:{count}", tuple(jobs), nodes=nodes, node_memory_mb=node_memory_mb)


def load_launchers(spec: str) -> Workload:
    """``launchers:N``: `launchers` of N."""
    if not spec.isdigit():
        raise WorkloadError(f"launchers:{spec}: expected a count of launchers")
    return launchers(int(spec))
