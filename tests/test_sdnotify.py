"""sd_notify over real AF_UNIX datagram sockets, as systemd's manager would receive them."""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

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
