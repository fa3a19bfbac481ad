"""The simulated CapacityScheduler's ``max-parallel-apps`` (3.4+, YARN-9930), as Hadoop's
``CSMaxRunningAppsEnforcer`` enforces it and ``AbstractLeafQueue`` reports it: per queue (each
ancestor up to root too), per user, and cluster-wide as every queue's default; the apps over it
wait non-runnable, in a leaf's ``numApplications`` only, so the monitor tells them apart on
the simulated RM as on the real one."""

from __future__ import annotations

import pytest

from amtuner.bench.common import simulate
from amtuner.model import SchedulerKind, Wait, WaitCause
from amtuner.monitor.rest import build_observation
from amtuner.sim import rmapi
from amtuner.sim.sched_config import CS_PREFIX, SchedulerConfigError, with_capacity_properties
from amtuner.sim.sched_config.capacity import parse_capacity_config
from amtuner.sim.simulation import Simulation, build_simulation, default_scheduler_config
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from amtuner.sim.view import QueueView


def _workload(queues_users: list[tuple[str, str]], queues: tuple[str, ...]) -> Workload:
    jobs = tuple(
        JobSpec(
            job_id=f"job{i}", submit_s=0.0, queue=queue, user=user,
            maps=(TaskGroup("map", 2, 1024, 1, 20.0, 0.0, 0.0),),
            am_memory_mb=1024, am_startup_s=2.0, am_teardown_s=1.0,
        )
        for i, (queue, user) in enumerate(queues_users)
    )  # fmt: skip
    return Workload("parallel", jobs, nodes=4, queues=queues)


def _sim(workload: Workload, props: dict[str, str], a: float = 1.0) -> Simulation:
    config = default_scheduler_config("capacity", workload.queues, a)
    return build_simulation("capacity", workload, with_capacity_properties(config, props))


def _queue(sim: Simulation, path: str) -> QueueView:
    return next(q for q in sim.view().queues if q.path == path)


def _running(sim: Simulation, path: str) -> int:
    return sum(1 for a in sim.app_views() if a.queue == path and a.state == "RUNNING")


def test_a_queue_s_limit_holds_the_rest_non_runnable_and_the_rest_api_says_so() -> None:
    """``max-parallel-apps`` 2 on root.default, room for every AM: two apps are runnable, three
    wait in neither pending nor active, counted in ``numApplications`` and in the cluster's
    ``appsPending`` (``AbstractLeafQueue.getNumApplications``); the monitor reads the same
    documents and names max-parallel-apps. As each app ends the next is made runnable
    (``updateRunnabilityOnAppRemoval``): never more than two AMs at once."""
    wl = _workload([("root.default", "u")] * 5, ("root.default",))
    sim = _sim(wl, {f"{CS_PREFIX}root.default.max-parallel-apps": "2"})
    sim.run_until(5.0)
    leaf = _queue(sim, "root.default")
    assert (leaf.num_active_apps, leaf.num_pending_apps, leaf.num_nonrunnable_apps) == (2, 0, 3)
    view = sim.view()
    metrics, scheduler = rmapi.cluster_metrics(view), rmapi.scheduler_info(view)
    rendered = scheduler["scheduler"]["schedulerInfo"]["queues"]["queue"][0]
    assert (rendered["numApplications"], rendered["maxParallelApps"]) == (5, 2)
    assert scheduler["scheduler"]["schedulerInfo"]["maxParallelApps"] == 2**31 - 1
    assert metrics["clusterMetrics"]["appsPending"] == 3
    obs = build_observation(metrics, scheduler, time=0.0, source="rest")
    assert obs.waits == (Wait("root.default", WaitCause.MAX_APPS, 3),)
    result = sim.run()
    assert result.finished and result.ams_at_once == 2


def test_the_cluster_wide_value_is_every_queue_s_root_included() -> None:
    """``yarn.scheduler.capacity.max-parallel-apps`` is the default of every queue
    (``getMaxParallelAppsForQueue``), root's too, so it bounds the whole cluster: three at once
    over two leaves; a leaf's own value wins for that leaf."""
    wl = _workload([("root.a", "u"), ("root.b", "u")] * 4, ("root.a", "root.b"))
    sim = _sim(
        wl, {f"{CS_PREFIX}max-parallel-apps": "3", f"{CS_PREFIX}root.b.max-parallel-apps": "1"}
    )
    sim.run_until(5.0)
    assert [(q.path, q.max_parallel_apps) for q in sim.view().queues] == [
        ("root", 3), ("root.a", 3), ("root.b", 1)
    ]
    assert (_running(sim, "root.a"), _running(sim, "root.b")) == (2, 1)
    assert sim.run().ams_at_once == 3


def test_a_parent_s_limit_holds_its_leaves_together_and_not_their_siblings() -> None:
    """``exceedQueueMaxParallelApps`` walks from the leaf up to root: under root.p's limit of 2,
    p.x and p.y run two apps between them, while root.z beside p runs all of its own."""
    queues = ("root.p.x", "root.p.y", "root.z")
    wl = _workload([("root.p.x", "u"), ("root.p.y", "u"), ("root.z", "u")] * 3, queues)
    sim = _sim(wl, {f"{CS_PREFIX}root.p.max-parallel-apps": "2"})
    sim.run_until(5.0)
    assert _running(sim, "root.p.x") + _running(sim, "root.p.y") == 2
    assert _running(sim, "root.z") == 3
    assert sim.run().finished


def test_a_user_s_limit_counts_the_user_s_apps_in_every_queue() -> None:
    """``yarn.scheduler.capacity.user.<user>.max-parallel-apps`` over the default
    ``user.max-parallel-apps`` (``getMaxParallelAppsForUser``), counted across queues
    (``usersNumRunnableApps``): alice one at a time, bob two."""
    wl = _workload(
        [("root.a", "alice"), ("root.b", "alice"), ("root.a", "bob"), ("root.b", "bob"),
         ("root.a", "bob")], ("root.a", "root.b"),
    )  # fmt: skip
    sim = _sim(wl, {f"{CS_PREFIX}user.max-parallel-apps": "2",
                    f"{CS_PREFIX}user.alice.max-parallel-apps": "1"})  # fmt: skip
    sim.run_until(5.0)
    running = {(a.user, a.queue) for a in sim.app_views() if a.state == "RUNNING"}
    assert running == {("alice", "root.a"), ("bob", "root.a"), ("bob", "root.b")}
    assert sim.run().finished


def test_raising_the_limit_on_reload_makes_the_waiting_apps_runnable_at_once() -> None:
    """``updateRunnabilityOnReload``: the oldest waiting apps first, as many as now fit."""
    wl = _workload([("root.default", "u")] * 5, ("root.default",))
    key = f"{CS_PREFIX}root.default.max-parallel-apps"
    sim = _sim(wl, {key: "1"})
    sim.run_until(5.0)
    sim.reload_scheduler_config(with_capacity_properties(sim.scheduler_config(), {key: "3"}))
    sim.run_until(8.0)
    assert [a.state for a in sim.app_views()] == ["RUNNING"] * 3 + ["ACCEPTED"] * 2
    assert _queue(sim, "root.default").num_nonrunnable_apps == 2


def test_an_app_made_runnable_late_is_activated_before_younger_ones() -> None:
    """A runnable app still waits for the AM limit, in the pending apps' FIFO order
    (``FifoOrderingPolicyForPendingApps``) whenever it became runnable: alice's second app,
    held by her limit of one while bob's younger two wait for the AM limit (one AM at a time),
    goes before them once her first ends."""
    wl = _workload([("root.default", u) for u in ("alice", "alice", "bob", "bob")],
                   ("root.default",))  # fmt: skip
    sim = _sim(wl, {f"{CS_PREFIX}user.alice.max-parallel-apps": "1"}, a=0.03)
    result = sim.run()
    assert result.finished and result.ams_at_once == 1
    starts = [a.started_s for a in sim.app_views()]
    assert starts == sorted(starts)


@pytest.mark.parametrize("value", ["two", "2.5"])
def test_a_limit_that_is_not_a_whole_number_is_refused(value: str) -> None:
    """Hadoop's ``getInt`` refuses it too, and the RM keeps its old configuration."""
    config = default_scheduler_config("capacity", ("root.default",), 0.1)
    bad = with_capacity_properties(config, {f"{CS_PREFIX}root.default.max-parallel-apps": value})
    with pytest.raises(SchedulerConfigError, match="max-parallel-apps"):
        parse_capacity_config(bad)


def test_the_default_policy_raises_a_only_as_far_as_the_am_limit_holds_apps() -> None:
    """The paper's batch of 30 under a cluster-wide ``max-parallel-apps`` of 3: at A 0.1 two
    AMs fit and the third runnable app waits on the AM limit, the other 27 on max-parallel-apps.
    `adaptive` wants its first look (0.525, half of it committed); the guard lets A admit the
    one app and no more, (2 x 2048 + 2048) / 32768, and holds it there for the whole batch:
    the running-apps limit holds the rest whatever A. Mean JCT is what the larger A gave."""
    props = {f"{CS_PREFIX}max-parallel-apps": "3"}
    result = simulate(
        "paper:grep", SchedulerKind.CAPACITY, None, 0, max_sim_seconds=20_000, policy="adaptive",
        properties=props,
    )  # fmt: skip
    assert result.finished
    assert [a for _, a in result.a_trace] == [0.1, 0.1875]
    assert result.ams_at_once == 3
