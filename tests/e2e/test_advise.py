"""`amtuner advise` end to end: a trace of apps as the simulated RM's apps API reports them,
replayed under every value in a process pool, a recommendation for people and for programs;
and a trace too short to say anything refused."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from amtuner.apptrace import AppRecord, header_line
from amtuner.exitcodes import ExitCode
from amtuner.model import SchedulerKind
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
    # On 4 x 8 GB the AM limit holds apps back at every value, 1.0 too: nothing is reused.
    assert report["replays"] == {"run": 2 * len(labels), "reused": 0}
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

    png = tmp_path / "advice.png"
    people = amtuner(*argv, "--workers", "2", "--plot", str(png))
    assert people.returncode == 0, people.stderr
    assert f"recommended: {report['recommended']}: " in people.stdout
    assert "current value 0.1" in people.stdout
    assert f"replays: {2 * len(labels)} run, 0 reused" in people.stdout
    assert f"wrote {png}" in people.stderr
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_the_distributions_are_those_of_the_runs(tmp_path: Path) -> None:
    """What the plot draws: every job of every seed, whose mean is the table's figure."""
    from amtuner import advise
    from amtuner.adviceplot import plot
    from amtuner.bench.common import mean_of

    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    period = advise.Period(f"trace:{trace}")
    w = advise.Sweep(period, SchedulerKind.CAPACITY, ("0.1", "0.5"), "0.1", distributions=True)
    kept: dict[advise.Sweep, advise.Results] = {}
    (table,) = advise.sweep([w], range(2), 1, None, kept)
    for row in table:
        runs = [kept[w][(row.label, s)] for s in range(2)]
        assert all(len(r["jcts"]) == 30 and len(r["waits"]) == 30 for r in runs)
        assert row.jct_s == pytest.approx(mean_of(mean_of(r["jcts"]) for r in runs), abs=2e-3)
    report = {"trace": str(trace), "workload": {"apps": 30}, "scheduler": "capacity",
              "seeds": 2, "targets": [{"target": "", "current": "0.1", "recommended": "0.5",
                                       "rows": [asdict(r) for r in table]}]}  # fmt: skip
    plot(report, [kept[w]], tmp_path / "a.png")
    assert (tmp_path / "a.png").stat().st_size > 10_000


def test_plot_without_matplotlib_is_refused_before_any_replay(tmp_path: Path) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    hide = "import sys; sys.modules['matplotlib'] = None; from amtuner.cli import main; "
    proc = subprocess.run(
        [sys.executable, "-c", hide + "sys.exit(main(sys.argv[1:]))", "advise", "--trace",
         str(trace), "--scheduler", "fair", "--plot", str(tmp_path / "a.png")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == ExitCode.CONFIG
    assert "pip install 'amtuner[plot]'" in proc.stderr and proc.stdout == ""


def test_a_trace_too_short_is_refused(tmp_path: Path) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.5, jobs=12)
    run = amtuner("advise", "--trace", str(trace), "--scheduler", "fair")
    assert run.returncode == ExitCode.FAILED
    assert "12 apps" in run.stderr and "at least 30" in run.stderr
    assert run.stdout == ""



def capacity_file(path: Path, queues: dict[str, dict[str, str]]) -> Path:
    """A capacity-scheduler.xml with these leaves under root, each with its settings."""
    props = {"yarn.scheduler.capacity.root.queues": ",".join(queues)}
    for name, settings in queues.items():
        props |= {f"yarn.scheduler.capacity.root.{name}.{k}": v for k, v in settings.items()}
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>\n"
                   for k, v in props.items())  # fmt: skip
    path.write_text(f"<configuration>\n{body}</configuration>\n")
    return path


def test_the_scheduler_file_gives_the_queues_and_each_target_its_advice(tmp_path: Path) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "twoqueue:small,large", 0.3)
    sched = capacity_file(tmp_path / "capacity-scheduler.xml", {
        "a": {"capacity": "70", "maximum-capacity": "100"},
        "b": {"capacity": "30", "maximum-capacity": "100", "maximum-am-resource-percent": "0.3"},
    })  # fmt: skip
    argv = ["advise", "--trace", str(trace), "--scheduler", "capacity", "--seeds", "2",
            "--workers", "2", "--json"]  # fmt: skip
    run = amtuner(*argv, "--scheduler-file", str(sched), "--target", "root.a",
                  "--target", "root.b")  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["scheduler_file"] == str(sched)
    a, b = report["targets"]
    # Each target starts from the file's value: root.a the global default, root.b its own.
    assert (a["target"], a["current"]) == ("root.a", "0.1")
    assert (b["target"], b["current"]) == ("root.b", "0.3")
    for t in (a, b):
        labels = [r["label"] for r in t["rows"]]
        assert t["recommended"] in labels and labels[-1] == "adaptive"
    jct = {t["target"]: {r["label"]: r["jct_s"] for r in t["rows"]} for t in (a, b)}
    assert jct["root.a"]["0.1"] != jct["root.b"]["0.1"], "the two targets were not set apart"
    # The same value on the global default leaves is another cluster: the file was replayed.
    plain = json.loads(amtuner(*argv).stdout)
    assert plain["scheduler_file"] is None and [t["target"] for t in plain["targets"]] == [""]
    assert {r["label"]: r["jct_s"] for r in plain["rows"]}["0.3"] != jct["root.b"]["0.3"]

    people = amtuner(*argv[:-1], "--scheduler-file", str(sched), "--target", "root.b")
    assert f"the queues of {sched}" in people.stdout
    assert "root.b: current value 0.3" in people.stdout
    assert "recommended for root.b: " in people.stdout


def test_a_file_without_the_traces_queues_is_refused(tmp_path: Path) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "twoqueue:small,large", 0.3)
    sched = capacity_file(tmp_path / "capacity-scheduler.xml", {"a": {"capacity": "100"}})
    run = amtuner("advise", "--trace", str(trace), "--scheduler", "capacity",
                  "--scheduler-file", str(sched))  # fmt: skip
    assert run.returncode == ExitCode.CONFIG
    assert "root.b" in run.stderr and "no leaf of" in run.stderr and run.stdout == ""


def test_the_queues_come_from_the_rms_configuration_store(tmp_path: Path) -> None:
    """No file: the config's rm section and refresh.method rest, as the daemon reads it."""
    from amtuner.demo import running_sim
    from tests.e2e.conftest import write_config

    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    argv = ["--scheduler", "capacity", "--workload", "paper:mixed", "--port", "0",
            "--speed", "5", "--mutable-conf"]  # fmt: skip
    with running_sim(argv) as (url, _):
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [url]},
            scheduler={"kind": "capacity", "targets": ["root.default"]},
            refresh={"method": "rest"},
        )  # fmt: skip
        run = amtuner("advise", "--trace", str(trace), "--config", str(cfg), "--seeds", "2",
                      "--workers", "2", "--json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["scheduler_file"] == "/ws/v1/cluster/scheduler-conf"
    assert (report["targets"][0]["target"], report["current"]) == ("root.default", "0.1")
    assert report["recommended"] in [r["label"] for r in report["rows"]]


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_reusing_the_runs_no_am_limit_held_back_changes_no_figure(
    kind: SchedulerKind, tmp_path: Path
) -> None:
    """The mixed batch on 16 nodes: the AM limit holds apps back below 0.5 and never from 0.5
    up, so the values above take 0.5's run; the tables and every run's figures are those of
    the sweep that replays each value (``reuse=False``). The second grid's best is 0.5, so its
    refinement 0.55 takes 0.5's run too, and 0.45 is replayed."""
    from amtuner import advise

    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    period = advise.Period(f"trace:{trace}", nodes=16)
    grids = (tuple(f"{i / 10:g}" for i in range(1, 11)), ("0.1", "0.5", "1"))
    sweeps = [advise.Sweep(period, kind, labels, "0.1", distributions=True) for labels in grids]
    kept: dict[advise.Sweep, advise.Results] = {}
    plain: dict[advise.Sweep, advise.Results] = {}
    tables = advise.sweep(sweeps, range(2), 1, None, kept)
    assert advise.sweep(sweeps, range(2), 1, None, plain, reuse=False) == tables
    for w in sweeps:
        assert {k: {f: v for f, v in run.items() if f != "reused_from"}
                for k, run in kept[w].items()} == plain[w]  # fmt: skip
        assert all(plain[w][(v, s)]["am_refusals"] > 0 for v in ("0.1", "0.45") for s in (0, 1))
        assert all(plain[w][(v, s)]["am_refusals"] == 0 for v in ("0.5", "1") for s in (0, 1))
    fine, grid = kept[sweeps[1]], kept[sweeps[0]]
    assert {k for k, run in grid.items() if "reused_from" in run} == {
        (v, s) for v in ("0.6", "0.7", "0.8", "0.9", "1") for s in (0, 1)
    }
    assert fine[("0.55", 0)]["reused_from"] == "0.5" and "reused_from" not in fine[("0.45", 0)]
    assert advise.reused(fine) == 4


def test_a_fair_schedulers_minus_one_is_no_smallest_value(tmp_path: Path) -> None:
    """maxAMShare -1 turns the limit off: its run refuses nothing, and is no larger value's."""
    from amtuner import advise

    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    period = advise.Period(f"trace:{trace}", nodes=16)
    w = advise.Sweep(period, SchedulerKind.FAIR, ("-1", "0.1", "0.5"), "0.1")
    kept: dict[advise.Sweep, advise.Results] = {}
    tables = advise.sweep([w], range(2), 1, None, kept)
    assert kept[w][("-1", 0)]["am_refusals"] == 0 and kept[w][("0.1", 0)]["am_refusals"] > 0
    assert advise.sweep([w], range(2), 1, None, reuse=False) == tables
