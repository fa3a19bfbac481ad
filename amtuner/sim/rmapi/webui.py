"""The RM's web UI pages, rendered from a snapshot (pure: a `ClusterView` in, HTML out).

Layout 2 is the 2.8–3.3.0 "Cluster Metrics" table (memory via byteDesc, node columns in a second
table); layout 3 is the 3.4 one (``Used/Total/Reserved Resources`` cells as
``<memory:8 GB, vCores:8>``).
"""

from __future__ import annotations

import html

from amtuner.sim.rmapi.face import FaceOptions, WebUILayout
from amtuner.sim.rmapi.rest import cluster_info, cluster_metrics
from amtuner.sim.view import ClusterView, Res

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
    return page_shell(title, body)


def page_shell(title: str, body: str) -> str:
    """The document every page of this RM's web UI is written in."""
    return (
        '<!DOCTYPE html>\n<html>\n<head><meta charset="utf-8">'
        f'<title>{title}</title></head>\n<body>\n<div id="layout">\n{body}</div>\n'
        "</body>\n</html>\n"
    )
