"""`amtuner bench oracle`: the oracle twin's window score and candidates on hand-checked numbers,
and end to end on two small recorded zoo cases, where a perfect model simulated ahead must beat
the best fixed value."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from amtuner.bench import oracle, oraclecmd
from amtuner.exitcodes import ExitCode
from amtuner.model import SchedulerKind
from amtuner.sim.sched_config import default_scheduler_config
from amtuner.sim.simulation import build_simulation
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from amtuner.sim.workload import zoo_case
from tests.e2e.conftest import amtuner

RECORD = Path(__file__).resolve().parents[2] / "docs" / "zoo-bench.json"


def test_the_command_offers_every_level_of_knowledge() -> None:
    assert tuple(k.value for k in oracle.Knows) == oraclecmd.KNOWS


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


def _jobs(*submits: float, am_mb: int = 1024, task_mb: int = 1024) -> Workload:
    """Jobs of four 10 s maps on one 8 GB node, submitted at ``submits``."""
    maps = (TaskGroup("map", 4, task_mb, 1, 10.0, 1.0, 1.0),)
    jobs = tuple(
        JobSpec(f"j{i}", t, "root.default", maps, am_memory_mb=am_mb) for i, t in enumerate(submits)
    )
    return Workload("jobs", jobs, nodes=1)


def test_a_copy_that_forgets_arrivals_runs_only_the_apps_submitted_so_far() -> None:
    """What a twin built from the RM's figures can know: the apps submitted so far. Those run
    to their end; those due later stay unsubmitted and out of the window's job-seconds."""
    sim = build_simulation(SchedulerKind.CAPACITY, _jobs(0.0, 100.0, 200.0), seed=0)
    sim.run_until(50.0)
    sim.runtime.forget_arrivals()
    sim.run_until(1000.0)
    assert [a.state for a in sim.apps] == ["FINISHED", "NEW", "NEW"]
    first = sim.apps[0]
    assert first.finished_s is not None
    assert oracle.job_seconds(sim, 0.0, 1000.0) == pytest.approx(first.finished_s)
    assert not oracle.stalled(sim)


def test_a_run_whose_ams_leave_no_room_for_their_tasks_is_stalled() -> None:
    """Four 2 GB AMs fill the 8 GB node under A = 1.0 and their 2 GB maps never fit: nothing
    is left to happen, which `stalled` tells from a run that is merely slow (A = 0.25: one
    AM at a time), and from one whose only events left are arrivals it was told to forget."""
    jobs = _jobs(0.0, 0.0, 0.0, 0.0, 5000.0, am_mb=2048, task_mb=2048)
    kind = SchedulerKind.CAPACITY
    seconds = {}
    for a in (1.0, 0.25):
        config = default_scheduler_config(kind, jobs.queues, a)
        sim = build_simulation(kind, jobs, config, seed=0)
        sim.run_until(600.0)
        assert not oracle.stalled(sim)  # the arrival at 5000 s is still to come
        sim.runtime.forget_arrivals()
        sim.run_until(700.0)
        assert oracle.stalled(sim) is (a == 1.0)
        seconds[a] = oracle.job_seconds(sim, 0.0, 700.0)
    assert seconds[1.0] == pytest.approx(4 * 700.0)
    assert seconds[0.25] < seconds[1.0]


def test_apps_waiting_for_their_am_are_taken_to_be_like_the_last_ones_started() -> None:
    """Under A = 0.25 of one 8 GB node two 1 GB AMs run; the two apps behind them wait, and
    the RM knows only their AM. Each takes the tasks of one started app, the latest first,
    keeping its own name and AM; the copy still runs every job to its end."""

    def job(name: str, submit_s: float, maps: int, am_mb: int = 1024) -> JobSpec:
        group = (TaskGroup("map", maps, 1024, 1, 30.0, 1.0, 1.0),)
        return JobSpec(name, submit_s, "root.default", group, am_memory_mb=am_mb)

    specs = (job("a", 0, 2), job("b", 10, 3), job("c", 11, 9), job("d", 12, 7, am_mb=2048))
    jobs = Workload("mix", specs, nodes=1)
    kind = SchedulerKind.CAPACITY
    config = default_scheduler_config(kind, jobs.queues, 0.25)
    sim = build_simulation(kind, jobs, config, seed=0)
    sim.run_until(20.0)
    assert [a.state for a in sim.apps] == ["RUNNING", "RUNNING", "ACCEPTED", "ACCEPTED"]
    oracle.like_recent(sim, sim.now)
    assert [a.spec.job_id for a in sim.apps] == ["a", "b", "c", "d"]
    assert [a.maps_total for a in sim.apps] == [2, 3, 3, 2]
    assert [a.spec.am_memory_mb for a in sim.apps] == [1024, 1024, 1024, 2048]
    assert sim.run(3600.0).finished


def test_the_oracle_refuses_the_compiled_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(oracle.native, "loaded", lambda: True)
    case = zoo_case(26, run_seed=0)
    with pytest.raises(oracle.OracleError, match="AMTUNER_SIM_NATIVE=0"):
        oracle.run(case.workload, SchedulerKind.CAPACITY, 0.1, 0, case.max_sim_seconds)


def _oracle_on(
    tmp_path: Path, seeds: tuple[int, ...], *flags: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`bench oracle` on the development record's cases ``seeds``: its run and its summary."""
    record = json.loads(RECORD.read_text())
    record["cases"] = [c for c in record["cases"] if c["seed"] in seeds]
    small = tmp_path / "record.json"
    small.write_text(json.dumps(record))
    out = tmp_path / "oracle.json"
    run = amtuner("bench", "oracle", str(small), *flags, "--json", str(out))
    assert run.returncode == ExitCode.OK, run.stderr
    return run, json.loads(out.read_text())


def test_the_oracle_beats_the_best_fixed_value_on_small_recorded_cases(tmp_path: Path) -> None:
    """zoo:26 (4 nodes, 13 jobs at once; best fixed 0.15, `adaptive` 1.10 of it) and zoo:195 (a
    FairScheduler on 3 nodes): each value it keeps wins over the next hour of the real future,
    so it ends at or under the best fixed value, which holds one value throughout."""
    run, summary = _oracle_on(tmp_path, (26, 195), "--workers", "1")
    assert "oracle twin: 2 cases" in run.stdout
    ratios = {c["case"]: c["oracle"] for c in summary["cases"]}
    assert set(ratios) == {"zoo:26", "zoo:195"}
    assert all(r is not None and r <= 1.0 for r in ratios.values()), ratios
    rows = summary["jct_vs_best"]
    assert rows["oracle"]["mean"] < rows["adaptive"]["mean"]


def test_the_oracle_told_less_says_so_and_still_runs_every_job(tmp_path: Path) -> None:
    run, summary = _oracle_on(tmp_path, (26,), "--knows", "started")
    assert "knows started jobs" in run.stdout
    assert summary["parameters"]["knows"] == "started"
    assert summary["jct_vs_best"]["oracle"]["never"] == 0


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
