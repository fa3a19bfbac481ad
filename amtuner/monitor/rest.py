"""Turn the RM's REST answers into an `Observation`, or refuse them with a reason.

Two documents make one observation: ``/ws/v1/cluster/metrics`` (P, R, memory and vcores of the
whole cluster) and ``/ws/v1/cluster/scheduler`` (the queue tree, with the measured AM memory where
the RM reports it). Neither grows with the number of applications, unlike ``/ws/v1/cluster/apps``.

Choices, with the reasons (yarn-facts §1.5, §3):

* P is the cluster metric ``appsPending`` and R is ``appsRunning``. An app moves from pending to
  running when its AM container is allocated, so P counts both the apps the AM limit holds back
  and the admitted apps still waiting for an AM container. The CS-only ``numPendingApplications``
  sum would see only the first kind and has no FairScheduler or web UI counterpart; the
  cluster metric is the same figure under both schedulers and in the web UI fallback, so the
  controller sees one meaning whatever the source.
* Per leaf queue, pending/running are what the scheduler itself reports there: CS
  ``numPendingApplications``/``numActiveApplications`` (held back by the AM limit / activated),
  FS ``numPendingApps``/``numActiveApps``.
* The measured AM memory is CS ``usedAMResource`` (2.7+) or else the default partition's
  ``amUsed`` (3.x per-partition block), FS ``amUsedResources`` (2.9+), summed over leaf queues.
  The sum is reported only when every leaf reports it: a partial sum would understate the AMs.
* A queue's memory share is CS ``maxEffectiveCapacity`` (3.x), else the default partition's
  ``effectiveMaxResource``, else ``absoluteMaxCapacity`` x ``totalMB``: how far the queue can grow
  now. FS uses ``fairResources`` (the instantaneous fair share, which is what maxAMShare scales).
* A queue's asks are CS ``pending`` in the default partition, FS ``demandResources`` less
  ``usedResources`` (``FSLeafQueue.updateDemand``: what the apps hold plus what they ask for,
  capped at the queue's maximum): what the cluster's ``pendingMB`` is for the whole cluster.
* Leaf queues: a queue with children is a parent whatever its ``type`` says; a childless queue
  is a leaf when its ``type`` says so or it carries the leaf counters. A childless entry with
  neither is an empty parent (FS ``type="parent"`` queues) and holds no figures.
* Any missing or negative figure the observation needs refuses the whole response: a partial
  observation could make the controller act on numbers the RM never reported.
* Why apps wait (`amtuner.monitor.waits`) is read from the same document: CS ``maxParallelApps``
  and ``numApplications`` (3.4+: the apps ``max-parallel-apps`` holds are in neither pending nor
  active), each waiting user's ``amLimit``/``amUsed`` (``users``), FS ``maxApps`` (a parent's
  too: every queue's ``maxRunningApps`` binds its leaves' apps, ``MaxRunningAppsEnforcer``).
* Node labels: a CS 3.x queue lists one entry per partition it can use in
  ``capacities.queueCapacitiesByPartition`` (``PartitionQueueCapacitiesInfo``, with
  ``maxAMLimitPercentage``) and ``resources.resourceUsagesByPartition``
  (``PartitionResourcesInfo``, with ``amUsed`` and ``amLimit``, ``pending``; each user's too).
  The default ("") partition's figures are the leaf's, as the cluster's metrics are; a leaf
  whose AMs go to a labelled partition (its ``defaultNodeLabelExpression``, else the one
  labelled partition holding its AMs while the default holds none) carries that partition's
  beside them (`QueueStats.am_partition`); every labelled partition's name is reported
  (`Observation.labelled_partitions`) so that `check` and `status` can say which are not
  tuned (``maximum-am-resource-percent`` per label is a separate key,
  ``accessible-node-labels.<label>.maximum-am-resource-percent``, a ``leaf@label`` target).

The leaves are read by `amtuner.monitor.restqueues` (a CapacityScheduler's, and what both
schedulers' trees share) and `amtuner.monitor.restfair`; this module reads the cluster's metrics
and puts the observation together.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from amtuner.model import GLOBAL_TARGET, Observation, QueueStats, SchedulerKind, split_target
from amtuner.monitor.fields import ObservationError, _bad, _count, _obj, _opt_count
from amtuner.monitor.restfair import fs_leaves
from amtuner.monitor.restqueues import _SCHEDULER_TYPES, cs_leaves, labelled_partitions
from amtuner.monitor.waits import classify

# Below an RM's REST base (``http://rm:8088/ws/v1``, or a gateway's path for it: `RMEndpoint`).
METRICS_PATH = "/cluster/metrics"
SCHEDULER_PATH = "/cluster/scheduler"
INFO_PATH = "/cluster/info"
UNFINISHED_APPS_PATH = "/cluster/apps?states=ACCEPTED,RUNNING"
"""Read only where a FairScheduler's users' running-apps limits may hold apps, or an AM limit
holds some (`amtuner.monitor.idle`): unlike the others, it grows with the apps."""


def decode_json(body: bytes | str, content_type: str, url: str) -> Any:
    """Parse a JSON body, naming what came instead: login pages and XML are common mistakes."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    head = text.lstrip()[:200].lower()
    ctype = content_type.lower()
    if "html" in ctype or head.startswith(("<!doctype html", "<html")):
        raise _bad(
            f"{url} answered an HTML page where JSON was expected "
            "(a login page of a gateway such as Knox, or SPNEGO not configured?)"
        )
    if "xml" in ctype or head.startswith("<"):
        raise _bad(f"{url} answered XML where JSON was expected (Accept header ignored?)")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise _bad(f"{url} answered a body that is not valid JSON ({exc}; truncated?)") from exc
    except RecursionError as exc:
        raise _bad(f"{url} answered JSON nested deeper than Python can read") from exc


@dataclass(frozen=True, slots=True)
class ClusterMetrics:
    pending_apps: int
    running_apps: int
    memory_used_mb: int
    memory_total_mb: int
    vcores_used: int
    vcores_total: int
    containers: int | None = None
    memory_pending_mb: int | None = None
    memory_reserved_mb: int | None = None


MAX_CLUSTER_MB = 2**40
"""An exabyte of memory: more than any YARN cluster holds (the largest run some 10^4 nodes of
well under a terabyte each)."""


def refuse_implausible(m: ClusterMetrics, where: str) -> None:
    """Refuse memory figures no RM could report: the scheduler allocates only what its nodes
    hold, so these come from a broken or hostile answer, and a controller acting on them would
    move A for nothing. Not vcores: a CapacityScheduler with the default resource calculator
    counts one per container whatever the nodes have, so its used vcores can pass the total."""
    if m.memory_total_mb > MAX_CLUSTER_MB:
        raise _bad(f"{where}: total memory {m.memory_total_mb} MB is more than any cluster holds")
    if m.memory_used_mb > m.memory_total_mb:
        raise _bad(
            f"{where}: memory used {m.memory_used_mb} MB is more than the total "
            f"{m.memory_total_mb} MB"
        )


def parse_metrics(doc: Any, url: str = "metrics") -> ClusterMetrics:
    """Read ``{"clusterMetrics": {…}}``; refuses missing/negative figures and a zero total."""
    m = _obj(doc, "clusterMetrics", url)
    where = f"{url} clusterMetrics"
    total = _count(m, "totalMB", where)
    metrics = ClusterMetrics(
        pending_apps=_count(m, "appsPending", where),
        running_apps=_count(m, "appsRunning", where),
        memory_used_mb=_count(m, "allocatedMB", where),
        memory_total_mb=total,
        # vcores are not in 2.4: absent means unknown (0), and the policies count memory alone.
        vcores_used=_opt_count(m, "allocatedVirtualCores", where) or 0,
        vcores_total=_opt_count(m, "totalVirtualCores", where) or 0,
        containers=_opt_count(m, "containersAllocated", where),
        memory_pending_mb=_opt_count(m, "pendingMB", where),
        memory_reserved_mb=_opt_count(m, "reservedMB", where),
    )
    if total == 0:
        raise ObservationError(
            "zero-total",
            f"{where}: totalMB is 0 (no NodeManager registered yet?): memory ratio undefined",
        )
    refuse_implausible(metrics, where)
    return metrics


def scheduler_kind_of(doc: Any, url: str = "scheduler") -> SchedulerKind:
    info = _obj(_obj(doc, "scheduler", url), "schedulerInfo", f"{url} scheduler")
    kind = info.get("type")
    if kind == "fifoScheduler":
        raise _bad(f"{url}: the RM runs the FifoScheduler, which has no AM share to tune")
    if not isinstance(kind, str) or kind not in _SCHEDULER_TYPES:
        raise _bad(
            f"{url}: unknown scheduler type {kind!r} (expected capacityScheduler or fairScheduler)"
        )
    return _SCHEDULER_TYPES[kind]


def parse_scheduler(
    doc: Any, metrics: ClusterMetrics, url: str = "scheduler"
) -> tuple[SchedulerKind, tuple[QueueStats, ...]]:
    """The scheduler kind and every leaf queue of ``{"scheduler": {"schedulerInfo": …}}``."""
    kind = scheduler_kind_of(doc, url)
    info = doc["scheduler"]["schedulerInfo"]
    if kind is SchedulerKind.CAPACITY:
        leaves = tuple(cs_leaves(info, "", metrics.memory_total_mb, metrics.vcores_total))
    else:
        leaves = tuple(fs_leaves(_obj(info, "rootQueue", f"{url} schedulerInfo")))
    if not leaves:
        raise _bad(f"{url}: the scheduler response lists no leaf queue")
    return kind, leaves


def check_targets(targets: Sequence[str], leaves: Sequence[QueueStats], source: str) -> None:
    names = {q.name for q in leaves}
    for target in targets:
        if target != GLOBAL_TARGET and split_target(target)[0] not in names:
            raise ObservationError(
                "unknown-queue",
                f"target queue {target!r} is not a leaf queue of the RM at {source} "
                f"(leaf queues: {', '.join(sorted(names))})",
            )


def build_observation(
    metrics_doc: Any,
    scheduler_doc: Any,
    *,
    time: float,
    source: str,
    targets: Sequence[str] = (),
) -> Observation:
    """One observation from the two documents; raises ObservationError, never returns a part."""
    metrics = parse_metrics(metrics_doc, source)
    kind, leaves = parse_scheduler(scheduler_doc, metrics, source)
    check_targets(targets, leaves, source)
    am_values = [q.am_memory_used_mb for q in leaves]
    am_total = None if any(v is None for v in am_values) else sum(v for v in am_values if v)
    obs = Observation(
        time=time,
        scheduler=kind,
        pending_apps=metrics.pending_apps,
        running_apps=metrics.running_apps,
        memory_used_mb=metrics.memory_used_mb,
        memory_total_mb=metrics.memory_total_mb,
        vcores_used=metrics.vcores_used,
        vcores_total=metrics.vcores_total,
        am_memory_used_mb=am_total,
        queues=leaves,
        containers=metrics.containers,
        memory_pending_mb=metrics.memory_pending_mb,
        memory_reserved_mb=metrics.memory_reserved_mb,
        source=source,
        labelled_partitions=(
            labelled_partitions(scheduler_doc["scheduler"]["schedulerInfo"], source)
            if kind is SchedulerKind.CAPACITY
            else ()
        ),
    )
    return classify(obs)
