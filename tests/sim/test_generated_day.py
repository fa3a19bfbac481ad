"""The generated day (``day:JOBS,MAPS[,SEED]``): its size, its tail, its determinism, and that its
tasks come from the SWIM reader's rules."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from amtuner.sim.simulation import build_simulation
from amtuner.sim.workload import WorkloadError, load_workload
from amtuner.sim.workload.generated import DAY_S, day_rows


def maps_of(spec: str) -> list[int]:
    return [g.count for j in load_workload(spec).jobs for g in j.maps]


def test_the_fb2010_class_day_has_its_size_and_a_heavy_tail() -> None:
    w = load_workload("day:25000,8000000")
    assert w.name == "day:25000,8000000,0"
    assert (w.nodes, w.node_memory_mb, w.node_vcores, w.queues) == (600, 8192, 8, ("root.default",))
    assert len(w.jobs) == 25_000
    assert len({j.job_id for j in w.jobs}) == 25_000
    maps = sorted(g.count for j in w.jobs for g in j.maps)
    assert sum(maps) == 8_000_000
    assert all(len(j.maps) == 1 for j in w.jobs)
    # Most jobs are one or a few maps; the largest 1 % hold most of the maps, none the whole day.
    assert statistics.median(maps) <= 3
    assert maps.count(1) > 0.25 * len(maps)
    assert sum(maps[-250:]) > 0.5 * sum(maps)
    assert maps[-1] < 0.05 * sum(maps)
    # Both map-only jobs and jobs with reduces, as in the SWIM days.
    with_reduces = sum(1 for j in w.jobs if j.reduces)
    assert 0.15 * len(w.jobs) < with_reduces < 0.35 * len(w.jobs)
    submits = [j.submit_s for j in w.jobs]
    assert submits == sorted(submits)
    assert submits[0] >= 0 and submits[-1] < DAY_S
    assert submits[-1] > 0.9 * DAY_S and submits[0] < 0.1 * DAY_S


@pytest.mark.parametrize("spec", ["day:1,1", "day:7,7", "day:3,1000", "day:500,20000,9"])
def test_exactly_the_asked_maps(spec: str) -> None:
    jobs, maps = (int(x) for x in spec.removeprefix("day:").split(",")[:2])
    counts = maps_of(spec)
    assert len(counts) == jobs and sum(counts) == maps and min(counts) >= 1


def test_same_spec_same_jobs_and_the_seed_is_part_of_the_spec() -> None:
    a = load_workload("day:2000,60000")
    assert load_workload("day:2000,60000") == a
    assert load_workload("day:2000,60000,0").jobs == a.jobs
    # load_workload's seed jitters generated groups, not a day: the spec is the data.
    assert load_workload("day:2000,60000", seed=5) == a
    assert load_workload("day:2000,60000,1").jobs != a.jobs


def test_tasks_are_derived_as_the_swim_reader_derives_them(tmp_path: Path) -> None:
    """The day written out as a SWIM trace and read back by `load_swim` is the same jobs."""
    rows = day_rows(300, 9000, 4)
    trace = tmp_path / "day.tsv"
    trace.write_text("".join(f"{i}\t{s!r}\t0\t{inp}\t{sh}\t{out}\n" for i, s, inp, sh, out in rows))
    assert load_workload(f"swim:{trace}").jobs == load_workload("day:300,9000,4").jobs


def test_a_small_day_runs_to_completion() -> None:
    w = load_workload("day:200,3000")
    result = build_simulation("capacity", w, seed=0).run()
    assert result.finished and result.jobs_completed == 200


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("day:", "day:JOBS,MAPS"),
        ("day:100", "day:JOBS,MAPS"),
        ("day:100,2000,1,2", "day:JOBS,MAPS"),
        ("day:1e3,2000", "day:JOBS,MAPS"),
        ("day:-5,2000", "day:JOBS,MAPS"),
        ("day:0,10", "at least one job"),
        ("day:100,99", "99 maps for 100 jobs"),
    ],
)
def test_bad_day_specs(spec: str, reason: str) -> None:
    with pytest.raises(WorkloadError, match=reason):
        load_workload(spec)
