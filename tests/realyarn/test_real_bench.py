"""`amtuner bench real` on Hadoop's own RM: a small batch runs to the end and is measured."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from amtuner.bench import real
from amtuner.model import SchedulerKind
from amtuner.realyarn.build import Build
from amtuner.realyarn.cluster import leftover_processes


@pytest.mark.parametrize("a", [0.6, None])
def test_a_small_batch_runs_on_the_real_rm_and_in_the_simulator(
    realyarn_build: Build, tmp_path: Path, a: float | None
) -> None:
    """Three small jobs on a fresh real CapacityScheduler, at a fixed A and under `adaptive`
    (the real daemon, refreshing through RMAdminCLI): every job succeeds, the figures are the
    RM's own, no job is faster than its own work allows, and the simulator runs the same."""
    small = real.workload().jobs[::3][:3]
    batch = dataclasses.replace(real.workload(), jobs=small)
    run = real.run_real(SchedulerKind.CAPACITY, a, "adaptive", tmp_path, realyarn_build, batch)
    figures, trace = run.figures, run.a_trace
    assert run.hadoop_version.startswith("3.") and run.retried is None
    # An AM starts, its maps run, its reduce runs, it tears down: nothing finishes sooner.
    spec = small[0]
    floor = spec.am_startup_s + spec.maps[0].duration_s + spec.reduces[0].duration_s
    assert floor <= figures.mean_jct_s <= figures.makespan_s
    if a is None:
        assert trace[0] == [0.0, 0.1] and len(trace) >= 2 and trace[1][1] > 0.1, trace
    assert not leftover_processes(tmp_path)
    simulated = real.run_sim(
        SchedulerKind.CAPACITY, a, "adaptive", real.HADOOP_HEARTBEATS, batch
    )
    assert floor <= simulated.mean_jct_s <= simulated.makespan_s


def test_a_row_named_to_run_again_runs_on_the_real_rm_and_the_others_keep_theirs(
    realyarn_build: Build, tmp_path: Path
) -> None:
    """``bench real --resimulate --rerun``: the named row's recorded runs (here made up, of a
    batch no RM ran) give way to a fresh real run; the other row keeps what it recorded."""
    made_up = [{"makespan_s": 1.0, "mean_jct_s": 1.0, "ams_at_once": 1, "a_trace": [[0.0, 0.3]],
                "retried": None}]  # fmt: skip
    rows = [
        {"scheduler": "capacity", "policy": label, "hadoop_version": "3.5.0",
         "wall_seconds": 1.0, "real_runs": made_up}
        for label in ("fixed:0.3", "fixed:0.6")
    ]  # fmt: skip
    recorded = {"parameters": {"heartbeats": {}}, "rows": rows, "wall_seconds": 2.0}
    summary = real.resimulate(recorded, lambda _: None, {"capacity:fixed:0.6"}, tmp_path, runs=1)
    kept, again = summary["rows"]
    assert kept["real_runs"] == made_up and kept["wall_seconds"] == 1.0
    (run,) = again["real_runs"]
    # 0.6 of 4 x 8 GB, rounded up to a GB: 10 AMs of 2 GB, on the RM and in the simulator.
    assert run["ams_at_once"] == again["sim_ams_at_once"] == 10
    assert abs(again["makespan_diff"]) <= 0.10 and again["hadoop_version"].startswith("3.")
    assert summary["wall_seconds"] == round(1.0 + again["wall_seconds"], 1)
    assert not leftover_processes(tmp_path)
