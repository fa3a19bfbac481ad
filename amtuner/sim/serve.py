"""`amtuner sim` serves a simulated RM; `amtuner sim-admin refresh-queues` refreshes it.

`sim` runs a workload in accelerated wall time behind the RM's REST API and web UI, so the daemon
(or curl) can be pointed at it exactly as at a real RM. It keeps serving after the workload has
finished, as a real RM stays up. `sim-admin refresh-queues` stands in for
`yarn rmadmin -refreshQueues`, which has no HTTP form on a real RM.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import tempfile
import threading
from contextlib import ExitStack
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from amtuner.exitcodes import ExitCode
from amtuner.model import SchedulerKind

if TYPE_CHECKING:  # the server and the simulator load only when a command runs
    from amtuner.sim.server import SimServer
    from amtuner.sim.simulation import Simulation
    from amtuner.sim.spec import Workload

log = logging.getLogger(__name__)

CONFIG_FILE_NAMES = {
    SchedulerKind.CAPACITY: "capacity-scheduler.xml",
    SchedulerKind.FAIR: "fair-scheduler.xml",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "sim",
        help="serve a simulated ResourceManager on 127.0.0.1",
        description="Run a workload on a simulated YARN cluster in accelerated wall time and serve "
        "the RM's REST API and web UI. A FairScheduler re-reads its allocation file when it "
        "changes; a CapacityScheduler reloads on `amtuner sim-admin refresh-queues`.",
    )
    p.add_argument("--scheduler", required=True, choices=[k.value for k in SchedulerKind],
                   help="the simulated RM's scheduler")
    p.add_argument(
        "--scheduler-config",
        type=Path,
        help="capacity-scheduler.xml / fair-scheduler.xml (default: write one giving the "
        "workload's queues equal shares and print its path)",
    )
    p.add_argument(
        "--workload",
        required=True,
        help="paper:grep|terasort|wordcount|mixed, sls:PATH, swim:PATH[@NODES]",
    )
    p.add_argument("--port", type=int, default=8088, help="0 = any free port (default: 8088)")
    p.add_argument(
        "--speed",
        type=float,
        default=10.0,
        help="simulated seconds per wall-clock second (default: %(default)s)",
    )
    p.add_argument("--nodes", type=int, help="default: the workload's")
    p.add_argument("--node-memory-mb", type=int, help="memory per node (default: the workload's)")
    p.add_argument("--node-vcores", type=int, help="vcores per node (default: the workload's)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the workload's random draws (default: %(default)s)")
    p.add_argument(
        "--web-ui-layout",
        type=int,
        choices=[2, 3],
        default=3,
        help="Cluster Metrics table of Hadoop 2.8-3.3.0 (2) or 3.4 (3) (default: %(default)s)",
    )
    p.add_argument(
        "--mutable-conf",
        action="store_true",
        help="CapacityScheduler with a mutable configuration store: enables "
        "GET/PUT /ws/v1/cluster/scheduler-conf and refuses refresh-queues",
    )
    p.add_argument(
        "--standby-of",
        metavar="URL",
        help="act as the standby of the RM at URL: redirect (307) every request there "
        "but /ws/v1/cluster/info",
    )
    p.add_argument(
        "--state-dir",
        type=Path,
        help="where to write the default scheduler file (default: a new temporary directory)",
    )
    p.set_defaults(func=run_sim)

    admin = subparsers.add_parser(
        "sim-admin",
        help="administer a simulated RM (stands in for `yarn rmadmin`)",
        description="Administer a running `amtuner sim` as `yarn rmadmin` administers an RM.",
    )
    actions = admin.add_subparsers(dest="admin_command", metavar="ACTION", required=True)
    refresh = actions.add_parser(
        "refresh-queues",
        help="make the simulated RM re-read its scheduler file (yarn rmadmin -refreshQueues)",
        description="Make the simulated RM re-read its scheduler file, as `yarn rmadmin "
        "-refreshQueues` does; exit non-zero if it refused the file.",
    )
    refresh.add_argument(
        "--url",
        action="append",
        required=True,
        help="RM base URL; repeat for an HA pair (the first that answers is used)",
    )
    refresh.add_argument("--timeout", type=float, default=20.0, help="seconds (default: 20)")
    refresh.set_defaults(func=run_refresh)


def _config_path(
    args: argparse.Namespace, kind: SchedulerKind, workload: Workload, cleanup: ExitStack
) -> Path:
    """The scheduler file the simulated RM reads: the given one, or a fresh default (in a
    temporary directory removed on exit, unless --state-dir says where to keep it)."""
    from amtuner.sim.simulation import default_scheduler_config

    if args.scheduler_config is not None:
        return Path(args.scheduler_config).resolve()
    if args.state_dir is not None:
        directory = Path(args.state_dir)
        directory.mkdir(parents=True, exist_ok=True)
    else:
        directory = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="amtuner-sim-")))
    path = (directory / CONFIG_FILE_NAMES[kind]).resolve()
    path.write_bytes(
        default_scheduler_config(kind, workload.queues, weights=workload.queue_weights)
    )
    return path


def run_sim(args: argparse.Namespace) -> int:
    from amtuner.sim.cli import refused
    from amtuner.sim.rmapi import FaceOptions
    from amtuner.sim.server import SimServer
    from amtuner.sim.simulation import build_simulation
    from amtuner.sim.workload import load_workload

    kind = SchedulerKind(args.scheduler)
    if args.mutable_conf and kind is not SchedulerKind.CAPACITY:
        print("amtuner sim: --mutable-conf needs --scheduler capacity", file=sys.stderr)
        return ExitCode.CONFIG
    with ExitStack() as cleanup:
        try:
            workload = load_workload(args.workload, seed=args.seed)
            path = _config_path(args, kind, workload, cleanup)
            sim = build_simulation(
                kind,
                workload,
                path.read_bytes(),
                nodes=args.nodes,
                node_memory_mb=args.node_memory_mb,
                node_vcores=args.node_vcores,
                seed=args.seed,
            )
            options = FaceOptions(
                web_ui_layout=args.web_ui_layout,
                mutable_conf=args.mutable_conf,
                standby_of=args.standby_of,
                scheduler_config_path=path,
            )
            server = SimServer(
                sim,
                options=options,
                port=args.port,
                speed=args.speed,
                run_clock=args.standby_of is None,
            )
        except (ValueError, OSError) as e:  # WorkloadError, SchedulerConfigError, port in use
            print(f"amtuner sim: {e}", file=sys.stderr)
            return refused(e)
        print(f"scheduler config: {path}", flush=True)
        _serve_until_signalled(server, sim)
    return ExitCode.OK


def _serve_until_signalled(server: SimServer, sim: Simulation) -> None:
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    server.start()
    print(f"listening on {server.url}", flush=True)
    announced = False
    while not stop.wait(0.2):
        with server.lock:
            done, now = sim.done, sim.now
        if done and not announced:
            log.info("workload finished at simulated t=%.0f s; still serving", now)
            announced = True
    server.stop()
    log.info("stopped")


def run_refresh(args: argparse.Namespace) -> int:
    """POST the refresh endpoint of the first RM that answers; a standby redirects (307) to the
    active one, which requests follows with the method kept, like rmadmin's failover."""
    import requests

    from amtuner.sim.rmapi import REFRESH_PATH

    problem = ""
    for url in args.url:
        try:
            r = requests.post(url.rstrip("/") + REFRESH_PATH, timeout=args.timeout)
        except requests.RequestException as e:
            problem = f"{url}: {e}"
            continue
        if r.ok:
            print(r.text.strip())
            return ExitCode.OK
        print(
            f"refreshQueues: {r.text.strip() or r.reason} (HTTP {r.status_code})", file=sys.stderr
        )
        return ExitCode.FAILED
    print(f"refreshQueues: no RM answered: {problem}", file=sys.stderr)
    return ExitCode.FAILED
