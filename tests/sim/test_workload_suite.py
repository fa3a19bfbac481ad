"""Workload generators beyond the paper: scaled paper groups, phases, two queues, Poisson."""

from __future__ import annotations

from itertools import pairwise
from statistics import mean

import pytest

from amtuner.sim.workload import WorkloadError, load_workload
from amtuner.sim.workload.paper import (
    PAPER_JOBS_PER_NODE,
    PHASE_SPACING_S,
    PHASES,
    POISSON_JOBS,
    POISSON_MEAN_GAP_S,
    STREAM_JOBS,
    STREAM_MEAN_GAP_S,
    TWO_QUEUE_NODES,
    TWO_QUEUES,
)


@pytest.mark.parametrize(("nodes", "jobs"), [(4, 30), (16, 120), (100, 750), (6, 45)])
def test_paper_groups_scale_the_batch_with_the_cluster(nodes: int, jobs: int) -> None:
    w = load_workload(f"paper:mixed@{nodes}", seed=1)
    assert w.nodes == nodes
    assert len(w.jobs) == jobs == round(PAPER_JOBS_PER_NODE * nodes)
    assert [j.profile for j in w.jobs[:3]] == ["grep", "terasort", "wordcount"]
    assert all(j.submit_s == 0.0 and j.queue == "root.default" for j in w.jobs)


def test_a_scaled_group_starts_with_the_papers_jobs() -> None:
    small = load_workload("paper:wordcount", seed=2)
    large = load_workload("paper:wordcount@16", seed=2)
    assert small.name == "paper:wordcount" and large.name == "paper:wordcount@16"
    assert large.jobs[:30] == small.jobs
    assert load_workload("paper:wordcount@4", seed=2) == small


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("paper:grep@", "is not a node count"),
        ("paper:grep@x", "is not a node count"),
        ("paper:grep@0", "at least one node"),
        ("paper:sort@16", "unknown paper group"),
        ("phase:small,huge", "unknown phase 'huge'"),
        ("twoqueue:small", "expected two phases"),
        ("twoqueue:small,large,mixed", "expected two phases"),
        ("poisson:sort", "unknown paper group"),
    ],
)
def test_bad_specs(spec: str, reason: str) -> None:
    with pytest.raises(WorkloadError, match=reason):
        load_workload(spec)


def test_phases_arrive_as_batches_one_spacing_apart() -> None:
    w = load_workload("phase:small,large,mixed")
    small, large, mixed = PHASES["small"], PHASES["large"], PHASES["mixed"]
    assert len(w.jobs) == small.jobs + large.jobs + mixed.jobs == 120 + 16 + 30
    starts = sorted({j.submit_s for j in w.jobs})
    assert starts == [0.0, PHASE_SPACING_S, 2 * PHASE_SPACING_S] == [0.0, 150.0, 300.0]
    first = [j for j in w.jobs if j.submit_s == 0.0]
    second = [j for j in w.jobs if j.submit_s == PHASE_SPACING_S]
    assert {(j.profile, j.maps[0].count, j.reduces[0].count) for j in first} == {("grep", 1, 1)}
    assert {(j.profile, j.maps[0].count, j.reduces[0].count) for j in second} == {
        ("terasort", 32, 4)
    }
    # Same 20 MB splits as the paper's jobs, so a task costs the same whichever phase it is in.
    paper_terasort = load_workload("paper:terasort").jobs[0].maps[0]
    assert second[0].maps[0].memory_mb == paper_terasort.memory_mb
    assert second[0].maps[0].duration_s == pytest.approx(paper_terasort.duration_s, rel=0.11)
    assert len({j.job_id for j in w.jobs}) == len(w.jobs)
    assert w.nodes == 4 and w.queues == ("root.default",)


def test_a_phase_alone_starts_at_zero() -> None:
    for name, phase in PHASES.items():
        w = load_workload(f"phase:{name}")
        assert len(w.jobs) == phase.jobs
        assert {j.submit_s for j in w.jobs} == {0.0}


def test_two_queues_hold_one_phase_each() -> None:
    w = load_workload("twoqueue:small,large")
    assert w.queues == TWO_QUEUES == ("root.a", "root.b")
    assert w.nodes == TWO_QUEUE_NODES == 8
    a = [j for j in w.jobs if j.queue == "root.a"]
    b = [j for j in w.jobs if j.queue == "root.b"]
    assert len(a) == PHASES["small"].jobs and len(b) == PHASES["large"].jobs
    assert {j.maps[0].count for j in a} == {1} and {j.maps[0].count for j in b} == {32}
    assert {j.submit_s for j in w.jobs} == {0.0}


def test_poisson_arrivals_are_spread_at_the_documented_rate() -> None:
    w = load_workload("poisson:mixed", seed=0)
    submits = [j.submit_s for j in w.jobs]
    assert len(submits) == POISSON_JOBS == 90
    assert submits[0] == 0.0 and submits == sorted(submits)
    gaps = [b - a for a, b in pairwise(submits)]
    assert len(set(gaps)) > 80  # random gaps, not a fixed cadence
    # 89 exponential gaps: the sample mean's standard error is 3 / sqrt(89) = 0.32 s.
    assert abs(mean(gaps) - POISSON_MEAN_GAP_S) < 1.0


def test_a_stream_is_a_longer_poisson_process() -> None:
    w = load_workload("stream:mixed", seed=0)
    submits = [j.submit_s for j in w.jobs]
    assert len(submits) == STREAM_JOBS == 600 and submits == sorted(submits)
    # 599 exponential gaps: standard error 2.7 / sqrt(599) = 0.11 s.
    assert abs(mean(b - a for a, b in pairwise(submits)) - STREAM_MEAN_GAP_S) < 0.4
    assert w.name == "stream:mixed"


@pytest.mark.parametrize(
    "spec",
    ["paper:grep@16", "phase:small,large,mixed", "twoqueue:small,large", "poisson:mixed",
     "stream:mixed"],
)  # fmt: skip
def test_generators_repeat_per_seed_and_vary_across_seeds(spec: str) -> None:
    assert load_workload(spec, seed=5) == load_workload(spec, seed=5)
    assert load_workload(spec, seed=5) != load_workload(spec, seed=6)
