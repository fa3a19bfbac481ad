"""Workloads for the simulated cluster: the paper's job groups and SLS, rumen and SWIM traces.

`load_workload(spec)` is the single entry point; the spec prefix picks the reader:

* ``paper:grep|terasort|wordcount|mixed`` — the paper's experiment (30 jobs, 5 maps + 1 reduce
  over 100 MB each, all submitted at t=0, 4 worker nodes), built from `PROFILES`;
  ``paper:GROUP@NODES`` is the same group on a larger cluster with the job count scaled with it
  (see `load_paper`).
* ``phase:small,large,mixed`` — batches of different job kinds one after another, so that no
  single AM share suits every phase (see `load_phases`).
* ``twoqueue:small,large`` — two phases' jobs at once, one per queue (see `load_two_queues`).
* ``poisson:GROUP`` — paper jobs arriving one by one at random instead of in one batch
  (see `load_poisson`); ``stream:GROUP`` the same for half an hour (`STREAM_JOBS`).
* ``sls:PATH`` — a Hadoop Scheduler Load Simulator JSON job trace (see `load_sls`).
* ``synth:PATH[@seed=N,jobs=N,nodes=N]`` — the jobs an SLS synthetic (SYNTH) description draws,
  as SLS's `SynthTraceJobProducer` draws them (see `synth`).
* ``swim:PATH[@NODES]`` — a SWIM day trace of Facebook jobs, on its 600 nodes or on NODES
  (see `load_swim`).
* ``rumen:PATH`` — a rumen job-history trace, read the way SLS's RUMEN trace type does
  (see `load_rumen`).
* ``day:JOBS,MAPS[,SEED]`` — a generated day of SWIM-like jobs with a heavy-tailed size mix and
  exactly MAPS maps, e.g. ``day:25000,8000000`` for the FB-2010 class (see `load_day`).
* ``trace:PATH`` — apps recorded from an RM by `amtuner record` (see `apps`).
* ``launchers:N`` — N workflow launchers at once, each an AM that submits a child job and waits
  for it (see `launchers`): the launcher deadlock at a CapacityScheduler's default share.
* ``sessions:N``, ``drivers:N``, ``services:N`` — N Tez sessions, Spark drivers or long-lived
  service AMs at once, AMs that hold AM share beyond their tasks (see `frameworks`).
* ``zoo:SEED`` — a whole case drawn from SEED: cluster, weighted queues, MapReduce, Spark and
  Tez jobs, arrivals (see `zoo`; `zoo_case` also names the case's scheduler).

Modules:

* `costs` — the paper's cluster, Hadoop's container defaults, the job-profile table
  (`PROFILES`) and the cost model of one task (`task_shape`);
* `paper` — the paper groups and the workloads built from them (phases, two queues,
  Poisson arrivals);
* `swim`, `sls`, `rumen` — the trace readers; `synth` — SLS's synthetic workloads; `apps` —
  `amtuner record`'s app traces;
* `generated` — days drawn at the size of traces that are not public;
* `launchers` — Oozie-style launchers and their children;
* `frameworks` — Tez sessions, Spark drivers and services;
* `zoo` — whole cases (cluster, queues, jobs, arrivals, scheduler) drawn from a seed;
* `tracefile` — `WorkloadError` and the file and field readers the traces share.
"""

from __future__ import annotations

from collections.abc import Callable

from amtuner.sim.spec import Workload
from amtuner.sim.workload.apps import load_apps
from amtuner.sim.workload.costs import (
    PROFILES,
    PhaseCost,
    Profile,
    nominal_tasks,
    profile_table,
    task_shape,
)
from amtuner.sim.workload.frameworks import FRAMEWORKS, load_framework
from amtuner.sim.workload.generated import load_day
from amtuner.sim.workload.launchers import load_launchers
from amtuner.sim.workload.paper import (
    PAPER_GROUPS,
    PHASES,
    STREAM_JOBS,
    STREAM_MEAN_GAP_S,
    Phase,
    load_paper,
    load_phases,
    load_poisson,
    load_two_queues,
)
from amtuner.sim.workload.rumen import load_rumen
from amtuner.sim.workload.sls import load_sls
from amtuner.sim.workload.swim import load_swim
from amtuner.sim.workload.synth import load_synth
from amtuner.sim.workload.tracefile import WorkloadError
from amtuner.sim.workload.zoo import ZooCase, load_zoo, zoo_case

__all__ = [
    "PAPER_GROUPS",
    "PHASES",
    "PROFILES",
    "Phase",
    "PhaseCost",
    "Profile",
    "WorkloadError",
    "ZooCase",
    "describe",
    "load_apps",
    "load_day",
    "load_launchers",
    "load_paper",
    "load_phases",
    "load_poisson",
    "load_rumen",
    "load_sls",
    "load_swim",
    "load_synth",
    "load_two_queues",
    "load_workload",
    "load_zoo",
    "nominal_tasks",
    "profile_table",
    "task_shape",
    "zoo_case",
]


_READERS: dict[str, Callable[[str], Workload]] = {
    "sls": load_sls,
    "synth": load_synth,
    "rumen": load_rumen,
    "day": load_day,
    "trace": load_apps,
    "launchers": load_launchers,
}
"""The kinds whose spec is the reader's one argument."""


def load_workload(spec: str, *, seed: int = 0) -> Workload:
    """The workload named by ``paper:GROUP[@NODES]``, ``phase:PHASES``, ``twoqueue:A,B``,
    ``poisson:GROUP``, ``stream:GROUP``, ``sls:PATH``, ``synth:PATH[@KEY=N,…]``,
    ``swim:PATH[@NODES]``, ``rumen:PATH``, ``day:JOBS,MAPS[,SEED]``, ``trace:PATH``,
    ``launchers:N``, ``sessions:N``, ``drivers:N``, ``services:N`` or ``zoo:SEED``."""
    kinds = (
        "paper, phase, twoqueue, poisson, stream, sls, synth, swim, rumen, day, trace, "
        "launchers, sessions, drivers, services or zoo"
    )
    prefix, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise WorkloadError(
            f"workload spec {spec!r}: expected paper:GROUP[@NODES], phase:PHASES, twoqueue:A,B, "
            "poisson:GROUP, stream:GROUP, sls:PATH, synth:PATH[@seed=N,jobs=N,nodes=N], "
            "swim:PATH[@NODES], rumen:PATH, day:JOBS,MAPS[,SEED], trace:PATH, launchers:N, "
            "sessions:N, drivers:N, services:N or zoo:SEED"
        )
    if prefix == "paper":
        group, at, nodes = rest.partition("@")
        if not at:
            return load_paper(group, seed=seed)
        if not nodes.isdigit():
            raise WorkloadError(f"workload spec {spec!r}: @{nodes} is not a node count")
        return load_paper(group, seed=seed, nodes=int(nodes))
    if prefix == "phase":
        return load_phases(rest, seed=seed)
    if prefix == "twoqueue":
        return load_two_queues(rest, seed=seed)
    if prefix == "poisson":
        return load_poisson(rest, seed=seed)
    if prefix == "stream":
        return load_poisson(
            rest, seed=seed, jobs=STREAM_JOBS, mean_gap_s=STREAM_MEAN_GAP_S, kind="stream"
        )
    if prefix in _READERS:
        return _READERS[prefix](rest)
    if prefix in FRAMEWORKS:
        return load_framework(prefix, rest)
    if prefix == "swim":
        path, at, nodes = rest.rpartition("@")
        if not at or not nodes.isdigit():
            return load_swim(rest)
        return load_swim(path, int(nodes))
    if prefix == "zoo":
        return load_zoo(rest, seed=seed)
    raise WorkloadError(f"workload spec {spec!r}: unknown kind {prefix!r}; expected {kinds}")


def describe(workload: Workload) -> str:
    """One-paragraph summary for CLIs: size of the cluster and of the work it is asked to do."""
    maps = sum(g.count for j in workload.jobs for g in j.maps)
    reduces = sum(g.count for j in workload.jobs for g in j.reduces)
    task_s = sum(g.count * g.duration_s for j in workload.jobs for g in (*j.maps, *j.reduces))
    last = max((j.submit_s for j in workload.jobs), default=0.0)
    return (
        f"{workload.name}: {len(workload.jobs):,} jobs, {maps:,} maps + {reduces:,} reduces, "
        f"{task_s:,.0f} task container-seconds (idle-node durations), "
        f"submissions over {last:,.0f} s, queues {', '.join(workload.queues)}; "
        f"cluster {workload.nodes} nodes x {workload.node_memory_mb} MB / "
        f"{workload.node_vcores} vcores / {workload.node_disk_mbps:g} MB/s disk"
    )
