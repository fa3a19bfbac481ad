"""REST parsing against every public RM response in tests/data/shared and our own edge cases."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest

from amtuner.model import SchedulerKind
from amtuner.monitor.rest import (
    ObservationError,
    build_observation,
    decode_json,
    parse_metrics,
    scheduler_kind_of,
)

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "shared" / "fixtures"
DATA = Path(__file__).resolve().parents[1] / "data" / "monitor"


def shared(rel: str) -> Any:
    path = FIXTURES / rel
    return decode_json(path.read_bytes(), "application/json", str(path))


def own(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def observe(metrics: Any, scheduler: Any, targets: tuple[str, ...] = ()) -> Any:
    return build_observation(metrics, scheduler, time=5.0, source="rest test", targets=targets)


METRICS_FILES = [
    "rm-rest/cluster-metrics.json",
    "rm-rest-real/apache-knox/cluster-metrics.json",
    "rm-rest-real/datadog/cluster_metrics",
    "rm-rest-real/dd-agent/cluster_metrics.json",
    "rm-rest-real/pbwebmedia/example_metrics.json",
]
SCHEDULER_FILES = [
    "rm-rest/scheduler-capacity.json",
    "rm-rest/scheduler-fair.json",
    "rm-rest-real/apache-knox/scheduler.json",
    "rm-rest-real/datadog/scheduler_metrics",
    "rm-rest-real/datadog/ci/scheduler_metrics",
    "rm-rest-real/datadog/sublevel_queue.json",
    "rm-rest-real/dd-agent/scheduler_metrics.json",
]


@pytest.mark.parametrize("metrics_file", METRICS_FILES)
@pytest.mark.parametrize("scheduler_file", SCHEDULER_FILES)
def test_every_shared_pair_gives_an_observation(metrics_file: str, scheduler_file: str) -> None:
    m = shared(metrics_file)["clusterMetrics"]
    obs = observe(shared(metrics_file), shared(scheduler_file))
    assert (obs.pending_apps, obs.running_apps) == (m["appsPending"], m["appsRunning"])
    assert (obs.memory_used_mb, obs.memory_total_mb) == (m["allocatedMB"], m["totalMB"])
    assert obs.queues and all(q.name.startswith("root.") for q in obs.queues)
    assert obs.source == "rest test" and obs.time == 5.0


def test_shared_metrics_numbers() -> None:
    knox = parse_metrics(shared("rm-rest-real/apache-knox/cluster-metrics.json"))
    assert (knox.memory_total_mb, knox.memory_used_mb, knox.vcores_total) == (8192, 0, 0)
    doc = parse_metrics(shared("rm-rest/cluster-metrics.json"))
    assert (doc.memory_total_mb, doc.vcores_used, doc.vcores_total) == (17408, 1, 8)
    pb = parse_metrics(shared("rm-rest-real/pbwebmedia/example_metrics.json"))
    assert (pb.pending_apps, pb.running_apps, pb.memory_used_mb, pb.memory_total_mb) == (
        3,
        4,
        9,
        16,
    )
    assert (pb.vcores_used, pb.vcores_total) == (12, 17)


def test_doc_capacity_tree_paths_and_counts() -> None:
    obs = observe(shared("rm-rest/cluster-metrics.json"), shared("rm-rest/scheduler-capacity.json"))
    assert obs.scheduler is SchedulerKind.CAPACITY
    assert [q.name for q in obs.queues] == [
        "root.a.a1.a1a",
        "root.a.a1.a1b",
        "root.a.a2",
        "root.b.b1",
        "root.b.b2",
        "root.b.b3",
    ]
    b1 = obs.queue("root.b.b1")
    assert b1 is not None and (b1.pending_apps, b1.running_apps) == (1, 1)
    # The doc's old-style CS response has no AM fields: the RM does not report them.
    assert obs.am_memory_used_mb is None and b1.am_memory_limit_mb is None
    # No effective max resource in this version: absoluteMaxCapacity 25 % of 17408 MB.
    a1a = obs.queue("root.a.a1.a1a")
    assert a1a is not None and a1a.memory_share_mb == 4352
    # Nor an effective min resource: its guarantee is absoluteCapacity 2.6775 % of 17408 MB.
    assert a1a.guarantee_mb == 466


@pytest.mark.parametrize("key", ["absoluteCapacity", "absoluteMaxCapacity"])
@pytest.mark.parametrize("value", [-5, "25", True, math.nan, math.inf])
def test_a_capacity_percentage_that_is_not_one_is_refused(key: str, value: Any) -> None:
    doc = shared("rm-rest/scheduler-capacity.json")
    a = doc["scheduler"]["schedulerInfo"]["queues"]["queue"][0]
    a2 = a["queues"]["queue"][1]
    assert a2["queueName"] == "a2"
    a2[key] = value
    with pytest.raises(ObservationError, match=rf"root.a.a2.{key}: expected a percentage"):
        observe(shared("rm-rest/cluster-metrics.json"), doc)


def test_datadog_capacity_am_fields() -> None:
    obs = observe(
        shared("rm-rest-real/datadog/cluster_metrics"),
        shared("rm-rest-real/dd-agent/scheduler_metrics.json"),
    )
    (q,) = obs.queues
    assert q.name == "root.clientqueue"
    assert (q.am_memory_used_mb, q.am_vcores_used, q.am_memory_limit_mb) == (2688, 3, 2587968)
    assert (q.memory_used_mb, q.vcores_used, q.running_apps, q.containers) == (
        3164800,
        579,
        3,
        75,
    )
    assert obs.am_memory_used_mb == 2688


def test_datadog_odd_tree() -> None:
    """A typeless childless entry is an empty parent; a 'leaf' with children is a parent."""
    obs = observe(
        shared("rm-rest-real/datadog/cluster_metrics"),
        shared("rm-rest-real/datadog/scheduler_metrics"),
    )
    assert [q.name for q in obs.queues] == ["root.clientqueue.test_subqueue"]
    assert obs.queues[0].running_apps == 5 and obs.queues[0].memory_used_mb == 34567
    assert obs.am_memory_used_mb is None


def test_doc_fair_scheduler() -> None:
    obs = observe(shared("rm-rest/cluster-metrics.json"), shared("rm-rest/scheduler-fair.json"))
    assert obs.scheduler is SchedulerKind.FAIR
    assert [q.name for q in obs.queues] == ["root.default", "root.sample_queue.sample_sub_queue"]
    sub = obs.queue("root.sample_queue.sample_sub_queue")
    assert sub is not None and sub.memory_share_mb == 10000 and sub.am_memory_limit_mb is None
    assert obs.am_memory_used_mb is None


def test_capacity_34_excerpt_is_trimmed_and_refused_but_its_am_fields_read() -> None:
    doc = shared("rm-rest/scheduler-capacity-3.4-am-fields-excerpt.json")
    metrics = {"clusterMetrics": {**own("cluster-metrics-3.3.json")["clusterMetrics"]}}
    metrics["clusterMetrics"]["totalMB"] = 32768
    with pytest.raises(ObservationError) as err:
        observe(metrics, doc)
    # root.b was trimmed to its AM fields: a response like that is refused, naming the field.
    assert err.value.reason == "bad-response" and "root.b" in err.value.message
    whole = copy.deepcopy(doc)
    queues = whole["scheduler"]["schedulerInfo"]["queues"]["queue"]
    queues[1].update(numPendingApplications=2, numActiveApplications=1, resourcesUsed={"memory": 0})
    obs = observe(metrics, whole, targets=("root.a",))
    a, b = obs.queues
    assert (a.name, a.am_memory_limit_mb, a.am_memory_used_mb, a.memory_share_mb) == (
        "root.a",
        2048,
        0,
        16384,
    )
    # root.b: no usedAMResource/AMResourceLimit, so the per-partition block is read.
    assert (b.am_memory_limit_mb, b.memory_share_mb, b.pending_apps) == (4096, 32768, 2)
    assert obs.am_memory_used_mb == 0


def test_own_fair_scheduler_with_am_fields() -> None:
    obs = observe(
        own("cluster-metrics-3.3.json"), own("scheduler-fair-am.json"), ("root.prod.etl",)
    )
    assert (obs.pending_apps, obs.running_apps, obs.memory_used_mb) == (3, 3, 9216)
    assert [q.name for q in obs.queues] == ["root.default", "root.prod.etl"]
    etl = obs.queue("root.prod.etl")
    assert etl is not None
    assert (etl.pending_apps, etl.running_apps) == (3, 2)
    assert (etl.am_memory_used_mb, etl.am_memory_limit_mb, etl.memory_share_mb) == (
        2048,
        6144,
        12288,
    )
    assert obs.am_memory_used_mb == 1024 + 2048
    assert obs.memory_ratio == pytest.approx(9216 / 16384)
    # Containers (AMs included): the cluster's containersAllocated, each leaf's own count.
    assert (obs.containers, etl.containers) == (9, 7)


def test_unknown_target_queue() -> None:
    with pytest.raises(ObservationError) as err:
        observe(own("cluster-metrics-3.3.json"), own("scheduler-fair-am.json"), ("root.prod",))
    assert err.value.reason == "unknown-queue"
    assert "'root.prod'" in err.value.message and "root.prod.etl" in err.value.message


def metrics_with(**fields: Any) -> dict[str, Any]:
    doc = own("cluster-metrics-3.3.json")
    doc["clusterMetrics"].update(fields)
    return {k: {f: v for f, v in doc[k].items() if v is not None} for k in doc}


@pytest.mark.parametrize(
    ("fields", "reason", "words"),
    [
        ({"totalMB": 0}, "zero-total", "totalMB is 0"),
        ({"totalMB": -8192}, "bad-response", "negative"),
        ({"appsPending": -1}, "bad-response", "appsPending"),
        ({"appsRunning": None}, "bad-response", "missing field 'appsRunning'"),
        ({"allocatedMB": "9216"}, "bad-response", "expected a number"),
        ({"allocatedMB": 1.5}, "bad-response", "whole number"),
        ({"appsPending": True}, "bad-response", "expected a number"),
    ],
)
def test_bad_metrics(fields: dict[str, Any], reason: str, words: str) -> None:
    with pytest.raises(ObservationError) as err:
        observe(metrics_with(**fields), own("scheduler-fair-am.json"))
    assert err.value.reason == reason and words in err.value.message


def test_missing_leaf_field_and_negative_queue_figure() -> None:
    doc = own("scheduler-fair-am.json")
    leaf = doc["scheduler"]["schedulerInfo"]["rootQueue"]["childQueues"]["queue"][0]
    del leaf["numActiveApps"]
    with pytest.raises(ObservationError, match=r"root.default: missing field 'numActiveApps'"):
        observe(own("cluster-metrics-3.3.json"), doc)
    leaf["numActiveApps"] = 1
    leaf["amUsedResources"]["memory"] = -1
    with pytest.raises(ObservationError, match="negative"):
        observe(own("cluster-metrics-3.3.json"), doc)


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        ({"scheduler": {"schedulerInfo": {"type": "fifoScheduler"}}}, "FifoScheduler"),
        ({"scheduler": {"schedulerInfo": {"type": "x"}}}, "unknown scheduler type"),
        ({"scheduler": {}}, "schedulerInfo"),
        ([], "expected a JSON object"),
        ({"scheduler": {"schedulerInfo": {"type": "fairScheduler"}}}, "rootQueue"),
        (
            {"scheduler": {"schedulerInfo": {"type": "capacityScheduler", "queueName": "root"}}},
            "no leaf queue",
        ),
    ],
)
def test_bad_scheduler_documents(doc: Any, words: str) -> None:
    with pytest.raises(ObservationError) as err:
        observe(own("cluster-metrics-3.3.json"), doc)
    assert err.value.reason == "bad-response" and words in err.value.message


def test_scheduler_kind_of() -> None:
    assert scheduler_kind_of(own("scheduler-fair-am.json")) is SchedulerKind.FAIR


LOGIN_PAGE = b"""<!DOCTYPE html><html><head><title>Knox SSO</title></head>
<body><form action="/gateway/knoxsso/api/v1/websso" method="post">
<input name="username"><input type="password" name="password"></form></body></html>"""


@pytest.mark.parametrize(
    ("body", "ctype", "words"),
    [
        (LOGIN_PAGE, "text/html; charset=utf-8", "HTML page"),
        (LOGIN_PAGE, "application/json", "HTML page"),
        (b'{"clusterMetrics": {"appsPending": 3, "appsRu', "application/json", "not valid JSON"),
        (b"\x00\xff garbage \x13", "application/octet-stream", "not valid JSON"),
        (b"", "application/json", "not valid JSON"),
        (b'<?xml version="1.0"?><clusterMetrics/>', "application/xml", "XML"),
    ],
)
def test_decode_json_refuses(body: bytes, ctype: str, words: str) -> None:
    with pytest.raises(ObservationError) as err:
        decode_json(body, ctype, "http://rm:8088/ws/v1/cluster/metrics")
    assert err.value.reason == "bad-response"
    assert words in err.value.message and "http://rm:8088" in err.value.message


def test_shared_xml_capture_is_refused_clearly() -> None:
    path = FIXTURES / "rm-rest-real/apache-knox/cluster-metrics.xml"
    with pytest.raises(ObservationError, match="XML where JSON was expected"):
        decode_json(path.read_bytes(), "application/xml", str(path))


def test_unknown_reason_label_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        ObservationError("oops", "x")


def test_am_sum_only_when_every_leaf_reports_it() -> None:
    doc = own("scheduler-fair-am.json")
    leaf = doc["scheduler"]["schedulerInfo"]["rootQueue"]["childQueues"]["queue"][0]
    del leaf["amUsedResources"]
    obs = observe(own("cluster-metrics-3.3.json"), doc)
    assert obs.am_memory_used_mb is None
    etl = obs.queue("root.prod.etl")
    assert etl is not None and etl.am_memory_used_mb == 2048


def test_child_queues_as_a_bare_list_and_single_object() -> None:
    """2.7's FairScheduler marshalled childQueues as a list; one child may come as an object."""
    doc = own("scheduler-fair-am.json")
    root = doc["scheduler"]["schedulerInfo"]["rootQueue"]
    default, prod = root["childQueues"]["queue"]
    root["childQueues"] = [default, prod]
    prod["childQueues"] = {"queue": prod["childQueues"]["queue"][0]}
    obs = observe(own("cluster-metrics-3.3.json"), doc)
    assert [q.name for q in obs.queues] == ["root.default", "root.prod.etl"]


def test_fair_27_lone_child_object_and_type_list() -> None:
    """FS <= 2.7: a lone child is the object itself and ``type`` a one-element list; the leaf
    under it is read, not dropped."""
    obs = observe(
        own("cluster-metrics-3.3.json"), own("scheduler-fair-2.7.json"), ("root.prod.etl",)
    )
    assert [q.name for q in obs.queues] == ["root.default", "root.prod.etl"]
    etl = obs.queue("root.prod.etl")
    assert etl is not None
    assert (etl.pending_apps, etl.running_apps, etl.memory_used_mb, etl.memory_share_mb) == (
        3,
        2,
        7168,
        12288,
    )
    assert obs.am_memory_used_mb is None  # 2.7 reports no AM figures


def test_fair_27_lone_leaf_under_root() -> None:
    """A cluster whose only queue is root.default: the one leaf the controller has."""
    doc = own("scheduler-fair-2.7.json")
    root = doc["scheduler"]["schedulerInfo"]["rootQueue"]
    root["childQueues"] = root["childQueues"][0]
    obs = observe(own("cluster-metrics-3.3.json"), doc)
    assert [q.name for q in obs.queues] == ["root.default"]


def test_fair_27_leaf_typed_as_list_without_counters_is_refused() -> None:
    doc = own("scheduler-fair-2.7.json")
    etl = doc["scheduler"]["schedulerInfo"]["rootQueue"]["childQueues"][1]["childQueues"]
    del etl["numPendingApps"]
    with pytest.raises(ObservationError, match=r"root.prod.etl: missing field 'numPendingApps'"):
        observe(own("cluster-metrics-3.3.json"), doc)


@pytest.mark.parametrize(
    ("children", "words"),
    [
        ({"queueX": []}, "expected a list of queues, got an object with keys queueX"),
        ("root.prod.etl", "expected a list of queues, got str"),
    ],
)
def test_child_queues_of_unknown_shape_are_refused(children: Any, words: str) -> None:
    doc = own("scheduler-fair-2.7.json")
    doc["scheduler"]["schedulerInfo"]["rootQueue"]["childQueues"][1]["childQueues"] = children
    with pytest.raises(ObservationError) as err:
        observe(own("cluster-metrics-3.3.json"), doc)
    assert err.value.reason == "bad-response" and words in err.value.message


@pytest.mark.parametrize("kind", [["fairSchedulerLeafQueueInfo", "x"], "fairSchedulerQueueInfoX"])
def test_childless_queue_of_unknown_type_is_refused(kind: Any) -> None:
    doc = own("scheduler-fair-2.7.json")
    etl = doc["scheduler"]["schedulerInfo"]["rootQueue"]["childQueues"][1]["childQueues"]
    etl["type"] = kind
    del etl["numPendingApps"]
    with pytest.raises(ObservationError, match=r"root\.prod\.etl: childless queue of unknown type"):
        observe(own("cluster-metrics-3.3.json"), doc)
