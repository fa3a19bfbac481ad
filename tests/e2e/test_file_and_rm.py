"""File and RM agree, end to end against `amtuner sim` over HTTP: `amtuner once` killed with
SIGKILL between its write and its refresh, then run again; and a file the RM does not read.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amtuner.demo import running_sim
from amtuner.executor import SchedulerFile
from amtuner.model import SchedulerKind
from amtuner.sim.simulation import default_scheduler_config
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_refresh_timeout import loaded_percent

pytestmark = pytest.mark.slow

BLOCKING_REFRESH = """
import os, pathlib, sys, time
pathlib.Path(sys.argv[1]).write_text(str(os.getpid()))
time.sleep(120)
"""


def file_a(path: Path) -> float:
    return SchedulerFile.read(path, SchedulerKind.CAPACITY).effective_value("")


def sim_argv(sched: Path) -> list[str]:
    return ["--scheduler", "capacity", "--workload", "paper:mixed", "--port", "0",
            "--speed", "20", "--scheduler-config", str(sched)]  # fmt: skip


def test_once_killed_between_write_and_refresh_is_settled_by_the_next_run(
    tmp_path: Path,
) -> None:
    sched = tmp_path / "conf" / "capacity-scheduler.xml"
    sched.parent.mkdir()
    sched.write_bytes(default_scheduler_config("capacity", ["root.default"], am_share=0.1))
    script = tmp_path / "blocking-refresh.py"
    script.write_text(BLOCKING_REFRESH)
    started = tmp_path / "refresh-started"
    with running_sim(sim_argv(sched)) as (url, _):
        refresh_cmd = [sys.executable, "-m", "amtuner", "sim-admin", "refresh-queues", "--url", url]
        sections = {
            "rm": {"urls": [url]}, "audit_log": str(tmp_path / "audit.jsonl"),
            "scheduler": {"kind": "capacity", "config_file": str(sched)},
        }  # fmt: skip
        blocking = write_config(
            tmp_path / "blocking.yaml", **sections,
            refresh={"method": "command", "timeout_seconds": 60,
                     "command": [sys.executable, str(script), str(started)]},
        )  # fmt: skip
        for _ in range(6):
            once = subprocess.Popen(
                [sys.executable, "-m", "amtuner", "once", "--config", str(blocking)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            )  # fmt: skip
            deadline = time.monotonic() + 60
            while not started.exists() and once.poll() is None:
                assert time.monotonic() < deadline, "once neither refreshed nor finished"
                time.sleep(0.05)
            if started.exists():
                break
            assert once.returncode == 0, once.communicate()[0]
            time.sleep(1.5)
        else:
            pytest.fail("the controller never moved A; the scenario no longer writes")
        os.kill(once.pid, signal.SIGKILL)
        once.wait()
        os.kill(int(started.read_text()), signal.SIGKILL)  # its own session: not killed with it

        written = file_a(sched)
        assert written != 0.1 and loaded_percent(url) == pytest.approx(0.1)  # they disagree
        doc = json.loads((tmp_path / "state.json").read_text())
        pending = doc["pending"]
        assert pending["targets"] == {"": [0.1, written]}
        assert not (tmp_path / "audit.jsonl").exists()

        # A long hold-off: the restart makes no change of its own, so only settling the
        # interrupted one can make the RM hold the file's value.
        restart = write_config(
            tmp_path / "amtuner.yaml", **sections, guard={"hold_off_seconds": 3600},
            refresh={"method": "command", "command": refresh_cmd},
        )  # fmt: skip
        run = amtuner("once", "--config", str(restart))
        assert run.returncode == 0, run.stdout + run.stderr
        assert "by a cycle stopped before its refresh" in run.stdout, run.stdout
        assert "hold-off" in run.stdout, run.stdout
        assert file_a(sched) == written
        assert loaded_percent(url) == pytest.approx(written, abs=1e-4)
        doc = json.loads((tmp_path / "state.json").read_text())
        assert "pending" not in doc and doc["targets"][""]["a"] == written
        lines = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
        assert [(x["change"], x["new"]) for x in lines] == [(pending["id"], written)]


def test_a_file_the_rm_does_not_read_is_found_on_the_first_change_and_by_check(
    tmp_path: Path,
) -> None:
    """The RM reads its own copy (as where a manager regenerates the configuration): amtuner's
    first change is refreshed without error, read back, found not taken, and undone; `check`
    says the two disagree once they do."""
    rm_copy = tmp_path / "managed" / "capacity-scheduler.xml"
    rm_copy.parent.mkdir()
    data = default_scheduler_config("capacity", ["root.default"], am_share=0.1)
    rm_copy.write_bytes(data)
    ours = tmp_path / "conf" / "capacity-scheduler.xml"
    ours.parent.mkdir()
    ours.write_bytes(data)
    with running_sim(sim_argv(rm_copy)) as (url, _):
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [url]},
            scheduler={"kind": "capacity", "config_file": str(ours)},
            refresh={"method": "command", "command": [
                sys.executable, "-m", "amtuner", "sim-admin", "refresh-queues", "--url", url]},
        )  # fmt: skip
        for _ in range(6):
            run = amtuner("once", "--config", str(cfg))
            if run.returncode != 0 or "would" in run.stdout or "refreshed" in run.stdout:
                break
            time.sleep(1.5)
        assert run.returncode == 5, run.stdout + run.stderr
        assert "the RM did not take the change (root.default runs with 0.1" in run.stdout
        assert "does not load" in run.stdout, run.stdout
        assert ours.read_bytes() == data and loaded_percent(url) == pytest.approx(0.1)

        ours.write_bytes(data.replace(b"<value>0.1</value>", b"<value>0.3</value>"))
        check = amtuner("check", "--config", str(cfg))
        assert check.returncode == 1, check.stdout
        assert "root.default runs with 0.1, the file says 0.3" in check.stdout, check.stdout


def test_check_finds_a_fair_scheduler_running_another_file_while_apps_wait(
    tmp_path: Path,
) -> None:
    """A FairScheduler reports no maxAMShare: once amtuner's file is older than a reload, the
    limit the RM computed for an app waiting for its AM (amMaxResources) tells the two apart."""
    rm_copy = tmp_path / "managed" / "fair-scheduler.xml"
    rm_copy.parent.mkdir()
    rm_copy.write_bytes(default_scheduler_config("fair", ["root.default"], am_share=0.5))
    ours = tmp_path / "conf" / "fair-scheduler.xml"
    ours.parent.mkdir()
    ours.write_bytes(default_scheduler_config("fair", ["root.default"], am_share=0.9))
    an_hour_ago = time.time() - 3600
    os.utime(ours, (an_hour_ago, an_hour_ago))
    argv = ["--scheduler", "fair", "--workload", "paper:mixed", "--port", "0",
            "--speed", "5", "--scheduler-config", str(rm_copy)]  # fmt: skip
    with running_sim(argv) as (url, _):
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [url]},
            scheduler={"kind": "fair", "config_file": str(ours)}, refresh={"method": "none"},
        )  # fmt: skip
        for _ in range(10):
            check = amtuner("check", "--config", str(cfg))
            if "DISAGREE" in check.stdout:
                break
            time.sleep(0.5)  # no app was waiting for its AM at that instant
        assert "file and RM DISAGREE: root.default admits AMs up to" in check.stdout, check.stdout
        assert "the file says 0.9" in check.stdout and check.returncode == 1
