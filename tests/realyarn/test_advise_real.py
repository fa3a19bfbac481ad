"""`amtuner advise` checked on Hadoop's own RM (`amtuner bench advise-real`): the batch recorded by
`amtuner record` at the default, advised on, and run again at the recommendation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amtuner.apptrace import read_trace
from amtuner.bench import advise_real, real
from amtuner.model import SchedulerKind
from amtuner.realyarn.build import Build
from amtuner.realyarn.cluster import leftover_processes

BENCH_REAL = Path(__file__).parents[2] / "docs" / "real-bench.json"


@pytest.mark.timeout(1800)  # two to four real runs of the batch, each minutes on a loaded machine
@pytest.mark.parametrize(
    ("kind", "runs"),
    [(SchedulerKind.CAPACITY, 1), (SchedulerKind.FAIR, 2)],
    ids=["capacity", "fair"],
)
def test_advice_from_a_recorded_real_run_holds_on_the_real_rm(
    realyarn_build: Build, tmp_path: Path, kind: SchedulerKind, runs: int
) -> None:
    """The gain advise predicts against the default and the gain the real RM gives at the
    recommended value agree within 10 % of the default's mean JCT, and the recommendation's real
    mean JCT is within 5 % of the best real fixed row (the default's, run here, and bench real's
    0.3 and 0.6 of the same batch). The recorder saw every app running: each AM's 2 GB is in
    the trace, read from the RM, not assumed. The FairScheduler's batch gains a few % at most
    from any value near its default, as much as one real run moves on a loaded machine: two
    rounds of runs, each value once a round."""
    recorded = json.loads(BENCH_REAL.read_text())
    result = advise_real.check(kind, tmp_path, realyarn_build, print, 5, 2, recorded, runs)
    _, apps = read_trace(tmp_path / "trace.jsonl")
    assert len(apps) == len(real.workload().jobs)
    assert {a.am_memory_mb for a in apps} == {real.AM_MB}
    assert set(result["fixed_jct_s"]) == {"0.3", "0.6", result["default"]}
    assert result["gains_agree"], advise_real.format_result(result)
    assert result["near_best"], advise_real.format_result(result)
    assert not leftover_processes(tmp_path)
