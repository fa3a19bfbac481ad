"""The paper's job groups and the workloads built from them: phases, two queues, Poisson arrivals.

Same cost model and cluster as the paper groups (`costs`); beyond the paper only the job shapes
and the arrival pattern change.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from amtuner.sim.spec import JobSpec, Workload
from amtuner.sim.workload.costs import (
    PAPER_NODE_DISK_MBPS,
    PAPER_NODE_MEMORY_MB,
    PAPER_NODE_VCORES,
    PAPER_NODES,
    PROFILES,
    SLOWSTART,
    TASK_VCORES,
    Profile,
    nominal_tasks,
)
from amtuner.sim.workload.tracefile import WorkloadError

PAPER_GROUPS: tuple[str, ...] = ("grep", "terasort", "wordcount", "mixed")
PAPER_JOBS_PER_GROUP = 30
PAPER_JOBS_PER_NODE = PAPER_JOBS_PER_GROUP / PAPER_NODES
"""7.5: a paper group on a larger cluster keeps the paper's 30 jobs per 4 workers."""
PAPER_JITTER = 0.05
"""Each job's task durations are scaled by a factor drawn uniformly from 1 ± this, per seed, so
that 30 identical jobs do not finish in lock-step; demands (rates) are unchanged."""


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
        # (1024 MB) at a time, so the cluster is busiest when about 2/3 of it holds AMs.
        "small": Phase("small", "120 one-map grep jobs", "grep", 120, 20.0, 1, 1),
        # 32 maps of 20 MB and 4 reduces per job: one job alone can fill the cluster, so every
        # AM beyond a few only holds memory the maps could use.
        "large": Phase("large", "16 terasort jobs of 640 MB", "terasort", 16, 640.0, 32, 4),
        # The paper's mixed group.
        "mixed": Phase("mixed", "30 paper jobs, grep/terasort/wordcount", "mixed", 30, 100.0, 5, 1),
    }
)
"""The phases of the ``phase:`` and ``twoqueue:`` workloads, each wanting a different A: each
phase's best fixed value alone is in docs/policies.md, "The phases" (tests/bench/test_suite.py
checks them)."""
PHASE_SPACING_S = 150.0
"""Phase k of a ``phase:`` workload is submitted at k x 150 s: a little less than the small and
large phases take at their best A, so each phase arrives as the previous one drains and a value
that is wrong for a phase delays the next. Wider spacing leaves the cluster idle between phases
(then only the last phase decides the makespan); narrower spacing blends phases into one mixed
backlog. At this spacing a value set per phase beats every fixed one (measured:
docs/policies.md, "The phases")."""
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
