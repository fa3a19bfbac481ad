"""The zoo's cases: one seed draws one case, every draw within its documented range, and the
queue weights reach both schedulers."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amtuner.model import SchedulerKind
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.workload import WorkloadError, load_workload, zoo_case
from amtuner.sim.workload import zoo as z
from amtuner.sim.workload.paper import PAPER_JITTER

MAX_ALLOCATION_MB = 8192
"""yarn.scheduler.maximum-allocation-mb's default: no container of a plausible case is larger."""


def test_a_seed_draws_one_case_and_the_spec_names_it() -> None:
    assert zoo_case(17) == zoo_case(17)
    assert load_workload("zoo:17") == zoo_case(17).workload
    assert load_workload("zoo:17", seed=2) == zoo_case(17, run_seed=2).workload
    assert zoo_case(17).workload != zoo_case(18).workload


def test_a_run_seed_jitters_durations_only() -> None:
    base, other = zoo_case(5).workload, zoo_case(5, run_seed=1).workload
    assert len(base.jobs) == len(other.jobs)
    moved = 0
    for a, b in zip(base.jobs, other.jobs, strict=True):
        assert dataclasses.replace(b, maps=a.maps, reduces=a.reduces) == a
        for ga, gb in zip((*a.maps, *a.reduces), (*b.maps, *b.reduces), strict=True):
            assert dataclasses.replace(gb, duration_s=ga.duration_s) == ga
            # Both are the drawn duration jittered by up to PAPER_JITTER, rounded to 1 ms.
            assert gb.duration_s / ga.duration_s == pytest.approx(
                1.0, abs=2 * PAPER_JITTER / (1 - PAPER_JITTER) + 1e-3
            )
            moved += gb.duration_s != ga.duration_s
    assert moved


@pytest.mark.parametrize("spec", ["zoo:", "zoo:x", "zoo:-1", "zoo:1.5"])
def test_a_bad_seed_is_refused(spec: str) -> None:
    with pytest.raises(WorkloadError, match="zoo:SEED"):
        load_workload(spec)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_every_draw_is_within_its_range(seed: int) -> None:
    case = zoo_case(seed)
    w = case.workload
    assert w.name == case.spec == f"zoo:{seed}"
    assert z.NODES[0] <= w.nodes <= z.NODES[1]
    assert w.node_memory_mb // 1024 in z.NODE_MEMORY_GB
    assert z.NODE_VCORES[0] <= w.node_vcores <= z.NODE_VCORES[1]
    assert 1 <= w.node_memory_mb / 1024 / w.node_vcores <= max(z.GB_PER_VCORE)
    assert w.node_disk_mbps in z.NODE_DISK_MBPS
    assert 1 <= len(w.queues) <= len(z.QUEUE_NAMES)
    if len(w.queues) == 1:
        assert (w.queues, w.queue_weights) == (("root.default",), ())
    else:
        assert len(w.queue_weights) == len(w.queues)
        assert set(w.queue_weights) <= set(map(float, z.QUEUE_WEIGHTS))
    assert case.scheduler in SchedulerKind
    assert case.arrival in z.ARRIVALS
    assert z.HORIZON_S[0] <= case.max_sim_seconds <= z.HORIZON_S[1]
    assert z.MIN_JOBS <= len(w.jobs) <= z.MAX_JOBS
    assert sum(g.count for j in w.jobs for g in (*j.maps, *j.reduces)) <= z.MAX_TASKS
    submits = [j.submit_s for j in w.jobs]
    assert submits == sorted(submits) and submits[0] == 0.0
    if case.arrival == "batch":
        assert set(submits) == {0.0}
    for job in w.jobs:
        shape = z.SHAPES[job.profile]  # type: ignore[index]
        assert job.queue in w.queues
        assert 512 <= job.am_memory_mb <= 4096
        assert job.am_memory_mb in shape.am_memory_mb
        assert shape.am_startup_s[0] <= job.am_startup_s <= shape.am_startup_s[1]
        assert shape.am_teardown_s[0] <= job.am_teardown_s <= shape.am_teardown_s[1]
        assert job.slowstart == shape.slowstart
        assert job.maps and (not job.reduces or shape.reduce_share > 0)
        for g in (*job.maps, *job.reduces):
            assert g.count >= 1
            assert g.memory_mb <= min(w.node_memory_mb // 2, MAX_ALLOCATION_MB)
            assert g.vcores in shape.task_vcores
            low, high = z.TASK_S
            assert low * (1 - PAPER_JITTER) - 1e-3 <= g.duration_s
            assert g.duration_s <= high * (1 + PAPER_JITTER) + 1e-3
            assert 0 < g.cpu_cores <= g.vcores
            # No task alone asks more than its slice of its node's disks.
            assert g.disk_mbps <= w.node_disk_mbps * g.memory_mb / w.node_memory_mb + 1e-3


def test_the_zoo_has_every_shape_in_its_first_cases() -> None:
    cases = [zoo_case(s) for s in range(60)]
    assert {c.scheduler for c in cases} == set(SchedulerKind)
    assert {c.arrival for c in cases} == set(z.ARRIVALS)
    assert {f for c in cases for f in c.families} == set(z.SHAPES)
    assert {len(c.workload.queues) for c in cases} == {1, 2, 3, 4}
    assert min(c.workload.nodes for c in cases) < 10 < 200 < max(c.workload.nodes for c in cases)


def _weighted_case() -> z.ZooCase:
    """The first case with queues of different weights."""
    for seed in range(100):
        case = zoo_case(seed)
        if len(set(case.workload.queue_weights)) > 1:
            return case
    raise AssertionError("no case of the first 100 has queues of different weights")


def test_queue_weights_reach_the_capacity_scheduler() -> None:
    w = _weighted_case().workload
    sim = build_simulation(SchedulerKind.CAPACITY, w)
    total = sum(w.queue_weights)
    for queue, weight in zip(w.queues, w.queue_weights, strict=True):
        conf = sim.scheduler.queues[queue].conf
        assert conf.absolute_capacity == pytest.approx(weight / total, abs=1e-5)
        assert conf.absolute_max_capacity == 1.0


def test_queue_weights_reach_the_fair_scheduler() -> None:
    w = _weighted_case().workload
    sim = build_simulation(SchedulerKind.FAIR, w)
    for queue, weight in zip(w.queues, w.queue_weights, strict=True):
        assert sim.scheduler.queues[queue].conf.weight == weight  # type: ignore[attr-defined]


def test_weights_of_nested_queues_add_up_to_their_parent() -> None:
    queues, weights = ("root.a.x", "root.a.y", "root.b"), (1.0, 2.0, 3.0)
    cs = build_simulation(
        "capacity", zoo_case(0).workload,
        default_scheduler_config("capacity", queues, 0.2, weights=weights),
    )  # fmt: skip
    assert cs.scheduler.queues["root.a"].conf.absolute_capacity == pytest.approx(0.5)
    assert cs.scheduler.queues["root.a.y"].conf.absolute_capacity == pytest.approx(1 / 3, abs=1e-5)
    fs = build_simulation(
        "fair", zoo_case(0).workload, default_scheduler_config("fair", queues, weights=weights)
    )
    assert fs.scheduler.queues["root.a"].conf.weight == 3.0  # type: ignore[attr-defined]
    assert fs.scheduler.queues["root.a.x"].conf.weight == 1.0  # type: ignore[attr-defined]


@pytest.mark.parametrize("weights", [(1.0,), (1.0, 0.0), (1.0, float("nan"))])
def test_weights_that_do_not_fit_the_queues_are_refused(weights: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="weight"):
        default_scheduler_config("fair", ("root.a", "root.b"), weights=weights)


def test_equal_weights_give_the_capacities_no_weights_give() -> None:
    queues = ("root.a", "root.b", "root.c")
    assert default_scheduler_config("capacity", queues, 0.3) == default_scheduler_config(
        "capacity", queues, 0.3, weights=(2.0, 2.0, 2.0)
    )


def test_without_weights_siblings_share_equally_whatever_lies_below() -> None:
    cs = build_simulation(
        "capacity", zoo_case(0).workload,
        default_scheduler_config("capacity", ("root.a.x", "root.a.y", "root.b")),
    )  # fmt: skip
    assert cs.scheduler.queues["root.a"].conf.absolute_capacity == pytest.approx(0.5)
    assert cs.scheduler.queues["root.a.x"].conf.absolute_capacity == pytest.approx(0.25)
