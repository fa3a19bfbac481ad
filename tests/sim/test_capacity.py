"""CapacityScheduler rules, with numbers checked by hand against yarn-facts §1."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amtuner.sim import rmapi
from amtuner.sim.capacity import (
    activations,
    am_limit_mb,
    child_limit_mb,
    multiply_and_normalize_up,
    user_am_limit_mb,
    user_limit_mb,
)
from amtuner.sim.sched_config.capacity import parse_capacity_config
from amtuner.sim.simulation import (
    SchedulerConfigError,
    build_simulation,
    default_scheduler_config,
)
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from tests.sim.conftest import build_at_once

SHARED = Path(__file__).resolve().parents[1] / "data" / "shared"


def _props(pairs: dict[str, str]) -> bytes:
    body = "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in pairs.items()
    )
    return f"<configuration>{body}</configuration>".encode()


P = "yarn.scheduler.capacity."
THREE_QUEUES = {
    P + "root.queues": "a,b,c",
    P + "root.a.capacity": "12.5",
    P + "root.a.maximum-capacity": "50",
    P + "root.b.capacity": "50",
    P + "root.b.maximum-capacity": "100",
    P + "root.c.capacity": "37.5",
}


def _workload(n: int, maps: int = 5, queue: str = "root.default", nodes: int = 1) -> Workload:
    jobs = tuple(
        JobSpec(
            job_id=f"job{i}",
            submit_s=0.0,
            queue=queue,
            maps=(TaskGroup("map", maps, 1024, 1, 20.0, 0.5, 5.0),),
            reduces=(TaskGroup("reduce", 1, 1024, 1, 10.0, 0.5, 5.0),),
        )
        for i in range(n)
    )
    return Workload("t", jobs, nodes=nodes)


def test_normalize_up_rounds_half_up_then_to_the_minimum_allocation() -> None:
    assert multiply_and_normalize_up(16384, 0.1, 1024) == 2048  # 1638.4 -> 2048
    assert multiply_and_normalize_up(32768, 0.1, 1024) == 4096  # 3276.8 -> 4096
    assert multiply_and_normalize_up(10240, 0.1, 1024) == 1024
    assert multiply_and_normalize_up(8192, 0.0, 1024) == 0


def test_worked_examples_of_the_queue_am_limit() -> None:
    # 32768 MB cluster, min-alloc 1024, 0.1: root.a (12.5 %, max 50 %) -> 2048 from the
    # current limit 16384, not from its 4096 guarantee; root.b (50 %, max 100 %) -> 4096.
    assert am_limit_mb(4096, child_limit_mb(32768, 0, 0, 16384, 1024), 0.1, 1024) == 2048
    assert am_limit_mb(16384, child_limit_mb(32768, 0, 0, 32768, 1024), 0.1, 1024) == 4096


def test_the_current_limit_shrinks_with_what_siblings_use() -> None:
    # parent limit 32768, parent uses 30720 of which the child 2048: the child may grow to
    # 2048 + 2048 free = 4096
    assert child_limit_mb(32768, 30720, 2048, 32768, 1024) == 4096
    # but never below its guarantee for the AM limit: max(8192 guarantee, 4096) x 0.5
    assert am_limit_mb(8192, 4096, 0.5, 1024) == 4096


def test_the_worked_examples_through_a_running_simulation() -> None:
    wl = Workload("idle", (), nodes=4, queues=("root.a", "root.b", "root.c"))
    sim = build_simulation("capacity", wl, _props(THREE_QUEUES))
    views = {q.path: q for q in sim.view().queues}
    assert views["root.a"].am_limit.memory_mb == 2048
    assert views["root.b"].am_limit.memory_mb == 4096
    assert views["root.a"].max_apps == 1250  # 10000 x 12.5 %
    assert views["root.a"].max_am_percent == pytest.approx(0.1)
    assert [q.path for q in sim.view().queues] == ["root", "root.a", "root.b", "root.c"]


def test_user_am_limit_uses_the_guarantee_only() -> None:
    # queue AM limit 4096 (max capacity), the user's is 0.1 x the 16384 guarantee -> 2048
    assert user_am_limit_mb(16384, 0.1, 4096, 1024) == 2048
    assert user_am_limit_mb(16384, 0.1, 1024, 1024) == 1024  # capped by the queue's


def test_first_am_is_always_allowed() -> None:
    assert activations([(2048, "u")], 0, 1024, 0, {}, 1024) == [0]
    # once one app is active and holds AM resource, the next one must fit
    assert activations([(2048, "u")], 2048, 1024, 1, {"u": 2048}, 1024) == []


def test_activation_skips_an_app_that_does_not_fit_and_takes_a_later_smaller_one() -> None:
    pending = [(4096, "u"), (2048, "u"), (2048, "u")]
    assert activations(pending, 2048, 4096, 1, {"u": 2048}, 8192) == [1]


def test_a_low_share_runs_one_app_at_a_time_and_the_rest_wait() -> None:
    wl = _workload(3)
    sim = build_simulation("capacity", wl, default_scheduler_config("capacity", wl.queues, 0.1))
    sim.run_until(1.0)
    leaf = next(q for q in sim.view().queues if q.path == "root.default")
    assert leaf.am_limit.memory_mb == 1024  # 0.1 x 8192 = 819.2 -> 1024 < one 2048 AM
    assert (leaf.num_active_apps, leaf.num_pending_apps) == (1, 2)  # the first-AM exemption
    assert leaf.am_used.memory_mb == 2048
    assert sim.view().apps_pending == 2
    assert sim.run().finished


def test_pending_memory_counts_every_ask_the_active_apps_and_the_waiting_ones() -> None:
    """``pendingMB`` is the root's ``QueueMetrics`` pending figure, which `AppSchedulingInfo`
    raises with each ask, an app the AM limit holds back included (Hadoop 3.5): the maps of the
    running app and the AM asks of the two waiting apps."""
    wl = _workload(3, maps=7)
    sim = build_at_once("capacity", wl, default_scheduler_config("capacity", wl.queues, 0.1))
    sim.run_until(1.0)
    assert rmapi.cluster_metrics(sim.view())["clusterMetrics"]["pendingMB"] == 2 * 2048
    sim.run_until(5.0)  # the first AM has started and asked for its 7 maps; 6 fit beside it
    assert sim.view().allocated.memory_mb == 2048 + 6 * 1024
    assert rmapi.cluster_metrics(sim.view())["clusterMetrics"]["pendingMB"] == 2 * 2048 + 1024


def test_maximum_applications_rejects_submissions_beyond_it() -> None:
    wl = _workload(3)
    config = _props(
        {
            P + "root.queues": "default",
            P + "root.default.capacity": "100",
            P + "root.default.maximum-applications": "2",
        }
    )
    sim = build_simulation("capacity", wl, config)
    result = sim.run()
    assert (result.jobs_completed, result.jobs_failed) == (2, 1)
    assert [a.state for a in sim.app_views()] == ["FINISHED", "FINISHED", "FAILED"]


def test_active_apps_are_served_in_fifo_order() -> None:
    wl = _workload(2, maps=10)
    config = default_scheduler_config("capacity", wl.queues, 1.0)
    sim = build_at_once("capacity", wl, config)
    sim.run_until(5.5)  # both AMs started (2 x 2048), 4096 MB left for maps
    first, second = sim.app_views()
    assert (first.running_containers, second.running_containers) == (5, 1)


def test_raising_the_share_on_reload_activates_waiting_apps_at_once() -> None:
    wl = _workload(3)
    sim = build_simulation("capacity", wl, default_scheduler_config("capacity", wl.queues, 0.1))
    sim.run_until(1.0)
    sim.reload_scheduler_config(default_scheduler_config("capacity", wl.queues, 1.0))
    sim.run_until(1.0)
    leaf = next(q for q in sim.view().queues if q.path == "root.default")
    assert (leaf.num_active_apps, leaf.num_pending_apps) == (3, 0)
    assert sim.result().a_trace == [[0.0, 0.1], [1.0, 1.0]]


@pytest.mark.parametrize(
    "bad",
    [
        b"<configuration><property>",
        b"<allocations/>",
        _props(
            {P + "root.queues": "a,b", P + "root.a.capacity": "50", P + "root.b.capacity": "40"}
        ),
        _props({P + "root.queues": "a", P + "root.a.capacity": "[memory=1024,vcores=1]"}),
        _props({P + "maximum-am-resource-percent": "1.5"}),
        _props({}),
        _props({P + "root.queues": "default", P + "root.default.capacity": "100"})
        .replace(b"default</value>", b"other</value>")
        .replace(b"root.default.capacity", b"root.other.capacity"),
    ],
)
def test_a_bad_file_on_reload_is_refused_and_the_old_one_kept(bad: bytes) -> None:
    wl = _workload(2)
    good = default_scheduler_config("capacity", wl.queues, 0.3)
    sim = build_simulation("capacity", wl, good)
    sim.run_until(1.0)
    with pytest.raises(SchedulerConfigError):
        sim.reload_scheduler_config(bad)
    assert sim.scheduler_config() == good
    leaf = next(q for q in sim.view().queues if q.path == "root.default")
    assert leaf.max_am_percent == pytest.approx(0.3)
    assert sim.run().finished


def test_reads_the_shipped_sls_capacity_scheduler_xml() -> None:
    path = SHARED / "fixtures" / "sls" / "capacity-scheduler.xml"
    conf = parse_capacity_config(path.read_bytes())
    caps = {q.path: q.absolute_capacity for q in conf.queues}
    assert caps == {
        "root": 1.0,
        "root.sls_queue_1": 0.25,
        "root.sls_queue_2": 0.25,
        "root.sls_queue_3": 0.5,
    }
    assert conf.global_am_percent == pytest.approx(0.1)


def test_submitting_to_an_unknown_or_parent_queue_is_rejected() -> None:
    wl = _workload(1, queue="root.nope")
    config = default_scheduler_config("capacity", ["root.default"])
    sim = build_simulation("capacity", wl, config)
    assert sim.run().jobs_failed == 1
    sim = build_simulation("capacity", _workload(1, queue="root"), config)
    assert sim.run().jobs_failed == 1


@given(
    sizes=st.lists(st.sampled_from([1024, 2048, 3072, 4096]), min_size=1, max_size=30),
    used=st.integers(0, 8).map(lambda n: n * 1024),
    limit=st.integers(0, 16).map(lambda n: n * 1024),
)
def test_the_early_stop_never_changes_which_apps_activate(
    sizes: list[int], used: int, limit: int
) -> None:
    pending = [(s, "u") for s in sizes]
    active = 1 if used else 0
    full = activations(pending, used, limit, active, {"u": used}, limit)
    assert activations(pending, used, limit, active, {"u": used}, limit, min(sizes)) == full


def test_user_limit_numbers() -> None:
    # alone in a queue: the guarantee (capacity) x user-limit-factor, not the max capacity
    assert user_limit_mb(16384, 0, 32768, 1024) == 16384
    assert user_limit_mb(16384, 20000, 32768, 1024) == 16384
    assert user_limit_mb(16384, 20000, 32768, 1024, user_limit_factor=2) == 21504  # 21024 up
    assert user_limit_mb(16384, 20000, 24576, 1024, user_limit_factor=-1) == 21504
    assert user_limit_mb(16384, 0, 32768, 1024, active_users=2, user_limit_percent=50) == 8192


def _two_queues(extra: dict[str, str]) -> bytes:
    return _props(
        {
            P + "root.queues": "a,b",
            P + "root.a.capacity": "50",
            P + "root.a.maximum-capacity": "100",
            P + "root.b.capacity": "50",
            P + "root.b.maximum-capacity": "100",
            P + "maximum-am-resource-percent": "0.5",
            **extra,
        }
    )


def test_one_user_gets_the_queue_capacity_unless_the_factor_is_raised() -> None:
    wl = _workload(2, maps=40, queue="root.a", nodes=4)
    sim = build_simulation("capacity", wl, _two_queues({}))
    sim.run_until(5.5)
    used = {q.path: q.used.memory_mb for q in sim.view().queues}
    assert used["root.a"] == 16384  # half the cluster, though b is idle
    sim = build_simulation("capacity", wl, _two_queues({P + "root.a.user-limit-factor": "2"}))
    sim.run_until(5.5)
    used = {q.path: q.used.memory_mb for q in sim.view().queues}
    assert used["root.a"] == 32768


def test_a_refused_reload_leaves_the_other_queues_untouched() -> None:
    wl = _workload(2, queue="root.a", nodes=4)
    sim = build_simulation("capacity", wl, _two_queues({}))
    sim.run_until(1.0)
    # drops root.a, which has apps, and changes root.b: refused as a whole
    bad = _props({P + "root.queues": "b", P + "root.b.capacity": "100"})
    with pytest.raises(SchedulerConfigError, match=r"root\.a has 2 applications"):
        sim.reload_scheduler_config(bad)
    views = {q.path: q for q in sim.view().queues}
    assert views["root.b"].capacity == pytest.approx(0.5)
    assert views["root.a"].am_limit.memory_mb == 16384  # 0.5 x 32768, as before
    assert sim.run().finished


def test_parents_are_ordered_before_their_children() -> None:
    from amtuner.sim.capacity import CapacityScheduler
    from amtuner.sim.cluster import Cluster
    from amtuner.sim.engine import Engine

    config = _props(
        {
            P + "root.queues": "a,b",
            P + "root.a.capacity": "50",
            P + "root.b.capacity": "50",
            P + "root.a.queues": "a1,a2",
            P + "root.a.a1.capacity": "50",
            P + "root.a.a2.capacity": "50",
        }
    )
    cluster = Cluster(
        Engine(),
        nodes=4,
        memory_mb=8192,
        vcores=8,
        disk_mbps=100.0,
        on_task_done=lambda node, payload: None,
    )
    cs = CapacityScheduler(config, cluster)
    q = cs.queues
    for leaf in ("root.a.a1", "root.a.a2", "root.b"):
        q[leaf].heap.append((0, None))  # type: ignore[arg-type]  # something to serve
    # a2 is at 1.5 x its 8192 guarantee, a1 idle: a is at 0.75 of 16384, b at 0.625
    q["root.a.a2"].used_mb = q["root.a"].used_mb = 12288
    q["root.b"].used_mb = 10240
    assert cs._pick_leaf(set()) is q["root.b"]  # a flat order would have picked the idle a1
    q["root.b"].used_mb = 14336  # 0.875
    assert cs._pick_leaf(set()) is q["root.a.a1"]
    assert cs._pick_leaf({id(q["root.a.a1"])}) is q["root.a.a2"]
