"""The soak and cycle-cost benchmarks run and measure what they claim (numbers: README)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from amtuner.bench import soak
from amtuner.config import GuardSettings
from amtuner.model import SchedulerKind
from amtuner.sim.control import ControlledRun


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_soak_runs_real_cycles_that_change_a(kind: SchedulerKind) -> None:
    result = soak.soak(300, kind, warmup=50)
    assert result.cycles == 300
    assert result.errors == {}
    assert result.changes > 0
    assert result.rss_after_warmup_mb > 0 and result.rss_end_mb > 0


def test_batches_repeat_the_group_at_the_given_interval() -> None:
    workload = soak.batches(3, 100.0)
    assert len(workload.jobs) == 90
    assert sorted({j.submit_s for j in workload.jobs}) == [0.0, 100.0, 200.0]
    assert len({j.job_id for j in workload.jobs}) == 90


def test_cycle_cost_reports_both_paths_on_a_busy_rm() -> None:
    result = soak.cycle_cost(200, 400, SchedulerKind.CAPACITY, repeats=5)
    assert result["apps_pending"] > 0 and result["apps_running"] > 0
    for key in ("in_process_median_ms", "http_median_ms"):
        assert result[key] > 0


def test_one_cycle_on_a_large_rm(benchmark: Any, tmp_path: Path) -> None:
    """pytest --benchmark-enable -k large_rm times this; it otherwise runs once, as a test."""
    sim = soak.big_cluster(5000, 10_000, SchedulerKind.FAIR)
    run = ControlledRun(sim, tmp_path, guard=GuardSettings(hold_off_seconds=0))
    report, _ = benchmark(run.cycle.run, run.states)
    assert report.error is None
    assert report.observation is not None and report.observation.pending_apps == 8000
