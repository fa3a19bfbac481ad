"""The RM's REST documents, rendered from a snapshot (pure: a `ClusterView` / `AppView` in,
JSON-ready dicts out), so they can be checked field by field against real RM responses.

Shapes follow Hadoop 3.x (yarn-facts §3): Jersey's "natural" JSON with a root wrapper, lists
nested as ``{"queue": [...]}``. Where versions differ:

* FairScheduler ``childQueues`` uses the 3.x shape ``{"queue": [...]}`` (2.x emitted a bare list);
  leaves omit it, as the RM does.
* ``/ws/v1/cluster/apps`` with no matching app answers ``{"apps": null}``, as the RM does.
* ``clusterInfo.resourceManagerVersion`` matches the web UI layout (see `webui`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from amtuner.sim.rmapi.face import FaceOptions
from amtuner.sim.view import (
    AppView,
    ClusterView,
    NodeView,
    PartitionView,
    QueueView,
    Res,
    UserView,
)


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


def history_info(options: FaceOptions) -> dict[str, Any]:
    """The JobHistory server's ``/ws/v1/history/info`` (``HistoryInfo``), every field of
    Hadoop's documented answer: the simulated RM is its own JobHistory server."""
    version = options.rm_version
    return {
        "historyInfo": {
            "startedOn": options.started_on_ms,
            "hadoopVersion": version,
            "hadoopBuildVersion": f"{version} from simulated by amtuner source checksum 0",
            "hadoopVersionBuiltOn": "2024-01-01T00:00Z",
        }
    }


def cluster_metrics(view: ClusterView) -> dict[str, Any]:
    """Root-queue metrics; ``totalMB = available + allocated (+ reserved with CS)`` (§3.2).
    Fields as Hadoop 3.5.0's ``ClusterMetricsInfo`` fills them: only a CapacityScheduler has
    the cross-partition figures (a FairScheduler reports none and 0 containers across
    partitions). ``utilized*`` is what the NodeManagers measure the containers use; here a
    container uses what it holds. The RM's event queues never back up here (0). Not given:
    ``containerAssignedPerSecond`` and the ``resourceInformations`` lists."""
    cs = view.scheduler == "capacity"
    total, alloc, rsv = view.total, view.allocated, view.reserved
    every_total, every_alloc, every_containers = view.across_partitions or (
        total,
        alloc,
        view.containers_allocated,
    )
    if cs:
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
            "containersReserved": view.containers_reserved,
            "containersPending": view.containers_pending,
            "totalMB": total.memory_mb,
            "utilizedMB": alloc.memory_mb,
            "totalVirtualCores": total.vcores,
            "utilizedVirtualCores": alloc.vcores,
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
            **(
                {
                    "totalUsedResourcesAcrossPartition": _res(every_alloc),
                    "totalClusterResourcesAcrossPartition": _res(every_total),
                    "totalReservedResourcesAcrossPartition": _res(rsv),
                }
                if cs
                else {}
            ),
            "totalAllocatedContainersAcrossPartition": every_containers if cs else 0,
            "crossPartitionMetricsAvailable": cs,
            "rmEventQueueSize": 0,
            "schedulerEventQueueSize": 0,
        }
    }


def _cs_user(u: UserView) -> dict[str, Any]:
    """One user of a CS leaf (``UserInfo``): ``resourcesUsed`` over every partition, the rest
    the default partition's, and an entry per partition."""
    part = u.partition
    entries = [
        {
            "partitionName": "",
            "used": _res(u.used),
            "reserved": _res(Res()),
            "pending": _res(Res()),
            "amUsed": _res(u.am_used),
            "amLimit": _res(u.am_limit),
            "userAmLimit": _res(Res()),
        }
    ]
    if part is not None:
        entries.append(
            {
                "partitionName": part.label,
                "used": _res(part.used),
                "reserved": _res(Res()),
                "pending": _res(Res()),
                "amUsed": _res(part.am_used),
                "amLimit": _res(part.am_limit),
                "userAmLimit": _res(Res()),
            }
        )
    used = Res(u.used.memory_mb + (part.used.memory_mb if part else 0), u.used.vcores)
    return {
        "username": u.name,
        "resourcesUsed": _res(used),
        "numPendingApplications": u.pending_apps,
        "numActiveApplications": u.active_apps,
        "AMResourceUsed": _res(u.am_used),
        "userResourceLimit": _res(u.resource_limit),
        "resources": {"resourceUsagesByPartition": entries},
        "userWeight": 1.0,
        "isActive": u.active_apps > 0,
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
        "userAmLimit": _res(q.user_am_limit),
    }
    by_partition = [capacities, *(_cs_partition_capacities(p) for p in q.partitions)]
    usage_by_partition = [usages, *(_cs_partition_usages(p) for p in q.partitions)]
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
        "numApplications": q.num_pending_apps + q.num_active_apps + q.num_nonrunnable_apps,
        "maxParallelApps": q.max_parallel_apps,
        "queueName": q.path.rsplit(".", 1)[-1],
        "state": "RUNNING",
        "resourcesUsed": _res(q.used),
        "hideReservationQueues": False,
        "nodeLabels": [p.label for p in q.partitions] or ["*"],
        "allocatedContainers": q.allocated_containers,
        "reservedContainers": 0,
        "pendingContainers": q.pending_containers,
        "capacities": {"queueCapacitiesByPartition": by_partition},
        "resources": {"resourceUsagesByPartition": usage_by_partition},
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
        "userLimit": q.user_limit_percent,
        "users": {"user": [_cs_user(u) for u in q.users]} if q.users else {},
        "userLimitFactor": q.user_limit_factor,
        "configuredMaxAMResourceLimit": q.max_am_percent,
        "AMResourceLimit": _res(q.am_limit),
        "usedAMResource": _res(q.am_used),
        "userAMResourceLimit": _res(q.user_am_limit),
        "preemptionDisabled": True,
        "intraQueuePreemptionDisabled": True,
        "defaultPriority": 0,
        "isAutoCreatedLeafQueue": False,
        "maxApplicationLifetime": -1,
        "defaultApplicationLifetime": -1,
    }
    if q.default_label:
        out["defaultNodeLabelExpression"] = q.default_label
    return out


def _cs_partition_capacities(p: PartitionView) -> dict[str, Any]:
    """A leaf's ``PartitionQueueCapacitiesInfo`` in a labelled partition."""
    return {
        "partitionName": p.label,
        "capacity": p.capacity * 100,
        "usedCapacity": _pct(p.used.memory_mb, p.guaranteed.memory_mb),
        "maxCapacity": p.maximum_capacity * 100,
        "absoluteCapacity": p.absolute_capacity * 100,
        "absoluteUsedCapacity": _pct(p.used.memory_mb, p.guaranteed.memory_mb)
        * p.absolute_capacity,
        "absoluteMaxCapacity": p.absolute_max_capacity * 100,
        "maxAMLimitPercentage": p.max_am_percent * 100,
        "effectiveMinResource": _res(p.guaranteed),
        "effectiveMaxResource": _res(p.maximum),
    }


def _cs_partition_usages(p: PartitionView) -> dict[str, Any]:
    """A leaf's ``PartitionResourcesInfo`` in a labelled partition."""
    return {
        "partitionName": p.label,
        "used": _res(p.used),
        "reserved": _res(Res()),
        "pending": _res(p.pending),
        "amUsed": _res(p.am_used),
        "amLimit": _res(p.am_limit),
        "userAmLimit": _res(p.user_am_limit),
    }


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
        "reservedResources": _res(q.reserved),
        "maxContainerAllocation": _res(view.maximum_allocation),
        "pendingContainers": q.pending_containers,
        "allocatedContainers": q.allocated_containers,
        "reservedContainers": q.reserved_containers,
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
        "maxParallelApps": root.max_parallel_apps,
        "queues": rendered["queues"],
        "capacities": rendered["capacities"],
        "maximumAllocation": _res(view.maximum_allocation),
        "queuePriority": 0,
        "orderingPolicyInfo": "utilization",
    }
    return {"scheduler": {"schedulerInfo": info}}


def nodes_info(nodes: list[NodeView], options: FaceOptions) -> dict[str, Any]:
    """``/ws/v1/cluster/nodes`` (``NodesInfo`` of ``NodeInfo``), the 3.x fields: the 2.x
    memory and vcore figures, the ``usedResource``, ``availableResource`` and
    ``totalResource`` objects (3.3+) and each node's labels."""

    def one(n: NodeView) -> dict[str, Any]:
        free = Res(n.total.memory_mb - n.used.memory_mb, n.total.vcores - n.used.vcores)
        host = n.name.partition(":")[0]
        return {
            "rack": "/default-rack",
            "state": "RUNNING",
            "id": n.name,
            "nodeHostName": host,
            "nodeHTTPAddress": f"{host}:8042",
            "lastHealthUpdate": options.started_on_ms,
            "version": options.rm_version,
            "healthReport": "",
            "numContainers": n.containers,
            "usedMemoryMB": n.used.memory_mb,
            "availMemoryMB": free.memory_mb,
            "usedVirtualCores": n.used.vcores,
            "availableVirtualCores": free.vcores,
            "nodeLabels": [n.label] if n.label else [],
            "usedResource": _res(n.used),
            "availableResource": _res(free),
            "totalResource": _res(n.total),
        }

    return {"nodes": {"node": [one(n) for n in nodes]}}


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
        "memorySeconds": app.memory_seconds,
        "vcoreSeconds": app.vcore_seconds,
        "numNonAMContainerPreempted": 0,
        "numAMContainerPreempted": 0,
        "logAggregationStatus": "DISABLED",
        "unmanagedApplication": False,
        "amNodeLabelExpression": "",
        **({"resourceRequests": [_ask(*a) for a in app.asks]} if app.asks else {}),
    }


def _ask(priority: int, memory_mb: int, vcores: int, containers: int) -> dict[str, Any]:
    """One pending ask (``ResourceRequestInfo``), on any node: the simulator places no task by
    locality. Hadoop 3.5.0 leaves ``resourceRequests`` out of an app that asks for nothing."""
    return {
        "priority": priority,
        "allocationRequestId": -1,
        "resourceName": "*",
        "capability": {"memory": memory_mb, "vCores": vcores},
        "numContainers": containers,
        "relaxLocality": True,
        "nodeLabelExpression": "",
        "executionTypeRequest": {"executionType": "GUARANTEED", "enforceExecutionType": False},
    }


def apps_info(apps: list[AppView], view: ClusterView, options: FaceOptions) -> dict[str, Any]:
    if not apps:
        return {"apps": None}
    return {"apps": {"app": [app_info(a, view, options) for a in apps]}}


_JOB_STATE = {"FINISHED": "SUCCEEDED", "FAILED": "FAILED", "KILLED": "KILLED"}


def job_info(app: AppView, options: FaceOptions) -> dict[str, Any]:
    """A finished app as the MapReduce JobHistory server's job document (``HsWebServices.getJob``:
    ``{"job": JobInfo}``), the averages over the tasks done as ``JobInfo.countTasksAndAttempts``
    takes them (0 with none). The simulator runs a task as one piece, so a reduce's whole run
    time is ``avgReduceTime``, its shuffle and merge 0; and it reports the spec's times, a task
    alone on an idle node, not as sharing a node slowed it."""

    def ms(t: float | None) -> int:
        return 0 if t is None else options.started_on_ms + round(t * 1000)

    job = {
        "submitTime": ms(app.submitted_s),
        "startTime": ms(app.started_s),
        "finishTime": ms(app.finished_s),
        "id": "job_" + app.app_id.removeprefix("application_"),
        "name": app.name,
        "queue": app.queue,
        "user": app.user,
        "state": _JOB_STATE.get(app.state, app.state),
        "mapsTotal": app.maps,
        "mapsCompleted": app.maps_done,
        "reducesTotal": app.reduces,
        "reducesCompleted": app.reduces_done,
        "uberized": False,
        "diagnostics": "",
        "avgMapTime": round(app.map_s * 1000) if app.maps_done else 0,
        "avgReduceTime": round(app.reduce_s * 1000) if app.reduces_done else 0,
        "avgShuffleTime": 0,
        "avgMergeTime": 0,
        "failedReduceAttempts": 0,
        "killedReduceAttempts": 0,
        "successfulReduceAttempts": app.reduces_done,
        "failedMapAttempts": 0,
        "killedMapAttempts": 0,
        "successfulMapAttempts": app.maps_done,
        "acls": [
            {"name": "mapreduce.job.acl-modify-job", "value": " "},
            {"name": "mapreduce.job.acl-view-job", "value": " "},
        ],
    }
    return {"job": job}


def job_conf(app: AppView, options: FaceOptions) -> dict[str, Any]:
    """A finished app's job configuration as the JobHistory server serves it
    (``HsWebServices.getJobConf``: ``{"conf": ConfInfo}``, each property a ``ConfEntryInfo``
    of name, value and the sources it came from). A real one lists every property of the job's
    ``job.xml``; this one the job's name, queue, user and the sizes of its containers, values
    as strings as Hadoop's ``Configuration`` holds them."""
    jid = "job_" + app.app_id.removeprefix("application_")
    day = time.strftime("%Y/%m/%d", time.gmtime(options.started_on_ms / 1000))
    path = f"hdfs://localhost:9000/tmp/hadoop-yarn/staging/history/done/{day}/000000/{jid}_conf.xml"
    props = {
        "mapreduce.job.name": app.name,
        "mapreduce.job.queuename": app.queue,
        "mapreduce.job.user.name": app.user,
        "mapreduce.job.maps": app.maps,
        "mapreduce.job.reduces": app.reduces,
        "mapreduce.map.memory.mb": app.map_mb,
        "mapreduce.map.cpu.vcores": app.map_vcores,
        "mapreduce.reduce.memory.mb": app.reduce_mb,
        "mapreduce.reduce.cpu.vcores": app.reduce_vcores,
        "yarn.app.mapreduce.am.resource.mb": app.am_mb,
    }
    sources = ["job.xml", path]
    return {
        "conf": {
            "path": path,
            "property": [
                {"name": k, "value": str(v), "source": sources} for k, v in props.items()
            ],
        }
    }

