"""`amtuner run` as a real process against `amtuner sim`, watched through its /metrics endpoint.

What an operator relies on: A moves and the metrics show it; a broken config sent with SIGHUP is
refused while cycles go on; SIGTERM ends it with exit code 0 within one period; systemd hears
READY, WATCHDOG and STOPPING. Every wait polls with a deadline; no assertion is on wall time.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from amtuner.demo import running_sim
from amtuner.executor import SchedulerFile
from amtuner.model import SchedulerKind
from tests.conftest import drip
from tests.e2e.conftest import write_config

pytestmark = pytest.mark.slow

PERIOD_S = 0.5
WAIT_S = 60.0
STOP_SLACK_S = 15.0
"""SIGTERM waits for the running cycle; on a loaded 2-core host that can take a while."""


def wait_for(
    condition: Callable[[], object], what: str, proc: subprocess.Popen[str] | None = None
) -> object:
    deadline = time.monotonic() + WAIT_S
    while True:
        result = condition()
        if result:
            return result
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"amtuner run exited ({proc.returncode}) waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class Lines:
    """The child's stderr, read on a thread so the pipe never fills."""

    def __init__(self, stream: object) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.lines.append(line.rstrip("\n"))

    def find(self, pattern: str) -> re.Match[str] | None:
        for line in list(self.lines):
            if m := re.search(pattern, line):
                return m
        return None

    def text(self) -> str:
        return "\n".join(self.lines)


def scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    try:
        body = requests.get(url, timeout=5).text
    except requests.RequestException:
        return {}
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }


def cycles(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
    return sum(v for (name, _), v in samples.items() if name == "amtuner_cycles_total")


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A stand-in for systemd's notify socket, collecting what the daemon sends."""
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(0.2)
    received: list[str] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                received.extend(sock.recv(4096).decode().split("\n"))
            except TimeoutError:
                continue

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    yield path, received
    stop.set()
    reader.join()
    sock.close()


def test_run_against_sim_moves_a_reloads_safely_and_stops_on_sigterm(
    tmp_path: Path, notify_socket: tuple[str, list[str]]
) -> None:
    sim_argv = ["--scheduler", "fair", "--workload", "paper:mixed", "--port", "0",
                "--speed", "20", "--state-dir", str(tmp_path / "sim")]  # fmt: skip
    with running_sim(sim_argv) as (rm_url, sched_path):
        initial = SchedulerFile.read(sched_path, SchedulerKind.FAIR).effective_value("")
        config = write_config(
            tmp_path / "amtuner.yaml",
            rm={"urls": [rm_url], "connect_timeout_seconds": 2, "read_timeout_seconds": 2},
            scheduler={"kind": "fair", "config_file": str(sched_path)},
            refresh={"method": "none"},
            controller={"period_seconds": PERIOD_S},
            metrics={"enabled": True, "address": "127.0.0.1", "port": 0},
            audit_log=str(tmp_path / "audit.jsonl"),
        )
        socket_path, notified = notify_socket
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "NOTIFY_SOCKET": socket_path,
               "WATCHDOG_USEC": "400000"}  # fmt: skip
        env.pop("JOURNAL_STREAM", None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "amtuner", "run", "--config", str(config)],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env,
        )  # fmt: skip
        log = Lines(proc.stderr)
        try:
            m = wait_for(lambda: log.find(r"metrics on (http://\S+/metrics)"), "metrics", proc)
            metrics_url = m.group(1)  # type: ignore[union-attr]
            assert log.find(r"^<6>INFO amtuner.daemon: amtuner run: ")  # journald form

            # A moves, and the metrics show it.
            seen_a: set[float] = set()

            def a_moved() -> bool:
                s = scrape(metrics_url)
                a = s.get(("amtuner_am_share_ratio", (("target", "global"),)))
                if a is not None:
                    seen_a.add(a)
                changes = sum(v for (name, _), v in s.items() if name == "amtuner_changes_total")
                return a is not None and a != initial and changes >= 1

            wait_for(a_moved, "A to move in the metrics", proc)
            on_disk = SchedulerFile.read(sched_path, SchedulerKind.FAIR).effective_value("")
            assert on_disk != initial
            audit = [json.loads(x) for x in (tmp_path / "audit.jsonl").read_text().splitlines()]
            assert audit[0]["old"] == initial
            assert seen_a & {entry["new"] for entry in audit}

            # A broken config on SIGHUP is refused; the daemon keeps cycling on the old one.
            config.write_text("controller: {period_seconds: [broken\n")
            proc.send_signal(signal.SIGHUP)
            wait_for(lambda: log.find(r"reload refused"), "the refusal in the log", proc)
            before = cycles(scrape(metrics_url))
            wait_for(lambda: cycles(scrape(metrics_url)) >= before + 2, "later cycles", proc)
            assert scrape(metrics_url)[("amtuner_cycles_total", (("result", "crashed"),))] == 0

            # SIGTERM: the running cycle finishes and the process exits 0.
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=PERIOD_S + STOP_SLACK_S) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert log.find(r"SIGTERM received"), log.text()
        wait_for(lambda: "STOPPING=1" in notified, "STOPPING=1")
        assert notified.index("READY=1") < notified.index("WATCHDOG=1")
        assert not scrape(metrics_url)  # the endpoint is closed


def test_sigterm_ends_run_during_a_stuck_request(tmp_path: Path, dripping_rm) -> None:
    """An RM that drips its status line a byte at a time, with timeouts far longer than the
    test waits: SIGTERM still ends `amtuner run` with 0, its request abandoned."""
    asked = threading.Event()
    url = dripping_rm(drip(asked))
    config = write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": [url], "connect_timeout_seconds": 300, "read_timeout_seconds": 300},
        scheduler={"kind": "fair", "config_file": str(tmp_path / "fair-scheduler.xml")},
        refresh={"method": "none"},
        controller={"period_seconds": 900},
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "amtuner", "run", "--config", str(config)],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    log = Lines(proc.stderr)
    try:
        wait_for(asked.is_set, "the first request", proc)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=STOP_SLACK_S)
    finally:
        proc.kill()
        proc.wait()
    assert code == 0, log.text()
    assert log.find("abandoned: amtuner is stopping"), log.text()
