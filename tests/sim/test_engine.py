"""The event engine, the cluster (placement, processor sharing) and the MapReduce job model."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amtuner.sim.cluster import Cluster, normalise_up
from amtuner.sim.engine import Engine, Event, make_rng
from amtuner.sim.simulation import default_scheduler_config
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from tests.sim.conftest import build_at_once


def test_events_run_in_time_order_and_ties_in_scheduling_order() -> None:
    engine = Engine()
    seen: list[str] = []
    engine.at(2.0, seen.append, "late")
    engine.at(1.0, seen.append, "first-at-1")
    engine.at(1.0, seen.append, "second-at-1")
    engine.run_until(1.5)
    assert seen == ["first-at-1", "second-at-1"]
    assert engine.now == 1.5
    engine.run_until(10.0)
    assert seen[-1] == "late"
    assert engine.events == 3


def test_an_event_is_never_scheduled_in_the_past() -> None:
    engine = Engine()
    engine.run_until(5.0)
    times: list[float] = []
    engine.at(1.0, lambda _: times.append(engine.now))
    engine.run_until(6.0)
    assert times == [5.0]


def test_halted_stops_at_the_event_that_set_it() -> None:
    engine = Engine()

    def halt(_: object) -> None:
        engine.halted = True

    engine.at(3.0, halt)
    engine.at(4.0, halt)
    engine.run_until(100.0)
    assert engine.now == 3.0
    assert engine.events == 1
    engine.run_until(50.0, stop_when_halted=False)
    assert (engine.now, engine.events) == (50.0, 2)


@given(st.lists(st.tuples(st.sampled_from(["at", "line", "move"]), st.integers(0, 6)), max_size=40))
def test_moved_and_lined_events_run_where_a_fresh_queue_would_run_them(
    ops: list[tuple[str, int]],
) -> None:
    """The heap moves an event queued again (no stale entry), and events one fixed delay ahead
    wait in a line beside it; neither may change the order: by time, ties in the order asked."""
    line_s = 3.0
    engine = Engine(line_s=line_s)
    fired: list[int] = []
    expected: dict[int, tuple[float, int]] = {}
    movable: list[tuple[int, Event]] = []
    for asked, (op, value) in enumerate(ops):
        if op == "move" and movable:
            name, event = movable[value % len(movable)]
            engine.schedule(event, float(value))
            expected[name] = (float(value), asked)
        elif op == "line":
            engine.after(line_s, fired.append, asked)
            expected[asked] = (line_s, asked)
        else:
            movable.append((asked, engine.at(float(value), fired.append, asked)))
            expected[asked] = (float(value), asked)
    engine.run_until(100.0)
    assert fired == sorted(expected, key=expected.__getitem__)


def test_a_long_line_keeps_its_order_among_heap_events() -> None:
    engine = Engine(line_s=1.0)
    fired: list[tuple[float, str]] = []

    def beat(n: int) -> None:
        fired.append((engine.now, "line"))
        if n:
            engine.after(1.0, beat, n - 1)
            engine.after(1.0, lambda _: fired.append((engine.now, "line")))

    engine.after(1.0, beat, 3000)
    for t in range(0, 3100, 7):
        engine.at(t + 0.5, lambda _: fired.append((engine.now, "heap")))
    engine.run_until(10_000.0)
    assert [t for t, _ in fired] == sorted(t for t, _ in fired)
    assert sum(kind == "line" for _, kind in fired) == 1 + 2 * 3000
    assert engine.events == len(fired)


def test_random_streams_are_seeded_and_independent() -> None:
    assert make_rng(1, "tasks").random() == make_rng(1, "tasks").random()
    assert make_rng(1, "tasks").random() != make_rng(2, "tasks").random()
    assert make_rng(1, "tasks").random() != make_rng(1, "other").random()


@pytest.mark.parametrize(
    ("request_mb", "granted"), [(1, 1024), (1024, 1024), (1025, 2048), (1536, 2048), (4096, 4096)]
)
def test_requests_are_normalised_up_to_the_minimum_allocation(
    request_mb: int, granted: int
) -> None:
    assert normalise_up(request_mb, 1024) == granted


def _cluster(engine: Engine, done: list[tuple[float, str]], **kw: object) -> Cluster:
    args: dict[str, object] = {"nodes": 2, "memory_mb": 8192, "vcores": 2, "disk_mbps": 100.0}
    args.update(kw)
    return Cluster(
        engine,
        on_task_done=lambda node, payload: done.append((engine.now, payload)),
        **args,  # type: ignore[arg-type]
    )


def test_placement_takes_the_node_with_most_free_memory() -> None:
    engine = Engine()
    cluster = _cluster(engine, [])
    first = cluster.find(2048)
    assert first is not None
    cluster.allocate(first, 2048, 1)
    second = cluster.find(1024)
    assert second is not None and second is not first
    cluster.allocate(second, 8192 - 1024, 1)
    assert cluster.find(8192) is None
    assert cluster.find(6144) is first
    assert cluster.used_mb == 2048 + 7168 and cluster.containers == 2


def test_placement_with_vcores_skips_nodes_out_of_them() -> None:
    cluster = _cluster(Engine(), [])  # 2 nodes x 8192 MB x 2 vcores
    first = cluster.find(1024, 1)
    assert first is not None
    cluster.allocate(first, 1024, 2)  # first: 7168 MB but no vcore left
    second = cluster.find(1024, 1)
    assert second is not None and second is not first
    cluster.allocate(second, 2048, 1)  # second: 6144 MB, 1 vcore
    assert cluster.find(1024) is first  # memory alone: the most free memory
    assert cluster.find(1024, 1) is second
    assert cluster.find(7168, 1) is None  # first has the memory, second the vcore
    cluster.allocate(second, 1024, 1)
    assert cluster.find(1024, 1) is None


def test_tasks_alone_run_at_full_speed() -> None:
    engine = Engine()
    done: list[tuple[float, str]] = []
    cluster = _cluster(engine, done)
    node = cluster.nodes[0]
    cluster.start_task(node, 10.0, 1.0, 10.0, "a")
    cluster.start_task(node, 20.0, 1.0, 10.0, "b")
    engine.run_until(100.0)
    assert done == [(10.0, "a"), (20.0, "b")]


def test_cpu_contention_slows_every_task_on_the_node_and_only_that_node() -> None:
    engine = Engine()
    done: list[tuple[float, str]] = []
    cluster = _cluster(engine, done)
    node, other = cluster.nodes
    # 4 cores of demand on 2 cores: rate 1/2 until "short" finishes at work 10 (t = 20),
    # then "long" (20 s of work, 10 done) runs alone at full speed: t = 30.
    cluster.start_task(node, 10.0, 2.0, 0.0, "short")
    cluster.start_task(node, 20.0, 2.0, 0.0, "long")
    cluster.start_task(other, 10.0, 2.0, 0.0, "elsewhere")
    engine.run_until(100.0)
    assert done == [(10.0, "elsewhere"), (20.0, "short"), (30.0, "long")]


def test_disk_contention_slows_io_bound_tasks() -> None:
    engine = Engine()
    done: list[tuple[float, str]] = []
    cluster = _cluster(engine, done, disk_mbps=100.0)
    node = cluster.nodes[0]
    # 300 MB/s of demand on a 100 MB/s disk: each runs at 1/3 speed.
    for name in "abc":
        cluster.start_task(node, 10.0, 0.1, 100.0, name)
    engine.run_until(100.0)
    assert [t for t, _ in done] == pytest.approx([30.0, 30.0, 30.0])


def test_a_task_joining_later_slows_the_one_already_running() -> None:
    engine = Engine()
    done: list[tuple[float, str]] = []
    cluster = _cluster(engine, done, vcores=1)
    node = cluster.nodes[0]
    cluster.start_task(node, 10.0, 1.0, 0.0, "early")
    engine.at(4.0, lambda _: cluster.start_task(node, 10.0, 1.0, 0.0, "late"))
    engine.run_until(100.0)
    # early: 4 s alone, then 6 s of work at 1/2 = 12 s -> t = 16; late: 6 done at t = 16,
    # 4 left alone -> t = 20.
    assert done == [(pytest.approx(16.0), "early"), (pytest.approx(20.0), "late")]


def _one_job(maps: int, reduces: int, slowstart: float = 0.05) -> Workload:
    group = TaskGroup("map", maps, 1024, 1, 10.0, 0.5, 1.0)
    job = JobSpec(
        job_id="j",
        submit_s=0.0,
        queue="root.default",
        maps=(group,),
        reduces=(TaskGroup("reduce", reduces, 1024, 1, 5.0, 0.5, 1.0),) if reduces else (),
        am_startup_s=3.0,
        am_teardown_s=2.0,
        slowstart=slowstart,
    )
    return Workload("one", (job,), nodes=1)


def test_job_life_am_startup_maps_reduces_teardown() -> None:
    wl = _one_job(maps=2, reduces=1)
    sim = build_at_once("capacity", wl, default_scheduler_config("capacity", wl.queues, 1.0))
    sim.run_until(1.0)
    (app,) = sim.app_views()
    assert app.state == "RUNNING" and app.allocated.memory_mb == 2048  # 1536 -> 2048
    sim.run_until(3.5)
    # after the 3 s start-up the AM has its 2 maps and, slowstart 0.05 of 0 done being false,
    # no reduce yet
    assert sim.app_views()[0].running_containers == 3
    result = sim.run()
    # maps ~10 s (±10 % jitter) from t = 3; the reduce (held since the first map finished)
    # runs 5 s ±10 % after the last map; then 2 s of tear-down.
    assert result.finished
    assert 3 + 9 + 4.5 + 2 <= result.makespan_s <= 3 + 11 + 5.5 + 2  # type: ignore[operator]


def test_reduces_hold_their_container_until_the_last_map_is_done() -> None:
    wl = _one_job(maps=3, reduces=2, slowstart=0.0)
    sim = build_at_once("capacity", wl, default_scheduler_config("capacity", wl.queues, 1.0))
    sim.run_until(3.5)
    # slowstart 0: reduces asked for with the maps; all 5 task containers + the AM placed
    assert sim.app_views()[0].running_containers == 6
    assert sim.view().allocated.memory_mb == 2048 + 5 * 1024
    assert len(sim.cluster.nodes[0].tasks) == 3  # only the maps run; the reduces wait
    sim.run_until(3.0 + 11.0 + 0.01)
    assert sim.app_views()[0].progress == pytest.approx(60.0)
    assert len(sim.cluster.nodes[0].tasks) == 2  # now the reduces run
    assert sim.run().finished


def test_pending_requests_are_counted_not_listed() -> None:
    wl = _one_job(maps=500, reduces=1)
    sim = build_at_once("capacity", wl, default_scheduler_config("capacity", wl.queues, 1.0))
    sim.run_until(3.5)
    view = sim.view()
    assert view.containers_allocated == 1 + 6  # AM + what fits on the 8 GB node
    assert view.containers_pending == 500 - 6
    app = sim.apps[0]
    assert len(app.pending) == 1 and app.pending[0].count == 494


def test_containers_larger_than_a_node_fail_the_job_instead_of_waiting_forever() -> None:
    big_task = JobSpec(
        job_id="big-task",
        submit_s=0.0,
        queue="root.default",
        maps=(TaskGroup("map", 2, 9000, 1, 10.0, 1.0, 1.0),),
    )
    big_am = JobSpec(
        job_id="big-am", submit_s=0.0, queue="root.default", maps=(), am_memory_mb=8193
    )
    ok = JobSpec(
        job_id="ok",
        submit_s=1.0,
        queue="root.default",
        maps=(TaskGroup("map", 2, 1024, 1, 10.0, 1.0, 1.0),),
    )
    wl = Workload("big", (big_task, big_am, ok), nodes=2)
    sim = build_at_once("fair", wl)
    result = sim.run()
    assert result.finished
    assert (result.jobs_completed, result.jobs_failed) == (1, 2)
    assert {a.name: a.state for a in sim.app_views()} == {
        "big-task": "FAILED",
        "big-am": "FAILED",
        "ok": "FINISHED",
    }
    assert sim.view().allocated.memory_mb == 0
