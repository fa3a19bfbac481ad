"""Node-label partitions in the simulated CapacityScheduler, EMR's shape: every AM on one
exclusive label (``yarn.resourcemanager.node-labels.am.default-node-label-expression``), its
AM limit that partition's (``AbstractLeafQueue.calculateAndGetAMResourceLimitPerPartition``,
``getMaximumAMResourcePercentPerPartition``), tasks on the other nodes."""

from __future__ import annotations

import pytest

from amtuner.model import Wait, WaitCause
from amtuner.monitor.rest import build_observation
from amtuner.sim import rmapi
from amtuner.sim.cluster import Cluster
from amtuner.sim.engine import Engine
from amtuner.sim.placement import AM_NODE_LABEL
from amtuner.sim.sched_config import SchedulerConfigError, default_scheduler_config
from amtuner.sim.sched_config.capacity import parse_capacity_config
from amtuner.sim.simulation import build_simulation
from amtuner.sim.spec import IMMEDIATE, JobSpec, TaskGroup, Workload

P = "yarn.scheduler.capacity."
CORE = {
    P + "root.accessible-node-labels.core.capacity": "100",
    P + "root.default.accessible-node-labels": "core",
    P + "root.default.accessible-node-labels.core.capacity": "100",
}


def _config(a: float, props: dict[str, str]) -> bytes:
    data = default_scheduler_config("capacity", ("root.default",), a)
    body = "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items()
    )
    return data.replace(b"</configuration>", body.encode() + b"</configuration>")


def _jobs(n: int, maps: int = 0) -> Workload:
    """``n`` jobs of 2 GB AMs; without maps they hold their AM for good."""
    groups = (TaskGroup("map", maps, 1024, 1, 20.0, 0.5, 5.0),) if maps else ()
    jobs = tuple(
        JobSpec(
            job_id=f"job{i}", submit_s=0.0, queue="root.default", maps=groups,
            am_memory_mb=2048, am_startup_s=1e9 if not maps else 1.0,
        )
        for i in range(n)
    )  # fmt: skip
    return Workload("labels", jobs, nodes=4)


def test_the_file_gives_each_queue_its_capacity_and_am_share_per_partition() -> None:
    """``getLabeledQueueCapacity`` is a share of the parent's in the partition (0 unset),
    ``getMaximumAMResourcePercentPerPartition`` falls back to the queue's own, and
    ``default-node-label-expression`` is inherited."""
    conf = parse_capacity_config(
        _config(0.3, {
            P + "root.queues": "a,b", P + "root.a.capacity": "50", P + "root.b.capacity": "50",
            P + "root.accessible-node-labels.core.capacity": "80",
            P + "root.a.accessible-node-labels.core.capacity": "50",
            P + "root.a.accessible-node-labels.core.maximum-capacity": "75",
            P + "root.b.accessible-node-labels.core.maximum-am-resource-percent": "0.6",
            P + "root.default-node-label-expression": "core",
        })
    )  # fmt: skip
    by_path = {q.path: q for q in conf.queues}
    assert by_path["root.a"].in_partition("core") == pytest.approx((0.4, 0.75, 0.3))
    assert by_path["root.b"].in_partition("core") == pytest.approx((0.0, 1.0, 0.6))
    assert by_path["root.b"].in_partition("gpu") == (0.0, 0.0, 0.3)
    assert by_path["root.a"].in_partition("") == (0.5, 1.0, 0.3)
    assert by_path["root.b"].default_label == "core"


def test_a_cluster_places_a_partitions_requests_on_its_nodes_only() -> None:
    cluster = Cluster(
        Engine(), nodes=3, memory_mb=4096, vcores=4, disk_mbps=100.0, labelled=(("core", 1),)
    )
    assert cluster.labels == ["", "core"] and cluster.part_mb == [8192, 4096]
    core = cluster.find(2048, part=1)
    assert core is not None and core.index == 0
    cluster.allocate(core, 4096, 1)
    assert not cluster.fits_in(1024, 1) and cluster.find(1024, part=1) is None
    assert cluster.fits_somewhere(4096)
    other = cluster.find(4096)
    assert other is not None and other.part == 0
    assert cluster.part_used_mb == [0, 4096]
    with pytest.raises(ValueError, match="cannot label"):
        Cluster(Engine(), nodes=1, memory_mb=4096, vcores=4, disk_mbps=1.0,
                labelled=(("core", 2),))  # fmt: skip


def test_ams_pinned_to_a_label_are_held_by_that_partitions_am_limit() -> None:
    """Four 8 GB nodes, the first labelled core: root.default's AM share there is 0.25 of 8 GB
    (2 GB, one 2 GB AM), while the leaf's 0.5 of the other 24 GB would take six. One AM runs
    (on the core node), the rest wait; the partition's share raised to 0.5 on reload lets a
    second in. Unlike the default partition's, nothing borrowed counts
    (``calculateAndGetAMResourceLimitPerPartition``)."""
    props = {**CORE, P + "root.default.accessible-node-labels.core.maximum-am-resource-percent":
             "0.25"}  # fmt: skip
    sim = build_simulation(
        "capacity", _jobs(4), _config(0.5, props), heartbeats=IMMEDIATE,
        site={AM_NODE_LABEL: "core"}, labelled=(("core", 1),),
    )  # fmt: skip
    sim.run_until(5.0)
    leaf = next(q for q in sim.view().queues if q.path == "root.default")
    assert (leaf.num_active_apps, leaf.num_pending_apps) == (1, 3)
    (core,) = leaf.partitions
    assert (core.label, core.am_limit.memory_mb, core.am_used.memory_mb) == ("core", 2048, 2048)
    assert leaf.am_used.memory_mb == 0  # the default partition's, as the RM reports it
    assert {n.index for n in sim.cluster.nodes if n.containers} == {0}
    props[P + "root.default.accessible-node-labels.core.maximum-am-resource-percent"] = "0.5"
    sim.reload_scheduler_config(_config(0.5, props))
    sim.run_until(10.0)
    leaf = next(q for q in sim.view().queues if q.path == "root.default")
    assert (leaf.num_active_apps, leaf.partitions[0].am_used.memory_mb) == (2, 4096)
    assert sim.cluster.nodes[0].free_mb == 4096


def test_without_an_own_share_the_partition_takes_the_queues() -> None:
    sim = build_simulation(
        "capacity", _jobs(4), _config(0.5, CORE), heartbeats=IMMEDIATE,
        site={AM_NODE_LABEL: "core"}, labelled=(("core", 1),),
    )  # fmt: skip
    sim.run_until(5.0)
    leaf = next(q for q in sim.view().queues if q.path == "root.default")
    assert (leaf.num_active_apps, leaf.partitions[0].am_limit.memory_mb) == (2, 4096)


def test_tasks_run_on_the_default_partition_and_the_batch_ends() -> None:
    sim = build_simulation(
        "capacity", _jobs(3, maps=4), _config(0.5, CORE), heartbeats=IMMEDIATE,
        site={AM_NODE_LABEL: "core"}, labelled=(("core", 1),),
    )  # fmt: skip
    seen: set[int] = set()
    for t in range(1, 30):
        sim.run_until(float(t))
        label_node = sim.cluster.nodes[0]
        # Only AMs (2 GB each) on the core node, never a 1 GB task.
        assert (8192 - label_node.free_mb) % 2048 == 0
        seen |= {n.index for n in sim.cluster.nodes[1:] if n.containers}
    assert seen
    assert sim.run().finished


def test_a_label_with_no_node_is_refused() -> None:
    with pytest.raises(SchedulerConfigError, match="no node"):
        build_simulation(
            "capacity", _jobs(1), _config(0.5, CORE), site={AM_NODE_LABEL: "core"}
        )


def test_a_user_is_held_to_its_user_limit_in_the_labelled_partition() -> None:
    """root.default sends every container to core (``default-node-label-expression``), one
    8 GB node, at ``user-limit-factor`` 0.5: alice's user limit there is half of it
    (``computeUserLimit`` on the partition's capacity), so her job holds 4 GB though the
    partition has room, and bob's job, come later, takes the rest. The REST face reports
    each user's use there, and her limit (which no Hadoop document does) in the view."""
    props = {
        **CORE, P + "root.default.default-node-label-expression": "core",
        P + "root.default.user-limit-factor": "0.5",
    }  # fmt: skip
    maps = (TaskGroup("map", 8, 1024, 1, 60.0, 0.0, 0.0),)
    jobs = (
        JobSpec("alice-0", 0.0, "root.default", maps=maps, user="alice", am_memory_mb=1024),
        JobSpec("bob-0", 20.0, "root.default", maps=maps, user="bob", am_memory_mb=1024),
    )
    sim = build_simulation(
        "capacity", Workload("users", jobs, nodes=4), _config(0.5, props), heartbeats=IMMEDIATE,
        labelled=(("core", 1),),
    )  # fmt: skip
    sim.run_until(15.0)
    assert sim.cluster.part_used_mb == [0, 4096]  # alice's AM and three maps
    sim.run_until(35.0)
    assert sim.cluster.part_used_mb == [0, 8192]
    leaf = next(q for q in sim.view().queues if q.path == "root.default")
    users = {u.name: u.partition for u in leaf.users}
    assert {name: p.used.memory_mb for name, p in users.items() if p} == {
        "alice": 4096, "bob": 4096,
    }  # fmt: skip
    assert {name: p.resource_limit.memory_mb for name, p in users.items() if p} == {
        "alice": 4096, "bob": 4096,
    }  # fmt: skip


def test_the_monitor_names_a_user_at_its_limit_in_the_labelled_partition() -> None:
    """Everything on core at ``user-limit-factor`` 0.25: alice's user limit there is 2 GB
    and her AM limit one 1 GB AM, so her first job holds its AM and one map and her second
    waits. The REST face reports no user limit in a partition; the monitor computes it
    (``computeUserLimit`` on the leaf's capacity, use and maximum there) and names the user
    limit, which A does not cure, not her AM limit."""
    props = {
        **CORE, P + "root.default.default-node-label-expression": "core",
        P + "root.default.user-limit-factor": "0.25",
    }  # fmt: skip
    maps = (TaskGroup("map", 8, 1024, 1, 60.0, 0.0, 0.0),)
    jobs = tuple(
        JobSpec(f"alice-{i}", 0.0, "root.default", maps=maps, user="alice", am_memory_mb=1024)
        for i in range(2)
    )
    sim = build_simulation(
        "capacity", Workload("users", jobs, nodes=4), _config(0.5, props), heartbeats=IMMEDIATE,
        labelled=(("core", 1),),
    )  # fmt: skip
    sim.run_until(15.0)
    assert sim.cluster.part_used_mb == [0, 2048]
    view = sim.view()
    obs = build_observation(
        rmapi.cluster_metrics(view), rmapi.scheduler_info(view), time=0.0, source="rest"
    )
    assert obs.waits == (Wait("root.default", WaitCause.USER_LIMIT, 1, partition="core"),)
    assert not WaitCause.USER_LIMIT.a_cures
