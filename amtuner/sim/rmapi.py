"""The simulated RM's face: a snapshot rendered as a real ResourceManager's REST API and web UI.

The rendering functions are pure (a `ClusterView` / `AppView` in, JSON-ready dicts or HTML out)
so they can be checked field by field against real RM responses. `handle` dispatches one HTTP
request; the HTTP server (`server.py`) and the in-process requests adapter (`adapter.py`) both
call it, holding their lock around it, so a monitor sees the same bytes either way.

Shapes follow Hadoop 3.x (yarn-facts §3): Jersey's "natural" JSON with a root wrapper, lists
nested as ``{"queue": [...]}``. Where versions differ:

* FairScheduler ``childQueues`` uses the 3.x shape ``{"queue": [...]}`` (2.x emitted a bare list);
  leaves omit it, as the RM does.
* ``/ws/v1/cluster/apps`` with no matching app answers ``{"apps": null}``, as the RM does.
* Web UI layout 2 is the 2.8–3.3.0 "Cluster Metrics" table (memory via byteDesc, node columns in
  a second table); layout 3 is the 3.4 one (``Used/Total/Reserved Resources`` cells as
  ``<memory:8 GB, vCores:8>``). ``clusterInfo.resourceManagerVersion`` matches the layout.
* ``GET /ws/v1/cluster/scheduler-conf`` answers JSON unless the client accepts only XML.
  ``PUT`` takes the documented XML body (``sched-conf``); JSON bodies are refused with 415.

One endpoint is the simulator's own, standing in for ``yarn rmadmin -refreshQueues`` (the admin
RPC has no HTTP equivalent): ``POST /ws/v1/cluster/sim/refresh-queues`` re-reads the scheduler
file from disk. CapacityScheduler: a bad file answers 400 with the reason and the old
configuration stays. FairScheduler: like the real RM it logs the failure and still answers 200
(yarn-facts §2.3). With a mutable configuration store it is refused, as the RM refuses
refreshQueues then (§3.5).
"""

from __future__ import annotations

import html
import json
import logging
import xml.etree.ElementTree as ET
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import parse_qs, urlsplit

from amtuner.model import SchedulerKind
from amtuner.sim.simulation import CLUSTER_TIMESTAMP
from amtuner.sim.view import AppView, ClusterView, QueueView, Res

log = logging.getLogger(__name__)

JSON_TYPE = "application/json;charset=utf-8"
XML_TYPE = "application/xml;charset=utf-8"
TEXT_TYPE = "text/plain;charset=utf-8"
HTML_TYPE = "text/html;charset=utf-8"

DEFAULT_APPS_LIMIT = 1000
"""A real RM returns every app when no limit is given; the sim bounds the answer instead."""

APP_STATES = (
    "NEW",
    "NEW_SAVING",
    "SUBMITTED",
    "ACCEPTED",
    "RUNNING",
    "FINISHED",
    "FAILED",
    "KILLED",
)
NOT_MUTABLE = "Configuration change only supported by MutableConfScheduler."
MUTABLE_NO_REFRESH = (
    "Scheduler configuration is mutable. refreshQueues is not allowed in this scenario."
)
CS_PREFIX = "yarn.scheduler.capacity."
REFRESH_PATH = "/ws/v1/cluster/sim/refresh-queues"

WebUILayout = Literal[2, 3]


class SimLike(Protocol):
    """What the face needs of a simulation (`amtuner.sim.simulation.Simulation` provides it)."""

    scheduler_kind: SchedulerKind

    def view(self) -> ClusterView: ...

    def app_views(
        self, states: Collection[str] | None = None, limit: int | None = None
    ) -> list[AppView]: ...

    def scheduler_config(self) -> bytes: ...

    def reload_scheduler_config(self, data: bytes) -> None: ...


@dataclass(frozen=True, slots=True)
class FaceOptions:
    """How this RM presents itself; none of it changes the simulation."""

    web_ui_layout: WebUILayout = 3
    mutable_conf: bool = False
    """CapacityScheduler with a mutable configuration store (scheduler-conf API on)."""
    standby_of: str | None = None
    """Base URL of the active RM; set, this RM is a standby that redirects there."""
    started_on_ms: int = CLUSTER_TIMESTAMP
    """Epoch ms that simulated time 0 stands for (startedOn, app times); by default the
    timestamp in the simulation's application ids, so the cluster id matches them."""
    scheduler_config_path: Path | None = None
    """The file the refresh endpoint re-reads."""
    apps_limit: int = DEFAULT_APPS_LIMIT

    @property
    def rm_version(self) -> str:
        return "3.3.0" if self.web_ui_layout == 2 else "3.4.1"


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


# ---------------------------------------------------------------------------------------------
# REST rendering (pure)


def _res(r: Res) -> dict[str, int]:
    return {"memory": r.memory_mb, "vCores": r.vcores}


def _pct(part: float, whole: float) -> float:
    return part / whole * 100.0 if whole > 0 else 0.0


def _scale(total: Res, fraction: float) -> Res:
    return Res(int(total.memory_mb * fraction), int(total.vcores * fraction))


def cluster_info(view: ClusterView, options: FaceOptions) -> dict[str, Any]:
    version = options.rm_version
    build = f"{version} from simulated by amtuner source checksum 0"
    return {
        "clusterInfo": {
            "id": options.started_on_ms,
            "startedOn": options.started_on_ms,
            "state": "STARTED",
            "haState": "STANDBY" if options.standby_of else "ACTIVE",
            "rmStateStoreName": (
                "org.apache.hadoop.yarn.server.resourcemanager.recovery.NullRMStateStore"
            ),
            "resourceManagerVersion": version,
            "resourceManagerBuildVersion": build,
            "resourceManagerVersionBuiltOn": "2024-01-01T00:00Z",
            "hadoopVersion": version,
            "hadoopBuildVersion": build,
            "hadoopVersionBuiltOn": "2024-01-01T00:00Z",
            "haZooKeeperConnectionState": (
                "CONNECTED" if options.standby_of else "ResourceManager HA is not enabled."
            ),
        }
    }


def cluster_metrics(view: ClusterView) -> dict[str, Any]:
    """Root-queue metrics; ``totalMB = available + allocated (+ reserved with CS)`` (§3.2)."""
    total, alloc, rsv = view.total, view.allocated, view.reserved
    if view.scheduler == "capacity":
        avail = Res(
            total.memory_mb - alloc.memory_mb - rsv.memory_mb,
            total.vcores - alloc.vcores - rsv.vcores,
        )
    else:
        avail = Res(total.memory_mb - alloc.memory_mb, total.vcores - alloc.vcores)
    leaves = [q for q in view.queues if q.is_leaf]
    pending_mem = sum(max(0, q.demand.memory_mb - q.used.memory_mb) for q in leaves)
    pending_vc = sum(max(0, q.demand.vcores - q.used.vcores) for q in leaves)
    return {
        "clusterMetrics": {
            "appsSubmitted": view.apps_submitted,
            "appsCompleted": view.apps_completed,
            "appsPending": view.apps_pending,
            "appsRunning": view.apps_running,
            "appsFailed": view.apps_failed,
            "appsKilled": view.apps_killed,
            "reservedMB": rsv.memory_mb,
            "availableMB": avail.memory_mb,
            "allocatedMB": alloc.memory_mb,
            "pendingMB": pending_mem,
            "reservedVirtualCores": rsv.vcores,
            "availableVirtualCores": avail.vcores,
            "allocatedVirtualCores": alloc.vcores,
            "pendingVirtualCores": pending_vc,
            "containersAllocated": view.containers_allocated,
            "containersReserved": 0,
            "containersPending": view.containers_pending,
            "totalMB": total.memory_mb,
            "totalVirtualCores": total.vcores,
            "utilizedMBPercent": round(_pct(alloc.memory_mb, total.memory_mb)),
            "utilizedVirtualCoresPercent": round(_pct(alloc.vcores, total.vcores)),
            "rmSchedulerBusyPercent": -1,
            "totalNodes": view.active_nodes,
            "lostNodes": 0,
            "unhealthyNodes": 0,
            "decommissioningNodes": 0,
            "decommissionedNodes": 0,
            "rebootedNodes": 0,
            "activeNodes": view.active_nodes,
            "shutdownNodes": 0,
            "totalUsedResourcesAcrossPartition": _res(alloc),
            "totalClusterResourcesAcrossPartition": _res(total),
            "totalReservedResourcesAcrossPartition": _res(rsv),
            "totalAllocatedContainersAcrossPartition": view.containers_allocated,
            "crossPartitionMetricsAvailable": view.scheduler == "capacity",
        }
    }


def _by_path(view: ClusterView) -> dict[str, QueueView]:
    return {q.path: q for q in view.queues}


def _cs_queue(q: QueueView, by_path: Mapping[str, QueueView], view: ClusterView) -> dict[str, Any]:
    """One CS queue (`CapacitySchedulerQueueInfo`); capacities in percent as the RM prints them."""
    total = view.total
    guaranteed = _scale(total, q.absolute_capacity)
    eff_max = _scale(total, q.absolute_max_capacity)
    pending_res = Res(
        max(0, q.demand.memory_mb - q.used.memory_mb), max(0, q.demand.vcores - q.used.vcores)
    )
    capacities = {
        "partitionName": "",
        "capacity": q.capacity * 100,
        "usedCapacity": _pct(q.used.memory_mb, guaranteed.memory_mb),
        "maxCapacity": q.maximum_capacity * 100,
        "absoluteCapacity": q.absolute_capacity * 100,
        "absoluteUsedCapacity": _pct(q.used.memory_mb, total.memory_mb),
        "absoluteMaxCapacity": q.absolute_max_capacity * 100,
        "maxAMLimitPercentage": q.max_am_percent * 100,
        "effectiveMinResource": _res(guaranteed),
        "effectiveMaxResource": _res(eff_max),
    }
    usages = {
        "partitionName": "",
        "used": _res(q.used),
        "reserved": _res(Res()),
        "pending": _res(pending_res),
        "amUsed": _res(q.am_used),
        "amLimit": _res(q.am_limit),
        "userAmLimit": _res(q.am_limit if q.is_leaf else Res()),
    }
    out: dict[str, Any] = {}
    if q.is_leaf:
        out["type"] = "capacitySchedulerLeafQueueInfo"
    out |= {
        "queuePath": q.path,
        "capacity": capacities["capacity"],
        "usedCapacity": capacities["usedCapacity"],
        "maxCapacity": capacities["maxCapacity"],
        "absoluteCapacity": capacities["absoluteCapacity"],
        "absoluteMaxCapacity": capacities["absoluteMaxCapacity"],
        "absoluteUsedCapacity": capacities["absoluteUsedCapacity"],
        "numApplications": q.num_pending_apps + q.num_active_apps,
        "queueName": q.path.rsplit(".", 1)[-1],
        "state": "RUNNING",
        "resourcesUsed": _res(q.used),
        "hideReservationQueues": False,
        "nodeLabels": ["*"],
        "allocatedContainers": q.allocated_containers,
        "reservedContainers": 0,
        "pendingContainers": q.pending_containers,
        "capacities": {"queueCapacitiesByPartition": [capacities]},
        "resources": {"resourceUsagesByPartition": [usages]},
        "minEffectiveCapacity": _res(guaranteed),
        "maxEffectiveCapacity": _res(eff_max),
        "maximumAllocation": _res(view.maximum_allocation),
        "queuePriority": 0,
        "orderingPolicyInfo": "fifo" if q.is_leaf else "utilization",
    }
    if not q.is_leaf:
        out["queues"] = {"queue": [_cs_queue(by_path[c], by_path, view) for c in q.children]}
        return out
    out |= {
        "numActiveApplications": q.num_active_apps,
        "numPendingApplications": q.num_pending_apps,
        "numContainers": q.allocated_containers,
        "maxApplications": q.max_apps,
        "maxApplicationsPerUser": q.max_apps,
        "userLimit": 100.0,
        "users": {},
        "userLimitFactor": 1.0,
        "configuredMaxAMResourceLimit": q.max_am_percent,
        "AMResourceLimit": _res(q.am_limit),
        "usedAMResource": _res(q.am_used),
        "userAMResourceLimit": _res(q.am_limit),
        "preemptionDisabled": True,
        "intraQueuePreemptionDisabled": True,
        "defaultPriority": 0,
        "isAutoCreatedLeafQueue": False,
        "maxApplicationLifetime": -1,
        "defaultApplicationLifetime": -1,
    }
    return out


def _fs_queue(q: QueueView, by_path: Mapping[str, QueueView], view: ClusterView) -> dict[str, Any]:
    """One FS queue (`FairSchedulerQueueInfo`); ``maxResources`` clamped to the cluster."""
    total = view.total
    max_res = q.max_resources if q.max_resources.memory_mb > 0 else total
    out: dict[str, Any] = {}
    if q.is_leaf:
        out["type"] = "fairSchedulerLeafQueueInfo"
    out |= {
        "maxApps": q.max_apps,
        "minResources": _res(q.min_resources),
        "maxResources": _res(
            Res(min(max_res.memory_mb, total.memory_mb), min(max_res.vcores, total.vcores))
        ),
        "usedResources": _res(q.used),
        "amUsedResources": _res(q.am_used),
        "amMaxResources": _res(q.am_limit),
        "demandResources": _res(q.demand),
        "steadyFairResources": _res(q.steady_fair_share),
        "fairResources": _res(q.fair_share),
        "clusterResources": _res(total),
        "reservedResources": _res(Res()),
        "maxContainerAllocation": _res(view.maximum_allocation),
        "pendingContainers": q.pending_containers,
        "allocatedContainers": q.allocated_containers,
        "reservedContainers": 0,
        "queueName": q.path,
        "schedulingPolicy": q.scheduling_policy,
        "preemptable": True,
    }
    if q.is_leaf:
        out["numPendingApps"] = q.num_pending_apps
        out["numActiveApps"] = q.num_active_apps
    else:
        out["childQueues"] = {"queue": [_fs_queue(by_path[c], by_path, view) for c in q.children]}
    return out


def scheduler_info(view: ClusterView) -> dict[str, Any]:
    by_path = _by_path(view)
    root = by_path["root"]
    if view.scheduler == "fair":
        info: dict[str, Any] = {
            "type": "fairScheduler",
            "rootQueue": _fs_queue(root, by_path, view),
        }
        return {"scheduler": {"schedulerInfo": info}}
    rendered = _cs_queue(root, by_path, view)
    info = {
        "type": "capacityScheduler",
        "capacity": 100.0,
        "usedCapacity": _pct(root.used.memory_mb, view.total.memory_mb),
        "maxCapacity": 100.0,
        "queueName": "root",
        "queuePath": "root",
        "queues": rendered["queues"],
        "capacities": rendered["capacities"],
        "maximumAllocation": _res(view.maximum_allocation),
        "queuePriority": 0,
        "orderingPolicyInfo": "utilization",
    }
    return {"scheduler": {"schedulerInfo": info}}


_FINAL_STATUS = {"FINISHED": "SUCCEEDED", "FAILED": "FAILED", "KILLED": "KILLED"}


def app_info(app: AppView, view: ClusterView, options: FaceOptions) -> dict[str, Any]:
    """One `AppInfo`. RM ``startedTime`` is the submission time; ``launchTime`` the AM start."""

    def ms(t: float | None) -> int:
        return 0 if t is None else options.started_on_ms + round(t * 1000)

    end = app.finished_s if app.finished_s is not None else view.now_s
    finished = app.finished_s is not None
    tracking_ui = "History" if finished else "ApplicationMaster" if app.started_s else "UNASSIGNED"
    return {
        "id": app.app_id,
        "user": app.user,
        "name": app.name,
        "queue": app.queue,
        "state": app.state,
        "finalStatus": _FINAL_STATUS.get(app.state, "UNDEFINED"),
        "progress": app.progress,
        "trackingUI": tracking_ui,
        "trackingUrl": f"http://localhost:8088/proxy/{app.app_id}/",
        "diagnostics": "",
        "clusterId": options.started_on_ms,
        "applicationType": "MAPREDUCE",
        "applicationTags": "",
        "priority": 0,
        "startedTime": ms(app.submitted_s),
        "launchTime": ms(app.started_s),
        "finishedTime": ms(app.finished_s),
        "elapsedTime": max(0, round((end - app.submitted_s) * 1000)),
        "allocatedMB": app.allocated.memory_mb,
        "allocatedVCores": app.allocated.vcores,
        "reservedMB": 0,
        "reservedVCores": 0,
        "runningContainers": app.running_containers,
        "queueUsagePercentage": 0.0,
        "clusterUsagePercentage": _pct(app.allocated.memory_mb, view.total.memory_mb),
        "numNonAMContainerPreempted": 0,
        "numAMContainerPreempted": 0,
        "logAggregationStatus": "DISABLED",
        "unmanagedApplication": False,
        "amNodeLabelExpression": "",
    }


def apps_info(apps: list[AppView], view: ClusterView, options: FaceOptions) -> dict[str, Any]:
    if not apps:
        return {"apps": None}
    return {"apps": {"app": [app_info(a, view, options) for a in apps]}}


# ---------------------------------------------------------------------------------------------
# Web UI (pure)


_PREFIXES = ((60, "E"), (50, "P"), (40, "T"), (30, "G"), (20, "M"), (10, "K"))


def byte_desc(n: int) -> str:
    """Hadoop `StringUtils.byteDesc` (TraditionalBinaryPrefix.long2String(n, "B", 2))."""
    sign, n = ("-", -n) if n < 0 else ("", n)
    for i, (shift, letter) in enumerate(_PREFIXES):
        if n >= 1 << shift:
            if n & ((1 << shift) - 1) == 0:
                return f"{sign}{n >> shift} {letter}B"
            s = f"{n / (1 << shift):.2f}"
            if s.startswith("1024") and i > 0:
                shift, letter = _PREFIXES[i - 1]
                s = f"{n / (1 << shift):.2f}"
            return f"{sign}{s} {letter}B"
    return f"{sign}{n} B"


def _mb_desc(mb: int) -> str:
    return byte_desc(mb * 1024 * 1024)


def _res_str(r: Res) -> str:
    """3.4's ``Resource.getFormattedString()``."""
    return f"<memory:{_mb_desc(r.memory_mb)}, vCores:{r.vcores}>"


def _table(title: str, table_id: str, headers: list[str], cells: list[str]) -> str:
    ths = "".join(f'<th class="ui-state-default">{html.escape(h)}</th>' for h in headers)
    tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
    return (
        f"<h3>{html.escape(title)}</h3>\n"
        f'<table id="{table_id}">\n<thead class="ui-widget-header"><tr>{ths}</tr></thead>\n'
        f'<tbody class="ui-widget-content"><tr>{tds}</tr></tbody>\n</table>\n'
    )


def metrics_overview(view: ClusterView, layout: WebUILayout) -> str:
    """The "Cluster Metrics" block of `MetricsOverviewTable` in the chosen layout (§5)."""
    m = cluster_metrics(view)["clusterMetrics"]
    head = [
        "Apps Submitted",
        "Apps Pending",
        "Apps Running",
        "Apps Completed",
        "Containers Running",
    ]
    cells = [
        str(m["appsSubmitted"]),
        str(m["appsPending"]),
        str(m["appsRunning"]),
        str(m["appsCompleted"] + m["appsFailed"] + m["appsKilled"]),
        str(m["containersAllocated"]),
    ]
    if layout == 2:
        head += [
            "Memory Used",
            "Memory Total",
            "Memory Reserved",
            "VCores Used",
            "VCores Total",
            "VCores Reserved",
        ]
        cells += [
            _mb_desc(m["allocatedMB"]),
            _mb_desc(m["totalMB"]),
            _mb_desc(m["reservedMB"]),
            str(m["allocatedVirtualCores"]),
            str(m["totalVirtualCores"]),
            str(m["reservedVirtualCores"]),
        ]
    else:
        head += [
            "Used Resources",
            "Total Resources",
            "Reserved Resources",
            "Physical Mem Used %",
            "Physical VCores Used %",
        ]
        cells += [
            _res_str(view.allocated),
            _res_str(view.total),
            _res_str(view.reserved),
            str(m["utilizedMBPercent"]),
            str(m["utilizedVirtualCoresPercent"]),
        ]
    nodes_head = [
        "Active Nodes",
        "Decommissioning Nodes",
        "Decommissioned Nodes",
        "Lost Nodes",
        "Unhealthy Nodes",
        "Rebooted Nodes",
        "Shutdown Nodes",
    ]
    nodes = [str(m["activeNodes"]), "0", "0", "0", "0", "0", "0"]
    sched_type = "Capacity Scheduler" if view.scheduler == "capacity" else "Fair Scheduler"
    sched_head = [
        "Scheduler Type",
        "Scheduling Resource Type",
        "Minimum Allocation",
        "Maximum Allocation",
        "Maximum Cluster Application Priority",
    ]
    lo, hi = view.minimum_allocation, view.maximum_allocation
    sched = [
        sched_type,
        "[memory-mb (unit=Mi), vcores]",
        f"<memory:{lo.memory_mb}, vCores:{lo.vcores}>",
        f"<memory:{hi.memory_mb}, vCores:{hi.vcores}>",
        "0",
    ]
    return (
        '<div class="metrics">\n'
        + _table("Cluster Metrics", "metricsoverview", head, cells)
        + _table("Cluster Nodes Metrics", "nodemetricsoverview", nodes_head, nodes)
        + _table("Scheduler Metrics", "schedulermetricsoverview", sched_head, sched)
        + "</div>\n"
    )


def cluster_page(view: ClusterView, options: FaceOptions, *, about: bool = False) -> str:
    """``/cluster`` (apps page) or ``/cluster/cluster`` (About, with the "Cluster overview")."""
    body = metrics_overview(view, options.web_ui_layout)
    if about:
        info = cluster_info(view, options)["clusterInfo"]
        rows = [
            ("Cluster ID:", str(info["id"])),
            ("ResourceManager state:", info["state"]),
            ("ResourceManager HA state:", info["haState"]),
            ("ResourceManager HA zookeeper connection state:", info["haZooKeeperConnectionState"]),
            ("ResourceManager RMStateStore:", info["rmStateStoreName"]),
            ("ResourceManager started on:", str(info["startedOn"])),
            ("ResourceManager version:", info["resourceManagerBuildVersion"]),
            ("Hadoop version:", info["hadoopBuildVersion"]),
        ]
        trs = "".join(
            f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows
        )
        body += (
            '<div class="info-wrap"><table class="info"><thead><tr><th colspan="2">'
            f"Cluster overview</th></tr></thead><tbody>{trs}</tbody></table></div>\n"
        )
        title = "About the Cluster"
    else:
        title = "All Applications"
    return (
        '<!DOCTYPE html>\n<html>\n<head><meta charset="utf-8">'
        f'<title>{title}</title></head>\n<body>\n<div id="layout">\n{body}</div>\n'
        "</body>\n</html>\n"
    )


# ---------------------------------------------------------------------------------------------
# Scheduler configuration mutation (§3.5)


class ConfUpdateError(ValueError):
    """An invalid ``sched-conf`` body or change; the message is what the RM's 400 says."""


def _parse_xml(data: bytes, what: str) -> ET.Element:
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ConfUpdateError(f"{what}: DOCTYPE/ENTITY declarations are not accepted")
    try:
        return ET.fromstring(data)
    except ET.ParseError as e:
        raise ConfUpdateError(f"{what}: malformed XML: {e}") from e


def conf_properties(config: bytes) -> list[tuple[str, str]]:
    """``(name, value)`` of each ``<property>`` of a Hadoop configuration file, in file order."""
    root = _parse_xml(config, "scheduler configuration")
    return [
        ((p.findtext("name") or "").strip(), (p.findtext("value") or "").strip())
        for p in root.iter("property")
    ]


def conf_document(props: list[tuple[str, str]], accept: str) -> Response:
    """The GET answer: ``{"property": [{name, value}]}`` or ``<configuration>`` XML."""
    if "xml" in accept and "json" not in accept:
        root = ET.Element("configuration")
        for name, value in props:
            p = ET.SubElement(root, "property")
            ET.SubElement(p, "name").text = name
            ET.SubElement(p, "value").text = value
        ET.indent(root)
        body = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' + ET.tostring(root)
        return Response(200, {"Content-Type": XML_TYPE}, body)
    doc = {"property": [{"name": n, "value": v} for n, v in props]}
    return _json(200, doc)


def _entries(parent: ET.Element | None) -> list[tuple[str, str | None]]:
    """JAXB map entries; an empty ``<value/>`` removes the key, as in the RM."""
    if parent is None:
        return []
    out: list[tuple[str, str | None]] = []
    for e in parent.iter("entry"):
        key = (e.findtext("key") or "").strip()
        if not key:
            raise ConfUpdateError("entry without a key")
        value = e.findtext("value")
        out.append((key, value.strip() if value and value.strip() else None))
    return out


def _queue_name(el: ET.Element) -> str:
    name = (el.findtext("queue-name") or "").strip()
    if not name.startswith("root"):
        raise ConfUpdateError(f"queue-name must be a full queue path, got {name!r}")
    return name


def apply_sched_conf(config: bytes, body: bytes) -> bytes:
    """A ``sched-conf`` update applied to a capacity-scheduler.xml, in the RM's order:
    remove-queue, add-queue, update-queue, global-updates. Queue keys are relative to
    ``yarn.scheduler.capacity.<queue>.``; global keys are full."""
    update = _parse_xml(body, "sched-conf")
    if update.tag != "sched-conf":
        raise ConfUpdateError(f"root element must be sched-conf, got {update.tag}")
    conf = _parse_xml(config, "scheduler configuration")
    props = {(p.findtext("name") or "").strip(): p for p in conf.iter("property")}

    def get(key: str) -> str | None:
        p = props.get(key)
        return None if p is None else (p.findtext("value") or "").strip()

    def put(key: str, value: str | None) -> None:
        p = props.get(key)
        if value is None:
            if p is not None:
                conf.remove(p)
                del props[key]
            return
        if p is None:
            p = ET.SubElement(conf, "property")
            ET.SubElement(p, "name").text = key
            ET.SubElement(p, "value")
            props[key] = p
        v = p.find("value")
        if v is None:
            v = ET.SubElement(p, "value")
        v.text = value

    def children(parent: str) -> list[str]:
        raw = get(f"{CS_PREFIX}{parent}.queues") or ""
        return [c.strip() for c in raw.split(",") if c.strip()]

    def exists(path: str) -> bool:
        parent, _, leaf = path.rpartition(".")
        return path == "root" or (bool(parent) and leaf in children(parent))

    for el in update.findall("remove-queue"):
        path = (el.text or "").strip()
        if path == "root" or not exists(path):
            raise ConfUpdateError(f"Queue {path} not found or cannot be removed")
        parent, _, leaf = path.rpartition(".")
        put(f"{CS_PREFIX}{parent}.queues", ",".join(c for c in children(parent) if c != leaf))
        for key in [k for k in props if k.startswith(f"{CS_PREFIX}{path}.")]:
            put(key, None)
    for el in update.findall("add-queue"):
        path = _queue_name(el)
        parent, _, leaf = path.rpartition(".")
        if exists(path):
            raise ConfUpdateError(f"Can't add existing queue {path}")
        if not exists(parent):
            raise ConfUpdateError(f"Can't add queue {path}: parent {parent} does not exist")
        put(f"{CS_PREFIX}{parent}.queues", ",".join([*children(parent), leaf]))
        for key, value in _entries(el.find("params")):
            put(f"{CS_PREFIX}{path}.{key}", value)
    for el in update.findall("update-queue"):
        path = _queue_name(el)
        if not exists(path):
            raise ConfUpdateError(f"Queue {path} not found")
        for key, value in _entries(el.find("params")):
            put(f"{CS_PREFIX}{path}.{key}", value)
    for el in update.findall("global-updates"):
        for key, value in _entries(el):
            put(key, value)
    ET.indent(conf)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(conf) + b"\n"


# ---------------------------------------------------------------------------------------------
# Dispatch


def _json(status: int, doc: object) -> Response:
    return Response(status, {"Content-Type": JSON_TYPE}, json.dumps(doc).encode())


def _text(status: int, text: str) -> Response:
    return Response(status, {"Content-Type": TEXT_TYPE}, text.encode())


def remote_exception(status: int, exception: str, message: str) -> Response:
    """The RM's error body (`RemoteExceptionData`)."""
    doc = {
        "RemoteException": {
            "exception": exception,
            "message": message,
            "javaClassName": f"org.apache.hadoop.yarn.webapp.{exception}",
        }
    }
    return _json(status, doc)


def _not_found(path: str) -> Response:
    return remote_exception(
        404, "NotFoundException", f"java.lang.Exception: Path not found: {path}"
    )


def _bad_request(message: str) -> Response:
    return remote_exception(400, "BadRequestException", message)


def _apps(sim: SimLike, query: Mapping[str, list[str]], options: FaceOptions) -> Response:
    states: set[str] = set()
    for raw in query.get("states", []) + query.get("state", []):
        states.update(s.strip().upper() for s in raw.split(",") if s.strip())
    bad = sorted(states - set(APP_STATES))
    if bad:
        return _bad_request(
            f"Invalid application-state {bad[0]} specified. It should be one of "
            + ", ".join(APP_STATES)
        )
    try:
        limit = int(query["limit"][0]) if "limit" in query else options.apps_limit
    except ValueError:
        return _bad_request(f"limit value must be a number: {query['limit'][0]}")
    if limit <= 0:
        return _bad_request("limit value must be greater then 0")  # sic, the RM's wording
    limit = min(limit, options.apps_limit)
    queue = query.get("queue", [None])[0]
    user = query.get("user", [None])[0]
    filtered = queue is not None or user is not None
    apps = sim.app_views(sorted(states) or None, None if filtered else limit)
    if filtered:
        apps = [
            a
            for a in apps
            if (queue is None or a.queue in (queue, f"root.{queue}"))
            and (user is None or a.user == user)
        ][:limit]
    return _json(200, apps_info(apps, sim.view(), options))


def _redirect(location_base: str, path_qs: str) -> Response:
    url = location_base.rstrip("/") + path_qs
    return Response(
        307,
        {"Location": url, "Content-Type": TEXT_TYPE},
        f"This is standby RM. The redirect url is: {url}".encode(),
    )


def _scheduler_conf(
    sim: SimLike,
    kind: str,
    method: str,
    body: bytes,
    headers: Mapping[str, str],
    options: FaceOptions,
) -> Response:
    if kind != "capacity" or not options.mutable_conf:
        return _text(400, NOT_MUTABLE)
    if method == "PUT" and "json" in headers.get("content-type", ""):
        return _text(415, "The simulated RM accepts sched-conf updates as application/xml only.")
    try:
        if method == "GET":
            props = conf_properties(sim.scheduler_config())
            return conf_document(props, headers.get("accept", ""))
        new = apply_sched_conf(sim.scheduler_config(), body)
        sim.reload_scheduler_config(new)
    except ValueError as e:  # ConfUpdateError, SchedulerConfigError
        log.warning("scheduler-conf update refused: %s", e)
        return _text(400, str(e))
    log.info("scheduler-conf update applied")
    return _text(200, "Configuration change successfully applied.")


def refresh_queues(sim: SimLike, kind: str, options: FaceOptions) -> Response:
    """The `yarn rmadmin -refreshQueues` stand-in (see the module docstring)."""
    if options.mutable_conf:
        return _text(400, MUTABLE_NO_REFRESH)
    path = options.scheduler_config_path
    if path is None:
        return _text(400, "This simulated RM has no scheduler configuration file to refresh.")
    try:
        data = path.read_bytes()
        sim.reload_scheduler_config(data)
    except (OSError, ValueError) as e:
        if kind == "fair":
            log.error("Failed to reload allocations file %s: %s", path, e)
            return _text(200, "Queues refreshed.")
        log.warning("refreshQueues failed, keeping the previous configuration: %s", e)
        return _text(400, f"Failed to re-init queues : {e}")
    log.info("refreshQueues: reloaded %s", path)
    return _text(200, "Queues refreshed.")


_ROUTES: dict[str, str] = {
    "/ws/v1/cluster": "info",
    "/ws/v1/cluster/info": "info",
    "/ws/v1/cluster/metrics": "metrics",
    "/ws/v1/cluster/scheduler": "scheduler",
    "/ws/v1/cluster/apps": "apps",
    "/ws/v1/cluster/scheduler-conf": "conf",
    REFRESH_PATH: "refresh",
    "/": "page",
    "/cluster": "page",
    "/cluster/apps": "page",
    "/cluster/scheduler": "page",
    "/cluster/nodes": "page",
    "/cluster/cluster": "about",
    "/isActive": "isactive",
}
_METHODS: dict[str, tuple[str, ...]] = {"conf": ("GET", "PUT"), "refresh": ("POST",)}


def handle(
    sim: SimLike,
    method: str,
    path_qs: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    options: FaceOptions = FaceOptions(),
) -> Response:
    """Answer one request as the RM would. The caller holds the simulation's lock."""
    split = urlsplit(path_qs)
    path = split.path.rstrip("/") or "/"
    route = _ROUTES.get(path)
    redirected = path.startswith(("/ws/", "/cluster")) or path == "/"
    if options.standby_of and redirected and route not in ("info", "about", "isactive"):
        return _redirect(options.standby_of, path_qs)
    if route is None:
        if path.startswith("/ws/"):
            return _not_found(path)
        return Response(404, {"Content-Type": TEXT_TYPE}, b"Not Found")
    method = method.upper()
    allowed = _METHODS.get(route, ("GET", "HEAD"))
    if method not in allowed:
        return Response(
            405, {"Allow": ", ".join(allowed), "Content-Type": TEXT_TYPE}, b"Method Not Allowed"
        )
    lower = {k.lower(): v for k, v in headers.items()}
    kind = str(sim.scheduler_kind)
    match route:
        case "info":
            response = _json(200, cluster_info(sim.view(), options))
        case "metrics":
            response = _json(200, cluster_metrics(sim.view()))
        case "scheduler":
            response = _json(200, scheduler_info(sim.view()))
        case "apps":
            response = _apps(sim, parse_qs(split.query), options)
        case "page" | "about":
            response = _html(cluster_page(sim.view(), options, about=route == "about"))
        case "isactive":
            active = options.standby_of is None
            response = _text(200, "I am Active!") if active else _text(405, "I am not Active!")
        case "conf":
            return _scheduler_conf(sim, kind, method, body, lower, options)
        case _:
            return refresh_queues(sim, kind, options)
    if method == "HEAD":
        return Response(response.status, response.headers, b"")
    return response


def _html(page: str) -> Response:
    return Response(200, {"Content-Type": HTML_TYPE}, page.encode())
