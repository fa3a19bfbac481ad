"""The daemon around the cycle: scheduling, failures, persistence, pause, reload, signals, logs.

The cycle runs for real (real scheduler file, real state file) against a scripted monitor; the
signal test sends real signals to this process's main thread, where `serve` waits for them.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from amtuner import daemon as daemon_mod
from amtuner import lock
from amtuner.config import Config, load_config
from amtuner.cycle import Cycle
from amtuner.daemon import Daemon, JournalFormatter, check_timeouts, setup_logging
from amtuner.executor import Edit
from amtuner.model import Observation, SchedulerKind
from amtuner.sim.simulation import default_scheduler_config
from amtuner.state import load_last_cycle, load_states
from tests.conftest import drip

WAIT_S = 15.0


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@dataclass
class RisingMonitor:
    """A busy cluster with more apps waiting every period: the paper raises A."""

    calls: int = 0

    def observe(self, targets: Sequence[str] = ()) -> Observation:
        self.calls += 1
        return Observation(
            time=1_000.0 + self.calls,
            scheduler=SchedulerKind.FAIR,
            pending_apps=10 * self.calls,
            running_apps=2,
            memory_used_mb=8_192,
            memory_total_mb=65_536,
        )


@dataclass
class Refresher:
    edits: list[Edit] = field(default_factory=list)

    def describe(self) -> str:
        return "nothing (test)"

    def refresh(self, edit: Edit) -> None:
        self.edits.append(edit)


@dataclass
class Setup:
    tmp: Path
    config_path: Path
    sched: Path
    monitor: RisingMonitor
    refresher: Refresher
    registry: CollectorRegistry

    def write(self, **overrides: Any) -> Path:
        doc: dict[str, Any] = {
            "scheduler": {"kind": "fair", "config_file": str(self.sched)},
            "refresh": {"method": "none"},
            # The paper's loop: its moves are what these tests of the daemon's mechanics count.
            "controller": {"policy": "paper", "period_seconds": 30},
            "guard": {"hold_off_seconds": 0},
            "metrics": {"enabled": False},
            "backup_dir": str(self.tmp / "backups"),
            "state_file": str(self.tmp / "state.json"),
            "audit_log": str(self.tmp / "audit.jsonl"),
        }
        for key, value in overrides.items():
            doc[key] = {**doc.get(key, {}), **value} if isinstance(value, dict) else value
        self.config_path.write_text(yaml.safe_dump(doc))
        return self.config_path

    def build(self, cfg: Config) -> Cycle:
        return Cycle(config=cfg, monitor=self.monitor, refresher=self.refresher)

    def daemon(self, **overrides: Any) -> Daemon:
        cfg = load_config(self.write(**overrides))
        return Daemon(self.config_path, cfg, registry=self.registry, build=self.build)

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        return self.registry.get_sample_value(name, labels or {})

    def a_on_disk(self) -> str:
        text = self.sched.read_text()
        return text.split("<queueMaxAMShareDefault>")[1].split("<")[0]


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    sched = tmp_path / "fair-scheduler.xml"
    sched.write_bytes(default_scheduler_config("fair", ["root.default"], am_share=0.1))
    return Setup(
        tmp_path,
        tmp_path / "amtuner.yaml",
        sched,
        RisingMonitor(),
        Refresher(),
        CollectorRegistry(),
    )


@dataclass
class ExplodingCycle:
    config: Config
    runs: int = 0
    paused_by: Callable[[], str | None] = lambda: None

    def run(self, states: object, pending: object = None) -> None:
        self.runs += 1
        raise RuntimeError(f"bug number {self.runs}")


def test_a_cycle_that_raises_does_not_stop_the_scheduler(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = load_config(setup.write(controller={"period_seconds": 0.05}))
    d = Daemon(setup.config_path, cfg, registry=setup.registry, build=ExplodingCycle)
    d.start()
    try:
        wait_for(
            lambda: (setup.metric("amtuner_cycles_total", {"result": "crashed"}) or 0) >= 3,
            "three crashed cycles",
        )
        assert d.scheduler.running
        assert d.scheduler.get_job(daemon_mod.JOB_ID) is not None
    finally:
        d.stop()
    assert "cycle failed unexpectedly" in caplog.text
    assert "RuntimeError: bug number 2" in caplog.text  # the traceback is logged


def test_a_file_the_target_cannot_be_read_from_is_logged_once_per_change_not_a_crash(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    """A bad value in the file fails every cycle until someone fixes it: one warning when it
    starts (and one when the reason changes), not one per period, and never a crash."""
    good = setup.sched.read_text()

    def holding(value: str) -> str:
        return good.replace("<queueMaxAMShareDefault>0.1<", f"<queueMaxAMShareDefault>{value}<")

    setup.sched.write_text(holding("x"))
    d = setup.daemon()
    caplog.set_level(logging.INFO, logger="amtuner")
    for _ in range(3):
        d.run_cycle()
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1, caplog.text
    assert "scheduler-file" in warned[0].getMessage()
    assert "holds 'x', not a number" in warned[0].getMessage()
    assert setup.metric("amtuner_cycles_total", {"result": "crashed"}) == 0
    assert setup.metric("amtuner_cycles_total", {"result": "error"}) == 3

    setup.sched.write_text(holding("y"))
    d.run_cycle()
    d.run_cycle()
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 2 and "holds 'y'" in warned[1].getMessage(), caplog.text
    setup.sched.write_text(good)
    d.run_cycle()
    assert setup.metric("amtuner_cycles_total", {"result": "applied"}) == 1


def test_a_recorder_whose_rm_does_not_answer_is_logged_once_and_the_cycles_go_on(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    """``record.trace`` with an RM that refuses the recorder's connections: every poll fails
    and is counted, one warning says so, nothing is written and the cycles run as before."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    trace = setup.tmp / "traces" / "apps.jsonl"
    d = setup.daemon(rm={"urls": [dead]}, record={"trace": str(trace)})
    caplog.set_level(logging.INFO, logger="amtuner")
    for _ in range(3):
        d.record()
    d.run_cycle()
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and warned[0].startswith("recording: rm-unreachable"), warned
    assert setup.metric("amtuner_record_failures_total") == 3
    assert setup.metric("amtuner_apps_recorded_total") == 0
    assert setup.metric("amtuner_cycles_total", {"result": "applied"}) == 1
    assert not trace.exists()


def test_a_stuck_recorder_delays_no_cycle_and_stop_ends_it(setup: Setup, dripping_rm) -> None:
    """The recorder's RM drips its answer a byte at a time, with timeouts far longer than the
    test waits: the cycles, on an executor of their own, keep their period, and stopping ends
    the recorder's request rather than waiting for it."""
    asked = threading.Event()
    url = dripping_rm(drip(asked))
    d = setup.daemon(
        rm={"urls": [url], "connect_timeout_seconds": 300, "read_timeout_seconds": 300},
        controller={"period_seconds": 0.05}, record={"trace": str(setup.tmp / "apps.jsonl")},
    )  # fmt: skip
    d.start()
    try:
        wait_for(asked.is_set, "the recorder's first request")
        done = d.cycles_done
        wait_for(lambda: d.cycles_done >= done + 3, "three cycles while the recorder waits")
    finally:
        d.stop()
    assert not d.scheduler.running
    assert setup.metric("amtuner_record_failures_total") == 1  # its request, abandoned


@dataclass
class SlowCycle:
    config: Config
    paused_by: Callable[[], str | None] = lambda: None

    def run(self, states: object, pending: object = None) -> None:
        time.sleep(0.3)
        raise RuntimeError("slow and broken")


def test_a_tick_during_a_running_cycle_is_skipped_and_counted(setup: Setup) -> None:
    cfg = load_config(setup.write(controller={"period_seconds": 0.05}))
    d = Daemon(setup.config_path, cfg, registry=setup.registry, build=SlowCycle)
    d.start()
    try:
        wait_for(
            lambda: (setup.metric("amtuner_cycles_skipped_total", {"reason": "overlap"}) or 0) >= 1,
            "a skipped tick",
        )
    finally:
        d.stop()


def test_live_cycles_persist_state_audit_and_a_restart_continues(setup: Setup) -> None:
    d = setup.daemon()
    d.run_cycle()
    d.run_cycle()
    assert setup.a_on_disk() != "0.1"
    states = load_states(setup.tmp / "state.json")
    assert states[""].a == float(setup.a_on_disk())
    assert (states[""].n, states[""].prev_pending) == (3, 20)
    last = load_last_cycle(setup.tmp / "state.json")
    assert last is not None and last["result"] == "applied"
    assert last["decisions"][0]["rule"] == "under-allocation"
    audit_lines = (setup.tmp / "audit.jsonl").read_text().splitlines()
    assert [json.loads(x)["new"] for x in audit_lines][-1] == states[""].a
    assert setup.metric("amtuner_am_share_ratio", {"target": "global"}) == states[""].a
    assert setup.metric("amtuner_changes_total", {"target": "global", "direction": "up"}) == 2

    restarted = Daemon(setup.config_path, d.cfg, registry=CollectorRegistry(), build=setup.build)
    assert restarted._states == states
    restarted.run_cycle()
    assert load_states(setup.tmp / "state.json")[""].n == 4  # the bisection went on


def test_dry_run_writes_nothing_but_shows_the_decision(setup: Setup) -> None:
    d = setup.daemon(dry_run=True)
    d.run_cycle()
    assert setup.a_on_disk() == "0.1"
    assert load_states(setup.tmp / "state.json") == {}, "no controller state is saved"
    assert not (setup.tmp / "audit.jsonl").exists()
    assert setup.metric("amtuner_dry_run") == 1
    assert setup.metric("amtuner_am_share_ratio", {"target": "global"}) > 0.1
    assert setup.metric("amtuner_cycles_total", {"result": "ok"}) == 1


def test_status_shows_what_a_dry_run_daemon_would_do(setup: Setup) -> None:
    """The docs recommend a dry-run week first; `amtuner status` must show it, not "no state"."""
    d = setup.daemon(dry_run=True)
    d.run_cycle()
    d.run_cycle()
    run = subprocess.run(
        [sys.executable, "-m", "amtuner", "status", "--config", str(setup.config_path)],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "(dry-run)" in run.stdout and "would write" in run.stdout, run.stdout
    assert re.search(r"decision    global: [\d.]+ -> [\d.]+ \[under-allocation\]", run.stdout)
    assert "state       global" not in run.stdout, "a dry run has no controller state to show"
    # A live start after the dry run begins the search from the file, as it would have anyway.
    assert Daemon(
        setup.config_path, load_config(setup.write()), registry=CollectorRegistry(),
        build=setup.build,
    )._states == {}


def test_sigusr1_pauses_writing_and_sigusr2_resumes(setup: Setup) -> None:
    d = setup.daemon()
    d.set_paused(True)
    assert setup.metric("amtuner_paused") == 1
    d.run_cycle()
    d.run_cycle()
    assert setup.a_on_disk() == "0.1"
    assert setup.refresher.edits == []
    last = load_last_cycle(setup.tmp / "state.json")
    assert last is not None and last["paused"] and "would write" in last["message"]
    assert load_states(setup.tmp / "state.json") == {}  # nothing hypothetical persisted

    d.set_paused(False)
    d.run_cycle()
    assert setup.metric("amtuner_paused") == 0
    assert setup.a_on_disk() != "0.1"
    assert len(setup.refresher.edits) == 1


@dataclass
class PausedWhileObserving(RisingMonitor):
    """SIGUSR1 arrives while the cycle waits on the RM (the main thread sets the flag)."""

    daemon: Daemon | None = None

    def observe(self, targets: Sequence[str] = ()) -> Observation:
        assert self.daemon is not None
        self.daemon.set_paused(True)
        return super().observe(targets)


def test_a_pause_that_arrives_during_a_cycle_stops_its_write(setup: Setup) -> None:
    setup.monitor = monitor = PausedWhileObserving()
    d = setup.daemon()
    monitor.daemon = d
    d.run_cycle()
    assert setup.a_on_disk() == "0.1"
    assert setup.refresher.edits == []
    last = load_last_cycle(setup.tmp / "state.json")
    assert last is not None and last["paused"] and "would write" in last["message"], last
    assert load_states(setup.tmp / "state.json") == {}
    assert not (setup.tmp / "audit.jsonl").exists()


def hold_lock(path: Path) -> subprocess.Popen[str]:
    """Another process holding the cycle lock until its stdin closes."""
    code = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_cycle_that_cannot_take_the_lock_is_skipped_and_writes_nothing(
    setup: Setup, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lock, "WAIT_S", 0.2)
    d = setup.daemon()
    holder = hold_lock(lock.path_for(setup.tmp / "state.json"))
    try:
        d.run_cycle()
        d.run_cycle()
    finally:
        holder.communicate("")
    assert setup.a_on_disk() == "0.1" and setup.monitor.calls == 0
    assert not (setup.tmp / "state.json").exists()
    assert setup.metric("amtuner_cycles_skipped_total", {"reason": "locked"}) == 2
    assert setup.metric("amtuner_cycles_total", {"result": "crashed"}) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "another amtuner process" in warned[0], warned
    d.run_cycle()  # released: the next period runs
    assert setup.a_on_disk() != "0.1"


def test_a_change_another_process_saved_starts_the_hold_off_here_too(setup: Setup) -> None:
    """`amtuner once` changed A and saved its state while the daemon slept: the daemon's next
    cycle continues from that state, so the once's hold-off applies to it."""
    d = setup.daemon(guard={"hold_off_seconds": 3600})
    other = Daemon(setup.config_path, d.cfg, registry=CollectorRegistry(), build=setup.build)
    other.run_cycle()
    changed = setup.a_on_disk()
    assert changed != "0.1"
    d.run_cycle()
    assert setup.a_on_disk() == changed
    last = load_last_cycle(setup.tmp / "state.json")
    assert last is not None and last["decisions"][0]["rule"] == "hold", last
    held = load_states(setup.tmp / "state.json")[""]
    assert (held.a, held.extra) == (other._persisted[""].a, other._persisted[""].extra)


def test_reload_refuses_a_broken_config_and_applies_a_valid_one(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    d = setup.daemon()
    d.start()
    try:
        old_cycle = d._cycle
        setup.config_path.write_text("controller: {period_seconds: -1}\n")
        assert not d.reload()
        assert "reload refused" in caplog.text and "period_seconds" in caplog.text
        assert d._cycle is old_cycle and d.cfg.controller.period_seconds == 30

        setup.write(controller={"period_seconds": 45})
        assert d.reload()
        assert d._cycle is not old_cycle and d.cfg.controller.period_seconds == 45
        job = d.scheduler.get_job(daemon_mod.JOB_ID)
        assert job.trigger.interval.total_seconds() == 45
        assert job.misfire_grace_time == 45
    finally:
        d.stop()


def test_reload_keeps_the_command_line_dry_run(setup: Setup) -> None:
    d = Daemon(
        setup.write(),
        load_config(setup.config_path).with_dry_run(True),
        force_dry_run=True,
        registry=setup.registry,
        build=setup.build,
    )
    assert d.reload()
    assert d.cfg.dry_run


@pytest.fixture
def notify_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(0.05)
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    monkeypatch.setenv("WATCHDOG_USEC", "100000")
    monkeypatch.setenv("WATCHDOG_PID", str(os.getpid()))
    yield sock
    sock.close()


def test_serve_handles_signals_and_speaks_to_systemd(
    setup: Setup, notify_socket: socket.socket, caplog: pytest.LogCaptureFixture
) -> None:
    """Signals go to the main thread, which blocks them and takes them in `serve`."""
    caplog.set_level(logging.INFO)
    d = setup.daemon()
    main = threading.get_ident()
    received: list[str] = []
    errors: list[BaseException] = []

    def messages() -> None:
        try:
            while True:
                received.extend(notify_socket.recv(4096).decode().split("\n"))
        except TimeoutError:
            pass

    def operator() -> None:
        try:
            wait_for(lambda: d.cycles_done >= 1, "the first cycle")
            signal.pthread_kill(main, signal.SIGUSR1)
            wait_for(lambda: d.paused_by_signal, "the pause")
            signal.pthread_kill(main, signal.SIGUSR2)
            wait_for(lambda: not d.paused_by_signal, "the resume")
            setup.config_path.write_text("controller: [broken\n")
            signal.pthread_kill(main, signal.SIGHUP)
            wait_for(lambda: "reload refused" in caplog.text, "the refused reload")
            wait_for(lambda: (messages(), "WATCHDOG=1" in received)[1], "a watchdog ping")
        except BaseException as exc:
            errors.append(exc)
        finally:
            signal.pthread_kill(main, signal.SIGTERM)

    helper = threading.Thread(target=operator)
    helper.start()
    assert d.serve() == 0
    helper.join()
    messages()
    assert not errors, errors
    assert not d.scheduler.running
    assert received.index("READY=1") < received.index("WATCHDOG=1")
    assert "STOPPING=1" in received
    assert any(m.startswith("STATUS=last cycle: global 0.1->") for m in received)
    assert "paused (monitoring only) by signal" in caplog.text
    # the blocked signals are handed back
    assert not signal.pthread_sigmask(signal.SIG_BLOCK, []) & daemon_mod.SIGNALS


def test_a_stale_loop_stops_feeding_the_watchdog(setup: Setup) -> None:
    d = setup.daemon()
    assert d.watchdog_ok()
    d.last_end -= 2 * 30 + daemon_mod.worst_cycle_s(d.cfg) + 1
    assert not d.watchdog_ok()


def test_timeouts_longer_than_the_period_are_warned(
    setup: Setup, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = load_config(setup.write())
    assert check_timeouts(cfg)  # 3 + 10 s RM, no refresh, 30 s period
    slow = load_config(setup.write(controller={"period_seconds": 5}))
    assert not check_timeouts(slow)
    assert "can make a cycle overrun" in caplog.text


def test_the_default_and_example_timeouts_fit_the_default_period(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A first start with the defaults (or the example) must not warn about itself."""
    example = load_config(Path(__file__).resolve().parents[1] / "config.example.yaml")
    assert example.controller.period_seconds == Config().controller.period_seconds == 15
    assert check_timeouts(Config()) and check_timeouts(example)
    assert "overrun" not in caplog.text


def test_journal_lines_carry_a_priority_on_every_line_and_no_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fmt = JournalFormatter("%(levelname)s %(name)s: %(message)s")
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("amtuner.x", logging.ERROR, __file__, 1, "bad", None, None)
        record.exc_info = sys.exc_info()
    lines = fmt.format(record).splitlines()
    assert lines[0] == "<3>ERROR amtuner.x: bad"
    assert len(lines) > 2 and all(line.startswith("<3>") for line in lines)
    warning = logging.LogRecord("a", logging.WARNING, __file__, 1, "w", None, None)
    assert fmt.format(warning) == "<4>WARNING a: w"

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        monkeypatch.setenv("JOURNAL_STREAM", "8:12345")
        setup_logging("INFO")
        (handler,) = root.handlers
        assert isinstance(handler.formatter, JournalFormatter)
        monkeypatch.delenv("JOURNAL_STREAM")
        monkeypatch.setattr(daemon_mod.sys, "stderr", TTY())
        setup_logging("INFO")
        (handler,) = root.handlers
        assert not isinstance(handler.formatter, JournalFormatter)
        assert "asctime" in handler.formatter._fmt
    finally:
        root.handlers[:], root.level = saved[0], saved[1]


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_command(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amtuner", "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_run_refuses_to_start_on_an_invalid_config_or_state(setup: Setup) -> None:
    setup.config_path.write_text("controller: {period_seconds: 0}\n")
    proc = run_command(setup.config_path)
    assert proc.returncode == 2
    assert "controller.period_seconds" in proc.stderr

    setup.write()
    (setup.tmp / "state.json").write_text("{")
    proc = run_command(setup.config_path)
    assert proc.returncode == 2
    assert "move it aside" in proc.stderr


def test_run_exits_2_when_the_metrics_port_is_taken(setup: Setup) -> None:
    """A start-up setting that cannot work: 2, as the README says, so systemd does not restart
    into the same busy port."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        setup.write(metrics={"enabled": True, "port": port})
        proc = run_command(setup.config_path)
    assert proc.returncode == 2
    assert f"cannot serve metrics on 127.0.0.1:{port}" in proc.stderr
