"""The cluster `amtuner advise` replays: its scheduler, its file and the values it advises on,
from the flags or amtuner's config (`read_cluster`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING

from amtuner.model import GLOBAL_TARGET, SchedulerKind

if TYPE_CHECKING:
    from amtuner.config import Config
    from amtuner.executor import SchedulerFile
    from amtuner.sim.spec import Workload


@dataclass(frozen=True, slots=True)
class Cluster:
    """The scheduler the advice is for and the values it tunes: its file (None: a default leaf
    per queue of the trace) and where the file came from."""

    kind: SchedulerKind
    targets: tuple[str, ...] = (GLOBAL_TARGET,)
    config: bytes | None = None
    source: str | None = None
    currents: tuple[float, ...] = ()
    """Each target's value in the file, in the order of ``targets``."""


class ClusterError(Exception):
    """The scheduler or its file cannot be known from what was given; the message says why."""


def read_cluster(args: argparse.Namespace) -> Cluster:
    """The scheduler, its file and the targets from the flags, else amtuner's config: its
    ``scheduler.kind``, ``scheduler.targets`` and ``scheduler.config_file``, or without a file
    the RM's configuration store (``GET scheduler-conf``, through the ``rm`` section, as the
    daemon reads it when ``refresh.method`` is ``rest``)."""
    from amtuner.executor import ExecutorError, SchedulerFile
    from amtuner.monitor import ObservationError

    cfg = None
    if args.config is not None:
        from amtuner.config import ConfigError, load_config

        try:
            cfg = load_config(args.config)
        except ConfigError as exc:
            raise ClusterError(str(exc)) from None
    kind_name = args.scheduler or (cfg.scheduler.kind if cfg else None)
    if kind_name in (None, "auto"):
        raise ClusterError("which scheduler? give --scheduler (the config says auto)")
    kind = SchedulerKind(kind_name)
    targets = tuple(args.target or (cfg.scheduler.targets if cfg else ()) or (GLOBAL_TARGET,))
    try:
        if args.scheduler_file is not None:
            file = SchedulerFile.read(args.scheduler_file, kind)
        elif cfg is not None:
            file = _configured_file(cfg, kind)
        elif targets != (GLOBAL_TARGET,):
            raise ClusterError("--target needs the scheduler file (--scheduler-file or --config)")
        else:
            return Cluster(kind)
        currents = tuple(file.effective_value(t) for t in targets)
    except (ExecutorError, ObservationError) as exc:
        raise ClusterError(str(exc)) from None
    return Cluster(kind, targets, file.data, str(file.path), currents)


def _configured_file(cfg: Config, kind: SchedulerKind) -> SchedulerFile:
    """The file the daemon would edit, read as it reads it (`open_config`)."""
    from amtuner.commands import kerberos_login, rest_channel
    from amtuner.executor import SchedulerFile, make_refresher
    from amtuner.executor.source import open_config
    from amtuner.monitor import make_session

    if cfg.scheduler.config_file is not None:
        return SchedulerFile.read(cfg.scheduler.config_file, kind)
    login = kerberos_login(cfg)
    session = make_session(cfg.rm, login)
    refresher = make_refresher(
        cfg.refresh, rest_channel(cfg, session),
        environment=None if login is None else login.fresh_environment,
    )  # fmt: skip
    return open_config(None, kind, refresher)[1]


def unknown_queues(workload: Workload, cluster: Cluster) -> list[str]:
    """The trace's queues a CapacityScheduler with this file has no leaf for (by path, or by a
    leaf's own name, as it resolves an app's queue): it would reject their apps, so the file
    is not the one they ran under. A FairScheduler places any queue by its rules."""
    if cluster.config is None or cluster.kind is not SchedulerKind.CAPACITY:
        return []
    from amtuner.sim.sched_config.capacity import parse_capacity_config

    conf = parse_capacity_config(cluster.config)
    leaves = [q.path for q in conf.queues if not q.children]
    names = [leaf.rsplit(".", 1)[-1] for leaf in leaves]
    asked = dict.fromkeys(j.queue for j in workload.jobs)
    return [q for q in asked if q not in leaves and ("." in q or names.count(q) != 1)]
