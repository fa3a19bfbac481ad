"""A FairScheduler's leaves from the RM web UI's ``/cluster/scheduler`` page, so that the web UI
fallback names why apps wait as the REST path does (`amtuner.monitor.waits`).

``FairSchedulerPage`` prints every queue below root as an ``InfoBlock`` table headed
``'<queue>' Queue Status`` (the full path, ``FairSchedulerQueueInfo.getQueueName``), a leaf's
from ``LeafQueueBlock`` and, in 3.x, a parent's from ``ParentQueueBlock``; their rows carry
what ``FairSchedulerLeafQueueInfo`` gives REST under other names:

* "Num Pending Applications:" and "Num Active Applications:" are ``numPendingApps`` and
  ``numActiveApps`` (a parent's table has neither: that is how a leaf's is told apart);
* "Used Resources:", "AM Used Resources:", "AM Max Resources:" and "Instantaneous Fair Share:"
  are ``usedResources``, ``amUsedResources``, ``amMaxResources`` and ``fairResources``;
  "Demand Resources:" is ``demandResources``, of which the queue's pending memory is what it
  does not hold yet, as `amtuner.monitor.restfair` reads it;
* "Max Running Applications:" is ``maxApps``, printed only below ``Integer.MAX_VALUE``: a queue
  without the row has no limit of its own (REST reports 2147483647 there), a parent's with it
  is one of its leaves' `QueueStats.ancestor_max_apps`.

What the page does not carry, the leaves leave None or empty: the containers
(``allocatedContainers``), and root's ``maxRunningApps``, as root gets no table (``QueuesBlock``
prints its bar alone), so apps that root's limit holds are not told apart from those waiting for
a container. Older pages print fewer rows (2.x's ``LeafQueueBlock`` no AM or demand figures and
no parent's table): a row the page lacks leaves its figure None, and the waits are what the
rest allow (no AM limit is named without "AM Max Resources:").
"""

from __future__ import annotations

from amtuner.model import QueueStats
from amtuner.monitor.webqueues import QueueTable, count, queue_tables
from amtuner.monitor.webui import resource

_PENDING = "Num Pending Applications:"
_ACTIVE = "Num Active Applications:"
_MAX_APPS = "Max Running Applications:"


def parse_fair_page(html: str | bytes, url: str = "web UI") -> tuple[QueueStats, ...]:
    """The leaves of a FairScheduler's ``/cluster/scheduler`` page with the figures
    `amtuner.monitor.waits` classifies on; () where it shows none (another page). Raises
    `ObservationError` on a queue it cannot read."""
    leaves: list[QueueTable] = []
    parents: dict[str, int] = {}
    for table in queue_tables(html, url):
        if _PENDING in table.figures or _ACTIVE in table.figures:
            leaves.append(table)
        elif _MAX_APPS in table.figures:
            parents[table.name] = count(table.figures, _MAX_APPS, f"{url} {table.name}")
    return tuple(_leaf(t, parents, url) for t in leaves)


def _optional(figures: dict[str, str], key: str, where: str) -> tuple[int, int] | None:
    return None if key not in figures else resource(figures[key], where)


def _leaf(leaf: QueueTable, parents: dict[str, int], url: str) -> QueueStats:
    where = f"{url} {leaf.name}"
    f = leaf.figures
    used = resource(f.get("Used Resources:", ""), where)
    am_used = _optional(f, "AM Used Resources:", where)
    am_limit = _optional(f, "AM Max Resources:", where)
    share = _optional(f, "Instantaneous Fair Share:", where)
    demand = _optional(f, "Demand Resources:", where)
    above = sorted(
        ((path, limit) for path, limit in parents.items() if leaf.name.startswith(path + ".")),
        key=lambda item: -len(item[0]),
    )
    return QueueStats(
        name=leaf.name,
        pending_apps=count(f, _PENDING, where),
        running_apps=count(f, _ACTIVE, where),
        memory_used_mb=used[0],
        vcores_used=used[1],
        am_memory_used_mb=am_used[0] if am_used else None,
        am_vcores_used=am_used[1] if am_used else None,
        am_memory_limit_mb=am_limit[0] if am_limit else None,
        am_vcores_limit=am_limit[1] if am_limit else None,
        memory_share_mb=share[0] if share else None,
        vcores_share=share[1] if share else None,
        memory_pending_mb=max(0, demand[0] - used[0]) if demand else None,
        max_apps=count(f, _MAX_APPS, where) if _MAX_APPS in f else None,
        ancestor_max_apps=tuple(above),
    )
