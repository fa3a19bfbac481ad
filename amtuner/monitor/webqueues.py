"""A CapacityScheduler's leaves and their users from the RM web UI's ``/cluster/scheduler`` page,
so that the web UI fallback names why apps wait as the REST path does (`amtuner.monitor.waits`).
The scan of the page's queue tables (`queue_tables`, `count`) is both schedulers': a
FairScheduler's page heads its queues' tables the same way (`amtuner.monitor.webfair`).

``CapacitySchedulerPage`` prints each leaf as an ``InfoBlock`` table (class ``info``) headed
``'<queue>' Queue Status`` (the path without ``root.`` before 3.x's full path), whose rows carry
the figures ``CapacitySchedulerLeafQueueInfo`` gives REST under other names, and after it its
``QueueUsersInfoBlock`` (table ``#userinfo``, "Active Users Info"), one row per user of the
leaf's ``UsersManager``, its columns found by their headers:

* "Max Resource" (3.5.0: "User Limit Resource") is ``UserInfo.getUserResourceLimit`` and
  "Used Resource" its ``getResourcesUsed``: REST's ``userResourceLimit`` and ``resourcesUsed``;
* "Max AM Resource" is the leaf's ``userAmLimit`` of the partition times the user's weight
  (the leaf's AM limit where it has none), where REST gives each user's own ``amLimit``, which
  ``UsersManager`` writes from the same figure as the user's apps are activated; "Used AM
  Resource" is ``getAMResourcesUsed``, REST's ``AMResourceUsed``;
* "Non-Schedulable Apps" is the user's ``numPendingApplications``: a user with apps waiting.

The leaf's guarantee (`QueueStats.guarantee_mb`) and its share (`QueueStats.memory_share_mb`,
`QueueStats.vcores_share`) are read as `amtuner.monitor.restqueues` reads them, from the same
DAO (``PartitionQueueCapacitiesInfo``), each from one pair of rows (`_capacity`):

* "Effective Capacity:" and "Effective Max Capacity:" (3.1+) are the default partition's
  ``effectiveMinResource`` and ``effectiveMaxResource``, each followed by the leaf's capacity
  or maximum capacity in percent, ``<memory:16384, vCores:16> (100.0%)`` (empty where the RM
  has none);
* older pages print only ``absoluteCapacity`` and ``absoluteMaxCapacity``, as "Absolute
  Configured Capacity:" and "Absolute Configured Max Capacity:" (2.6: "Absolute Capacity:" and
  "Absolute Max Capacity:") to a tenth of a percent, and REST takes those of the cluster's
  memory and vcores. The page shows them only in the Cluster Metrics table
  (``MetricsOverviewTable``) above the queues, the table `amtuner.monitor.webui` reads on
  ``/cluster`` each cycle: the caller gives its totals, as REST's reader is given the metrics'
  ``totalMB`` and ``totalVirtualCores``, and without the memory such a leaf's figure is None.

As on REST, the share's vcores are None where the cluster reports none. "Configured Capacity:"
and "Configured Max Capacity:" are neither: 3.x prints there the ``configuredMinResource`` and
``configuredMaxResource``, none (or "unlimited") for a queue configured in percent.

What the page does not carry, the leaves leave None: the apps over ``max-parallel-apps``
(``numApplications`` is not printed) and the queue's pending memory. A page that
shows node-label partitions prints each leaf once per partition (``Queue Status for Partition``)
and says nowhere which one its AMs go to, which the waits depend on: no leaf is read from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from amtuner.model import QueueStats
from amtuner.monitor.fields import percentage, share_of
from amtuner.monitor.webui import Grid, _bad, attribute, resource, scan

SCHEDULER_PAGE_PATH = "/cluster/scheduler"
_HEADING = re.compile(r"'(.+)' Queue Status(?: for Partition '(.*)')?")
_HEADING_MAX = 1000
"""Longer text heads no leaf's table, and is not matched (its backtracking grows with it)."""
_BELOW_ZERO = re.compile(r"(?:^|[:\s])-\d")
_USER_LIMIT = ("User Limit Resource", "Max Resource")
"""The user limit's header: 3.5.0's name first, then the one of 2.x to 3.4."""
_EFFECTIVE = re.compile(r"(<[^<>]*>)(?: \([^()]*\))?")
"""An effective capacity as ``appendPercent`` prints it: the resource, then its percentage."""
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)%")
_Rows = tuple[str, tuple[str, ...]]
"""One capacity's rows: its effective resource's (3.1+), then its absolute percentage's under
each name it has had (since 2.7, then 2.6's)."""
_GUARANTEE: _Rows = ("Effective Capacity:", ("Absolute Configured Capacity:", "Absolute Capacity:"))
_SHARE: _Rows = (
    "Effective Max Capacity:",
    ("Absolute Configured Max Capacity:", "Absolute Max Capacity:"),
)


class _Tables:
    """The leaves' info tables and users' tables in document order. Neither holds the other, so
    one is open at a time and a table inside it is its own rows (`Grid`): each tag is seen
    once, whatever the page nests."""

    def __init__(self) -> None:
        self.found: list[tuple[str, Grid]] = []
        self.open: Grid | None = None

    def start(self, name: str, attrs: str) -> None:
        if self.open is not None:
            self.open.start(name)
            return
        if name != "table":
            return
        if attribute(attrs, "id") == "userinfo":
            kind = "users"
        elif "info" in attribute(attrs, "class").split():
            kind = "info"
        else:
            return
        self.open = Grid()
        self.found.append((kind, self.open))

    def end(self, name: str) -> None:
        if self.open is not None:
            self.open.end(name)
            if self.open.depth == 0:
                self.open = None

    def text(self, text: str) -> None:
        if self.open is not None:
            self.open.text(text)


@dataclass
class QueueTable:
    """One queue's info table as the page prints it (both schedulers' pages print an
    ``InfoBlock`` headed ``'<queue>' Queue Status``), with the users' table after it."""

    name: str
    """The queue as its heading names it."""
    partition: str | None
    """The node-label partition the heading names (CapacityScheduler only), else None."""
    figures: dict[str, str]
    """Each row's header (with its colon) and value."""
    users: list[dict[str, str]] = field(default_factory=list)


def queue_tables(html: str | bytes, url: str = "web UI") -> list[QueueTable]:
    """Every queue's info table on a ``/cluster/scheduler`` page, in document order. Raises
    `ObservationError` on a users' table it cannot read."""
    text = html.decode("utf-8", errors="replace") if isinstance(html, bytes) else html
    tables = _Tables()
    scan(text, tables)
    found: list[QueueTable] = []
    for kind, grid in tables.found:
        rows = grid.cells()
        if kind == "users":
            if found:
                found[-1].users.extend(_user_rows(rows, url))
            continue
        first = rows[0][0][1] if rows and rows[0] else ""
        heading = _HEADING.fullmatch(first) if len(first) <= _HEADING_MAX else None
        if heading is None:
            continue
        figures = {r[0][1]: r[1][1] for r in rows[1:] if len(r) == 2 and r[0][0] == "th"}
        found.append(QueueTable(heading[1], heading[2], figures))
    return found


def parse_capacity_page(
    html: str | bytes, url: str = "web UI", total_mb: int | None = None, total_vcores: int = 0
) -> tuple[QueueStats, ...]:
    """The leaves of a CapacityScheduler's ``/cluster/scheduler`` page with the figures
    `amtuner.monitor.waits` classifies on; () where it shows none (node-label partitions).
    ``total_mb``, ``total_vcores``: the cluster's, which a guarantee or share the page gives
    only in percent is of. Raises `ObservationError` on a leaf it cannot read, a
    FairScheduler's among them (its tables carry other rows): the client picks the reader by
    the scheduler's kind."""
    tables = queue_tables(html, url)
    if any(t.partition is not None for t in tables):
        return ()
    return tuple(_leaf(t, url, (total_mb, total_vcores)) for t in tables)


def _user_rows(rows: list[list[tuple[str, str]]], url: str) -> list[dict[str, str]]:
    headers = [text for row in rows for kind, text in row if kind == "th"]
    out = []
    for row in rows:
        cells = [text for kind, text in row if kind == "td"]
        if not cells:
            continue
        if len(cells) != len(headers):
            raise _bad(url, f"a user's row has {len(cells)} cells under {len(headers)} headers")
        out.append(dict(zip(headers, cells, strict=True)))
    return out


def count(figures: dict[str, str], key: str, where: str) -> int:
    """A whole-number figure of a queue's table."""
    value = figures.get(key)
    if value is None or not value.isdigit():
        raise _bad(where, f"{key!r}: expected a non-negative whole number, got {value!r}")
    return int(value)


def _leaf(leaf: QueueTable, url: str, totals: tuple[int | None, int]) -> QueueStats:
    name = leaf.name if leaf.name.startswith("root.") else f"root.{leaf.name}"
    where = f"{url} {name}"
    f = leaf.figures
    used = resource(f.get("Used Resources:", ""), where)
    am_used = resource(f.get("Used Application Master Resources:", ""), where)
    am_limit = resource(f.get("Max Application Master Resources:", ""), where)
    containers = f.get("Num Containers:")
    am_room, room = _waiting_users_room(leaf.users, where)
    share = _capacity(f, _SHARE, where, totals)
    guarantee = _capacity(f, _GUARANTEE, where, totals)
    return QueueStats(
        name=name,
        pending_apps=count(f, "Num Non-Schedulable Applications:", where),
        running_apps=count(f, "Num Schedulable Applications:", where),
        memory_used_mb=used[0],
        vcores_used=used[1],
        am_memory_used_mb=am_used[0],
        am_vcores_used=am_used[1],
        am_memory_limit_mb=am_limit[0],
        memory_share_mb=share[0] if share else None,
        vcores_share=share[1] if share else None,
        containers=None if containers is None else count(f, "Num Containers:", where),
        user_am_room_mb=am_room,
        user_room_mb=room,
        guarantee_mb=guarantee[0] if guarantee else None,
    )


def _capacity(
    figures: dict[str, str], rows: _Rows, where: str, totals: tuple[int | None, int]
) -> tuple[int, int | None] | None:
    """One of the leaf's capacities (``rows``: its guarantee's or its share's) as memory and
    vcores, as `amtuner.monitor.restqueues` reads it: the effective resource where the page
    prints one, else its absolute percentage of the cluster's ``totals``, None without their
    memory or where the page has neither row. The vcores are None where the cluster reports
    none, as REST leaves a share's."""
    effective, absolute = rows
    total_mb, total_vcores = totals
    text = figures.get(effective, "")
    if text:
        match = _EFFECTIVE.fullmatch(text)
        memory, vcores = resource(match[1] if match else text, where)
    else:
        key = next((k for k in absolute if k in figures), None)
        if key is None:
            return None
        text = figures[key]
        match = _PERCENT.fullmatch(text)
        fraction = percentage(float(match[1]) if match else text, f"{where}: {key!r}")
        if total_mb is None:
            return None
        memory, vcores = share_of(total_mb, fraction), share_of(total_vcores, fraction)
    return memory, vcores if total_vcores else None


def _waiting_users_room(
    users: list[dict[str, str]], where: str
) -> tuple[int | None, int | None]:
    """The least AM room and the least room under the user limit among the users with apps
    waiting, as `amtuner.monitor.restqueues` reads them from ``UserInfo``. A user the RM took below
    zero (Hadoop 3.5.0 after kills, `amtuner.monitor.restqueues`) tells nothing of its room and is
    left out, as there."""
    am_rooms, rooms = [], []
    for user in users:
        name = f"{where} user {user.get('User Name', '')!r}"
        if any(_BELOW_ZERO.search(v) for k, v in user.items() if k != "User Name"):
            continue
        if not count(user, "Non-Schedulable Apps", name):
            continue
        am_limit, am_used = user.get("Max AM Resource"), user.get("Used AM Resource")
        if am_limit is not None and am_used is not None:
            am_rooms.append(resource(am_limit, name)[0] - resource(am_used, name)[0])
        limit = next((user[h] for h in _USER_LIMIT if h in user), None)
        used = user.get("Used Resource")
        if limit is not None and used is not None:
            rooms.append(resource(limit, name)[0] - resource(used, name)[0])
    return min(am_rooms, default=None), min(rooms, default=None)
