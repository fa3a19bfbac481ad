"""A CapacityScheduler's leaves and users from Hadoop 3.5.0's own ``/cluster/scheduler`` page,
recorded at the moment of the REST documents beside it (tests/data/monitor/hadoop-3.5.0)."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amtuner.model import Observation, WaitCause
from amtuner.monitor.rest import ObservationError, build_observation
from amtuner.monitor.waits import classify
from amtuner.monitor.webqueues import parse_capacity_page
from amtuner.monitor.webui import parse_cluster_page
from tests.monitor.test_monitor_hadoop350 import DATA
from tests.monitor.test_monitor_webui import without_optional_end_tags

USERS = DATA / "capacity-user-am-limit"


def rest_of(scene: str) -> Observation:
    here = DATA / scene
    return build_observation(
        json.loads((here / "metrics.json").read_bytes()),
        json.loads((here / "scheduler.json").read_bytes()),
        time=0.0, source="rest",
    )  # fmt: skip


def page(scene: str = "capacity-user-am-limit") -> str:
    return (DATA / scene / "scheduler.html").read_text()


def web_of(scene: str, html: str | None = None) -> Observation:
    """The REST observation with its leaves as the page gives them, classified again."""
    leaves = parse_capacity_page(page(scene) if html is None else html, "scheduler.html")
    return classify(dataclasses.replace(rest_of(scene), queues=leaves, waits=()))


def test_the_users_table_gives_the_rooms_rest_gives() -> None:
    """Alice waits with her 3 GB of AMs at her 3 GB AM limit (``userAmLimit``, user-limit-factor
    0.5 of the 6 GB queue limit) and 3 GB used of her 8 GB user limit; bob waits for nothing."""
    (leaf,) = parse_capacity_page(page(), "scheduler.html")
    (rest,) = rest_of("capacity-user-am-limit").queues
    assert (leaf.name, leaf.pending_apps, leaf.running_apps) == ("root.default", 2, 5)
    assert (leaf.am_memory_used_mb, leaf.am_memory_limit_mb, leaf.memory_used_mb) == (
        5120, 6144, 5120,
    )  # fmt: skip
    assert (leaf.user_am_room_mb, leaf.user_room_mb) == (0, 8192 - 3072)
    assert (leaf.user_am_room_mb, leaf.user_room_mb) == (rest.user_am_room_mb, rest.user_room_mb)


@pytest.mark.parametrize(
    ("scene", "cause"),
    [("capacity", WaitCause.QUEUE_AM_LIMIT), ("capacity-user-am-limit", WaitCause.USER_AM_LIMIT)],
)
def test_the_page_names_the_waits_rest_names(scene: str, cause: WaitCause) -> None:
    web, rest = web_of(scene), rest_of(scene)
    assert web.waits == rest.waits
    assert [(w.queue, w.cause, w.apps) for w in web.waits] == [("root.default", cause, 2)]


def test_without_the_users_figures_the_user_am_limit_is_not_named() -> None:
    """The users' table is what tells the user AM limit from the queue's (2 GB of room left)."""
    start = page().index('<table id="userinfo">')
    end = page().index("</table>", start) + len("</table>")
    web = web_of("capacity-user-am-limit", page()[:start] + page()[end:])
    assert web.queues[0].user_am_room_mb is None
    assert [w.cause for w in web.waits] == [WaitCause.QUEUE_AM_LIMIT]


@pytest.mark.parametrize("scene", ["capacity", "capacity-user-am-limit"])
def test_open_cells_read_the_same(scene: str) -> None:
    closed = (DATA / scene / "scheduler.html").read_bytes()
    assert parse_capacity_page(without_optional_end_tags(closed)) == parse_capacity_page(closed)


def test_the_user_limit_under_its_name_before_3_5() -> None:
    """2.8 to 3.4 head the user limit's column "Max Resource"."""
    html = page().replace("User Limit Resource", "Max Resource")
    assert parse_capacity_page(html) == parse_capacity_page(page())


def test_a_user_taken_below_zero_is_left_out() -> None:
    """As on REST: Hadoop 3.5.0 keeps a user its kills took below zero listed (the
    capacity-user-am-limit-after-kills recording)."""
    start = page().index("alice", page().index('<table id="userinfo">'))
    end = page().index("</tr>", start)
    # Her row: name, user limit, weight, used, AM limit, AM used (the last 3 GB), apps.
    before, used_am, after = page()[start:end].rpartition("&lt;memory:3072, vCores:3&gt;")
    assert used_am
    html = page()[:start] + before + "&lt;memory:-2048, vCores:-2&gt;" + after + page()[end:]
    (leaf,) = parse_capacity_page(html)
    assert (leaf.user_am_room_mb, leaf.user_room_mb) == (None, None)


SCENES = ("capacity", "capacity-user-am-limit", "capacity-user-max-parallel-apps")
EFFECTIVE = "&lt;memory:16384, vCores:16&gt; (100.0%)"
"""Its one leaf's Effective Capacity on each recorded page (and its Effective Max Capacity)."""


def cluster_mb(scene: str) -> int:
    """The cluster's memory on the /cluster page recorded beside the scheduler page."""
    return parse_cluster_page((DATA / scene / "cluster.html").read_bytes()).metrics.memory_total_mb


def totals(scene: str) -> tuple[int, int]:
    """The cluster's memory and vcores on the /cluster page recorded beside the scheduler page,
    as the client gives them."""
    metrics = parse_cluster_page((DATA / scene / "cluster.html").read_bytes()).metrics
    return metrics.memory_total_mb, metrics.vcores_total


def with_row(html: str, header: str, value: str) -> str:
    """The page with its one leaf's ``header`` row showing ``value``."""
    at = html.index(header)
    start = html.index("<td>", at) + len("<td>")
    end = html.index("</td>", start)
    return html[:start] + value + html[end:]


ABSOLUTE = ("Absolute Configured Capacity:", "Absolute Configured Max Capacity:")
"""The absolute capacity's and maximum capacity's rows since 2.7."""
ABSOLUTE_2_6 = ("Absolute Capacity:", "Absolute Max Capacity:")


def before_3_1(scene: str, names: tuple[str, str] = ABSOLUTE) -> str:
    """The page as an RM before 3.1 prints the leaf: no effective capacities, its absolute
    capacity and maximum capacity under ``names``."""
    html = with_row(page(scene), "Effective Capacity:", "")
    html = with_row(html, "Effective Max Capacity:", "")
    for name, old in zip(ABSOLUTE, names, strict=True):
        html = html.replace(name, old, 1)
    return html


def rest_by_percent(
    scene: str, absolute: float | None = None, absolute_max: float | None = None
) -> Observation:
    """The REST observation where the RM reports no effective resources (before 3.1), its
    leaf's absoluteCapacity ``absolute`` and absoluteMaxCapacity ``absolute_max`` where
    given."""
    here = DATA / scene
    doc = json.loads((here / "scheduler.json").read_bytes())
    for leaf in doc["scheduler"]["schedulerInfo"]["queues"]["queue"]:
        for caps in leaf["capacities"]["queueCapacitiesByPartition"]:
            caps.pop("effectiveMinResource")
            caps.pop("effectiveMaxResource")
        leaf.pop("minEffectiveCapacity")
        leaf.pop("maxEffectiveCapacity")
        if absolute is not None:
            leaf["absoluteCapacity"] = absolute
        if absolute_max is not None:
            leaf["absoluteMaxCapacity"] = absolute_max
    return build_observation(
        json.loads((here / "metrics.json").read_bytes()), doc, time=0.0, source="rest"
    )


@pytest.mark.parametrize("scene", SCENES)
def test_the_page_gives_the_guarantee_rest_gives(scene: str) -> None:
    """Effective Capacity is the default partition's effectiveMinResource, as in REST (its one
    leaf is guaranteed the whole 16 GB cluster)."""
    assert EFFECTIVE in page(scene)
    leaves = parse_capacity_page(page(scene), "scheduler.html")
    assert [q.guarantee_mb for q in leaves] == [q.guarantee_mb for q in rest_of(scene).queues]
    assert [q.guarantee_mb for q in leaves] == [16384]


@pytest.mark.parametrize("scene", SCENES)
def test_the_page_gives_the_share_rest_gives(scene: str) -> None:
    """Effective Max Capacity is the default partition's effectiveMaxResource, REST's
    maxEffectiveCapacity (its one leaf may use the whole 16 GB, 16-vcore cluster); its vcores
    count where the cluster reports vcores, as on REST."""
    at = page(scene).index("Effective Max Capacity:")
    assert page(scene).index(EFFECTIVE, at) < page(scene).index("</td>", at)
    leaves = parse_capacity_page(page(scene), "scheduler.html", *totals(scene))
    shares = [(q.memory_share_mb, q.vcores_share) for q in leaves]
    assert shares == [(q.memory_share_mb, q.vcores_share) for q in rest_of(scene).queues]
    assert shares == [(16384, 16)]


def test_the_guarantee_is_the_effective_capacity_not_the_maximum() -> None:
    """The recording's leaf has the same Effective Capacity and Effective Max Capacity: a
    guarantee of a quarter and a share of a half tell the rows apart."""
    html = with_row(page(), "Effective Capacity:", "&lt;memory:4096, vCores:4&gt; (25.0%)")
    html = with_row(html, "Effective Max Capacity:", "&lt;memory:8192, vCores:8&gt; (50.0%)")
    (leaf,) = parse_capacity_page(html, "scheduler.html", *totals("capacity"))
    assert (leaf.guarantee_mb, leaf.memory_share_mb, leaf.vcores_share) == (4096, 8192, 8)


@pytest.mark.parametrize("names", [ABSOLUTE, ABSOLUTE_2_6])
@pytest.mark.parametrize("scene", SCENES)
def test_before_3_1_guarantee_and_share_are_absolute_capacities_of_the_cluster(
    scene: str, names: tuple[str, str]
) -> None:
    """No effective resources: REST scales absoluteCapacity and absoluteMaxCapacity by the
    metrics' totals, the page their percentages (2.6: "Absolute Capacity:", "Absolute Max
    Capacity:") by the Cluster Metrics table's."""
    html = before_3_1(scene, names)
    (leaf,) = parse_capacity_page(html, "scheduler.html", *totals(scene))
    (rest,) = rest_by_percent(scene).queues
    assert leaf.guarantee_mb == rest.guarantee_mb == 16384
    assert (leaf.memory_share_mb, leaf.vcores_share) == (rest.memory_share_mb, rest.vcores_share)
    assert (leaf.memory_share_mb, leaf.vcores_share) == (16384, 16)
    # Without the cluster's memory the percentages are still checked, but give neither.
    (alone,) = parse_capacity_page(html, "scheduler.html")
    assert (alone.guarantee_mb, alone.memory_share_mb, alone.vcores_share) == (None,) * 3


def test_the_share_is_the_absolute_max_capacity_not_the_absolute_capacity() -> None:
    html = with_row(before_3_1("capacity"), "Absolute Configured Capacity:", "25.0%")
    html = with_row(html, "Absolute Configured Max Capacity:", "50.0%")
    (leaf,) = parse_capacity_page(html, "scheduler.html", *totals("capacity"))
    (rest,) = rest_by_percent("capacity", absolute=25.0, absolute_max=50.0).queues
    assert (leaf.guarantee_mb, leaf.memory_share_mb, leaf.vcores_share) == (4096, 8192, 8)
    assert (rest.guarantee_mb, rest.memory_share_mb, rest.vcores_share) == (4096, 8192, 8)


@pytest.mark.parametrize("html", [page(), before_3_1("capacity")])
def test_without_the_cluster_vcores_the_share_has_none(html: str) -> None:
    """As REST leaves a share's vcores None where the metrics report no vcores (a /cluster
    page without "VCores Total" gives 0)."""
    (leaf,) = parse_capacity_page(html, "scheduler.html", 16384, 0)
    assert (leaf.memory_share_mb, leaf.vcores_share) == (16384, None)


def test_the_absolute_capacity_is_read_to_a_tenth_of_a_percent() -> None:
    """The page rounds the percentage to one decimal (``StringUtils.formatPercent``), REST
    does not: the same leaf's guarantee may differ by up to 0.05 % of the cluster."""
    (rest,) = rest_by_percent("capacity", absolute=12.53).queues
    html = with_row(before_3_1("capacity"), "Absolute Configured Capacity:", "12.5%")
    (leaf,) = parse_capacity_page(html, "scheduler.html", cluster_mb("capacity"))
    assert (leaf.guarantee_mb, rest.guarantee_mb) == (2048, 2053)


def test_a_page_without_either_row_gives_no_guarantee_nor_share() -> None:
    html = before_3_1("capacity")
    for name in ABSOLUTE:
        html = html.replace(name, name.replace("Absolute ", "Other "), 1)
    (leaf,) = parse_capacity_page(html, "scheduler.html", 16384, 16)
    assert (leaf.guarantee_mb, leaf.memory_share_mb, leaf.vcores_share) == (None,) * 3


@pytest.mark.parametrize("row", ABSOLUTE)
@pytest.mark.parametrize("value", ["-5.0%", "1O0.0%", "100.0", "nan%", "9" * 400 + "%", "25 %"])
def test_a_bad_absolute_capacity_is_refused_in_rest_words(value: str, row: str) -> None:
    """The words of the REST reader's refusal of an absolute capacity that is not one
    (`test_rest_refuses_a_bad_absolute_capacity`)."""
    html = with_row(before_3_1("capacity"), row, value)
    with pytest.raises(ObservationError) as err:
        parse_capacity_page(html, "scheduler.html", 16384, 16)
    where = f"scheduler.html root.default: {row!r}"
    assert err.value.reason == "bad-response"
    assert f"{where}: expected a percentage, got " in err.value.message


@pytest.mark.parametrize(
    ("absolute", "absolute_max", "field"),
    [(-5.0, None, "absoluteCapacity"), (None, -5.0, "absoluteMaxCapacity")],
)
def test_rest_refuses_a_bad_absolute_capacity(
    absolute: float | None, absolute_max: float | None, field: str
) -> None:
    with pytest.raises(ObservationError) as err:
        rest_by_percent("capacity", absolute, absolute_max)
    assert err.value.reason == "bad-response"
    assert f"root.default.{field}: expected a percentage, got -5.0" in err.value.message


@pytest.mark.parametrize("row", ["Effective Capacity:", "Effective Max Capacity:"])
@pytest.mark.parametrize("value", ["16 GB (100.0%)", "&lt;memory:16384&gt; (100.0%)"])
def test_a_bad_effective_capacity_is_refused(row: str, value: str) -> None:
    html = with_row(page(), row, value)
    with pytest.raises(ObservationError, match="cannot read resource value"):
        parse_capacity_page(html, "scheduler.html")


def test_a_page_of_partitions_gives_no_leaf() -> None:
    """Each leaf once per partition, and nowhere the partition its AMs go to."""
    partition = "Queue Status for Partition '&lt;DEFAULT_PARTITION&gt;'"
    html = page().replace("Queue Status", partition, 1)
    assert parse_capacity_page(html) == ()


def test_the_cluster_page_has_no_leaf() -> None:
    assert parse_capacity_page((USERS / "cluster.html").read_bytes()) == ()


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("&lt;memory:6144, vCores:1&gt;", "6 GB", "cannot read resource value"),
        ("Num Schedulable Applications:", "Num Apps:", "Num Schedulable Applications"),
        ("Weight\n", "Weight</th><th>Weight", "8 cells under 9 headers"),
    ],
)
def test_an_unreadable_leaf_is_refused(old: str, new: str, words: str) -> None:
    assert old in page()
    with pytest.raises(ObservationError) as err:
        parse_capacity_page(page().replace(old, new, 1), "scheduler.html")
    assert err.value.reason == "bad-response" and words in err.value.message


def test_tables_nested_in_a_leaf_cost_linear_work() -> None:
    """One table is read at a time: tables nested in it are its rows, each tag seen once."""
    def work(n: int) -> float:
        at = page().index('<tr class="odd">')
        html = page()[:at] + "<table><tr><td>" * n + page()[at:]
        started = time.process_time()
        parse_capacity_page(html)
        return max(time.process_time() - started, 1e-4)

    assert min(work(160_000) / work(40_000) for _ in range(3)) < 10


@given(st.text(alphabet="<>/!-?&#;='\" tdhrablexinfoQS:\n", max_size=400))
def test_any_page_is_read_or_refused_with_a_reason(html: str) -> None:
    try:
        parse_capacity_page(html)
    except ObservationError as exc:
        assert exc.reason == "bad-response"
