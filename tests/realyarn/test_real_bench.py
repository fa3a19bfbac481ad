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
