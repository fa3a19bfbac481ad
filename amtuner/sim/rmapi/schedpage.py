"""``/cluster/scheduler``: each leaf's "Queue Status" table in the shape of Hadoop's
``CapacitySchedulerPage`` or ``FairSchedulerPage``, from the same figures the scheduler document
reports (pure: a `ClusterView` in, HTML out), so the monitor's web UI fallback finds on the
simulated RM what it finds on Hadoop's (`amtuner.monitor.webqueues`, `amtuner.monitor.webfair`).

As in Hadoop, the page is written from the REST API's own DAOs
(``CapacitySchedulerLeafQueueInfo``, ``FairSchedulerLeafQueueInfo``): here from `scheduler_info`,
so no figure has a second home. The rows are those the monitor reads and some beside them, under
Hadoop's names and in its order, not every row Hadoop prints; resources read
``<memory:5120, vCores:5>`` (``Resource.toString``, MB), and the users' limit column is headed
"Max Resource" as on the 3.3 and 3.4 pages this RM presents itself as.

A CapacityScheduler with labelled partitions heads each leaf's table once per partition
(``Queue Status for Partition``), as Hadoop's page does once the cluster has node labels; a
FairScheduler's root has no table and a parent's carries its Max Running Applications
(``ParentQueueBlock``), and "Max Running Applications" is printed below Integer.MAX_VALUE only.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping
from typing import Any

from amtuner.sim.rmapi.face import FaceOptions
from amtuner.sim.rmapi.rest import scheduler_info
from amtuner.sim.rmapi.webui import metrics_overview, page_shell
from amtuner.sim.sched_config import UNLIMITED
from amtuner.sim.view import ClusterView

_DEFAULT_PARTITION = "<DEFAULT_PARTITION>"


def _res(r: Mapping[str, Any] | None) -> str:
    r = r or {}
    return f"<memory:{r.get('memory', 0)}, vCores:{r.get('vCores', 0)}>"


def _info(heading: str, rows: list[tuple[str, object]]) -> str:
    """Hadoop's ``InfoBlock``: a two-column table headed by the queue."""
    trs = "".join(
        f'<tr class="{"odd" if i % 2 == 0 else "even"}"><th>{html.escape(k, quote=False)}</th>'
        f"<td>{html.escape(str(v))}</td></tr>"
        for i, (k, v) in enumerate(rows)
    )
    head = html.escape(heading, quote=False)
    return (
        '<div class="info-wrap ui-widget-content ui-corner-bottom"><table class="info">'
        f'<tr><th class="ui-state-default" colspan="2">{head}</th></tr>{trs}</table></div>\n'
    )


def _children(queue: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    children = queue.get(key) or {}
    return list(children.get("queue", [])) if isinstance(children, Mapping) else []


def _usage(queue: Mapping[str, Any], partition: str) -> Mapping[str, Any]:
    by = queue.get("resources", {}).get("resourceUsagesByPartition", [])
    return next((u for u in by if u.get("partitionName") == partition), {})


def _capacities(queue: Mapping[str, Any], partition: str) -> Mapping[str, Any]:
    by = queue.get("capacities", {}).get("queueCapacitiesByPartition", [])
    return next((c for c in by if c.get("partitionName") == partition), {})


def _cs_tables(queue: Mapping[str, Any], labelled: bool) -> Iterator[str]:
    children = _children(queue, "queues")
    if children:
        for child in children:
            yield from _cs_tables(child, labelled)
        return
    path = queue["queuePath"]
    partitions = [""] + [p for p in queue.get("nodeLabels", []) if p not in ("*", "")]
    for partition in partitions:
        usage = _usage(queue, partition)
        caps = _capacities(queue, partition)
        heading = f"'{path}' Queue Status"
        if labelled:
            heading += f" for Partition '{partition or _DEFAULT_PARTITION}'"
        rows: list[tuple[str, object]] = [
            ("Queue State:", queue.get("state", "RUNNING")),
            ("Effective Capacity:",
             f"{_res(caps.get('effectiveMinResource'))} ({caps.get('capacity', 0.0):.1f}%)"),
            ("Effective Max Capacity:",
             f"{_res(caps.get('effectiveMaxResource'))} ({caps.get('maxCapacity', 0.0):.1f}%)"),
            ("Absolute Configured Capacity:", f"{caps.get('absoluteCapacity', 0.0):.1f}%"),
            ("Absolute Configured Max Capacity:", f"{caps.get('absoluteMaxCapacity', 0.0):.1f}%"),
            ("Used Resources:", _res(usage.get("used"))),
            ("Configured Max Application Master Limit:", queue["configuredMaxAMResourceLimit"]
             * 100),
            ("Max Application Master Resources:", _res(usage.get("amLimit"))),
            ("Used Application Master Resources:", _res(usage.get("amUsed"))),
            ("Max Application Master Resources Per User:", _res(usage.get("userAmLimit"))),
            ("Num Schedulable Applications:", queue["numActiveApplications"]),
            ("Num Non-Schedulable Applications:", queue["numPendingApplications"]),
            ("Num Containers:", queue["numContainers"]),
            ("Max Applications:", queue["maxApplications"]),
            ("Configured Minimum User Limit Percent:", f"{queue['userLimit']:.1f}%"),
            ("Configured User Limit Factor:", queue["userLimitFactor"]),
        ]
        yield _info(heading, rows)
        if not partition:
            yield _users(queue, usage)


def _users(queue: Mapping[str, Any], usage: Mapping[str, Any]) -> str:
    """``QueueUsersInfoBlock``: each user's AM limit is the leaf's per-user one times its
    weight, as Hadoop's page prints it."""
    users = queue.get("users", {}).get("user", []) if queue.get("users") else []
    headers = ["User Name", "Max Resource", "Weight", "Used Resource", "Max AM Resource",
               "Used AM Resource", "Schedulable Apps", "Non-Schedulable Apps"]  # fmt: skip
    per_user = usage.get("userAmLimit") or {}
    rows = []
    for u in users:
        weight = u.get("userWeight", 1.0)
        am_limit = {k: int(v * weight) for k, v in per_user.items()}
        cells = [u["username"], _res(u.get("userResourceLimit")), weight,
                 _res(u.get("resourcesUsed")), _res(am_limit), _res(u.get("AMResourceUsed")),
                 u["numActiveApplications"], u["numPendingApplications"]]  # fmt: skip
        style = ' style="background:#FFFF00"' if u["numPendingApplications"] else ""
        tds = "".join(f"<td>{html.escape(str(c))}</td>" for c in cells)
        rows.append(f"<tr{style}>{tds}</tr>")
    ths = "".join(f'<th class="ui-state-default">{h}</th>' for h in headers)
    return (
        f'<table id="userinfo"><thead class="ui-widget-header"><tr>{ths}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>\n"
    )


def _fs_tables(queue: Mapping[str, Any]) -> Iterator[str]:
    for child in _children(queue, "childQueues"):
        name = child["queueName"]
        rows: list[tuple[str, object]] = [("Used Resources:", _res(child.get("usedResources")))]
        leaf = "numPendingApps" in child
        if leaf:
            rows += [
                ("Demand Resources:", _res(child.get("demandResources"))),
                ("AM Used Resources:", _res(child.get("amUsedResources"))),
                ("AM Max Resources:", _res(child.get("amMaxResources"))),
                ("Num Active Applications:", child["numActiveApps"]),
                ("Num Pending Applications:", child["numPendingApps"]),
            ]
        rows += [
            ("Min Resources:", _res(child.get("minResources"))),
            ("Max Resources:", _res(child.get("maxResources"))),
            ("Max Container Allocation:", _res(child.get("maxContainerAllocation"))),
            ("Reserved Resources:", _res(child.get("reservedResources"))),
        ]
        if child["maxApps"] < UNLIMITED:  # no limit set: the pages leave the row out
            rows.append(("Max Running Applications:", child["maxApps"]))
        rows += [
            ("Steady Fair Share:", _res(child.get("steadyFairResources"))),
            ("Instantaneous Fair Share:", _res(child.get("fairResources"))),
        ]
        if leaf:
            rows.append(("Preemptable:", str(child.get("preemptable", True)).lower()))
        yield _info(f"'{name}' Queue Status", rows)
        yield from _fs_tables(child)


def scheduler_page(view: ClusterView, options: FaceOptions) -> str:
    """``/cluster/scheduler`` of the scheduler the simulation runs."""
    info = scheduler_info(view)["scheduler"]["schedulerInfo"]
    if info["type"] == "fairScheduler":
        tables = "".join(_fs_tables(info["rootQueue"]))
    else:
        labelled = any(q.partitions for q in view.queues)
        tables = "".join(_cs_tables(info, labelled))
    body = metrics_overview(view, options.web_ui_layout)
    body += (
        '<div id="cs-wrapper" class="ui-widget"><div class="ui-widget-header ui-corner-top">'
        f'Application Queues</div><div id="cs" class="ui-widget-content ui-corner-bottom">\n'
        f"{tables}</div></div>\n"
    )
    return page_shell("Scheduler", body)
