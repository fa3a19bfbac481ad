"""What a workload asks of the simulated cluster: jobs as plain values.

Workload readers (paper groups, SLS, SWIM) produce these; the simulation consumes them. Identical
tasks of a job are one `TaskGroup` with a count (seed 002's ScheduleUnit), never one object each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TaskKind = Literal["map", "reduce"]


@dataclass(frozen=True, slots=True)
class TaskGroup:
    kind: TaskKind
    count: int
    memory_mb: int
    """Requested container memory, before the scheduler normalises it up."""
    vcores: int
    duration_s: float
    """Run time of one task alone on an idle node."""
    cpu_cores: float
    """CPU demand while running at full speed, in cores."""
    disk_mbps: float
    """Disk demand while running at full speed, in MB/s; node sharing slows tasks that exceed it."""


@dataclass(frozen=True, slots=True)
class JobSpec:
    job_id: str
    submit_s: float
    queue: str
    """Leaf queue, full path (``root.default``)."""
    maps: tuple[TaskGroup, ...]
    reduces: tuple[TaskGroup, ...] = ()
    user: str = "default"
    profile: str = ""
    """Name of the row of the job-profile table this job came from (``grep``, ``terasort`` …)."""
    am_memory_mb: int = 1536
    """yarn.app.mapreduce.am.resource.mb default; normalised to 2048 with min-alloc 1024."""
    am_vcores: int = 1
    am_startup_s: float = 5.0
    am_teardown_s: float = 2.0
    slowstart: float = 0.05
    """mapreduce.job.reduce.slowstart.completedmaps."""


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    jobs: tuple[JobSpec, ...]
    nodes: int
    """Default cluster size for this workload (overridable on the command line)."""
    node_memory_mb: int = 8192
    node_vcores: int = 8
    node_disk_mbps: float = 100.0
    queues: tuple[str, ...] = ("root.default",)
    """Leaf queues the jobs use; a default scheduler config gives each an equal share."""
