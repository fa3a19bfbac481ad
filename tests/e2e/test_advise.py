"""`amtuner advise` end to end: a trace of apps as the simulated RM's apps API reports them,
replayed under every value in a process pool, a recommendation for people and for programs;
and a trace too short to say anything refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amtuner.apptrace import AppRecord, header_line
from amtuner.exitcodes import ExitCode
from amtuner.sim.rmapi.face import FaceOptions
from amtuner.sim.rmapi.rest import apps_info
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.workload import load_workload
from tests.e2e.conftest import amtuner

pytestmark = pytest.mark.slow


def recorded_trace(path: Path, workload: str, a: float, jobs: int | None = None) -> Path:
    """The trace `amtuner record` writes of ``workload`` run to its end at AM share ``a``: the
    finished apps as the apps API renders them, through `AppRecord.from_app_info`."""
    wl = load_workload(workload)
    sim = build_simulation("capacity", wl, default_scheduler_config("capacity", wl.queues, a))
    assert sim.run(100_000).finished
    infos = apps_info(sim.app_views(["FINISHED"]), sim.view(), FaceOptions())["apps"]["app"]
    records = [AppRecord.from_app_info(i) for i in infos][:jobs]
    shape = {"nodes": wl.nodes, "node_memory_mb": wl.node_memory_mb, "node_vcores": 8}
    path.write_text(header_line(shape, "http://sim") + "".join(r.line() for r in records))
    return path


def test_advise_replays_every_value_and_recommends_one(tmp_path: Path) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    argv = ["advise", "--trace", str(trace), "--scheduler", "capacity", "--seeds", "2"]
    run = amtuner(*argv, "--json", "--workers", "2")
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["workload"] == {
        "apps": 30, "nodes": 4, "node_memory_mb": 8192, "queues": ["root.default"]
    }  # fmt: skip
    labels = [r["label"] for r in report["rows"]]
    assert labels[-1] == "adaptive" and report["current"] == "0.1"
    assert {f"{i / 10:g}" for i in range(1, 11)} <= set(labels)
    fixed = [r for r in report["rows"] if r["a"] is not None and r["jct_s"] is not None]
    best = min(fixed, key=lambda r: r["jct_s"])
    assert len(labels) > 11, "no value 0.05 either side of the best"
    current = next(r for r in report["rows"] if r["label"] == "0.1")
    assert current["jct_ratio"] == 1.0 and current["jct_se"] == 0.0
    for r in report["rows"]:  # a run that never finished has no figures, its wait neither
        assert (r["wait_s"] is None) == (r["makespan_s"] is None)
        assert r["wait_s"] is None or r["wait_s"] >= 0
    # The mixed batch at 0.1 holds one AM at a time on 4 x 8 GB: every larger share is faster,
    # by far more than the seeds' noise, so a change is advised.
    assert best["jct_s"] < current["jct_s"]
    assert report["recommended"] != "0.1", report["why"]
    rec = next(r for r in report["rows"] if r["label"] == report["recommended"])
    assert 1 - rec["jct_ratio"] > 2 * rec["jct_se"]

    people = amtuner(*argv, "--workers", "2")
    assert people.returncode == 0, people.stderr
    assert f"recommended: {report['recommended']}: " in people.stdout
    assert "current value 0.1" in people.stdout


def test_a_trace_too_short_is_refused(tmp_path: Path) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.5, jobs=12)
    run = amtuner("advise", "--trace", str(trace), "--scheduler", "fair")
    assert run.returncode == ExitCode.FAILED
    assert "12 apps" in run.stderr and "at least 30" in run.stderr
    assert run.stdout == ""

