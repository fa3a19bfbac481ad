"""`amtuner bench oracle`: the oracle twin's window score and candidates on hand-checked numbers,
and end to end on two small recorded zoo cases, where a perfect model simulated ahead must beat
the best fixed value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amtuner.bench import oracle
from amtuner.exitcodes import ExitCode
from amtuner.model import SchedulerKind
from amtuner.sim.simulation import build_simulation
from amtuner.sim.workload import zoo_case
from tests.e2e.conftest import amtuner

RECORD = Path(__file__).resolve().parents[2] / "docs" / "zoo-bench.json"


def test_candidates_are_the_neighbours_on_the_zoos_grid_and_every_other_coarse_value() -> None:
    assert oracle.candidates(0.1) == [0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 0.9]
    assert oracle.candidates(0.5) == [0.1, 0.3, 0.4, 0.5, 0.6, 0.7, 0.9]
    assert oracle.candidates(0.33) == [0.1, 0.2, 0.25, 0.3, 0.33, 0.4, 0.5, 0.7, 0.9]


def test_job_seconds_over_the_whole_run_are_the_sum_of_the_job_completion_times() -> None:
    """Little's law on a finished run: every job is unfinished from its submission to its end,
    so the job-seconds of a window holding the whole run are its JCTs' sum; a window that
    starts later leaves out what came before it."""
    case = zoo_case(26, run_seed=0)
    sim = build_simulation(SchedulerKind.CAPACITY, case.workload, seed=0)
    result = sim.run(case.max_sim_seconds)
    assert result.finished and result.mean_jct_s
    whole = oracle.job_seconds(sim, 0.0, sim.now + 1.0)
    assert whole == pytest.approx(result.mean_jct_s * result.jobs_completed, abs=1.0)
    later = oracle.job_seconds(sim, 100.0, sim.now + 1.0)
    assert 0 < later < whole


def test_the_oracle_refuses_the_compiled_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oracle.native, "loaded", lambda: True)
    case = zoo_case(26, run_seed=0)
    with pytest.raises(oracle.OracleError, match="AMTUNER_SIM_NATIVE=0"):
        oracle.run(case.workload, SchedulerKind.CAPACITY, 0.1, 0, case.max_sim_seconds)


def test_the_oracle_beats_the_best_fixed_value_on_small_recorded_cases(tmp_path: Path) -> None:
    """zoo:26 (4 nodes, 13 jobs at once; best fixed 0.15, `adaptive` 1.10 of it) and zoo:195 (a
    FairScheduler on 3 nodes): each value it keeps wins over the next hour of the real future,
    so it ends at or under the best fixed value, which holds one value throughout."""
    record = json.loads(RECORD.read_text())
    record["cases"] = [c for c in record["cases"] if c["seed"] in (26, 195)]
    small = tmp_path / "record.json"
    small.write_text(json.dumps(record))
    out = tmp_path / "oracle.json"
    run = amtuner("bench", "oracle", str(small), "--workers", "1", "--json", str(out))
    assert run.returncode == ExitCode.OK, run.stderr
    assert "oracle twin: 2 cases" in run.stdout
    summary = json.loads(out.read_text())
    ratios = {c["case"]: c["oracle"] for c in summary["cases"]}
    assert set(ratios) == {"zoo:26", "zoo:195"}
    assert all(r is not None and r <= 1.0 for r in ratios.values()), ratios
    rows = summary["jct_vs_best"]
    assert rows["oracle"]["mean"] < rows["adaptive"]["mean"]


@pytest.mark.parametrize(
    "content, why",
    [(None, "No such file"), ("{", "not a `bench zoo --json` record"),
     ('{"cases": []}', "not a `bench zoo --json` record")],
)  # fmt: skip
def test_a_record_that_is_not_one_is_refused_with_its_path(
    tmp_path: Path, content: str | None, why: str
) -> None:
    path = tmp_path / "record.json"
    if content is not None:
        path.write_text(content)
    run = amtuner("bench", "oracle", str(path))
    assert run.returncode == ExitCode.CONFIG
    assert str(path) in run.stderr and why in run.stderr
