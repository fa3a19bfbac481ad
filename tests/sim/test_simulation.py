"""The Simulation facade: determinism, the view's counters, limits, periodic tasks, results."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amtuner.sim.simulation import (
    Simulation,
    build_simulation,
    default_scheduler_config,
    most_at_once,
)
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from tests.sim.conftest import build_at_once


def _job(name: str, submit: float, maps: int, duration: float = 20.0) -> JobSpec:
    return JobSpec(
        job_id=name,
        submit_s=submit,
        queue="root.default",
        maps=(TaskGroup("map", maps, 1024, 1, duration, 1.0, 5.0),) if maps else (),
        reduces=(TaskGroup("reduce", 1, 1024, 1, 10.0, 0.5, 5.0),) if maps else (),
    )


def _workload(n: int = 6, nodes: int = 1) -> Workload:
    return Workload("t", tuple(_job(f"j{i}", i * 3.0, 4) for i in range(n)), nodes=nodes)


def _sim(kind: str, wl: Workload, a: float, seed: int = 0) -> Simulation:
    return build_simulation(kind, wl, default_scheduler_config(kind, wl.queues, a), seed=seed)


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_same_seed_same_result_other_seed_other_durations(kind: str) -> None:
    def run(seed: int) -> dict[str, object]:
        result = _sim(kind, _workload(), 0.5, seed).run().to_json_dict()
        result.pop("wall_seconds")
        return result

    assert run(7) == run(7)
    assert run(7)["makespan_s"] != run(8)["makespan_s"]


def test_result_has_the_agreed_fields() -> None:
    result = _sim("capacity", _workload(), 0.5).run().to_json_dict()
    for key in (
        "makespan_s",
        "mean_jct_s",
        "p95_jct_s",
        "jobs_completed",
        "jobs_total",
        "sim_seconds",
        "wall_seconds",
        "events",
        "mean_memory_utilisation",
        "a_trace",
        "queue_a_trace",
        "finished",
        "stopped_reason",
    ):
        assert key in result
    assert result["finished"] is True and result["stopped_reason"] is None
    assert result["jobs_completed"] == result["jobs_total"] == 6
    assert result["a_trace"] == [[0.0, 0.5]]
    assert result["events"] > 0


def test_memory_utilisation_is_time_weighted() -> None:
    # one job with no tasks: its 2048 MB AM is held for 5 s start-up + 2 s tear-down (placed at
    # once: with heartbeats the RM hears of the AM's exit on the next node heartbeat)
    wl = Workload("am-only", (_job("j", 0.0, 0),), nodes=1)
    config = default_scheduler_config("capacity", wl.queues, 1.0)
    result = build_at_once("capacity", wl, config).run()
    assert result.makespan_s == pytest.approx(7.0)
    assert result.mean_memory_utilisation == pytest.approx(2048 / 8192)
    assert result.mean_jct_s == result.p95_jct_s == pytest.approx(7.0)


def test_an_app_holds_memory_seconds_as_the_rm_counts_them_and_waits_for_its_am() -> None:
    # The AM-only job of the test above: 2048 MB and 1 vcore for 7 s, and no wait for its AM.
    wl = Workload("am-only", (_job("j", 0.0, 0),), nodes=1)
    sim = build_at_once("capacity", wl, default_scheduler_config("capacity", wl.queues, 1.0))
    result = sim.run()
    (app,) = sim.app_views()
    assert app.memory_seconds == round(2048 * 7.0) and app.vcore_seconds == 7
    assert result.mean_wait_s == 0.0


def test_a_lower_am_share_is_a_longer_wait_in_accepted() -> None:
    wl = Workload("t", tuple(_job(f"j{i}", 0.0, 4) for i in range(6)), nodes=2)
    low, high = (_sim("capacity", wl, a).run() for a in (0.25, 0.5))
    assert low.mean_wait_s is not None and high.mean_wait_s is not None
    assert low.mean_wait_s > high.mean_wait_s > 0


def test_ams_at_once_is_what_the_am_limit_let_run_together() -> None:
    """Six jobs at once on two 8 GB nodes: the CapacityScheduler's AM limit holds two 2048 MB
    AMs at A = 0.25 (4096 MB) and four at A = 0.5."""
    wl = Workload("t", tuple(_job(f"j{i}", 0.0, 4) for i in range(6)), nodes=2)
    assert _sim("capacity", wl, 0.25).run().ams_at_once == 2
    assert _sim("capacity", wl, 0.5).run().ams_at_once == 4


def test_most_at_once_counts_an_end_and_a_start_at_one_instant_as_a_handover() -> None:
    assert most_at_once([]) == 0
    assert most_at_once([(0.0, 5.0), (5.0, 9.0), (4.0, 6.0)]) == 2
    assert most_at_once([(0.0, 5.0), (1.0, 2.0), (1.5, 3.0)]) == 3


def test_apps_pending_counts_activated_apps_still_without_an_am_container() -> None:
    wl = Workload("t", (_job("big", 0.0, 6, duration=100.0), _job("late", 10.0, 1)), nodes=1)
    sim = _sim("capacity", wl, 1.0)
    sim.run_until(11.0)  # big: AM + 6 maps fill the node; late is activated, no room for its AM
    view = sim.view()
    leaf = next(q for q in view.queues if q.path == "root.default")
    assert (leaf.num_active_apps, leaf.num_pending_apps) == (2, 0)
    assert (view.apps_pending, view.apps_running, view.apps_submitted) == (1, 1, 2)
    assert view.allocated.memory_mb == view.total.memory_mb == 8192
    assert [a.state for a in sim.app_views()] == ["RUNNING", "ACCEPTED"]
    assert [a.app_id for a in sim.app_views(states={"ACCEPTED"})] == [
        "application_1700000000000_0002"
    ]
    assert len(sim.app_views(limit=1)) == 1


def test_a_run_that_cannot_finish_stops_and_says_why() -> None:
    wl = _workload(2)
    stalled = _sim("fair", wl, 0.0).run()  # maxAMShare 0: no AM can ever start
    assert not stalled.finished
    assert stalled.makespan_s is None and stalled.jobs_completed == 0
    assert "stalled" in (stalled.stopped_reason or "")

    limited = _sim("capacity", wl, 0.5).run(max_sim_seconds=10.0)
    assert not limited.finished and limited.sim_seconds == 10.0
    assert "max_sim_seconds" in (limited.stopped_reason or "")


def test_run_until_never_passes_the_requested_time() -> None:
    sim = _sim("capacity", _workload(), 0.5)
    for t in (0.5, 2.0, 2.0, 17.25):
        sim.run_until(t)
        assert sim.now == t
    assert not sim.done


def test_periodic_tasks_run_in_simulated_time_and_can_reconfigure() -> None:
    wl = _workload(6)
    sim = _sim("capacity", wl, 0.1)
    seen: list[float] = []

    def tick(s: Simulation) -> None:
        seen.append(s.now)
        if s.now == 20.0:
            s.reload_scheduler_config(default_scheduler_config("capacity", wl.queues, 0.5))

    sim.schedule_every(10.0, tick, first_at=0.0)
    result = sim.run()
    assert result.finished
    assert seen[:3] == [0.0, 10.0, 20.0]
    assert result.a_trace == [[0.0, 0.1], [20.0, 0.5]]
    assert seen[-1] <= result.sim_seconds  # run() stops at the last job's finish
    # a served RM's clock (and its periodic tasks) go on after the last job
    ticks = len(seen)
    sim.run_until(result.sim_seconds + 100.0)
    assert sim.now == result.sim_seconds + 100.0
    assert len(seen) == ticks + 10


def test_view_reports_the_cluster_in_rm_terms() -> None:
    sim = build_simulation("fair", _workload(nodes=3), node_memory_mb=4096, node_vcores=4)
    view = sim.view()
    assert (view.total.memory_mb, view.total.vcores, view.active_nodes) == (12288, 12, 3)
    assert view.scheduler == "fair"
    assert [q.path for q in view.queues] == ["root", "root.default"]
    assert view.minimum_allocation.memory_mb == 1024


def test_an_empty_workload_is_done_at_once() -> None:
    sim = build_simulation("capacity", Workload("none", (), nodes=1))
    assert sim.done
    result = sim.run()
    assert result.finished and result.jobs_total == 0 and result.makespan_s == 0.0


@settings(max_examples=60)
@given(
    kind=st.sampled_from(["capacity", "fair"]),
    jobs=st.lists(
        st.tuples(
            st.floats(0, 50),  # submit
            st.integers(0, 6),  # maps
            st.integers(0, 2),  # reduces
            st.sampled_from(["root.a", "root.b"]),
            st.sampled_from(["ann", "bob"]),
            st.sampled_from([1024, 1536, 2048]),  # task memory
        ),
        min_size=1,
        max_size=8,
    ),
    nodes=st.integers(1, 3),
    a=st.sampled_from([0.1, 0.3, 0.5]),
    probe=st.floats(0, 200),
)
def test_accounting_adds_up_and_every_job_finishes(
    kind: str,
    jobs: list[tuple[float, int, int, str, str, int]],
    nodes: int,
    a: float,
    probe: float,
) -> None:
    specs = tuple(
        JobSpec(
            job_id=f"j{i}",
            submit_s=submit,
            queue=queue,
            user=user,
            maps=(TaskGroup("map", maps, mem, 1, 15.0, 1.5, 30.0),),
            reduces=(TaskGroup("reduce", reduces, mem, 1, 8.0, 1.0, 60.0),),
            slowstart=1.0,  # reduces never wait holding a container: no AM-made deadlock
        )
        for i, (submit, maps, reduces, queue, user, mem) in enumerate(jobs)
    )
    if kind == "fair":
        # FS has no first-AM exemption: below 2048 / (half of a node) an AM may never start
        a = 0.5
    wl = Workload("prop", specs, nodes=nodes, queues=("root.a", "root.b"))
    sim = build_simulation(kind, wl, default_scheduler_config(kind, wl.queues, a))
    sim.run_until(probe)
    view = sim.view()
    leaves = [q for q in view.queues if q.is_leaf]
    root = view.queues[0]
    assert view.allocated.memory_mb == sum(q.used.memory_mb for q in leaves) == root.used.memory_mb
    assert view.allocated.memory_mb == sum(x.allocated.memory_mb for x in sim.app_views())
    assert view.allocated.memory_mb <= view.total.memory_mb
    assert view.apps_submitted == (
        view.apps_pending + view.apps_running + view.apps_completed + view.apps_failed
    )
    result = sim.run()
    assert result.finished and result.jobs_completed == len(jobs)
    assert sim.cluster.used_mb == 0 and sim.cluster.containers == 0
    assert all(q.used.memory_mb == 0 and q.am_used.memory_mb == 0 for q in sim.view().queues)
    assert all(not n.tasks and n.free_mb == n.memory_mb for n in sim.cluster.nodes)
    assert result.mean_jct_s is not None and result.mean_jct_s >= 7.0  # start-up + tear-down


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_am_refusals_count_the_apps_an_am_limit_held_back(kind: str) -> None:
    """Six jobs at once on two nodes: a low AM share holds AMs back, and the runs say so; jobs
    spread out under a share of 1 never meet the limit, and count none."""
    at_once = Workload("t", tuple(_job(f"j{i}", 0.0, 4) for i in range(6)), nodes=2)
    held = _sim(kind, at_once, 0.25).run()
    assert held.mean_wait_s is not None and held.mean_wait_s > 0
    assert held.ams_at_once < 6 and held.am_refusals > 0
    spread = Workload("t", tuple(_job(f"j{i}", i * 200.0, 2) for i in range(4)), nodes=2)
    free = _sim(kind, spread, 1.0).run()
    assert free.mean_wait_s == 0.0 and free.am_refusals == 0


@pytest.mark.parametrize("kind", ["capacity", "fair"])
@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(2, 8),
    gap=st.sampled_from([0.0, 3.0, 40.0]),
    a=st.sampled_from([0.1, 0.2, 0.3, 0.5]),
)
def test_a_run_without_am_refusals_is_the_run_of_every_larger_share(
    kind: str, n: int, gap: float, a: float
) -> None:
    """The AM share enters the schedulers only through the AM limits: with none refused, a
    larger share changes nothing; a run that any larger share changes did refuse."""
    wl = Workload("t", tuple(_job(f"j{i}", i * gap, 4) for i in range(n)), nodes=2)

    def figures(share: float) -> tuple[object, ...]:
        r = _sim(kind, wl, share).run()
        return r.jcts_s, r.waits_s, r.makespan_s, r.events, r.am_refusals

    low, high = figures(a), figures(1.0)
    if low[-1] == 0:
        assert low[:-1] == high[:-1] and high[-1] == 0
    if low[:-1] != high[:-1]:
        assert low[-1] > 0
