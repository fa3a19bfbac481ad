"""The cluster `amtuner advise` replays: its scheduler, its queues and the values it advises on.

The queues come from, first found:

* the scheduler file given (``--scheduler-file``), or the one amtuner's config names
  (``scheduler.config_file``), or without a file the CapacityScheduler's configuration store
  (``GET scheduler-conf`` through the config's ``rm`` section, as the daemon reads it when
  ``refresh.method`` is ``rest``);
* the RM's own documents (``--rm URL``, or ``--from-rm`` with the config's ``rm`` section: HA,
  TLS, Kerberos, ``user.name``), for an operator who cannot read the file, say from a laptop:
  the queue tree of ``/ws/v1/cluster/scheduler`` (`amtuner.monitor.queuetree`) written as the
  scheduler file it stands for (`capacity_file_of`, `allocation_file_of`), and the cluster's
  shape from ``/ws/v1/cluster/nodes`` (`shape_of_nodes`), else from ``/ws/v1/cluster/metrics``
  (`amtuner.record.shape_of`, as a trace's header has it).
  What the document does not report is said (`Cluster.notes`), never filled in silently.

Either way the replay runs one scheduler file, so a queue tree read from the RM and the file it
was loaded from give the same advice wherever the document reports every setting.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape, quoteattr

from amtuner.exitcodes import ExitCode
from amtuner.model import GLOBAL_TARGET, SchedulerKind, format_a

if TYPE_CHECKING:
    from amtuner.config import Config
    from amtuner.executor import SchedulerFile
    from amtuner.monitor import RMClient
    from amtuner.monitor.queuetree import NodeSize, QueueTree
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
    queues_from: str = "default"
    """``file``, ``rm-store`` (the configuration store), ``rm`` (the scheduler document) or
    ``default`` (a default leaf per queue of the trace)."""
    shape: dict[str, int] = dataclasses.field(default_factory=dict)
    """The RM's nodes, node memory and vcores (`shape_of_nodes`) when read from it."""
    notes: tuple[str, ...] = ()
    """What the RM did not report and the replay takes as Hadoop's default."""


class ClusterError(Exception):
    """The scheduler or its file cannot be known from what was given; the message says why,
    ``code`` how the command exits."""

    def __init__(self, message: str, code: ExitCode = ExitCode.CONFIG) -> None:
        super().__init__(message)
        self.code = code


def read_cluster(args: argparse.Namespace) -> Cluster:
    """The scheduler, its file and the targets from the flags, else amtuner's config: its
    ``scheduler.kind``, ``scheduler.targets`` and ``scheduler.config_file``, or without a file
    the RM's configuration store; with ``--rm`` or ``--from-rm``, the RM's scheduler document."""
    from amtuner.executor import ExecutorError, SchedulerFile
    from amtuner.monitor import ObservationError

    cfg = None
    if args.config is not None:
        from amtuner.config import ConfigError, load_config

        try:
            cfg = load_config(args.config)
        except ConfigError as exc:
            raise ClusterError(str(exc)) from None
    targets = tuple(args.target or (cfg.scheduler.targets if cfg else ()) or (GLOBAL_TARGET,))
    kind_name = args.scheduler or (cfg.scheduler.kind if cfg else None)
    if args.rm or args.from_rm:
        if args.scheduler_file is not None:
            raise ClusterError("--scheduler-file or the RM's queues (--rm, --from-rm): not both")
        if cfg is None and not args.rm:
            raise ClusterError("--from-rm reads the RMs of the config's rm section: give --config")
        return read_from_rm(cfg, args.rm, kind_name, targets)
    if kind_name in (None, "auto"):
        raise ClusterError("which scheduler? give --scheduler (the config says auto)")
    kind = SchedulerKind(kind_name)
    try:
        if args.scheduler_file is not None:
            file = SchedulerFile.read(args.scheduler_file, kind)
        elif cfg is not None:
            file = _configured_file(cfg, kind)
        elif targets != (GLOBAL_TARGET,):
            raise ClusterError(
                "--target needs the scheduler file (--scheduler-file or --config) or the RM's "
                "queues (--rm)"
            )
        else:
            return Cluster(kind)
        currents = tuple(file.effective_value(t) for t in targets)
    except (ExecutorError, ObservationError) as exc:
        raise ClusterError(str(exc)) from None
    where = "file" if args.scheduler_file or (cfg and cfg.scheduler.config_file) else "rm-store"
    return Cluster(kind, targets, file.data, str(file.path), currents, where)


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


def read_from_rm(
    cfg: Config | None, urls: Sequence[str], kind_name: str | None, targets: tuple[str, ...]
) -> Cluster:
    """The cluster as the RM reports it, through the monitor's client: with the config's ``rm``
    section (its URLs unless ``urls`` name others), else at ``urls`` with Hadoop's defaults (no
    client certificate, no Kerberos, no ``user.name``)."""
    from amtuner.commands import kerberos_login
    from amtuner.config import RMSettings
    from amtuner.executor import ExecutorError, SchedulerFile
    from amtuner.monitor import ObservationError, RMClient, make_session
    from amtuner.monitor.queuetree import parse_queue_tree
    from amtuner.monitor.rest import METRICS_PATH, SCHEDULER_PATH, parse_metrics
    from amtuner.record import shape_of

    rm = cfg.rm if cfg is not None else RMSettings()
    if urls:
        rm = dataclasses.replace(rm, urls=tuple(urls), web_ui_urls=())
    try:  # a session that cannot work at all (no CA bundle, no keytab) is the config's
        session = make_session(rm, kerberos_login(cfg) if cfg is not None else None)
    except ObservationError as exc:
        raise ClusterError(f"{exc.reason}: {exc}") from None
    client = RMClient.from_settings(rm, session=session)
    try:
        doc = client.get_json(SCHEDULER_PATH)
        answered = next(e for e in client.endpoints if e.url == client.active_url)
        source = answered.rest + SCHEDULER_PATH
        metrics_doc = client.get_json(METRICS_PATH)
        metrics = parse_metrics(metrics_doc, f"{client.active_url}{METRICS_PATH}")
        tree = parse_queue_tree(doc, source)
        notes: list[str] = []
        shape = _nodes_shape(client, notes) or shape_of(metrics_doc)
    except ObservationError as exc:
        raise ClusterError(f"{exc.reason}: {exc}", ExitCode.for_error(exc.reason)) from None
    if kind_name not in (None, "auto") and SchedulerKind(kind_name) is not tree.kind:
        raise ClusterError(f"{source}: the RM runs the {tree.kind} scheduler, not {kind_name}")
    if tree.kind is SchedulerKind.CAPACITY:
        data = capacity_file_of(tree, notes)
    else:
        data = allocation_file_of(tree, (metrics.memory_total_mb, metrics.vcores_total), notes)
    try:
        file = SchedulerFile(Path(SCHEDULER_PATH), tree.kind, data)
        currents = tuple(file.effective_value(t) for t in targets)
    except ExecutorError as exc:
        raise ClusterError(f"{exc} (the queue tree of {source})") from None
    return Cluster(tree.kind, targets, data, source, currents, "rm", shape, tuple(notes))


def _nodes_shape(client: RMClient, notes: list[str]) -> dict[str, int]:
    """The running nodes' count and size (`shape_of_nodes`), {} where the RM does not serve the
    nodes document (a gateway that passes only some paths: 403 or 404), said in ``notes``."""
    from amtuner.monitor import ObservationError
    from amtuner.monitor.queuetree import NODES_PATH, parse_nodes

    try:
        doc = client.get_json(NODES_PATH + "?states=RUNNING")
    except ObservationError as exc:
        if exc.reason != "http-error":
            raise
        notes.append(f"{exc}: each node's size is the cluster's total over its activeNodes")
        return {}
    return shape_of_nodes(parse_nodes(doc, f"{client.active_url}{NODES_PATH}"), notes)


def shape_of_nodes(nodes: Sequence[NodeSize], notes: list[str]) -> dict[str, int]:
    """The replay's nodes: as many as run, of their mean size (the simulated cluster's nodes
    are all alike); nodes of different sizes, or with node labels, are said in ``notes``."""
    count = len(nodes)
    memory = sum(n.memory_mb for n in nodes) // count
    shape = {"nodes": count, "node_memory_mb": memory}
    vcores = [n.vcores for n in nodes if n.vcores]
    if len(vcores) == count:
        shape["node_vcores"] = sum(vcores) // count
    sizes = sorted({n.memory_mb for n in nodes})
    if len(sizes) > 1 or len({n.vcores for n in nodes}) > 1:
        notes.append(
            f"the nodes differ in size ({sizes[0]} to {sizes[-1]} MB): replayed as {count} "
            f"nodes of their mean, {memory} MB"
        )
    labelled = [n for n in nodes if n.labels]
    if labelled:
        names = ", ".join(sorted({label for n in labelled for label in n.labels}))
        notes.append(f"{len(labelled)} of the nodes carry node labels ({names}): replayed as "
                     "unlabelled")  # fmt: skip
    return shape


def _common_share(tree: QueueTree, default: float, notes: list[str], key: str) -> float | None:
    """The scheduler-wide AM share the leaves' values stand for: the one most of them report
    (the document gives no global value, only each leaf's with the global one in), None when
    no leaf reports one. Each leaf without one is noted: it gets that value, else ``default``."""
    shares = [q.am_share for q in tree.queues if q.path in tree.leaves and q.am_share is not None]
    common = Counter(shares).most_common(1)[0][0] if shares else None
    unknown = [q.path for q in tree.queues if q.path in tree.leaves and q.am_share is None]
    if unknown:
        value = format_a(default if common is None else common)
        notes.append(f"the RM reports no {key} of {', '.join(unknown)}: replayed at {value}")
    return common


def _properties(props: Sequence[tuple[str, str]]) -> bytes:
    lines = ['<?xml version="1.0"?>', "<configuration>"]
    for name, value in props:
        lines.append(f"  <property><name>{escape(name)}</name><value>{escape(value)}</value>"
                     "</property>")  # fmt: skip
    return ("\n".join([*lines, "</configuration>"]) + "\n").encode()


def _siblings(tree: QueueTree, parent: str, children: Sequence[str]) -> list[float]:
    """The children's capacities as the file would give them: the RM prints each as a float
    (which `parse_queue_tree` checks add up to 100 within rounding), so the last takes what the
    others leave of 100."""
    from amtuner.monitor.queuetree import CSQueueSettings

    by_path = {q.path: q for q in tree.queues if isinstance(q, CSQueueSettings)}
    values = [round(by_path[f"{parent}.{c}"].capacity, 4) for c in children]
    return [*values[:-1], round(100.0 - sum(values[:-1]), 4)]


def capacity_file_of(tree: QueueTree, notes: list[str]) -> bytes:
    """The capacity-scheduler.xml whose queues the RM reports: every queue's capacity, maximum
    capacity and max-parallel-apps, every leaf's AM share, maximum-applications and user
    limits; the global AM share the one most leaves have (`_common_share`)."""
    from amtuner.monitor.queuetree import CSQueueSettings
    from amtuner.sim.sched_config import (
        CS_DEFAULT_AM_PERCENT,
        CS_GLOBAL_AM_KEY,
        CS_PREFIX,
        UNLIMITED,
    )

    common = _common_share(tree, CS_DEFAULT_AM_PERCENT, notes, "maximum-am-resource-percent")
    props: list[tuple[str, str]] = []
    if common is not None:
        props.append((CS_GLOBAL_AM_KEY, format_a(common)))
    for q in tree.queues:
        assert isinstance(q, CSQueueSettings)
        key = f"{CS_PREFIX}{q.path}."
        if q.children:
            props.append((key + "queues", ",".join(q.children)))
            for child, pct in zip(q.children, _siblings(tree, q.path, q.children), strict=True):
                props.append((f"{key}{child}.capacity", f"{pct:g}"))
        if q.path != "root":
            props.append((key + "maximum-capacity", f"{q.maximum_capacity:g}"))
        if q.max_parallel_apps is not None and q.max_parallel_apps < UNLIMITED:
            props.append((key + "max-parallel-apps", str(q.max_parallel_apps)))
        if q.am_share is not None and q.am_share != common:
            props.append((key + "maximum-am-resource-percent", format_a(q.am_share)))
        for name, value in (
            ("maximum-applications", q.max_apps),
            ("minimum-user-limit-percent", q.user_limit_percent),
            ("user-limit-factor", q.user_limit_factor),
        ):
            if value is not None:
                props.append((key + name, f"{value:g}"))
    return _properties(props)


def allocation_file_of(tree: QueueTree, total: tuple[int, int], notes: list[str]) -> bytes:
    """The fair-scheduler.xml whose queues the RM reports, on a cluster of ``total`` (MB,
    vcores): each queue's weight (its steady fair share among its siblings'), minResources,
    maxResources below the cluster, maxRunningApps and policy, each leaf's maxAMShare where
    the RM tells it; queueMaxAMShareDefault the one most leaves have (`_common_share`)."""
    from amtuner.monitor.queuetree import FSQueueSettings
    from amtuner.sim.sched_config import FS_DEFAULT_AM_SHARE, UNLIMITED

    common = _common_share(tree, FS_DEFAULT_AM_SHARE, notes, "maxAMShare")
    by_path: dict[str, FSQueueSettings] = {}
    for q in tree.queues:
        assert isinstance(q, FSQueueSettings)
        by_path[q.path] = q
    if any(len(q.children) > 1 for q in by_path.values()):
        notes.append("the RM reports no FairScheduler weight: each is read from the queues' "
                     "steady fair shares")  # fmt: skip

    def weights(parent: FSQueueSettings) -> dict[str, float]:
        steady = {c: by_path[f"{parent.path}.{c}"].steady_mb for c in parent.children}
        unit = min((s for s in steady.values() if s > 0), default=0)
        return {c: round(s / unit, 4) if unit else 1.0 for c, s in steady.items()}

    def settings(q: FSQueueSettings, weight: float, indent: str) -> list[str]:
        out = [f"<weight>{weight:g}</weight>"]
        if q.min_resources is not None and q.min_resources != (0, 0):
            out.append(f"<minResources>{q.min_resources[0]} mb, {q.min_resources[1]} vcores"
                       "</minResources>")  # fmt: skip
        if q.max_resources is not None and q.max_resources[0] < total[0]:
            vcores = q.max_resources[1] if 0 < q.max_resources[1] < total[1] else total[1]
            out.append(f"<maxResources>{q.max_resources[0]} mb, {vcores} vcores</maxResources>")
        if q.max_apps is not None and q.max_apps < UNLIMITED:
            out.append(f"<maxRunningApps>{q.max_apps}</maxRunningApps>")
        if q.am_share is not None and q.am_share != common:
            out.append(f"<maxAMShare>{format_a(q.am_share)}</maxAMShare>")
        if q.policy is not None and q.policy != "fair":
            out.append(f"<schedulingPolicy>{escape(q.policy)}</schedulingPolicy>")
        return [indent + line for line in out]

    def emit(parent: FSQueueSettings, indent: str) -> list[str]:
        lines: list[str] = []
        for child, weight in weights(parent).items():
            q = by_path[f"{parent.path}.{child}"]
            kind = ' type="parent"' if q.parent and not q.children else ""
            lines.append(f"{indent}<queue name={quoteattr(child)}{kind}>")
            lines += settings(q, weight, indent + "  ")
            lines += emit(q, indent + "  ")
            lines.append(f"{indent}</queue>")
        return lines

    lines = ['<?xml version="1.0"?>', "<allocations>"]
    if common is not None:
        lines.append(f"  <queueMaxAMShareDefault>{format_a(common)}</queueMaxAMShareDefault>")
    lines += emit(by_path["root"], "  ")
    return ("\n".join([*lines, "</allocations>"]) + "\n").encode()


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


def describe(queues_from: str, source: str | None) -> str:
    """Where the replay's queues came from (`Cluster.queues_from`), for people."""
    return {
        "file": f"the queues of {source}",
        "rm-store": f"the queues of the RM's configuration store ({source})",
        "rm": f"the queues the RM reports ({source})",
    }.get(queues_from, "a default leaf per queue")


def report_fields(cluster: Cluster, flags: argparse.Namespace) -> dict[str, Any]:
    """What the JSON report says of where the queues and the cluster's shape came from."""
    own = (flags.nodes, flags.node_memory_mb, flags.node_vcores)
    shape = "flags" if any(own) else "rm" if cluster.shape else "trace"
    return {
        "scheduler_file": cluster.source,
        "queues_from": cluster.queues_from,
        "shape_from": shape,
        "notes": list(cluster.notes),
    }
