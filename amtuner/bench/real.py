"""`amtuner bench real`: one batch on Hadoop's own ResourceManager and on the simulator.

The batch is the paper's experiment scaled to one 2-core machine: 16 jobs of three sizes
submitted at once, AMs of two task units (2 GB beside 1 GB tasks, as the paper's 1536 MB AM
normalised to 2048), task times of seconds. Each (scheduler, policy) runs on a fresh real
cluster (`amtuner.realyarn`: MiniYARNCluster, its AMs played by the launcher's AM host), then
the same jobs on the same cluster shape run through the simulator twice, each the mean of 10
seeds (`run_sim`): with Hadoop's heartbeats (containers placed on node heartbeats or the
CapacityScheduler's asynchronous passes, AMs that learn of them on their own heartbeat, maps
asking for any host as the AM host's do) and with containers placed at once (the simulator
before heartbeats were modelled). The differences are the point: they are what the simulator
does not yet model.

A controller runs as the daemon does: `amtuner run` against the real RM (the CapacityScheduler
reloaded by Hadoop's RMAdminCLI, the FairScheduler by its own 10 s poll, as in the simulator),
its first cycle right after the batch is submitted, as the paper's protocol (and `bench paper`)
starts it with the batch.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from statistics import mean, mode
from typing import Any

import requests
import yaml

from amtuner.bench import REAL_RUNS, SUITE_SEEDS, processes
from amtuner.bench.common import DEFAULT_A, fmt, mean_of, simulate
from amtuner.model import SchedulerKind
from amtuner.realyarn import ClusterSpec, RealRM, apps
from amtuner.realyarn.build import Build, ensure_built
from amtuner.sim.control import UNGUARDED
from amtuner.sim.sched_config import with_capacity_properties
from amtuner.sim.simulation import SimResult, most_at_once
from amtuner.sim.spec import IMMEDIATE, Heartbeats, JobSpec, TaskGroup, Workload

NODES = 4
NODE_MB = 8192
NODE_VCORES = 8
MIN_ALLOC_MB = 1024
AM_MB = 2048
TASK_MB = 1024
AM_STARTUP_S = 3.0
AM_TEARDOWN_S = 1.0
HEARTBEAT_MS = 1000
"""Node and AM heartbeats, Hadoop's defaults; the simulator is given the same."""
PERIOD_S = 5.0
"""The control period, scaled with the batch (the paper's 15 s for batches three times longer)."""
FIXED_VALUES = (0.3, 0.6)
CONTROLLERS = ("paper", "adaptive")
RUN_TIMEOUT_S = 900.0
STUCK_S = 60.0
"""How long an app may stay ACCEPTED while it holds its AM container before the run is given
up. The AM host registers an AM within a second or two of its container's launch. Seen once in
14 real runs of the batch (FairScheduler, `adaptive`): the AM container was allocated and
ACQUIRED before the attempt reached SCHEDULED, the attempt never launched it, and the app stayed
ACCEPTED until the run's timeout (an RMAppAttemptImpl race; YARN-11834 fixed one of the kind in
the CapacityScheduler)."""

PROFILES = (
    # name, jobs, maps x seconds, reduces x seconds
    ("small", 6, (2, 6.0), (1, 3.0)),
    ("medium", 6, (4, 8.0), (1, 4.0)),
    ("large", 4, (8, 8.0), (2, 6.0)),
)

HADOOP_HEARTBEATS = Heartbeats(
    node_s=HEARTBEAT_MS / 1000, am_s=HEARTBEAT_MS / 1000, maps_off_switch=True
)
"""What the real cluster does: 1 s node and AM heartbeats, one container per node heartbeat
(FairScheduler) or one off-switch container (CapacityScheduler), and maps that ask for any host
(the AM host does not name hosts, so no map is node-local)."""


def workload() -> Workload:
    """The batch: the profiles interleaved (small, medium, large, small …), all at t = 0."""
    queue: list[tuple[str, tuple[int, float], tuple[int, float]]] = []
    left = {name: count for name, count, _, _ in PROFILES}
    while any(left.values()):
        for name, _, maps, reduces in PROFILES:
            if left[name]:
                left[name] -= 1
                queue.append((name, maps, reduces))
    jobs = tuple(
        JobSpec(
            job_id=f"job-{i:02d}-{name}",
            submit_s=0.0,
            queue="root.default",
            maps=(TaskGroup("map", maps[0], TASK_MB, 1, maps[1], 0.0, 0.0),),
            reduces=(TaskGroup("reduce", reduces[0], TASK_MB, 1, reduces[1], 0.0, 0.0),),
            profile=name,
            am_memory_mb=AM_MB,
            am_startup_s=AM_STARTUP_S,
            am_teardown_s=AM_TEARDOWN_S,
        )
        for i, (name, maps, reduces) in enumerate(queue)
    )
    return Workload("real-batch", jobs, nodes=NODES, node_memory_mb=NODE_MB,
                    node_vcores=NODE_VCORES, node_disk_mbps=100.0)  # fmt: skip


def cluster_spec(kind: SchedulerKind, am_share: float, node_label: str = "") -> ClusterSpec:
    return ClusterSpec(
        kind, nodes=NODES, node_memory_mb=NODE_MB, node_vcores=NODE_VCORES,
        min_alloc_mb=MIN_ALLOC_MB, nm_heartbeat_ms=HEARTBEAT_MS, am_heartbeat_ms=HEARTBEAT_MS,
        am_share=am_share, node_label=node_label,
    )  # fmt: skip


@dataclass(frozen=True)
class Figures:
    makespan_s: float
    mean_jct_s: float
    ams_at_once: int
    """The most apps holding their AM at one time: what the AM limit let run together."""
    ams_split: tuple[tuple[int, int], ...] = ()
    """Of several runs (`typical`) that did not all reach the same ``ams_at_once``: each count
    and how many runs reached it."""


def figures_of(app_records: Sequence[dict[str, Any]]) -> Figures:
    """Makespan (first submission to last finish), mean job completion time and AMs at once,
    from the RM's app records (``startedTime`` is when the RM accepted the submission,
    ``launchTime`` when its AM container was launched, milliseconds after its allocation)."""
    started = [int(a["startedTime"]) for a in app_records]
    finished = [int(a["finishedTime"]) for a in app_records]
    launched = [int(a["launchTime"]) for a in app_records]
    return Figures(
        makespan_s=round((max(finished) - min(started)) / 1000, 3),
        mean_jct_s=round(mean(f - s for s, f in zip(started, finished, strict=True)) / 1000, 3),
        ams_at_once=most_at_once(list(zip(launched, finished, strict=True))),
    )


@dataclass(frozen=True)
class RealRun:
    """One run of the batch on a fresh real cluster."""

    figures: Figures
    a_trace: list[list[float]]
    """[seconds after the first submission, A] as the daemon wrote it (the start value at 0)."""
    hadoop_version: str
    retried: str | None = None
    """Why it is a second attempt on a fresh cluster (`StuckApp`), if it is."""


def _daemon_config(rm: RealRM, policy: str, work: Path) -> Path:
    refresh: dict[str, Any] = (
        {"method": "command", "command": [str(rm.yarn), "rmadmin", "-refreshQueues"],
         "timeout_seconds": 60}
        if rm.spec.scheduler is SchedulerKind.CAPACITY else {"method": "none"}
    )  # fmt: skip
    doc = {
        "rm": {"urls": [rm.url]},
        "scheduler": {"kind": str(rm.spec.scheduler), "config_file": str(rm.scheduler_file)},
        "refresh": refresh,
        "controller": {"policy": policy, "period_seconds": PERIOD_S},
        "guard": {"max_change_per_cycle": UNGUARDED.max_change_per_cycle,
                  "hold_off_seconds": UNGUARDED.hold_off_seconds},
        "metrics": {"enabled": False},
        "backup_dir": str(work / "backups"),
        "keep_backups": 0,
        "state_file": str(work / "state.json"),
        "audit_log": str(work / "audit.jsonl"),
    }  # fmt: skip
    path = work / "amtuner.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run_real(
    kind: SchedulerKind,
    a: float | None,
    policy: str,
    work: Path,
    build: Build,
    batch: Workload | None = None,
    properties: Mapping[str, str] | None = None,
    record_to: Path | None = None,
    node_label: str = "",
) -> RealRun:
    """One run of ``batch`` (default: `workload`) on a fresh real cluster, its first node
    labelled ``node_label`` (`ClusterSpec.node_label`). ``a`` None runs ``policy`` from the
    scheduler's default share. ``properties``: more of a CapacityScheduler's file, refreshed
    before the batch goes in. ``record_to``: `amtuner record` runs beside the batch, as an
    operator would run it, into this trace file; the run ends once it holds every app."""
    work.mkdir(parents=True, exist_ok=True)
    batch = batch or workload()
    start_a = DEFAULT_A[kind] if a is None else a
    session = requests.Session()
    with RealRM(cluster_spec(kind, start_a, node_label), work / "rm", build) as rm:
        if properties:
            rm.scheduler_file.write_bytes(
                with_capacity_properties(rm.scheduler_file.read_bytes(), properties)
            )
            rm.refresh_queues()
        with apps.Submitter(rm.url, str(rm.markers)) as submitter:
            for job in apps.real_jobs(batch):
                submitter.submit(job)
        began = time.monotonic()
        config = _daemon_config(rm, policy, work)
        daemons = []
        if record_to is not None:
            daemons.append(processes.record(work / "record.log", config, record_to))
        if a is None:
            daemons.append(processes.start(work / "daemon.log", "run", "--config", str(config)))
        try:
            records = _wait_finished(session, rm, len(batch.jobs), began)
            if record_to is not None:
                every = {str(r["id"]) for r in records}  # launchers' children included
                processes.wait_recorded(record_to, every, daemons[0])
        finally:
            for daemon in daemons:
                daemon.send_signal(signal.SIGTERM)
                daemon.wait(60)
        trace = [[0.0, start_a]]
        audit = work / "audit.jsonl"
        if audit.exists():
            first = min(int(r["startedTime"]) for r in records) / 1000
            for line in audit.read_text().splitlines():
                entry = json.loads(line)
                at = datetime.fromisoformat(entry["time"].replace("Z", "+00:00")).timestamp()
                trace.append([round(at - first, 1), entry["new"]])
        return RealRun(figures_of(records), trace, rm.hadoop_version)


class StuckApp(RuntimeError):
    """An app the real RM will not run (`STUCK_S`): the run is repeated on a fresh cluster."""


def holding_am(
    records: Sequence[dict[str, Any]], since: dict[str, float], now: float
) -> dict[str, float]:
    """Apps still ACCEPTED that hold a container (their AM's), each with when it was first seen
    so (kept from ``since``)."""
    return {
        str(a["id"]): since.get(str(a["id"]), now)
        for a in records
        if apps.am_allocated(a)
    }


def _wait_finished(
    session: requests.Session, rm: RealRM, total: int, began: float
) -> list[dict[str, Any]]:
    """Every app of the fresh cluster once ``total`` of them (launchers' children included)
    have ended."""
    since: dict[str, float] = {}
    while True:
        records = apps.listed(session, rm.url)
        since = holding_am(records, since, time.monotonic())
        stuck = sorted(app for app, t in since.items() if time.monotonic() - t > STUCK_S)
        if stuck:
            raise StuckApp(f"{', '.join(stuck)} ACCEPTED with its AM container for {STUCK_S:.0f} s")
        if len(records) == total and all(
            a["state"] in ("FINISHED", "FAILED", "KILLED") for a in records
        ):
            failed = [a["id"] for a in records if a["finalStatus"] != "SUCCEEDED"]
            if failed:
                raise RuntimeError(f"jobs did not succeed on the real RM: {failed}")
            return records
        if time.monotonic() - began > RUN_TIMEOUT_S:
            raise RuntimeError(f"the batch did not finish in {RUN_TIMEOUT_S:.0f} s on the real RM")
        time.sleep(1.0)


def run_sim(
    kind: SchedulerKind,
    a: float | None,
    policy: str,
    heartbeats: Heartbeats,
    batch: Workload | None = None,
    properties: Mapping[str, str] | None = None,
    node_label: str = "",
) -> Figures:
    """``batch`` (default: `workload`) through the simulator on the real cluster's shape (with
    `run_real`'s ``properties`` and ``node_label``), over `SUITE_SEEDS` seeds, as bench
    paper's (`typical`). A seed draws the heartbeats' phases and the tasks' jitter, which move
    a row's makespan as much as one real run differs from the next (measured:
    docs/fidelity.md, "Calibration against Hadoop 3.5.0's RM"). One seed is one draw; the mean
    is what the simulator expects of a real run."""

    spec = cluster_spec(kind, DEFAULT_A[kind] if a is None else a, node_label)
    site = spec.scheduler_site() if node_label else None

    def one(seed: int) -> SimResult:
        return simulate(
            batch or workload(), kind, a, seed, max_sim_seconds=RUN_TIMEOUT_S, policy=policy,
            period_s=PERIOD_S, heartbeats=heartbeats, properties=properties, site=site,
            labelled=spec.labelled_nodes,
        )  # fmt: skip

    runs = [one(seed) for seed in range(SUITE_SEEDS)]
    done = [
        Figures(r.makespan_s, r.mean_jct_s, r.ams_at_once)
        for r in runs
        if r.makespan_s is not None and r.mean_jct_s is not None
    ]
    if len(done) < len(runs):
        raise RuntimeError(f"the simulated batch did not finish ({kind}, {policy}, A {a})")
    return typical(done)


def typical(runs: Sequence[Figures]) -> Figures:
    """What one more run is expected to give: the runs' mean makespan and mean JCT, and the AM
    count most of them reached (the first run's of those tied), with the split where they
    differ: a controller's count can hang on whether the RM loaded a value before it was
    overwritten, which the FairScheduler's poll decides in some runs and not others."""
    counts = Counter(r.ams_at_once for r in runs)
    return Figures(
        makespan_s=mean_of(r.makespan_s for r in runs),
        mean_jct_s=mean_of(r.mean_jct_s for r in runs),
        ams_at_once=mode(r.ams_at_once for r in runs),
        ams_split=tuple(sorted(counts.items())) if len(counts) > 1 else (),
    )


def cases(kinds: Sequence[SchedulerKind]) -> list[tuple[SchedulerKind, float | None, str]]:
    """(scheduler, fixed A or None, label): the default, the fixed values, the controllers."""
    out: list[tuple[SchedulerKind, float | None, str]] = []
    for kind in kinds:
        out.append((kind, DEFAULT_A[kind], "default"))
        out += [(kind, a, f"fixed:{a:g}") for a in FIXED_VALUES]
        out += [(kind, None, name) for name in CONTROLLERS]
    return out


def row_of(
    kind: SchedulerKind,
    label: str,
    runs: Sequence[RealRun],
    sim: Figures,
    at_once: Figures,
    wall_s: float,
) -> dict[str, Any]:
    """One (scheduler, policy) row: the real runs' `typical` figures beside the simulator's,
    the differences the simulator's error relative to the real RM (negative: the simulator
    finishes sooner), and each real run as it went."""
    real = typical([r.figures for r in runs])
    return {
        "scheduler": str(kind),
        "policy": label,
        "hadoop_version": runs[0].hadoop_version,
        "real_makespan_s": real.makespan_s,
        "sim_makespan_s": sim.makespan_s,
        "sim_at_once_makespan_s": at_once.makespan_s,
        "real_mean_jct_s": real.mean_jct_s,
        "sim_mean_jct_s": sim.mean_jct_s,
        "sim_at_once_mean_jct_s": at_once.mean_jct_s,
        "makespan_diff": round((sim.makespan_s - real.makespan_s) / real.makespan_s, 4),
        "mean_jct_diff": round((sim.mean_jct_s - real.mean_jct_s) / real.mean_jct_s, 4),
        "real_ams_at_once": real.ams_at_once,
        "sim_ams_at_once": sim.ams_at_once,
        "real_ams_split": [list(c) for c in real.ams_split],
        "sim_ams_split": [list(c) for c in sim.ams_split],
        "real_runs": [
            {"makespan_s": r.figures.makespan_s, "mean_jct_s": r.figures.mean_jct_s,
             "ams_at_once": r.figures.ams_at_once, "a_trace": r.a_trace, "retried": r.retried}
            for r in runs
        ],
        "wall_seconds": round(wall_s, 1),
    }


def parameters(hadoop_versions: Sequence[str], host: dict[str, Any]) -> dict[str, Any]:
    """The header: what every row ran on (cluster shape, heartbeats, Hadoop version, batch,
    control) and the machine that ran it, whose two cores bound how many real runs can share it."""
    return {
        "hadoop_version": ", ".join(sorted(set(hadoop_versions))),
        "host": host,
        "cluster": f"{NODES} nodes x {NODE_MB} MB x {NODE_VCORES} vcores, minimum "
        f"allocation {MIN_ALLOC_MB} MB",
        "heartbeats": {"node_ms": HEARTBEAT_MS, "am_ms": HEARTBEAT_MS,
                       "simulated": asdict(HADOOP_HEARTBEATS)},
        "workload": [
            {"profile": name, "jobs": n, "maps": list(m), "reduces": list(r)}
            for name, n, m, r in PROFILES
        ],
        "am_mb": AM_MB, "task_mb": TASK_MB, "am_startup_s": AM_STARTUP_S,
        "am_teardown_s": AM_TEARDOWN_S, "control_period_s": PERIOD_S,
        "refresh": {"capacity": "yarn rmadmin -refreshQueues (RMAdminCLI)",
                    "fair": "the allocation file's own 10 s poll"},
    }  # fmt: skip


def host_shape() -> dict[str, Any]:
    """CPUs and memory of this machine (Linux ``sysconf``; None where it does not say)."""
    try:
        memory_gb: float | None = round(
            os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1
        )
    except (ValueError, OSError, AttributeError):
        memory_gb = None
    return {"cpus": os.cpu_count(), "memory_gb": memory_gb}


def real_runs(
    kind: SchedulerKind,
    a: float | None,
    policy: str,
    work: Path,
    build: Build,
    runs: int,
    progress: Callable[[str], None],
) -> list[RealRun]:
    """``runs`` runs of the batch, each on a fresh cluster in its own directory under ``work``;
    a run with a stuck app (`StuckApp`) is made once more, and says why."""
    out = []
    for i in range(1, runs + 1):
        where = work / f"run-{i}"
        try:
            out.append(run_real(kind, a, policy, where, build))
        except StuckApp as exc:
            progress(f"{kind} {policy if a is None else a} run {i}: {exc}; again, fresh cluster")
            again = run_real(kind, a, policy, where.with_name(f"{where.name}-again"), build)
            out.append(dataclasses.replace(again, retried=str(exc)))
    return out


def run(
    kinds: Sequence[SchedulerKind],
    work: Path,
    progress: Callable[[str], None],
    runs: int = REAL_RUNS,
) -> dict[str, Any]:
    build = ensure_built()
    rows = []
    started = time.perf_counter()
    for kind, a, label in cases(kinds):
        policy = policy_of(a, label)
        t0 = time.perf_counter()
        real = real_runs(kind, a, policy, row_dir(work, kind, label), build, runs, progress)
        row = row_of(kind, label, real, *simulated(kind, a, policy), time.perf_counter() - t0)
        rows.append(row)
        progress(format_row(row))
    return {
        "parameters": parameters([r["hadoop_version"] for r in rows], host_shape()),
        "rows": rows,
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def policy_of(a: float | None, label: str) -> str:
    """The policy a row runs: its label's controller, or none (``paper``, never asked) at a
    fixed A."""
    return label if a is None else "paper"


def simulated(kind: SchedulerKind, a: float | None, policy: str) -> tuple[Figures, Figures]:
    """A row's simulated side: with the real cluster's heartbeats, and placed at once."""
    return run_sim(kind, a, policy, HADOOP_HEARTBEATS), run_sim(kind, a, policy, IMMEDIATE)


def resimulate(
    summary: dict[str, Any],
    progress: Callable[[str], None],
    rerun: Collection[str] = (),
    work: Path | None = None,
    runs: int = REAL_RUNS,
) -> dict[str, Any]:
    """The real runs ``summary`` recorded, against the simulator as it is now: each row's
    simulated side again, its real runs as they were. A change to the simulator is so checked
    against the real RM in a minute, not the 45 a real bench takes; each row keeps the wall
    time of its real runs. The rows named in ``rerun`` (``scheduler:policy``, as `row_name`)
    run again on the real RM, ``runs`` times in ``work``: after a change to a controller, its
    recorded runs are of a policy that is gone."""
    a_of = {row_name(str(kind), label): a for kind, a, label in cases(list(SchedulerKind))}
    unknown = set(rerun) - {row_name(r["scheduler"], r["policy"]) for r in summary["rows"]}
    if unknown:
        raise ValueError(f"no such rows to run again: {', '.join(sorted(unknown))}")
    if rerun and work is None:
        raise ValueError("rows run again need a work directory")
    build = ensure_built() if rerun else None
    rows = []
    for old in summary["rows"]:
        kind, label = SchedulerKind(old["scheduler"]), old["policy"]
        name = row_name(old["scheduler"], label)
        a = a_of[name]
        wall_s = old["wall_seconds"]
        if name in rerun:
            assert build is not None and work is not None  # both checked above
            t0 = time.perf_counter()
            where = row_dir(work, kind, label)
            real = real_runs(kind, a, policy_of(a, label), where, build, runs, progress)
            wall_s = time.perf_counter() - t0
        else:
            real = [
                RealRun(
                    Figures(r["makespan_s"], r["mean_jct_s"], r["ams_at_once"]),
                    r["a_trace"],
                    old["hadoop_version"],
                    r["retried"],
                )
                for r in old["real_runs"]
            ]
        row = row_of(kind, label, real, *simulated(kind, a, policy_of(a, label)), wall_s)
        rows.append(row)
        progress(format_row(row))
    heartbeats = {**summary["parameters"]["heartbeats"], "simulated": asdict(HADOOP_HEARTBEATS)}
    return {**summary, "parameters": {**summary["parameters"], "heartbeats": heartbeats},
            "rows": rows,
            "wall_seconds": round(sum(r["wall_seconds"] for r in rows), 1)}  # fmt: skip


def row_dir(work: Path, kind: SchedulerKind, label: str) -> Path:
    """Where a row's real runs keep their clusters' files under ``work``."""
    return work / f"{kind}-{label.replace(':', '-')}"


def row_name(scheduler: str, label: str) -> str:
    """How a row is named on the command line: ``capacity:adaptive``, ``fair:fixed:0.3``."""
    return f"{scheduler}:{label}"


def format_row(row: dict[str, Any]) -> str:
    return (
        f"{row['scheduler']:<9} {row['policy']:<10} real {fmt(row['real_makespan_s']):>6} / "
        f"{fmt(row['real_mean_jct_s']):>6}   sim {fmt(row['sim_makespan_s']):>6} / "
        f"{fmt(row['sim_mean_jct_s']):>6} ({row['makespan_diff']:+.1%} / "
        f"{row['mean_jct_diff']:+.1%})   sim at once {fmt(row['sim_at_once_makespan_s']):>6}"
        f"   AMs at once {row['real_ams_at_once']:>2} / {row['sim_ams_at_once']:>2}"
        f"{_split_text(row)}"
        f"   real runs {' '.join(fmt(r['makespan_s']) for r in row['real_runs'])}"
    )


def _split_text(row: dict[str, Any]) -> str:
    """`` (sim 8 x5, 9 x5)`` where a side's runs reached different AM counts, else nothing."""
    parts = [
        f"{side} " + ", ".join(f"{ams} x{runs}" for ams, runs in split)
        for side in ("real", "sim")
        if (split := row[f"{side}_ams_split"])
    ]
    return f" ({'; '.join(parts)})" if parts else ""


def format_table(summary: dict[str, Any]) -> str:
    head = (
        "scheduler policy     real makespan / mean JCT   simulated (difference)"
        "              simulated, containers at once   AMs at once, real / sim   each real run"
    )
    lines = [head, *(format_row(r) for r in summary["rows"])]
    return "\n".join(lines)


def plot(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    rows = summary["rows"]
    fig = Figure(figsize=(max(6.0, 0.9 * len(rows)), 4.2), layout="constrained")
    ax = fig.subplots()
    xs = range(len(rows))
    width = 0.27
    for offset, key, label, color in (
        (-width, "real_makespan_s", "Hadoop 3.5 RM", "#4c72b0"),
        (0.0, "sim_makespan_s", "simulator, heartbeats", "#55a868"),
        (width, "sim_at_once_makespan_s", "simulator, at once", "#c4c4c4"),
    ):
        ax.bar([x + offset for x in xs], [r[key] for r in rows], width, label=label, color=color)
    each = [(x - width, run["makespan_s"]) for x, r in enumerate(rows) for run in r["real_runs"]]
    ax.scatter([x for x, _ in each], [m for _, m in each], s=9, color="black", zorder=3,
               label="each real run")  # fmt: skip
    ax.set_xticks(list(xs), [f"{r['scheduler'][:4]}\n{r['policy']}" for r in rows], fontsize=8)
    ax.set_ylabel("makespan (s)")
    ax.set_title("The same batch on Hadoop's own RM and on the simulator")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=110)
