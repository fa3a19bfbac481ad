"""sd_notify over real AF_UNIX datagram sockets, as systemd's manager would receive them."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from amtuner import sdnotify


def _receiver(address: str | bytes) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(5)
    return sock


@pytest.fixture
def path_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[socket.socket]:
    """A receiver bound to a file in tmp_path, named in NOTIFY_SOCKET."""
    path = tmp_path / "notify"
    sock = _receiver(str(path))
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    yield sock
    sock.close()


def test_fields_arrive_newline_joined_in_one_datagram(path_socket: socket.socket) -> None:
    assert sdnotify.notify("READY=1", "STATUS=A 0.1 -> 0.15 (raise)") is True
    assert path_socket.recv(4096) == b"READY=1\nSTATUS=A 0.1 -> 0.15 (raise)"


def test_messages_arrive_in_the_order_sent(path_socket: socket.socket) -> None:
    for fields in (("READY=1",), ("WATCHDOG=1",), ("STOPPING=1",)):
        assert sdnotify.notify(*fields)
    assert [path_socket.recv(4096) for _ in range(3)] == [b"READY=1", b"WATCHDOG=1", b"STOPPING=1"]


def test_status_keeps_non_ascii_text(path_socket: socket.socket) -> None:
    assert sdnotify.notify("STATUS=A 0.1 → 0.15")
    assert path_socket.recv(4096).decode() == "STATUS=A 0.1 → 0.15"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="abstract sockets are Linux-only")
def test_leading_at_means_the_abstract_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"amtuner-test-{uuid.uuid4().hex}"
    with _receiver(b"\0" + name.encode()) as sock:
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert sdnotify.notify("READY=1")
        assert sock.recv(4096) == b"READY=1"


def test_without_notify_socket_nothing_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert sdnotify.notify("READY=1") is False


def test_a_missing_socket_is_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "gone"))
    with caplog.at_level("DEBUG", logger="amtuner.sdnotify"):
        assert sdnotify.notify("WATCHDOG=1") is False
    assert "gone" in caplog.text


def test_a_receiver_that_closed_is_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "notify"
    _receiver(str(path)).close()  # the file stays, nobody listens: ECONNREFUSED
    monkeypatch.setenv("NOTIFY_SOCKET", str(path))
    assert sdnotify.notify("WATCHDOG=1") is False


@pytest.mark.parametrize(
    ("usec", "pid", "expected"),
    [
        ("60000000", None, 30.0),
        ("60000000", "self", 30.0),
        ("1000", None, 0.0005),
        ("60000000", "other", None),
        ("60000000", "not-a-pid", None),
        (None, None, None),
        ("0", None, None),
        ("-5", None, None),
        ("sixty", None, None),
    ],
)
def test_watchdog_interval_is_half_of_watchdog_usec(
    monkeypatch: pytest.MonkeyPatch, usec: str | None, pid: str | None, expected: float | None
) -> None:
    for name, value in (("WATCHDOG_USEC", usec), ("WATCHDOG_PID", pid)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            value = {"self": str(os.getpid()), "other": str(os.getpid() + 1)}.get(value, value)
            monkeypatch.setenv(name, value)
    assert sdnotify.watchdog_interval_s() == expected


@pytest.mark.slow
def test_amtuner_run_tells_systemd_ready_status_watchdog_and_stopping(tmp_path: Path) -> None:
    """The real `amtuner run` against `amtuner sim`, with the environment systemd would give it.

    WATCHDOG_PID is the daemon's own PID (the shell execs it), as systemd sets it.
    """
    from amtuner.demo import running_sim
    from amtuner.sim.simulation import default_scheduler_config

    sched = tmp_path / "capacity-scheduler.xml"
    sched.write_bytes(default_scheduler_config("capacity", ["root.default"], am_share=0.1))
    argv = ["--scheduler", "capacity", "--workload", "paper:mixed", "--port", "0",
            "--speed", "20", "--scheduler-config", str(sched)]  # fmt: skip
    with running_sim(argv) as (url, _), _receiver(str(tmp_path / "notify")) as sock:
        config = tmp_path / "amtuner.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "rm": {"urls": [url]},
                    "scheduler": {"kind": "capacity", "config_file": str(sched)},
                    "refresh": {"method": "command"},  # dry run: named, never run
                    "controller": {"period_seconds": 2},
                    "metrics": {"enabled": False},
                    "dry_run": True,
                    "state_file": str(tmp_path / "state.json"),
                    "backup_dir": str(tmp_path / "backups"),
                }
            )
        )
        env = {
            **os.environ,
            "NOTIFY_SOCKET": str(tmp_path / "notify"),
            "WATCHDOG_USEC": "400000",
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("WATCHDOG_PID", None)
        daemon = subprocess.Popen(
            ["/bin/sh", "-c", 'WATCHDOG_PID=$$ exec "$0" -m amtuner run --config "$1"',
             sys.executable, str(config)],
            env=env, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        received: list[str] = []
        try:
            _receive_until(
                sock,
                received,
                lambda: {"READY=1", "WATCHDOG=1"} <= set(received) and _status(received),
            )
            daemon.send_signal(signal.SIGTERM)
            _receive_until(sock, received, lambda: "STOPPING=1" in received)
            _, stderr = daemon.communicate(timeout=30)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait()
    assert daemon.returncode == 0, stderr
    assert received[0] == "READY=1"
    assert received.index("READY=1") < received.index("WATCHDOG=1")
    assert "(dry-run)" in _status(received)[-1]
    # journald reads the priority from the prefix (SyslogLevelPrefix=yes in the unit).
    lines = stderr.splitlines()
    assert lines and all(re.match(r"<[0-7]>", line) for line in lines), stderr


def _receive_until(sock: socket.socket, received: list[str], done: Callable[[], object]) -> None:
    """Collect notifications until `done()`; fails after 20 s, which is ten cycles."""
    deadline = time.monotonic() + 20
    while not done():
        assert time.monotonic() < deadline, f"gave up waiting; received {received}"
        received.extend(sock.recv(4096).decode().split("\n"))


def _status(received: list[str]) -> list[str]:
    return [m for m in received if m.startswith("STATUS=last cycle:")]
