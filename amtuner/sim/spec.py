"""What a workload asks of the simulated cluster: jobs as plain values.

Workload readers (paper groups, SLS, SWIM) produce these; the simulation consumes them. Identical
tasks of a job are one `TaskGroup` with a count (seed 002's ScheduleUnit), never one object each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

TaskKind = Literal["map", "reduce"]
NO_USER = "default"
"""`JobSpec.user` of a job whose workload names no user: the simulator runs every such job as
this one user."""


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
    """The queue the app asks for (MapReduce's ``mapreduce.job.queuename``): a leaf's path or
    name; ``default`` names none, and a FairScheduler's placement rules decide where it runs
    (`amtuner.sim.placement`)."""
    maps: tuple[TaskGroup, ...]
    reduces: tuple[TaskGroup, ...] = ()
    user: str = NO_USER
    profile: str = ""
    """Name of the row of the job-profile table this job came from (``grep``, ``terasort`` …)."""
    am_memory_mb: int = 1536
    """yarn.app.mapreduce.am.resource.mb default; normalised to 2048 with min-alloc 1024."""
    am_vcores: int = 1
    am_startup_s: float = 5.0
    am_teardown_s: float = 2.0
    slowstart: float = 0.05
    """mapreduce.job.reduce.slowstart.completedmaps."""
    launched_by: str = ""
    """The ``job_id`` of the launcher whose AM submits this app once it runs and then waits for
    it to end (Oozie's ``LauncherAM`` runs an action's main class, which submits its child job
    and waits for it: Hive, Pig, Sqoop and Java actions); ``submit_s`` is then ignored. Empty:
    submitted at ``submit_s``."""
    runs: int = 1
    """How many times its AM runs its tasks (maps, then reduces), one run after another: a Tez
    session AM runs one DAG per query it is sent (``DAGAppMaster`` in session mode), a Spark
    driver in the AM (cluster mode: ``ApplicationMaster`` runs the user's class) one job per
    action. The app holds only its AM container between runs (idle containers go back:
    ``tez.am.container.idle.release-timeout-min.millis``, Spark's dynamic allocation)."""
    idle_s: float = 0.0
    """Before each run after the first, its AM works on its own for this long, holding its
    container and asking for none: a session waiting for its next query, a driver running code
    of its own between jobs."""
    linger_s: float = 0.0
    """After its last run its AM stays this long before it tears down: a Tez session's
    ``tez.session.am.dag.submit.timeout.secs`` past its last DAG; a long-lived service's life
    (a YARN service's ``ServiceMaster``, a Livy or Kyuubi engine), with no tasks at all."""


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
    """Leaf queues the jobs use; a default scheduler config gives each an equal share unless
    ``queue_weights`` says otherwise."""
    queue_weights: tuple[float, ...] = ()
    """Weight of each of ``queues``, in order (a FairScheduler ``<weight>``, a
    CapacityScheduler capacity in proportion); empty: equal shares."""


@dataclass(frozen=True, slots=True)
class Heartbeats:
    """When and how many containers the RM hands out: Hadoop 3.x defaults.

    A scheduler places containers on a node when that node heartbeats
    (``yarn.resourcemanager.nodemanagers.heartbeat-interval-ms``, 1 s), not whenever room
    appears; a container granted reaches its AM on the AM's next heartbeat (MapReduce's
    ``yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms``, 1 s), and a finished task's
    container is given back on the next one; an AM's asks reach the RM on its next heartbeat
    too (``AMRMClient.allocate`` carries them; MapReduce's ``RMContainerAllocator`` sends its
    asks with its heartbeat). ``node_s`` 0 is the old model: every container placed the
    instant it fits, and no AM latency.
    """

    node_s: float = 1.0
    am_s: float = 1.0
    per_node: int = 1
    """FairScheduler: containers per node heartbeat (``assignmultiple`` false: 1; 0: no cap)."""
    offswitch_per_node: int = 1
    """CapacityScheduler: off-switch containers per node heartbeat
    (``per-node-heartbeat.maximum-offswitch-assignments``, 3.x); 0: no cap."""
    next_beat: bool = True
    """What an AM decides on hearing of a task's end (the container given back, reduces that
    slow start now lets it ask for) reaches the RM with its next heartbeat, a beat later
    (AMRMClient queues releases and asks for the next ``allocate``)."""
    am_exit_on_node_beat: bool = True
    """The AM container's exit reaches the RM on its node's next heartbeat; until then the app
    is FINISHING and its AM container held (RMAppAttemptImpl: FINISHING to FINISHED on
    CONTAINER_FINISHED)."""
    cs_async_s: float = 0.005
    """CapacityScheduler: asynchronous scheduling, a pass every this many seconds over every
    node, not on node heartbeats, so no per-heartbeat off-switch cap holds containers back
    (``schedule-asynchronously.enable`` true and ``scheduling-interval-ms`` 5 by default in
    Hadoop 3.5.0: ``CapacitySchedulerConfiguration.DEFAULT_SCHEDULE_ASYNCHRONOUSLY_ENABLE``; its
    RM logs ``asynchronousScheduling=true, asyncScheduleInterval=5 ms`` at start). 0: placed on
    node heartbeats (``schedule-asynchronously.enable`` false)."""
    maps_off_switch: bool = False
    """MapReduce maps ask for their split's hosts, so the CapacityScheduler places them
    node-local, several a heartbeat; AMs and reduces ask for any host (off-switch). True where
    the load asks any host for maps too (the AM host of `amtuner bench real`)."""
    reduce_ramp: bool = False
    """MapReduce's AM asks for reduces ahead of its maps, as many as its headroom allows, and
    preempts them when its maps starve (`amtuner.sim.mrallocator`: the ``hadoop3-mr`` model).
    False: it asks for every reduce once slow start is past, served after its maps, as the AM
    host of `amtuner bench real` does (it asks for reduces once every map is placed). Not the
    default until it is checked against MapReduce's own AM on a real RM."""
    fs_reserve: bool = True
    """FairScheduler: an AM that fits no node reserves one (`amtuner.sim.fsreserve`), as
    Hadoop 2.8+ and 3.x do for containers of 2 GB and more."""


HADOOP_3 = Heartbeats()

IMMEDIATE = Heartbeats(
    node_s=0.0, am_s=0.0, per_node=0, offswitch_per_node=0, next_beat=False,
    am_exit_on_node_beat=False, cs_async_s=0.0, fs_reserve=False,
)
"""Every container placed the instant it fits: the simulator before heartbeats were modelled."""

HADOOP_3_SYNC = Heartbeats(cs_async_s=0.0)
"""Hadoop 3.x with a CapacityScheduler that places containers on node heartbeats only
(``schedule-asynchronously.enable`` false)."""

HADOOP_3_MR = Heartbeats(reduce_ramp=True)
"""Hadoop 3.x with MapReduce's reduce ramp-up, request priorities and reduce preemption."""

HADOOP_3_NO_RESERVE = Heartbeats(fs_reserve=False)
"""Hadoop 3.x with a FairScheduler that reserves no node: the simulator before reservations."""

HEARTBEATS = {
    "none": IMMEDIATE,
    "hadoop3": HADOOP_3,
    "hadoop3-sync": HADOOP_3_SYNC,
    "hadoop3-mr": HADOOP_3_MR,
    "hadoop3-no-reserve": HADOOP_3_NO_RESERVE,
}
"""The heartbeat models a command line can name (``--heartbeats``)."""

DEFAULT_HEARTBEATS = "hadoop3"
"""What every simulation runs unless told otherwise: Hadoop 3.x's heartbeats."""

HADOOP_VERSIONS = ("3", "2.8")
"""Scheduler semantics the simulator can follow: 3 (2.9 to 3.5: a FairScheduler checks an AM
against every resource, a zero fair share replaced by what is available) or 2.8 (2.7 and 2.8:
memory only)."""


PERIOD_S = 15.0
"""Default control period in simulated seconds: longer than a FairScheduler's reload delay
(5-15 s) and about one short job's life; `amtuner bench paper --periods` shows why."""
