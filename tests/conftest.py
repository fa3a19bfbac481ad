"""Shared test settings: hypothesis profiles.

"ci" is deterministic so a red build can be reproduced; "dev" explores new examples each run.
Neither has a deadline: the test machine is shared and timing is not what these tests check.
Select with AMTUNER_HYPOTHESIS_PROFILE=ci|dev; CI=<anything> selects "ci".
"""

import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=200, derandomize=True, deadline=None, database=None)
settings.register_profile("dev", deadline=None)
settings.load_profile(
    os.environ.get("AMTUNER_HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)

HADOOP_350 = Path(__file__).parent / "data" / "monitor" / "hadoop-3.5.0"
"""What Hadoop 3.5.0's own RM answered, one directory per `amtuner.realyarn.capture.SCENES`
scene (its README says how it was recorded)."""


def pytest_configure(config: object) -> None:
    """The tests run the simulator core compiled, as the benchmarks do, when it can be built
    here (once per change of its sources); `tests/sim/test_native.py` holds the Python modules
    to the same results."""
    from amtuner.sim import native

    native.ensure_built(quiet=True)


Serve = Callable[[socket.socket, threading.Event], None]


def drip(asked: threading.Event) -> Serve:
    """An answer that never ends: ``asked`` set, then one byte every 50 ms until the test
    ends (a status line that never completes, so no client timeout short of the test's
    deadline ends it)."""

    def serve(conn: socket.socket, stop: threading.Event) -> None:
        asked.set()
        while not stop.wait(0.05):
            conn.sendall(b"H")

    return serve


@pytest.fixture
def dripping_rm() -> Iterator[Callable[[Serve], str]]:
    """A TCP server on 127.0.0.1 that reads a request and answers with ``serve``; yields a
    starter returning its URL. Each connection is served on a thread of its own until the
    client hangs up or the test ends."""
    stop = threading.Event()
    listeners: list[socket.socket] = []

    def start(serve: Serve) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def accept() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                threading.Thread(target=handle, args=(conn,), daemon=True).start()

        def handle(conn: socket.socket) -> None:
            with conn:
                conn.recv(65536)
                try:
                    serve(conn, stop)
                except OSError:
                    return  # the client hung up: what the deadline is for

        threading.Thread(target=accept, daemon=True).start()
        return f"http://127.0.0.1:{listener.getsockname()[1]}"

    yield start
    stop.set()
    for listener in listeners:
        listener.close()
