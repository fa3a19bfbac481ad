"""FairScheduler rules, with numbers checked by hand against yarn-facts §2."""

from __future__ import annotations

from pathlib import Path

import pytest

from amtuner.sim.fairshare import can_run_am, compute_fair_shares, max_am_resource
from amtuner.sim.sched_config import UNLIMITED
from amtuner.sim.sched_config.fair import (
    ResourceSpec,
    parse_allocation_file,
    parse_resource,
)
from amtuner.sim.simulation import (
    SchedulerConfigError,
    Simulation,
    default_scheduler_config,
)
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from amtuner.sim.view import QueueView, Res
from tests.sim.conftest import build_at_once

SHARED = Path(__file__).resolve().parents[1] / "data" / "shared"


def _workload(queues: dict[str, int], maps: int = 5, nodes: int = 1) -> Workload:
    jobs = tuple(
        JobSpec(
            job_id=f"{queue}-{i}",
            submit_s=0.0,
            queue=queue,
            maps=(TaskGroup("map", maps, 1024, 1, 20.0, 0.5, 5.0),),
            reduces=(TaskGroup("reduce", 1, 1024, 1, 10.0, 0.5, 5.0),),
        )
        for queue, n in queues.items()
        for i in range(n)
    )
    return Workload("t", jobs, nodes=nodes, queues=tuple(queues))


def _alloc(body: str) -> bytes:
    return f"<allocations>{body}</allocations>".encode()


def _running(sim: Simulation) -> int:
    return sim.view().apps_running


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1024 mb, 2 vcores", ResourceSpec(memory_mb=1024, vcores=2)),
        ("10000 mb,0vcores", ResourceSpec(memory_mb=10000, vcores=0)),
        ("2 vcores, 4096 MB", ResourceSpec(memory_mb=4096, vcores=2)),
        ("50%", ResourceSpec(memory_pct=50, vcores_pct=50)),
        ("40% memory, 60% cpu", ResourceSpec(memory_pct=40, vcores_pct=60)),
        ("vcores=2, memory-mb=1024", ResourceSpec(memory_mb=1024, vcores=2)),
        ("vcores=50%, memory-mb=25%", ResourceSpec(memory_pct=25, vcores_pct=50)),
        ("memory-mb=2048", ResourceSpec(memory_mb=2048)),
    ],
)
def test_resource_syntaxes(text: str, expected: ResourceSpec) -> None:
    assert parse_resource(text, "q") == expected


@pytest.mark.parametrize("text", ["1024 mb", "lots", "40% memory", "cpus=3", "50% disk"])
def test_bad_resource_values_are_refused(text: str) -> None:
    with pytest.raises(SchedulerConfigError, match="q: cannot parse"):
        parse_resource(text, "q")


def test_percentages_resolve_against_the_cluster_and_unset_means_unbounded() -> None:
    assert parse_resource("40% memory, 60% cpu", "q").resolve(10000, 10, 0) == (4000, 6)
    assert parse_resource("memory-mb=2048", "q").resolve(10000, 10, UNLIMITED) == (2048, UNLIMITED)


def test_fair_shares_follow_weights_min_and_max() -> None:
    assert compute_fair_shares(100, [(1, 0, 1000), (1, 0, 1000)]) == [50, 50]
    assert compute_fair_shares(100, [(1, 0, 1000), (3, 0, 1000)]) == [25, 75]
    assert compute_fair_shares(100, [(1, 60, 1000), (1, 0, 1000)]) == [60, 40]
    assert compute_fair_shares(100, [(1, 0, 20), (1, 0, 1000)]) == [20, 80]
    assert compute_fair_shares(100, [(1, 0, 20), (1, 0, 30)]) == [20, 30]
    assert compute_fair_shares(100, []) == []


def test_am_limit_is_share_times_fair_share_rounded_up() -> None:
    assert max_am_resource((32768, 32), (UNLIMITED, UNLIMITED), (0, 0), 0.3) == (9831, 10)


def test_zero_fair_share_falls_back_to_what_is_free_capped_by_max_share() -> None:
    assert max_am_resource((0, 0), (UNLIMITED, UNLIMITED), (5000, 3), 0.5) == (2500, 2)
    assert max_am_resource((0, 8), (4000, UNLIMITED), (5000, 3), 0.5) == (2000, 4)


def test_minus_one_disables_the_am_check() -> None:
    assert can_run_am((10**9, 10**6), (2048, 1), (0, 0), -1.0)
    assert not can_run_am((2048, 1), (2048, 1), (4095, 10), 0.5)
    assert can_run_am((2048, 1), (2048, 1), (4096, 10), 0.5)


def test_am_share_caps_running_apps_at_placement_time() -> None:
    """Hadoop 2.9-3.5 FSLeafQueue.computeMaxAMResource under the default fair policy: the
    leaf's fair share has no vcores, so the limit's vcore side is 0.5 x the vcores free when
    the last AM was tried; memory binds here (8 AMs of 2 GB)."""
    wl = _workload({"root.default": 10}, maps=50, nodes=4)
    sim = build_at_once("fair", wl, default_scheduler_config("fair", wl.queues, 0.5))
    sim.run_until(1.0)
    view = sim.view()
    leaf = next(q for q in view.queues if q.path == "root.default")
    assert (leaf.fair_share.memory_mb, leaf.fair_share.vcores) == (32768, 0)
    assert leaf.am_limit.memory_mb == 16384  # 0.5 x 32768
    assert 0 < leaf.am_limit.vcores < 16  # 0.5 x 32 had the total been its base
    assert (leaf.num_active_apps, leaf.num_pending_apps) == (8, 2)
    assert view.apps_pending == 2


@pytest.mark.parametrize(("policy", "vcores"), [("fair", 0), ("drf", 16)])
def test_a_leafs_vcore_fair_share_follows_its_parents_policy(policy: str, vcores: int) -> None:
    """FairSharePolicy passes only memory to ComputeFairShares; DRF shares every resource
    (Hadoop 2.7-3.5; a parent cannot be fifo). Two active leaves of equal weight on 32 GB / 32
    vcores."""
    wl = _workload({"root.a": 2, "root.b": 2}, nodes=4)
    data = default_scheduler_config("fair", wl.queues, 0.5).replace(
        b"<allocations>",
        f"<allocations>\n  <defaultQueueSchedulingPolicy>{policy}"
        "</defaultQueueSchedulingPolicy>".encode(),
    )
    sim = build_at_once("fair", wl, data)
    sim.run_until(1.0)
    shares = {q.path: q.fair_share for q in sim.view().queues}
    assert (shares["root"].memory_mb, shares["root"].vcores) == (32768, 32)
    for leaf in ("root.a", "root.b"):
        assert (shares[leaf].memory_mb, shares[leaf].vcores) == (16384, vcores)


def test_vcores_bind_the_fair_scheduler_but_not_the_capacity_scheduler() -> None:
    # Two nodes of 8192 MB and 2 vcores, one job of 10 maps. The FairScheduler places a
    # container only where its vcores fit too (fitsIn): 4 at most. The CapacityScheduler with its
    # default calculator places by memory alone, the AM and all 10 maps at once, and runs the
    # nodes' vcores below zero, as the real one does.
    wl = _workload({"root.default": 1}, maps=10, nodes=2)
    for kind, most, never_over in (("fair", 4, True), ("capacity", 11, False)):
        config = default_scheduler_config(kind, wl.queues, 1.0)
        sim = build_at_once(kind, wl, config, node_memory_mb=8192, node_vcores=2)
        lowest = highest = 0
        for t in range(1, 60):
            sim.run_until(float(t))
            lowest = min(lowest, *(node.free_vcores for node in sim.cluster.nodes))
            highest = max(highest, sim.view().containers_allocated)
        assert (highest, lowest >= 0) == (most, never_over), (kind, highest, lowest)


def test_minus_one_lets_every_am_start() -> None:
    wl = _workload({"root.default": 3}, maps=2)
    sim = build_at_once(
        "fair", wl, _alloc('<queue name="default"><maxAMShare>-1</maxAMShare></queue>')
    )
    sim.run_until(1.0)
    assert _running(sim) == 3
    sim = build_at_once("fair", wl, default_scheduler_config("fair", wl.queues, 0.5))
    sim.run_until(1.0)
    assert _running(sim) == 2  # 0.5 x 8192 = 4096: two 2048 MB AMs


def test_a_queue_with_zero_fair_share_still_starts_an_am() -> None:
    # weight 0: the fair share is 0, so the AM limit comes from what the cluster has free
    wl = _workload({"root.zero": 1}, maps=2)
    config = _alloc('<queue name="zero"><weight>0</weight><maxAMShare>0.5</maxAMShare></queue>')
    sim = build_at_once("fair", wl, config)
    sim.run_until(1.0)
    leaf = next(q for q in sim.view().queues if q.path == "root.zero")
    assert leaf.fair_share.memory_mb == 0
    assert leaf.am_limit.memory_mb == 4096  # 0.5 x the 8192 MB free when the AM was tried
    assert _running(sim) == 1
    assert sim.run().finished


def test_queue_max_apps_default_also_caps_root() -> None:
    wl = _workload({"root.a": 3, "root.b": 3}, maps=2, nodes=4)
    queues = (
        '<queue name="a"><maxRunningApps>5</maxRunningApps></queue>'
        '<queue name="b"><maxRunningApps>5</maxRunningApps></queue>'
    )
    pitfall = build_at_once(
        "fair", wl, _alloc(f"<queueMaxAppsDefault>2</queueMaxAppsDefault>{queues}")
    )
    pitfall.run_until(1.0)
    root = next(q for q in pitfall.view().queues if q.path == "root")
    assert root.max_apps == 2
    assert _running(pitfall) == 2
    assert pitfall.run().finished  # the waiting apps become runnable as others finish

    fixed = build_at_once(
        "fair",
        wl,
        _alloc(
            "<queueMaxAppsDefault>2</queueMaxAppsDefault>"
            f'<queue name="root"><maxRunningApps>100</maxRunningApps>{queues}</queue>'
        ),
    )
    fixed.run_until(1.0)
    assert _running(fixed) == 6


def test_users_running_apps_limits_count_across_queues() -> None:
    """``MaxRunningAppsEnforcer.canAppBeRunnable`` checks the user's limit before the queues':
    ``userMaxAppsDefault`` 1, bob's own ``maxRunningApps`` 2, counted over every queue. Alice
    runs one app at a time of her two, bob two of his three, whatever their queues allow."""
    maps = (TaskGroup("map", 1, 1024, 1, 20.0, 0.0, 0.0),)
    owners = [("root.a", "alice"), ("root.b", "alice"), ("root.a", "bob"), ("root.b", "bob"),
              ("root.a", "bob")]  # fmt: skip
    jobs = tuple(
        JobSpec(f"j{i}", 0.0, queue, maps, user=user) for i, (queue, user) in enumerate(owners)
    )
    wl = Workload("t", jobs, nodes=4, queues=("root.a", "root.b"))
    config = _alloc(
        '<userMaxAppsDefault>1</userMaxAppsDefault><user name="bob"><maxRunningApps>2'
        '</maxRunningApps></user><queue name="a"/><queue name="b"/>'
    )
    sim = build_at_once("fair", wl, config)
    sim.run_until(5.0)
    running = [(a.user, a.queue) for a in sim.app_views() if a.started_s is not None]
    assert running == [("alice", "root.a"), ("bob", "root.a"), ("bob", "root.b")]
    result = sim.run()
    assert result.finished and result.ams_at_once == 3


def test_fair_policy_spreads_containers_fifo_policy_does_not() -> None:
    wl = _workload({"root.default": 2}, maps=10)
    fair = build_at_once(
        "fair", wl, _alloc('<queue name="default"><maxAMShare>1</maxAMShare></queue>')
    )
    fair.run_until(5.5)  # both AMs (4096) running and asking for maps; 4096 MB left
    assert [a.running_containers for a in fair.app_views()] == [3, 3]
    fifo = build_at_once(
        "fair",
        wl,
        _alloc(
            '<queue name="default"><maxAMShare>1</maxAMShare>'
            "<schedulingPolicy>fifo</schedulingPolicy></queue>"
        ),
    )
    fifo.run_until(5.5)
    assert [a.running_containers for a in fifo.app_views()] == [5, 1]


def _two_busy_queues(queues: str) -> tuple[Simulation, dict[str, QueueView]]:
    """Queues ``a`` and ``b`` (allocation file elements) with a job of 40 maps each on 4 nodes,
    5.5 s in; the simulation and its queues' views by path."""
    wl = _workload({"root.a": 1, "root.b": 1}, maps=40, nodes=4)
    sim = build_at_once("fair", wl, _alloc(queues))
    sim.run_until(5.5)
    return sim, {q.path: q for q in sim.view().queues}


def test_weights_split_the_cluster_between_busy_queues() -> None:
    _, views = _two_busy_queues(
        '<queue name="a"><weight>1</weight><maxAMShare>1</maxAMShare></queue>'
        '<queue name="b"><weight>3</weight><maxAMShare>1</maxAMShare></queue>'
    )
    assert views["root.a"].fair_share.memory_mb == 8192
    assert views["root.b"].fair_share.memory_mb == 24576
    assert views["root.a"].used.memory_mb == 8192
    assert views["root.b"].used.memory_mb == 24576


def test_an_unknown_queue_is_created_as_a_leaf_under_root() -> None:
    wl = _workload({"root.adhoc": 1}, maps=2)
    sim = build_at_once("fair", wl, _alloc('<queue name="default"/>'))
    result = sim.run()
    assert result.finished and result.jobs_completed == 1
    views = {q.path: q for q in sim.view().queues}
    assert views["root.adhoc"].is_leaf and "root.adhoc" in views["root"].children


@pytest.mark.parametrize(
    "bad",
    [
        b"<allocations>",
        b"<configuration/>",
        _alloc("<defaultQueueSchedulingPolicy>fifo</defaultQueueSchedulingPolicy>"),
        _alloc('<queue name="a"><weight>heavy</weight></queue>'),
        _alloc('<queue name="a"><minResources>1024 mb</minResources></queue>'),
        _alloc('<queue name="a.b"/>'),
    ],
)
def test_a_bad_file_on_reload_is_refused_and_the_old_one_kept(bad: bytes) -> None:
    wl = _workload({"root.default": 2}, maps=2)
    good = default_scheduler_config("fair", wl.queues, 0.7)
    sim = build_at_once("fair", wl, good)
    sim.run_until(1.0)
    with pytest.raises(SchedulerConfigError):
        sim.reload_scheduler_config(bad)
    assert sim.scheduler_config() == good
    assert sim.scheduler.global_am_share == pytest.approx(0.7)
    assert sim.run().finished


def test_reload_applies_a_new_share_to_waiting_apps() -> None:
    wl = _workload({"root.default": 3}, maps=2)
    sim = build_at_once("fair", wl, default_scheduler_config("fair", wl.queues, 0.25))
    sim.run_until(1.0)
    assert _running(sim) == 1
    sim.reload_scheduler_config(default_scheduler_config("fair", wl.queues, 0.75))
    sim.run_until(1.0)
    assert _running(sim) == 3
    assert sim.result().a_trace == [[0.0, 0.25], [1.0, 0.75]]


def test_reads_the_shipped_sls_fair_scheduler_xml() -> None:
    path = SHARED / "fixtures" / "sls" / "fair-scheduler.xml"
    conf = parse_allocation_file(path.read_bytes())
    weights = {q.path: q.weight for q in conf.queues}
    assert weights == {
        "root": 1.0,
        "root.sls_queue_1": 0.25,
        "root.sls_queue_2": 0.25,
        "root.sls_queue_3": 0.5,
    }
    assert conf.user_max_apps_default == 1000
    assert conf.queues[1].min_resources == ResourceSpec(memory_mb=1024, vcores=1)


def test_nested_pools_and_a_declared_root() -> None:
    conf = parse_allocation_file(
        _alloc(
            '<queue name="root"><queue name="eng" type="parent">'
            '<pool name="ml"><maxAMShare>2.0</maxAMShare></pool></queue></queue>'
        )
    )
    by_path = {q.path: q for q in conf.queues}
    assert by_path["root.eng"].children == ("root.eng.ml",)
    assert by_path["root.eng.ml"].max_am_share == 1.0  # capped
    assert conf.queue_max_am_share_default == 0.5


def test_reload_keeps_a_busy_queue_the_file_no_longer_names() -> None:
    wl = _workload({"root.a": 2}, maps=2)
    sim = build_at_once("fair", wl, _alloc('<queue name="a"><weight>2</weight></queue>'))
    sim.run_until(1.0)
    sim.reload_scheduler_config(_alloc('<queue name="b"/>'))
    views = {q.path: q for q in sim.view().queues}
    assert views["root"].children == ("root.b", "root.a")
    assert views["root.a"].weight == 1.0  # default settings now
    with pytest.raises(SchedulerConfigError, match="cannot be a parent"):
        sim.reload_scheduler_config(_alloc('<queue name="a"><queue name="x"/></queue>'))
    assert sim.run().finished


def test_parent_queues_compete_by_weight_before_their_children() -> None:
    from amtuner.sim.cluster import Cluster
    from amtuner.sim.engine import Engine
    from amtuner.sim.fair import FairScheduler

    config = _alloc(
        '<queue name="eng" type="parent"><weight>3</weight>'
        '<queue name="x"/><queue name="y"/></queue>'
        '<queue name="ops"><weight>1</weight></queue>'
    )
    cluster = Cluster(
        Engine(),
        nodes=4,
        memory_mb=8192,
        vcores=8,
        disk_mbps=100.0,
        on_task_done=lambda node, payload: None,
    )
    fs = FairScheduler(config, cluster)
    q = fs.queues
    for leaf in ("root.eng.x", "root.eng.y", "root.ops"):
        q[leaf].heap.append(None)  # type: ignore[arg-type]  # something to serve
    # eng (weight 3) uses 12288: 4096 per weight; ops (weight 1) uses 2048
    q["root.eng.x"].used_mb = q["root.eng"].used_mb = 12288
    q["root.ops"].used_mb = 2048
    assert fs._pick_leaf(set(), set()) is q["root.ops"]  # a flat order would pick the idle y
    q["root.ops"].used_mb = 5000
    assert fs._pick_leaf(set(), set()) is q["root.eng.y"]
    # below its min share (8192, less than its 9096 demand), ops is needy and goes first
    q["root.ops"].min_mb = 8192
    q["root.ops"].pending_mb = 4096
    assert fs._pick_leaf(set(), set()) is q["root.ops"]


@pytest.mark.parametrize("hadoop", ["2.8", "3"])
def test_hadoop_2_8_checks_ams_on_memory_alone(hadoop: str) -> None:
    """Hadoop 2.7/2.8 FSLeafQueue.canRunAppAM compares memory only (FairSharePolicy
    .checkIfAMResourceUsageOverLimit), 2.9+ every resource, a zero fair share replaced by what
    is free: on nodes short of vcores 2.8 admits AMs by memory where 3.x runs out of vcores."""
    jobs = tuple(
        JobSpec(
            job_id=f"j{i}", submit_s=0.0, queue="root.default",
            maps=(TaskGroup("map", 4, 1024, 1, 60.0, 0.1, 1.0),),
            am_memory_mb=1024, am_startup_s=1.0,
        )
        for i in range(12)
    )  # fmt: skip
    wl = Workload("t", jobs, nodes=2, node_memory_mb=16384, node_vcores=4)
    sim = build_at_once(
        "fair", wl, default_scheduler_config("fair", wl.queues, 0.5), hadoop=hadoop
    )
    sim.run_until(10.0)
    leaf = next(q for q in sim.view().queues if q.path == "root.default")
    if hadoop == "2.8":
        assert (leaf.am_limit.memory_mb, leaf.am_limit.vcores) == (16384, 0)
        assert leaf.num_active_apps == 8  # 8 vcores: every one an AM, no task runs
    else:
        assert leaf.am_limit.memory_mb == 16384 and leaf.am_limit.vcores <= 4
        assert leaf.num_active_apps < 8


def test_an_am_refused_by_max_am_share_leaves_room_to_the_leafs_tasks() -> None:
    """Hadoop 3.x ``FSAppAttempt.assignContainer`` asks ``canRunAppAM`` before anything else:
    an AM over maxAMShare is passed over and the leaf's next app takes the node, however
    little room is left. Here the first app's AM uses the whole limit (0.25 of 8 GB), and each
    of its maps that ends leaves 1 GB, less than the waiting AM's 2 GB: its next map must take
    it at once."""
    wl = _workload({"root.default": 2}, maps=40)
    sim = build_at_once(
        "fair", wl, _alloc('<queue name="default"><maxAMShare>0.25</maxAMShare></queue>')
    )
    first = sim.apps[0]
    for step in range(1, 120):
        sim.run_until(step * 0.5)
        if first.pending_containers:
            assert sim.cluster.free_mb < 1024, f"1 GB left idle at {step * 0.5} s"
    assert first.maps_done > 6 and sim.apps[1].am_node is None


def test_a_queues_demand_is_what_it_holds_and_asks_capped_at_its_maximum() -> None:
    """``FSLeafQueue.updateDemand``: the apps' usage plus their outstanding asks, then
    ``componentwiseMin`` with the queue's maxShare; the REST API reports it as
    ``demandResources``, and the monitor reads a queue's asks as that less what it holds."""
    sim, views = _two_busy_queues(
        '<queue name="a"><maxResources>8192 mb, 8 vcores</maxResources></queue>'
        '<queue name="b"><maxAMShare>1</maxAMShare></queue>'
    )
    a, b = views["root.a"], views["root.b"]
    assert a.used.memory_mb == 8192 and a.demand == Res(8192, 8)
    assert b.demand.memory_mb == b.used.memory_mb + sim.apps[1].pending_containers * 1024
    assert b.demand.memory_mb > b.used.memory_mb
