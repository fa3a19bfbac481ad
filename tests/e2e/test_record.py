"""`amtuner record` against the simulated RM over HTTP: the apps it reports finished land in the
trace once each, a restart resumes from the file, the size bound stops it, and the trace
replays through the simulator."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from amtuner.apptrace import FORMAT, VERSION, read_trace
from amtuner.demo import running_sim
from amtuner.exitcodes import ExitCode
from amtuner.sim.workload import load_workload
from tests.e2e.conftest import amtuner, write_config

pytestmark = pytest.mark.slow


@pytest.fixture
def sim(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """`amtuner sim` on the paper's mixed batch, fast; parametrised with its scheduler."""
    argv = ["--scheduler", request.param, "--workload", "paper:mixed", "--port", "0"]
    with running_sim([*argv, "--speed", "40", "--state-dir", str(tmp_path / "sim")]) as started:
        yield started


@pytest.mark.parametrize("sim", ["capacity"], indirect=True)
def test_record_appends_each_finished_app_once_and_resumes(
    sim: tuple[str, Path], tmp_path: Path
) -> None:
    url, sched = sim
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [url]},
        scheduler={"kind": "capacity", "config_file": str(sched)},
    )  # fmt: skip
    trace = tmp_path / "trace" / "apps.jsonl"
    deadline = time.monotonic() + 90
    apps: list = []
    while len(apps) < 5 and time.monotonic() < deadline:
        run = amtuner("record", "--config", str(cfg), "--out", str(trace), "--once")
        assert run.returncode == 0, run.stderr
        header, apps = read_trace(trace)
        time.sleep(0.5)
    assert header["format"] == FORMAT and header["version"] == VERSION
    assert header["nodes"] == 4 and header["node_memory_mb"] > 0
    assert len(apps) >= 5
    assert len({a.id for a in apps}) == len(apps), "an app recorded twice"
    for a in apps:
        assert a.state == "FINISHED" and a.queue and a.user
        assert 0 < a.submit_ms <= a.launch_ms <= a.finish_ms
        assert a.memory_mb_s is not None and a.memory_mb_s > 0
    # What the RM holds finished since the first record is exactly what the file holds.
    first = min(a.finish_ms for a in apps)
    doc = requests.get(
        f"{url}/ws/v1/cluster/apps",
        params={"states": "FINISHED", "finishedTimeBegin": first}, timeout=10,
    ).json()  # fmt: skip
    held = {a["id"] for a in doc["apps"]["app"]}
    again = amtuner("record", "--config", str(cfg), "--out", str(trace), "--once")
    assert again.returncode == 0, again.stderr
    _, after = read_trace(trace)
    assert len({a.id for a in after}) == len(after)
    assert held <= {a.id for a in after}
    assert [a.id for a in after[: len(apps)]] == [a.id for a in apps], "rewrote the past"

    # Past the size bound it stops, says so and writes nothing.
    size = trace.stat().st_size
    full = amtuner(
        "record", "--config", str(cfg), "--out", str(trace), "--once", "--max-bytes", str(size)
    )
    if full.returncode != 0:  # new apps finished meanwhile
        assert full.returncode == ExitCode.FAILED
        assert "--max-bytes" in full.stderr
    assert trace.stat().st_size == size

    workload = load_workload(f"trace:{trace}")
    assert workload.nodes == 4
    assert {j.job_id for j in workload.jobs} == {a.id for a in after}


@pytest.mark.parametrize("sim", ["fair"], indirect=True)
def test_sim_apps_api_filters_finished_time_as_the_rm(sim: tuple[str, Path]) -> None:
    url, _ = sim
    apps_url = f"{url}/ws/v1/cluster/apps"
    deadline = time.monotonic() + 90
    finished: list = []
    while len(finished) < 3 and time.monotonic() < deadline:
        doc = requests.get(apps_url, params={"states": "FINISHED"}, timeout=10).json()
        finished = (doc["apps"] or {}).get("app", [])
        time.sleep(0.5)
    assert len(finished) >= 3
    times = sorted(a["finishedTime"] for a in finished)
    middle = times[len(times) // 2]
    doc = requests.get(apps_url, params={"finishedTimeBegin": middle}, timeout=10).json()
    got = doc["apps"]["app"]
    assert got and all(a["finishedTime"] >= middle for a in got)
    doc = requests.get(apps_url, params={"finishedTimeEnd": middle}, timeout=10).json()
    # As RMWebServices compares: an app still running has finish time 0, so it is in [0, end].
    assert all(a["finishedTime"] <= middle for a in doc["apps"]["app"])
    for a in finished:
        assert a["memorySeconds"] > 0 and a["vcoreSeconds"] > 0
    bad = requests.get(apps_url, params={"finishedTimeBegin": "-1"}, timeout=10)
    assert bad.status_code == 400
    assert "finishedTimeBegin" in json.loads(bad.text)["RemoteException"]["message"]


@pytest.mark.parametrize("sim", ["capacity"], indirect=True)
def test_a_recorder_that_saw_an_app_running_records_its_am_size(
    sim: tuple[str, Path], tmp_path: Path
) -> None:
    """The apps API reports no AM size for a finished app; a recorder polling while apps run
    learns it (``allocatedMB`` while the AM is the app's only container; the simulated RM serves
    no container reports, so the rest stay null) and writes it with the app once it finished."""
    url, sched = sim
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [url]},
        scheduler={"kind": "capacity", "config_file": str(sched)},
    )  # fmt: skip
    trace = tmp_path / "apps.jsonl"
    argv = [sys.executable, "-m", "amtuner", "record", "--config", str(cfg), "--out", str(trace),
            "--interval", "0.1"]  # fmt: skip
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 90
        sized: list = []
        while len(sized) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
            if trace.exists():
                sized = [a for a in read_trace(trace)[1] if a.am_memory_mb is not None]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert len(sized) >= 3, err
    # paper:mixed's AMs ask 1536 MB; the RM allocates whole GBs of its minimum allocation.
    assert {a.am_memory_mb for a in sized} == {2048}


@pytest.mark.parametrize("sim", ["fair"], indirect=True)
def test_record_takes_each_mapreduce_apps_tasks_from_the_jobhistory_server(
    sim: tuple[str, Path], tmp_path: Path
) -> None:
    """The simulated RM is its own JobHistory server: the recorder asks it of every finished
    app, the trace holds each job's map and reduce counts and sizes as the workload submitted
    them, and the replay runs those. A JobHistory server that does not answer costs the apps their
    task figures, nothing else, with a warning."""
    url, sched = sim
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [url]}, history={"urls": [url]},
        scheduler={"kind": "fair", "config_file": str(sched)},
    )  # fmt: skip
    trace = tmp_path / "apps.jsonl"
    apps, name = recorded_with_names(url, cfg, trace, "JobHistory")
    spec = {j.job_id: j for j in load_workload("paper:mixed").jobs}
    for a in apps:
        job = spec[name[a.id]]
        assert a.maps == sum(g.count for g in job.maps) >= 1
        assert a.reduces == sum(g.count for g in job.reduces)
        assert a.map_ms == round(job.maps[0].duration_s * 1000)
        assert a.shuffle_ms == a.merge_ms == 0
        if job.reduces:
            assert a.reduce_ms == round(job.reduces[0].duration_s * 1000)
            assert (a.reduce_mb, a.reduce_vcores) == (
                job.reduces[0].memory_mb, job.reduces[0].vcores,
            )  # fmt: skip
        # The sizes of the job's configuration; the AM's as the recorder saw it allocated
        # (whole GBs of the minimum allocation) while it ran, else its ask there.
        assert (a.map_mb, a.map_vcores) == (job.maps[0].memory_mb, job.maps[0].vcores)
        assert a.am_memory_mb in (2048, job.am_memory_mb)
    assert any(a.reduces for a in apps), "paper:mixed has jobs with reduces"
    replay = {j.job_id: j for j in load_workload(f"trace:{trace}").jobs}
    for a in apps:
        job = replay[a.id]
        assert sum(g.count for g in job.maps) == a.maps
        assert sum(g.count for g in job.reduces) == a.reduces
        assert {g.memory_mb for g in job.maps} == {a.map_mb}
        assert job.am_memory_mb == a.am_memory_mb

    # A JobHistory server that is not there: the apps are recorded all the same.
    got = recorded_past_a_dead_server(cfg, tmp_path / "more.jsonl", "--history", "JobHistory")
    assert {a.id for a in apps} <= {a.id for a in got}
    assert all(a.maps is None for a in got)


def recorded_with_names(url: str, cfg: Path, trace: Path, server: str) -> tuple[list, dict]:
    """``record --once`` into ``trace`` until it holds 4 apps, none costing a warning of
    ``server``; its apps and each one's name, as the RM lists them."""
    deadline = time.monotonic() + 90
    apps: list = []
    while len(apps) < 4 and time.monotonic() < deadline:
        run = amtuner("record", "--config", str(cfg), "--out", str(trace), "--once")
        assert run.returncode == 0, run.stderr
        assert server not in run.stderr, run.stderr
        apps = read_trace(trace)[1]
        time.sleep(0.5)
    assert len(apps) >= 4
    doc = requests.get(f"{url}/ws/v1/cluster/apps", params={"states": "FINISHED"}, timeout=10)
    return apps, {a["id"]: a["name"] for a in doc.json()["apps"]["app"]}


def recorded_past_a_dead_server(cfg: Path, out: Path, option: str, name: str) -> list:
    """``record --once`` into ``out`` with ``option`` naming a server that is not there: it
    succeeds, says the server did not answer, and returns what it recorded."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    run = amtuner("record", "--config", str(cfg), "--out", str(out), "--once", option, dead)
    assert run.returncode == 0, run.stderr
    assert f"no {name} server answered" in run.stderr
    return read_trace(out)[1]


@pytest.mark.parametrize("sim", ["capacity"], indirect=True)
def test_record_takes_each_apps_task_containers_from_the_timeline_server(
    sim: tuple[str, Path], tmp_path: Path
) -> None:
    """The simulated RM is its own timeline server: with no JobHistory server named, the
    recorder asks it of every finished app, the trace holds each job's task containers (its maps
    and reduces) with their mean size and life as the workload gave them, and the replay runs
    them. A timeline server that does not answer costs the apps their figures, nothing
    else."""
    url, sched = sim
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [url]}, timeline={"urls": [url]},
        scheduler={"kind": "capacity", "config_file": str(sched)},
    )  # fmt: skip
    trace = tmp_path / "apps.jsonl"
    apps, name = recorded_with_names(url, cfg, trace, "timeline")
    spec = {j.job_id: j for j in load_workload("paper:mixed").jobs}
    for a in apps:
        groups = [*spec[name[a.id]].maps, *spec[name[a.id]].reduces]
        assert a.tasks == sum(g.count for g in groups) >= 1
        life = sum(g.count * g.duration_s for g in groups) / a.tasks
        assert a.task_ms == round(life * 1000)
        assert a.task_mb == 1024 and a.task_vcores == 1
        assert a.am_memory_mb == 2048 and a.maps is None
    replay = {j.job_id: j for j in load_workload(f"trace:{trace}").jobs}
    for a in apps:
        (maps,) = replay[a.id].maps
        assert (maps.count, maps.duration_s) == (a.tasks, a.task_ms / 1000)

    got = recorded_past_a_dead_server(cfg, tmp_path / "more.jsonl", "--timeline", "timeline")
    assert {a.id for a in apps} <= {a.id for a in got}
    assert all(a.tasks is None for a in got)

    # A version 2 file is continued as version 2: the timeline server is not asked, and says so.
    old = tmp_path / "v2.jsonl"
    old.write_text(json.dumps({"format": FORMAT, "version": 2, "rm": url, "nodes": 4}) + "\n")
    run = amtuner("record", "--config", str(cfg), "--out", str(old), "--once")
    assert run.returncode == 0, run.stderr
    assert "version 2 trace, which has no timeline fields" in run.stderr
    lines = old.read_text().splitlines()[1:]
    assert lines and all('"tasks"' not in line and '"maps"' in line for line in lines)
