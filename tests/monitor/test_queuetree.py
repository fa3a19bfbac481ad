"""The queue tree's settings read from what real RMs answered (Hadoop 3.5.0's own, an HDP 2.1
sandbox's, the Hadoop documentation's examples, a Datadog fixture), written as the scheduler file
they stand for, and the documents that cannot be read refused with the queue they fail at."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from amtuner.advicecluster import allocation_file_of, capacity_file_of
from amtuner.model import SchedulerKind
from amtuner.monitor import ObservationError
from amtuner.monitor.queuetree import (
    CSQueueSettings,
    FSQueueSettings,
    NodeSize,
    parse_nodes,
    parse_queue_tree,
)
from amtuner.sim.sched_config import UNLIMITED
from amtuner.sim.sched_config.capacity import parse_capacity_config
from amtuner.sim.sched_config.fair import parse_allocation_file
from tests.conftest import HADOOP_350

DATA = Path(__file__).parent.parent / "data"
SHARED = DATA / "shared" / "fixtures"


def load(path: Path) -> Any:
    return json.loads(path.read_bytes())


def queue(tree: Any, path: str) -> Any:
    return next(q for q in tree.queues if q.path == path)


def test_hadoop_350_capacity_leaf_settings() -> None:
    """The user-limit scene: A 0.375, user-limit-factor 0.5, everything else Hadoop's default."""
    tree = parse_queue_tree(load(HADOOP_350 / "capacity-user-am-limit" / "scheduler.json"))
    assert tree.kind is SchedulerKind.CAPACITY and tree.leaves == ("root.default",)
    assert queue(tree, "root.default") == CSQueueSettings(
        path="root.default", children=(), capacity=100.0, maximum_capacity=100.0,
        max_parallel_apps=UNLIMITED, am_share=0.375, max_apps=10000, user_limit_percent=100.0,
        user_limit_factor=0.5,
    )  # fmt: skip
    notes: list[str] = []
    conf = parse_capacity_config(capacity_file_of(tree, notes))
    assert notes == []
    (root, leaf) = conf.queues
    assert (conf.global_am_percent, leaf.am_percent, leaf.user_limit_factor) == (0.375, 0.375, 0.5)
    assert root.max_parallel_apps == leaf.max_parallel_apps == UNLIMITED


def test_hadoop_350_max_parallel_apps_are_the_queues() -> None:
    tree = parse_queue_tree(load(HADOOP_350 / "capacity-max-parallel-apps" / "scheduler.json"))
    conf = parse_capacity_config(capacity_file_of(tree, []))
    assert [(q.path, q.max_parallel_apps) for q in conf.queues] == [
        ("root", UNLIMITED), ("root.default", 2)
    ]  # fmt: skip
    cluster_wide = HADOOP_350 / "capacity-cluster-max-parallel-apps" / "scheduler.json"
    conf = parse_capacity_config(capacity_file_of(parse_queue_tree(load(cluster_wide)), []))
    assert [q.max_parallel_apps for q in conf.queues] == [2, 2]


@pytest.mark.parametrize(
    "scene, share, max_apps",
    [("fair", 0.1875, None), ("fair-max-running-apps", 0.5, 2)],
)
def test_hadoop_350_fair_share_and_running_apps(scene: str, share: float, max_apps: int) -> None:
    """maxAMShare read back from amMaxResources over fairResources (3 GB of 16 GB: 0.1875)."""
    tree = parse_queue_tree(load(HADOOP_350 / scene / "scheduler.json"))
    assert tree.kind is SchedulerKind.FAIR
    leaf = queue(tree, "root.default")
    assert isinstance(leaf, FSQueueSettings) and leaf.am_share == share
    notes: list[str] = []
    conf = parse_allocation_file(allocation_file_of(tree, (16384, 16), notes))
    assert notes == [] and conf.queue_max_am_share_default == share
    (_, default) = conf.queues
    assert (default.path, default.max_running_apps, default.max_resources) == (
        "root.default", max_apps, None
    )  # fmt: skip


def test_documentation_capacity_tree_nests_and_its_float_capacities_add_up() -> None:
    """ResourceManagerRest.md's tree: float32 capacities (30.000002) whose siblings sum to 100
    within rounding; no AM share reported (2.6-era shape): Hadoop's default, said so."""
    tree = parse_queue_tree(load(SHARED / "rm-rest" / "scheduler-capacity.json"))
    assert tree.leaves == (
        "root.a.a1.a1a", "root.a.a1.a1b", "root.a.a2", "root.b.b1", "root.b.b2", "root.b.b3"
    )  # fmt: skip
    notes: list[str] = []
    conf = parse_capacity_config(capacity_file_of(tree, notes))
    by_path = {q.path: q for q in conf.queues}
    assert by_path["root.a.a1.a1b"].absolute_capacity == pytest.approx(0.0047250003)
    assert by_path["root.a"].absolute_max_capacity == pytest.approx(0.5)
    assert by_path["root.b.b3"].max_apps == 44 and by_path["root.b.b3"].user_limit_factor == 100
    assert len(notes) == 1 and "no maximum-am-resource-percent" in notes[0]
    assert notes[0].endswith("replayed at 0.1") and "root.b.b3" in notes[0]


def test_hdp_sandbox_capacity_tree() -> None:
    """An HDP 2.1 (Hadoop 2.4) RM's answer, captured by Apache Knox's tests."""
    tree = parse_queue_tree(load(SHARED / "rm-rest-real" / "apache-knox" / "scheduler.json"))
    assert tree.leaves == ("root.default",)
    leaf = queue(tree, "root.default")
    assert (leaf.capacity, leaf.max_apps, leaf.am_share) == (100.0, 10000, None)


def test_fair_27_bare_lists_and_documentation_tree() -> None:
    tree = parse_queue_tree(load(DATA / "monitor" / "scheduler-fair-2.7.json"))
    assert tree.leaves == ("root.default", "root.prod.etl")
    notes: list[str] = []
    text = allocation_file_of(tree, (16384, 16), notes)
    conf = parse_allocation_file(text)
    assert [(q.path, q.weight) for q in conf.queues] == [
        ("root", 1.0), ("root.default", 1.0), ("root.prod", 1.0), ("root.prod.etl", 1.0)
    ]  # fmt: skip
    assert b"maxResources" not in text, "2.7's unclamped maxResources is no limit"
    assert any("no maxAMShare of root.default, root.prod.etl: replayed at 0.5" in n for n in notes)

    doc = parse_queue_tree(load(SHARED / "rm-rest" / "scheduler-fair.json"))
    conf = parse_allocation_file(allocation_file_of(doc, (8192, 8), []))
    sample = next(q for q in conf.queues if q.path == "root.sample_queue")
    assert sample.max_running_apps == 50 and sample.min_resources is not None
    assert sample.min_resources.memory_mb == 10000


def test_an_idle_fair_parent_stays_a_parent_and_weights_follow_steady_shares() -> None:
    tree = parse_queue_tree(load(DATA / "monitor" / "scheduler-fair-am.json"))
    conf = parse_allocation_file(allocation_file_of(tree, (16384, 16), []))
    by_path = {q.path: q for q in conf.queues}
    assert by_path["root.prod.adhoc"].parent_type and not by_path["root.prod.adhoc"].children
    # Steady shares 4096 and 12288 under root: weights 1 and 3.
    assert (by_path["root.default"].weight, by_path["root.prod"].weight) == (1.0, 3.0)


def test_a_partial_document_is_refused_naming_the_queue() -> None:
    """Datadog's fixture: a child of root with no capacity and neither queues nor leaf fields."""
    doc = load(SHARED / "rm-rest-real" / "datadog" / "scheduler_metrics")
    with pytest.raises(ObservationError, match=r"root\.nofollowqueue: neither a leaf nor a parent"):
        parse_queue_tree(doc)


def _capacity_doc() -> Any:
    return load(HADOOP_350 / "capacity" / "scheduler.json")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda leaf: leaf.update(capacity="100"), r"root.default.capacity: expected a number"),
        (lambda leaf: leaf.update(maxCapacity=180.0), r"180.0 is not a percentage"),
        (lambda leaf: leaf.pop("capacity"), r"root.default: missing field 'capacity'"),
        (lambda leaf: leaf.update(userLimitFactor=-2), r"userLimitFactor: negative value -2"),
        (lambda leaf: leaf.update(configuredMaxAMResourceLimit=True), r"expected an AM share"),
        (lambda leaf: leaf.update(maxApplications=1.5), r"expected a whole number"),
    ],
)
def test_bad_capacity_fields_are_refused(edit: Any, message: str) -> None:
    doc = copy.deepcopy(_capacity_doc())
    edit(doc["scheduler"]["schedulerInfo"]["queues"]["queue"][0])
    with pytest.raises(ObservationError, match=message):
        parse_queue_tree(doc)


def test_siblings_that_do_not_add_up_are_refused() -> None:
    doc = copy.deepcopy(load(SHARED / "rm-rest" / "scheduler-capacity.json"))
    doc["scheduler"]["schedulerInfo"]["queues"]["queue"][1]["capacity"] = 80.0
    with pytest.raises(ObservationError, match=r"root's children \(a, b\) add up to 90\.5, "):
        parse_queue_tree(doc)


def test_bad_fair_documents_are_refused() -> None:
    doc = load(HADOOP_350 / "fair" / "scheduler.json")
    broken = copy.deepcopy(doc)
    del broken["scheduler"]["schedulerInfo"]["rootQueue"]["childQueues"]["queue"][0][
        "steadyFairResources"
    ]
    with pytest.raises(ObservationError, match=r"root\.default: missing field 'steadyFair"):
        parse_queue_tree(broken)
    stray = copy.deepcopy(doc)
    stray["scheduler"]["schedulerInfo"]["rootQueue"]["childQueues"]["queue"][0]["queueName"] = (
        "other.default"
    )
    with pytest.raises(ObservationError, match=r"'other\.default' is not under it"):
        parse_queue_tree(stray)
    with pytest.raises(ObservationError, match="FifoScheduler"):
        parse_queue_tree({"scheduler": {"schedulerInfo": {"type": "fifoScheduler"}}})
    with pytest.raises(ObservationError, match="missing object 'scheduler'"):
        parse_queue_tree({"clusterMetrics": {}})


def test_nodes_of_an_hdp_sandbox_and_of_the_simulated_rm() -> None:
    """2.4's NodeInfo: memory as used + available, no vcores; 3.x's: ``totalResource``."""
    from amtuner.advicecluster import shape_of_nodes
    from amtuner.sim.rmapi.face import FaceOptions
    from amtuner.sim.rmapi.rest import nodes_info
    from amtuner.sim.simulation import build_simulation, default_scheduler_config
    from amtuner.sim.workload import load_workload

    knox = parse_nodes(load(SHARED / "rm-rest-real" / "apache-knox" / "nodes.json"))
    assert knox == (NodeSize("localhost:45454", 8192, None),)
    notes: list[str] = []
    assert shape_of_nodes(knox, notes) == {"nodes": 1, "node_memory_mb": 8192} and notes == []

    wl = load_workload("paper:mixed")
    sim = build_simulation("capacity", wl, default_scheduler_config("capacity", wl.queues),
                           nodes=3, node_memory_mb=4096, node_vcores=4, labelled=[("gpu", 1)])
    sim.run(60)
    doc = json.loads(json.dumps(nodes_info(sim.node_views(), FaceOptions())))
    nodes = parse_nodes(doc)
    assert [(n.memory_mb, n.vcores) for n in nodes] == [(4096, 4)] * 3
    assert [n.labels for n in nodes].count(("gpu",)) == 1
    assert shape_of_nodes(nodes, notes) == {"nodes": 3, "node_memory_mb": 4096, "node_vcores": 4}
    assert notes == ["1 of the nodes carry node labels (gpu): replayed as unlabelled"]


def test_nodes_of_different_sizes_are_replayed_as_their_mean() -> None:
    from amtuner.advicecluster import shape_of_nodes

    notes: list[str] = []
    nodes = [NodeSize("a", 8192, 8), NodeSize("b", 8192, 8), NodeSize("c", 16384, 16)]
    assert shape_of_nodes(nodes, notes) == {
        "nodes": 3, "node_memory_mb": 10922, "node_vcores": 10
    }  # fmt: skip
    assert notes == ["the nodes differ in size (8192 to 16384 MB): replayed as 3 nodes of their "
                     "mean, 10922 MB"]  # fmt: skip


def test_nodes_documents_that_cannot_be_read_are_refused() -> None:
    new = load(SHARED / "rm-rest-real" / "dd-agent" / "nodes_metrics.json")
    with pytest.raises(ObservationError, match="no node is RUNNING"):
        parse_nodes(new)
    with pytest.raises(ObservationError, match="no node is RUNNING"):
        parse_nodes({"nodes": None})
    knox = load(SHARED / "rm-rest-real" / "apache-knox" / "nodes.json")
    knox["nodes"]["node"][0]["availMemoryMB"] = -1
    with pytest.raises(ObservationError, match="availMemoryMB: negative value -1"):
        parse_nodes(knox)
    with pytest.raises(ObservationError, match="missing object 'nodes'"):
        parse_nodes({"node": []})
