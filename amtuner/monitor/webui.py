"""Read P, R and memory from the RM web UI's "Cluster Metrics" table when REST is unavailable.

Some clusters block ``/ws/v1`` at a gateway but leave the web UI open. The table on ``/cluster``
(``MetricsOverviewTable``) carries the same cluster metrics, so the controller can keep working
without per-queue figures. Two layouts exist (yarn-facts §5):

* 2.6–2.10.0, 3.0–3.3.0: ``Memory Used | Memory Total`` as ``StringUtils.byteDesc`` ("1.50 GB")
  and ``VCores Used | VCores Total`` as integers;
* 2.10.1, 3.1.4+, 3.2.2+, 3.3.1+, 3.4: ``Used Resources | Total Resources`` as resource strings,
  ``<memory:9216, vCores:9>`` (MB) or, in 3.4, ``<memory:9 GB, vCores:9>``.

Known gap: the 2020 variant of the resource layout printed bytes, not MB, for non-CS schedulers;
a plain number is read as MB, as ``Resource.toString()`` prints it everywhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bs4 import BeautifulSoup, Tag

from amtuner.model import SchedulerKind
from amtuner.monitor.rest import ClusterMetrics, ObservationError

_PREFIXES = "KMGTPE"
_BYTE_DESC = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGTPE]?)B$")
_RESOURCE = re.compile(r"^<\s*memory:\s*([^,>]+?)\s*,\s*vCores:\s*(\d+)\s*(?:,[^>]*)?>$")
_SCHEDULER_NAMES = {
    "capacity scheduler": SchedulerKind.CAPACITY,
    "fair scheduler": SchedulerKind.FAIR,
}


@dataclass(frozen=True, slots=True)
class ClusterPage:
    metrics: ClusterMetrics
    scheduler: SchedulerKind | None
    """From the "Scheduler Metrics" table (2.8+); None on older pages."""


def _bad(url: str, message: str) -> ObservationError:
    return ObservationError("bad-response", f"{url}: {message}")


def memory_mb(text: str, url: str = "web UI") -> int:
    """MB from a byteDesc cell ("1.50 GB", "0 B") or a plain MB number ("9216")."""
    value = text.strip()
    if value.isdigit():
        return int(value)
    match = _BYTE_DESC.match(value)
    if not match:
        raise _bad(url, f"cannot read memory value {text!r}")
    exponent = _PREFIXES.index(match[2]) + 1 if match[2] else 0
    return round(float(match[1]) * 1024**exponent / 1024**2)


def resource(text: str, url: str = "web UI") -> tuple[int, int]:
    """(memory MB, vcores) from ``<memory:…, vCores:…>``."""
    match = _RESOURCE.match(text.strip())
    if not match:
        raise _bad(url, f"cannot read resource value {text!r}")
    return memory_mb(match[1], url), int(match[2])


def _cell_text(cell: Tag) -> str:
    return " ".join(cell.get_text(" ").split())


def _table_after(soup: BeautifulSoup, table_id: str, heading: str) -> Tag | None:
    table = soup.find("table", id=table_id)
    if isinstance(table, Tag):
        return table
    for h3 in soup.find_all("h3"):
        if _cell_text(h3) == heading:
            found = h3.find_next("table")
            return found if isinstance(found, Tag) else None
    return None


def _row(table: Tag, url: str, what: str) -> dict[str, str]:
    headers = [_cell_text(th) for th in table.find_all("th")]
    rows = [tr for tr in table.find_all("tr") if tr.find("td")]
    cells = rows[0].find_all("td") if rows else []
    if not headers or len(headers) != len(cells):
        raise _bad(url, f"the {what} table has {len(headers)} headers and {len(cells)} values")
    return dict(zip(headers, (_cell_text(td) for td in cells), strict=True))


def _count(row: dict[str, str], header: str, url: str) -> int:
    if header not in row:
        raise _bad(url, f"the Cluster Metrics table has no {header!r} column")
    value = row[header]
    if not value.isdigit():
        raise _bad(url, f"{header}: expected a non-negative whole number, got {value!r}")
    return int(value)


def parse_cluster_page(html: str | bytes, url: str = "web UI") -> ClusterPage:
    """Read the Cluster Metrics table of ``/cluster`` (or any page that shows it)."""
    soup = BeautifulSoup(html, "html.parser")
    table = _table_after(soup, "metricsoverview", "Cluster Metrics")
    if table is None:
        raise _bad(url, "no Cluster Metrics table on the page (a login page, or not an RM?)")
    row = _row(table, url, "Cluster Metrics")
    if "Total Resources" in row:
        used_mb, used_vcores = resource(row.get("Used Resources", ""), url)
        total_mb, total_vcores = resource(row["Total Resources"], url)
    elif "Memory Total" in row:
        used_mb = memory_mb(row.get("Memory Used", ""), url)
        total_mb = memory_mb(row["Memory Total"], url)
        used_vcores = _count(row, "VCores Used", url) if "VCores Used" in row else 0
        total_vcores = _count(row, "VCores Total", url) if "VCores Total" in row else 0
    else:
        raise _bad(url, "the Cluster Metrics table has neither Memory Total nor Total Resources")
    if total_mb == 0:
        raise ObservationError("zero-total", f"{url}: Memory Total is 0 (no NodeManager yet?)")
    metrics = ClusterMetrics(
        pending_apps=_count(row, "Apps Pending", url),
        running_apps=_count(row, "Apps Running", url),
        memory_used_mb=used_mb,
        memory_total_mb=total_mb,
        vcores_used=used_vcores,
        vcores_total=total_vcores,
    )
    return ClusterPage(metrics=metrics, scheduler=_scheduler_kind(soup, url))


def _scheduler_kind(soup: BeautifulSoup, url: str) -> SchedulerKind | None:
    table = _table_after(soup, "schedulermetricsoverview", "Scheduler Metrics")
    if table is None:
        return None
    name = _row(table, url, "Scheduler Metrics").get("Scheduler Type", "")
    if "fifo" in name.lower():
        raise _bad(url, "the RM runs the FifoScheduler, which has no AM share to tune")
    return _SCHEDULER_NAMES.get(name.lower())
