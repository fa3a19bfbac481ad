"""One deadline for a whole request, status line and headers included: an RM (or a link) that
drips a byte now and then never trips a per-read timeout, so without it a cycle would wait on
it for ever. Real sockets on 127.0.0.1, short configured timeouts."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import pytest
import requests

from amtuner.monitor import ObservationError, RMClient

DRIP_S = 0.05
"""A byte this often: well inside any read timeout below."""
STATUS = b"HTTP/1.1 200 OK\r\n"
HEADERS = STATUS + b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"


def drips(sent_at_once: bytes) -> Callable[[socket.socket, threading.Event], None]:
    """Send ``sent_at_once``, then one byte at a time of a line (or body) that never ends."""

    def serve(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(sent_at_once)
        while not stop.wait(DRIP_S):
            conn.sendall(b"a")

    return serve


def status_line(conn: socket.socket, stop: threading.Event) -> None:
    for byte in STATUS:
        if stop.wait(DRIP_S):
            return
        conn.sendall(bytes([byte]))
    drips(b"X-Slow: ")(conn, stop)


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "serve",
    [status_line, drips(STATUS + b"X-Slow: "), drips(HEADERS)],
    ids=["status line", "headers", "body"],
)
def test_a_dripping_rm_times_out_at_the_deadline(dripping_rm, serve) -> None:
    url = dripping_rm(serve)
    client = RMClient([url], requests.Session(), connect_timeout_s=0.3, read_timeout_s=0.3)
    with pytest.raises(ObservationError) as err:  # the test's timeout is what bounds it
        client.observe()
    assert err.value.reason == "timeout", err.value
    assert "deadline" in str(err.value)


@pytest.mark.timeout(20)
def test_cancel_ends_a_request_in_flight(dripping_rm) -> None:
    url = dripping_rm(status_line)
    client = RMClient([url], requests.Session(), connect_timeout_s=30, read_timeout_s=30)
    threading.Timer(0.5, client.cancel).start()
    with pytest.raises(ObservationError) as err:
        client.observe()
    assert "amtuner is stopping" in str(err.value)
    with pytest.raises(ObservationError, match="not asked: amtuner is stopping"):
        client.observe()
