"""`amtuner simulate`: run one workload to completion in simulated time and print the result."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from amtuner.config import ControllerSettings
from amtuner.controller import POLICIES
from amtuner.exitcodes import ExitCode
from amtuner.model import SchedulerKind
from amtuner.sim.spec import DEFAULT_HEARTBEATS, HADOOP_VERSIONS, HEARTBEATS, PERIOD_S

if TYPE_CHECKING:
    from amtuner.sim.simulation import SimResult, Simulation

DEFAULT_MAX_SIM_SECONDS = 7 * 86400.0
"""A week of simulated time: far beyond any bundled workload, so hitting it means a stuck run."""


def parse_policy(text: str) -> float | str:
    """The AM share of ``fixed:A``, or the name of a controller policy (``paper`` …)."""
    if text in POLICIES:
        return text
    kind, _, value = text.partition(":")
    if kind != "fixed":
        known = ", ".join(["fixed:A", *sorted(POLICIES)])
        raise ValueError(f"unknown policy {text!r}; known: {known}")
    try:
        a = float(value)
    except ValueError:
        raise ValueError(f"policy {text!r}: A must be a number, e.g. fixed:0.5") from None
    if not (0.0 <= a <= 1.0 or a == -1.0):
        raise ValueError(f"policy {text!r}: A must be within [0, 1] (or -1 to disable the limit)")
    return a


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = subparsers.add_parser(
        "simulate",
        help="run a workload on the simulated cluster in virtual time and report job times",
        description="Run a workload to completion on the simulated ResourceManager with one AM "
        "share policy and print the job completion figures.",
    )
    p.add_argument("--scheduler", required=True, choices=[k.value for k in SchedulerKind],
                   help="the simulated RM's scheduler")
    p.add_argument(
        "--workload",
        required=True,
        help="paper:grep|terasort|wordcount|mixed, sls:PATH, synth:PATH[@seed=N,jobs=N,nodes=N] "
        "(SLS's synthetic workloads), swim:PATH[@NODES], zoo:SEED (a "
        "drawn case of amtuner bench zoo; its scheduler is in the bench's report), launchers:N "
        "(workflow launchers that wait for their child jobs), sessions:N, drivers:N, services:N "
        "(Tez sessions, Spark drivers, long-lived service AMs)",
    )
    p.add_argument("--nodes", type=int, help="number of nodes (default: the workload's)")
    p.add_argument("--node-memory-mb", type=int, help="memory per node (default: the workload's)")
    p.add_argument("--node-vcores", type=int, help="vcores per node (default: the workload's)")
    p.add_argument(
        "--policy",
        default="fixed:0.5",
        help="fixed:A sets the global AM share to A for the whole run; a controller policy "
        f"({', '.join(sorted(POLICIES))}) runs the daemon's cycle every --period, starting from "
        "the scheduler's default share (default: %(default)s)",
    )
    p.add_argument(
        "--period",
        type=float,
        default=PERIOD_S,
        help="control period in simulated seconds for a controller policy (default: %(default)s)",
    )
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the workload's random draws (default: %(default)s)")
    p.add_argument(
        "--max-sim-seconds",
        type=float,
        default=DEFAULT_MAX_SIM_SECONDS,
        help="stop a run that has not finished by then (default: %(default)s)",
    )
    p.add_argument(
        "--scheduler-config",
        type=Path,
        help="capacity-scheduler.xml or fair-scheduler.xml to start from "
        "(default: equal shares for the workload's queues); fixed:A overrides its global share",
    )
    p.add_argument(
        "--heartbeats",
        choices=sorted(HEARTBEATS),
        default=DEFAULT_HEARTBEATS,
        help="hadoop3 (the default): as Hadoop 3.5.0 by default, node and AM heartbeats every 1 s, "
        "one container per node heartbeat (FairScheduler), asynchronous scheduling every 5 ms "
        "(CapacityScheduler), a node reserved for an AM that fits none (FairScheduler); "
        "hadoop3-sync: the CapacityScheduler on node heartbeats, one off-switch container each; "
        "hadoop3-mr: hadoop3 with MapReduce's reduce ramp-up, priorities and preemption (not yet "
        "checked against a real MapReduce AM); hadoop3-no-reserve: hadoop3 without the "
        "FairScheduler's reservations; none: place every container the instant it fits",
    )
    p.add_argument(
        "--hadoop", choices=HADOOP_VERSIONS, default="3",
        help="scheduler semantics: 3 (2.9-3.5, the default) or 2.8 (2.7/2.8: a FairScheduler "
        "checks AMs on memory alone)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--no-timing",
        action="store_true",
        help="report wall_seconds as 0 so that equal seeds give byte-identical output",
    )
    p.set_defaults(func=run, compiled_core=True)


def build(args: argparse.Namespace) -> Simulation:
    from amtuner.sim.sched_config import with_global_am_share
    from amtuner.sim.simulation import build_simulation, default_scheduler_config
    from amtuner.sim.workload import load_workload

    kind = SchedulerKind(args.scheduler)
    policy = parse_policy(args.policy)
    workload = load_workload(args.workload, seed=args.seed)
    base = args.scheduler_config.read_bytes() if args.scheduler_config else None
    if isinstance(policy, str):
        # A controller starts from the file as given, or from the scheduler's default share.
        config = base if base is not None else default_scheduler_config(
            kind, workload.queues, weights=workload.queue_weights
        )
    elif base is None:
        config = default_scheduler_config(
            kind, workload.queues, policy, weights=workload.queue_weights
        )
    else:
        config = with_global_am_share(kind, base, policy)
    return build_simulation(
        kind,
        workload,
        config,
        nodes=args.nodes,
        node_memory_mb=args.node_memory_mb,
        node_vcores=args.node_vcores,
        seed=args.seed,
        heartbeats=HEARTBEATS[args.heartbeats],
        hadoop=args.hadoop,
    )


def format_text(result: SimResult) -> str:
    lines = [f"{key}: {value}" for key, value in result.to_json_dict().items()]
    return "\n".join(lines)


def refused(exc: ValueError | OSError) -> ExitCode:
    """The exit code of a simulated cluster that cannot be built: a workload spec that does not
    parse is a usage error; a scheduler file the simulated RM refuses, or a file or port the
    system refuses, a failure, as the real RM refusing its file would be."""
    from amtuner.sim.simulation import SchedulerConfigError

    failed = isinstance(exc, SchedulerConfigError | OSError)
    return ExitCode.FAILED if failed else ExitCode.CONFIG


def run(args: argparse.Namespace) -> int:
    from amtuner.sim.control import ControlledRun

    try:
        sim = build(args)
    except (ValueError, OSError) as exc:  # WorkloadError and SchedulerConfigError are ValueErrors
        print(f"amtuner simulate: {exc}", file=sys.stderr)
        return refused(exc)
    policy = parse_policy(args.policy)
    with tempfile.TemporaryDirectory(prefix="amtuner-simulate-") as tmp:
        if isinstance(policy, str):
            logging.getLogger("amtuner.sim").setLevel(logging.WARNING)
            settings = ControllerSettings(policy=policy, period_seconds=args.period)  # type: ignore[arg-type]
            ControlledRun(sim, Path(tmp), controller=settings)
        result = sim.run(args.max_sim_seconds)
    if args.no_timing:
        result = dataclasses.replace(result, wall_seconds=0.0)
    if args.json:
        print(json.dumps(result.to_json_dict(), sort_keys=True))
    else:
        print(format_text(result))
    return ExitCode.OK if result.finished else ExitCode.FAILED
