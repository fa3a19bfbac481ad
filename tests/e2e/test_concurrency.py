"""Two amtuner processes on one state and scheduler file, and signals that land mid-cycle.

Real processes throughout: `amtuner run` and `amtuner once` as children, the simulated RM
(`amtuner sim`) or a canned RM over loopback, and a refresh command that is a small script
which says when it starts and then sleeps, so a signal or a second process lands inside it.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from amtuner.config import GuardSettings
from amtuner.demo import running_sim
from amtuner.executor import SchedulerFile
from amtuner.model import SchedulerKind
from amtuner.state import load_last_cycle, load_states
from tests.e2e.conftest import amtuner, json_body, write_config
from tests.e2e.test_faults import (  # noqa: F401 (fair_file is a fixture)
    METRICS,
    fair_file,
    healthy,
    seed_state,
)
from tests.e2e.test_run import STOP_SLACK_S, Lines, wait_for

pytestmark = pytest.mark.slow

PERIOD_S = 0.5

SLOW_REFRESH = """\
import os, pathlib, signal, sys, time
if sys.argv[3:] == ["unblock"]:  # as a JVM does: SIGTERM kills it despite amtuner's mask
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
marker = pathlib.Path(sys.argv[1])
marker.with_suffix(".pid").write_text(str(os.getpid()))
with marker.open("a") as f:
    f.write("start\\n")
time.sleep(float(sys.argv[2]))
with marker.open("a") as f:
    f.write("end\\n")
"""


def slow_refresh(tmp_path: Path, sleep_s: float, *extra: str) -> tuple[list[str], Path]:
    """A refresh command that appends ``start`` to a marker file, sleeps, appends ``end``."""
    script = tmp_path / "refresh.py"
    script.write_text(SLOW_REFRESH)
    marker = tmp_path / "refresh.log"
    return [sys.executable, str(script), str(marker), str(sleep_s), *extra], marker


def started(marker: Path) -> bool:
    return marker.exists() and "start" in marker.read_text()


@contextmanager
def amtuner_run(config: Path, **popen: object) -> Iterator[tuple[subprocess.Popen[str], Lines]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "amtuner", "run", "--config", str(config)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"}, **popen,  # type: ignore[call-overload]
    )  # fmt: skip
    try:
        yield proc, Lines(proc.stderr)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def sim_config(tmp_path: Path, rm_url: str, sched: Path, **sections: object) -> Path:
    return write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": [rm_url], "connect_timeout_seconds": 2, "read_timeout_seconds": 2},
        scheduler={"kind": "fair", "config_file": str(sched)},
        controller={"period_seconds": PERIOD_S},
        audit_log=str(tmp_path / "audit.jsonl"),
        **sections,
    )


def sim_argv(tmp_path: Path) -> list[str]:
    return ["--scheduler", "fair", "--workload", "paper:mixed", "--port", "0",
            "--speed", "20", "--state-dir", str(tmp_path / "sim")]  # fmt: skip


def audit_lines(tmp_path: Path) -> list[dict[str, object]]:
    path = tmp_path / "audit.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def assert_completed(tmp_path: Path, sched: Path, *, last_applied: bool = True) -> None:
    """The change the daemon was refreshing is finished: audit line, state and file agree
    (and, unless a later cycle ran, the last cycle recorded is that change)."""
    on_disk = SchedulerFile.read(sched, SchedulerKind.FAIR).effective_value("")
    audit = audit_lines(tmp_path)
    assert audit and audit[-1]["new"] == on_disk, (audit, on_disk)
    assert load_states(tmp_path / "state.json")[""].a == on_disk
    last = load_last_cycle(tmp_path / "state.json")
    assert last is not None and (last["result"] == "applied" or not last_applied), last


def test_once_during_a_runs_refresh_is_refused_and_sigterm_lets_the_refresh_finish(
    tmp_path: Path,
) -> None:
    """`run` is inside a 10 s refresh (it holds the cycle lock): `once` gives up after the
    lock's wait with exit 7 and touches nothing; SIGTERM then lets the refresh finish and the
    change is recorded (audit line, state) before the daemon exits 0."""
    command, marker = slow_refresh(tmp_path, 10.0)
    with running_sim(sim_argv(tmp_path)) as (rm_url, sched):
        config = sim_config(tmp_path, rm_url, sched, refresh={"method": "command",
                            "command": command, "timeout_seconds": 60})  # fmt: skip
        with amtuner_run(config) as (proc, log):
            wait_for(lambda: started(marker), "the daemon's refresh to start", proc)
            written = sched.read_bytes()
            once = amtuner("once", "--config", str(config))
            assert once.returncode == 7, once.stdout + once.stderr
            assert "error     locked: another amtuner process (pid " in once.stdout, once.stdout
            assert "observed" not in once.stdout
            assert sched.read_bytes() == written
            assert "end" not in marker.read_text(), "once must not outlast the refresh"

            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10.0 + STOP_SLACK_S) == 0, log.text()
        assert marker.read_text().split() == ["start", "end"]
        assert_completed(tmp_path, sched)


def rising(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    """The canned RM with more apps waiting at every look and memory to spare: every cycle
    wants to raise A (the paper's under-allocation case)."""
    if "/cluster/metrics" in h.path:
        with _looks_lock:
            _looks.append(1)
            pending = 10 * len(_looks)
        return json_body({"clusterMetrics": {**METRICS["clusterMetrics"], "appsPending": pending}})
    return healthy(h)


_looks: list[int] = []
_looks_lock = threading.Lock()


def test_two_runs_on_one_state_take_turns(
    tmp_path: Path, canned_rm, fair_file: Path  # noqa: F811 (fixture)
) -> None:
    """Two daemons on one config, an RM that asks for more every cycle: their refreshes never
    overlap, and every change starts from the value the previous one (whichever process made
    it) wrote, within the step limit."""
    command, marker = slow_refresh(tmp_path, 0.4)
    config = write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": [canned_rm(rising)], "connect_timeout_seconds": 2, "read_timeout_seconds": 2},
        scheduler={"kind": "fair", "config_file": str(fair_file)},
        controller={"period_seconds": PERIOD_S},
        refresh={"method": "command", "command": command, "timeout_seconds": 60},
        audit_log=str(tmp_path / "audit.jsonl"),
    )  # fmt: skip
    seed_state(tmp_path / "state.json")
    with amtuner_run(config) as (first, log1), amtuner_run(config) as (second, log2):
        wait_for(lambda: marker.exists() and marker.read_text().count("end") >= 3,
                 "three refreshes", first)  # fmt: skip
        for proc in (first, second):
            proc.send_signal(signal.SIGTERM)
        for proc, log in ((first, log1), (second, log2)):
            assert proc.wait(timeout=PERIOD_S + STOP_SLACK_S) == 0, log.text()
    steps = marker.read_text().split()
    assert steps == ["start", "end"] * (len(steps) // 2), steps
    audit = audit_lines(tmp_path)
    assert len(audit) == len(steps) // 2, audit
    for before, after in itertools.pairwise(audit):
        assert after["old"] == before["new"], audit
    for entry in audit:
        move = abs(float(entry["new"]) - float(entry["old"]))  # type: ignore[arg-type]
        assert move <= GuardSettings().max_change_per_cycle + 1e-9, audit
    assert_completed(tmp_path, fair_file, last_applied=False)


def test_once_waits_for_a_runs_change_and_keeps_its_hold_off(
    tmp_path: Path, canned_rm, fair_file: Path  # noqa: F811 (fixture)
) -> None:
    """`once` starts while `run` refreshes a change: it waits for the lock, then reads the
    state `run` saved, so the hold-off `run` just started stops the change `once` wants."""
    command, marker = slow_refresh(tmp_path, 1.5)
    config = write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": [canned_rm(rising)], "connect_timeout_seconds": 2, "read_timeout_seconds": 2},
        scheduler={"kind": "fair", "config_file": str(fair_file)},
        controller={"period_seconds": PERIOD_S}, guard={"hold_off_seconds": 3600},
        refresh={"method": "command", "command": command, "timeout_seconds": 60},
        audit_log=str(tmp_path / "audit.jsonl"),
    )  # fmt: skip
    seed_state(tmp_path / "state.json")
    with amtuner_run(config) as (proc, _log):
        wait_for(lambda: started(marker), "the daemon's refresh to start", proc)
        once = amtuner("once", "--config", str(config))
        out = once.stdout + once.stderr
        assert once.returncode == 0, out
        assert "[hold] hold-off: last change" in out, out
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=PERIOD_S + STOP_SLACK_S) == 0
    assert len(audit_lines(tmp_path)) == 1, audit_lines(tmp_path)
    assert_completed(tmp_path, fair_file, last_applied=False)


def test_ctrl_c_twice_during_a_refresh_completes_the_change_and_exits_0(tmp_path: Path) -> None:
    """Ctrl-C reaches the daemon's process group, not the refresh command in its session of
    its own: the command finishes, the change is recorded, and the
    second Ctrl-C does not turn the clean stop into a KeyboardInterrupt."""
    command, marker = slow_refresh(tmp_path, 2.0)
    with running_sim(sim_argv(tmp_path)) as (rm_url, sched):
        config = sim_config(tmp_path, rm_url, sched, refresh={"method": "command",
                            "command": command, "timeout_seconds": 60})  # fmt: skip
        with amtuner_run(config, start_new_session=True) as (proc, log):
            wait_for(lambda: started(marker), "the daemon's refresh to start", proc)
            os.killpg(proc.pid, signal.SIGINT)
            wait_for(lambda: log.find("SIGINT received"), "the first SIGINT", proc)
            os.killpg(proc.pid, signal.SIGINT)
            assert proc.wait(timeout=2.0 + STOP_SLACK_S) == 0, log.text()
        assert marker.read_text().split() == ["start", "end"]
        assert "Traceback" not in log.text() and log.find("SIGINT while stopping: ignored")
        assert_completed(tmp_path, sched)


def test_sigterm_that_kills_the_refresh_rolls_the_change_back(tmp_path: Path) -> None:
    """systemd's stop sends SIGTERM to every process of the unit's control group, the refresh
    command in its own session included: one that does not keep amtuner's blocked mask (a
    JVM) dies of it. The change is then rolled back: the old file
    is restored and refreshed again, no audit line, the state keeps the old A; exit 0."""
    command, marker = slow_refresh(tmp_path, 2.0, "unblock")
    with running_sim(sim_argv(tmp_path)) as (rm_url, sched):
        original = sched.read_bytes()
        config = sim_config(tmp_path, rm_url, sched, refresh={"method": "command",
                            "command": command, "timeout_seconds": 60})  # fmt: skip
        with amtuner_run(config, start_new_session=True) as (proc, log):
            wait_for(lambda: started(marker), "the daemon's refresh to start", proc)
            assert sched.read_bytes() != original
            refresh_pid = int(marker.with_suffix(".pid").read_text())
            os.killpg(proc.pid, signal.SIGTERM)
            os.killpg(refresh_pid, signal.SIGTERM)
            assert proc.wait(timeout=2.0 + STOP_SLACK_S) == 0, log.text()
        assert marker.read_text().split() == ["start", "start", "end"], "refreshed back once"
        assert sched.read_bytes() == original
        assert audit_lines(tmp_path) == []
        last = load_last_cycle(tmp_path / "state.json")
        assert last is not None and last["error"] == "refresh-failed", last
        assert "refreshed again with the previous configuration" in last["message"], last
        a = SchedulerFile.read(sched, SchedulerKind.FAIR).effective_value("")
        assert all(s.a == a for s in load_states(tmp_path / "state.json").values())


def test_sigusr1_while_the_cycle_observes_stops_its_write(
    tmp_path: Path, canned_rm, fair_file: Path  # noqa: F811 (fixture)
) -> None:
    """The RM answers the first cycle slowly; SIGUSR1 arrives meanwhile. That cycle decided
    to raise A (the seeded state asks for it) but must not write it."""
    asked = threading.Event()
    release = threading.Event()

    def slow_first(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if "/cluster/scheduler" in h.path and not asked.is_set():
            asked.set()
            release.wait(timeout=30)
        return healthy(h)

    url = canned_rm(slow_first)
    before = fair_file.read_bytes()
    config = write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": [url], "connect_timeout_seconds": 5, "read_timeout_seconds": 40},
        scheduler={"kind": "fair", "config_file": str(fair_file)},
        refresh={"method": "none"}, controller={"period_seconds": 60},
        audit_log=str(tmp_path / "audit.jsonl"),
    )  # fmt: skip
    seed_state(tmp_path / "state.json")
    with amtuner_run(config) as (proc, log):
        wait_for(asked.is_set, "the first cycle to ask the RM", proc)
        proc.send_signal(signal.SIGUSR1)
        wait_for(lambda: log.find("paused \\(monitoring only\\) by signal"), "the pause", proc)
        release.set()
        wait_for(lambda: log.find("cycle: .*paused \\(SIGUSR1"), "the paused cycle's line", proc)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=STOP_SLACK_S) == 0, log.text()
    assert fair_file.read_bytes() == before, log.text()
    assert audit_lines(tmp_path) == []
    last = load_last_cycle(tmp_path / "state.json")
    assert last is not None and last["paused"] and "would write" in last["message"], last
