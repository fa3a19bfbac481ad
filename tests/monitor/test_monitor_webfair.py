"""A FairScheduler's leaves from Hadoop 3.5.0's own ``/cluster/scheduler`` page, recorded at the
moment of the REST documents beside it (tests/data/monitor/hadoop-3.5.0)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amtuner.model import Observation, WaitCause
from amtuner.monitor.rest import ObservationError
from amtuner.monitor.waits import classify
from amtuner.monitor.webfair import parse_fair_page
from tests.conftest import HADOOP_350 as DATA
from tests.monitor.test_monitor_webqueues import rest_of
from tests.monitor.test_monitor_webui import without_optional_end_tags

SCENES = ["fair", "fair-max-running-apps", "fair-parent-max-running-apps",
          "fair-user-max-apps-default"]  # fmt: skip
SAME = ("name", "pending_apps", "running_apps", "memory_used_mb", "vcores_used",
        "am_memory_used_mb", "am_vcores_used", "am_memory_limit_mb", "am_vcores_limit",
        "memory_share_mb", "vcores_share", "memory_pending_mb")  # fmt: skip
"""What the page gives as REST gives it."""


def page(scene: str = "fair-max-running-apps") -> str:
    return (DATA / scene / "scheduler.html").read_text()


def web_of(scene: str, html: str | None = None) -> Observation:
    """The REST observation with its leaves as the page gives them, classified again."""
    leaves = parse_fair_page(page(scene) if html is None else html, "scheduler.html")
    return classify(dataclasses.replace(rest_of(scene), queues=leaves, waits=()))


@pytest.mark.parametrize("scene", SCENES)
def test_the_page_gives_the_leaf_rest_gives(scene: str) -> None:
    (leaf,) = parse_fair_page(page(scene), "scheduler.html")
    (rest,) = rest_of(scene).queues
    assert [getattr(leaf, f) for f in SAME] == [getattr(rest, f) for f in SAME]
    # Not on the page: the containers, and root's maxRunningApps (root has no table).
    assert (leaf.containers, leaf.ancestor_max_apps) == (None, ())
    assert rest.containers == leaf.running_apps and rest.ancestor_max_apps[-1][0] == "root"


def test_max_running_apps_only_where_set() -> None:
    """Printed below Integer.MAX_VALUE only: REST's 2147483647 is no row at all."""
    assert parse_fair_page(page("fair-max-running-apps"))[0].max_apps == 2
    assert rest_of("fair").queues[0].max_apps == 2**31 - 1
    assert parse_fair_page(page("fair"))[0].max_apps is None


@pytest.mark.parametrize(
    ("scene", "cause", "apps"),
    [
        ("fair", WaitCause.QUEUE_AM_LIMIT, 2),
        ("fair-max-running-apps", WaitCause.MAX_APPS, 3),
        # Users' limits are in the allocation file alone, on REST as on the page.
        ("fair-user-max-apps-default", WaitCause.CLUSTER_FULL, 3),
    ],
)
def test_the_page_names_the_waits_rest_names(scene: str, cause: WaitCause, apps: int) -> None:
    web, rest = web_of(scene), rest_of(scene)
    assert web.waits == rest.waits
    assert [(w.queue, w.cause, w.apps) for w in web.waits] == [("root.default", cause, apps)]


def test_roots_max_running_apps_is_not_on_the_page() -> None:
    """Root gets no table, so the apps its maxRunningApps holds read as waiting for a
    container: the limit REST names is the one the page lacks."""
    rest = rest_of("fair-parent-max-running-apps")
    assert [(w.cause, w.held_at) for w in rest.waits] == [(WaitCause.MAX_APPS, ("root",))]
    assert [(w.cause, w.apps) for w in web_of("fair-parent-max-running-apps").waits] == [
        (WaitCause.CLUSTER_FULL, 3)
    ]


def test_a_parents_table_gives_its_leaves_limit() -> None:
    """A parent below root has its own table (``ParentQueueBlock``: no app counts), whose
    "Max Running Applications:" holds its leaves as REST's ``maxApps`` does."""
    html = page()
    start = html.index('<table class="info">')
    end = html.index("</table>", start) + len("</table>")
    parent = (
        html[start:end]
        .replace("'root.default' Queue Status", "'root.team' Queue Status")
        .replace("Num Active Applications:", "Reserved Resources:")
        .replace("Num Pending Applications:", "Reserved Resources:")
    )
    nested = html[:start] + parent + html[start:end].replace("root.default", "root.team.etl")
    (leaf,) = parse_fair_page(nested + html[end:])
    assert (leaf.name, leaf.max_apps, leaf.ancestor_max_apps) == (
        "root.team.etl", 2, (("root.team", 2),),
    )  # fmt: skip


def test_without_the_am_rows_no_am_limit_is_named() -> None:
    """Pages that print no AM figures leave them None: the waits are what the rest allow."""
    html = page("fair").replace("AM Max Resources:", "AM Maximum:")
    (leaf,) = parse_fair_page(html)
    assert (leaf.am_memory_limit_mb, leaf.am_vcores_limit) == (None, None)
    assert [w.cause for w in web_of("fair", html).waits] == [WaitCause.CLUSTER_FULL]


@pytest.mark.parametrize("scene", SCENES)
def test_open_cells_read_the_same(scene: str) -> None:
    closed = (DATA / scene / "scheduler.html").read_bytes()
    assert parse_fair_page(without_optional_end_tags(closed)) == parse_fair_page(closed)


def test_other_pages_give_no_leaf() -> None:
    assert parse_fair_page((DATA / "fair" / "cluster.html").read_bytes()) == ()
    # A CapacityScheduler's leaf prints neither of the FairScheduler's app counts.
    assert parse_fair_page((DATA / "capacity" / "scheduler.html").read_bytes()) == ()


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("&lt;memory:2048, vCores:2&gt;", "2 GB", "cannot read resource value"),
        ("Num Pending Applications:", "Pending:", "Num Pending Applications"),
        ("Max Running Applications:", "Max Running Applications:</th><td>two</td></tr><tr><th>",
         "Max Running Applications"),
    ],
)
def test_an_unreadable_leaf_is_refused(old: str, new: str, words: str) -> None:
    assert old in page()
    with pytest.raises(ObservationError) as err:
        parse_fair_page(page().replace(old, new, 1), "scheduler.html")
    assert err.value.reason == "bad-response" and words in err.value.message


@given(st.text(alphabet="<>/!-?&#;='\" tdhrablexinfoQSNumPnig:\n", max_size=400))
def test_any_page_is_read_or_refused_with_a_reason(html: str) -> None:
    try:
        parse_fair_page(html)
    except ObservationError as exc:
        assert exc.reason == "bad-response"
