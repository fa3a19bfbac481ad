"""`amtuner run` with ``record.trace`` against the simulated RM over loopback: the daemon appends
each app that finishes to the trace while its cycles go on, SIGTERM writes the apps still held
for the JobHistory server, and `amtuner advise` replays what it wrote. A trace it could not
append to stops it at start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import requests

from amtuner.apptrace import read_trace
from amtuner.demo import running_sim
from amtuner.exitcodes import ExitCode
from amtuner.sim.workload import load_workload
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_run import STOP_SLACK_S, Lines, cycles, scrape, wait_for

pytestmark = pytest.mark.slow

APPS = len(load_workload("paper:mixed").jobs)


def start_run(config: Path) -> tuple[subprocess.Popen[str], Lines]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "amtuner", "run", "--config", str(config)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    return proc, Lines(proc.stderr)


def stop(proc: subprocess.Popen[str], log: Lines) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        assert proc.wait(timeout=STOP_SLACK_S + 30) == 0, log.text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def finished_ids(url: str) -> set[str]:
    doc = requests.get(f"{url}/ws/v1/cluster/apps", params={"states": "FINISHED"}, timeout=10)
    return {a["id"] for a in (doc.json()["apps"] or {}).get("app", [])}


def recorded(trace: Path) -> list:
    return read_trace(trace)[1] if trace.exists() and trace.stat().st_size else []


def test_run_records_the_apps_that_finish_and_advise_replays_them(
    tmp_path: Path, canned_rm
) -> None:
    sim_argv = ["--scheduler", "fair", "--workload", "paper:mixed", "--port", "0",
                "--speed", "40", "--state-dir", str(tmp_path / "sim")]  # fmt: skip
    with running_sim(sim_argv) as (url, sched):
        trace = tmp_path / "traces" / "apps.jsonl"
        config = write_config(
            tmp_path / "amtuner.yaml",
            rm={"urls": [url]}, history={"urls": [url]},
            scheduler={"kind": "fair", "config_file": str(sched)},
            refresh={"method": "none"}, controller={"period_seconds": 0.5},
            metrics={"enabled": True, "address": "127.0.0.1", "port": 0},
            record={"trace": str(trace), "interval_seconds": 0.3},
        )  # fmt: skip
        proc, log = start_run(config)
        try:
            m = wait_for(lambda: log.find(r"metrics on (http://\S+/metrics)"), "metrics", proc)
            metrics_url = m.group(1)  # type: ignore[union-attr]
            assert log.find("recording finished apps to " + str(trace))
            # Apps land in the trace while the daemon runs, its cycles going on beside.
            wait_for(lambda: len(recorded(trace)) >= 3, "apps in the trace", proc)
            before = cycles(scrape(metrics_url))
            wait_for(lambda: cycles(scrape(metrics_url)) >= before + 2, "later cycles", proc)
            wait_for(lambda: len(finished_ids(url)) == APPS, "the batch to finish", proc)
            wait_for(lambda: len(recorded(trace)) == APPS, "every app in the trace", proc)
            counted = scrape(metrics_url)[("amtuner_apps_recorded_total", ())]
        finally:
            stop(proc, log)
        apps = recorded(trace)
        assert counted == APPS
        assert len({a.id for a in apps}) == len(apps), "an app recorded twice"
        assert {a.id for a in apps} == finished_ids(url)
        # The simulated RM is its own JobHistory server: every app has its task figures.
        assert all(a.maps is not None and a.maps >= 1 for a in apps), apps
        assert "recording:" not in log.text()

        # A second daemon on a new trace whose JobHistory server does not know any job yet:
        # every app read is held for it, and SIGTERM writes them all, without their figures.
        def unknown(request: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
            body = {"RemoteException": {"exception": "NotFoundException", "message": "job"}}
            return 404, {"Content-Type": "application/json"}, json.dumps(body).encode()

        held = tmp_path / "held.jsonl"
        write_config(
            config, rm={"urls": [url]}, history={"urls": [canned_rm(unknown)]},
            scheduler={"kind": "fair", "config_file": str(sched)},
            refresh={"method": "none"}, controller={"period_seconds": 0.5},
            record={"trace": str(held), "interval_seconds": 0.3},
        )  # fmt: skip
        proc, log = start_run(config)
        try:
            pattern = rf"0 apps recorded, {APPS} waiting for the JobHistory server"
            wait_for(lambda: log.find(pattern), "the apps held", proc)
            assert recorded(held) == []
        finally:
            stop(proc, log)
        assert log.find(f"stopping: {APPS} apps held for the JobHistory server written")
        assert [a.id for a in recorded(held)] == [a.id for a in apps]
        assert all(a.maps is None for a in recorded(held))

    run = amtuner("advise", "--trace", str(trace), "--scheduler", "fair", "--seeds", "2",
                  "--workers", "2", "--json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert report["workload"]["apps"] == APPS
    assert report["recommended"] in {r["label"] for r in report["rows"]}


def test_run_refuses_a_trace_it_could_not_append_to(tmp_path: Path) -> None:
    """Not a trace, or a directory it cannot write: exit 2 at start, naming ``record.trace``;
    the file is left as it was."""
    other = tmp_path / "notes.txt"
    other.write_text("not a trace\n")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    for trace, reason in ((other, "not an amtuner-apps trace"), (locked / "apps.jsonl", "uid")):
        config = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": ["http://127.0.0.1:9"]},
            scheduler={"kind": "fair", "config_file": str(tmp_path / "fair-scheduler.xml")},
            refresh={"method": "none"}, record={"trace": str(trace)},
        )  # fmt: skip
        if reason == "uid" and os.access(locked, os.W_OK):
            continue  # root writes anywhere
        run = amtuner("run", "--config", str(config))
        assert run.returncode == ExitCode.CONFIG, run.stderr
        assert "record.trace: " in run.stderr and reason in run.stderr, run.stderr
    assert other.read_text() == "not a trace\n"
