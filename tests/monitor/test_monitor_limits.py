"""Wall-clock deadline and size cap of RM requests, against loopback servers that misbehave."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from amtuner.monitor import ObservationError, RMClient

DATA = Path(__file__).resolve().parents[1] / "data" / "monitor"
INFO = json.dumps({"clusterInfo": {"id": 1, "state": "STARTED", "haState": "ACTIVE"}}).encode()
METRICS = (DATA / "cluster-metrics-3.3.json").read_bytes()
SCHEDULER = (DATA / "scheduler-fair-am.json").read_bytes()
Writer = Callable[[BaseHTTPRequestHandler], None]


def plain(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Writer:
    def write(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return write


@pytest.fixture
def serve() -> Iterator[Callable[[dict[str, Writer]], str]]:
    """A loopback RM whose handler for each path writes the response itself."""
    servers: list[ThreadingHTTPServer] = []

    def start(routes: dict[str, Writer]) -> str:
        class H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                write = routes.get(self.path.split("?")[0])
                try:
                    if write is None:
                        plain(b"no", 404)(self)
                    else:
                        write(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as it should

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def drip(body: bytes, every_s: float) -> Writer:
    """Headers at once, then the body one byte per ``every_s``: each socket read returns well
    within any read timeout, so only a wall-clock deadline ends the request."""

    def write(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.flush()
        for i in range(len(body)):
            h.wfile.write(body[i : i + 1])
            h.wfile.flush()
            time.sleep(every_s)

    return write


def client(url: str, **kw: Any) -> RMClient:
    session = requests.Session()
    session.trust_env = False
    kw.setdefault("connect_timeout_s", 0.5)
    kw.setdefault("read_timeout_s", 1.0)
    return RMClient([url], session, **kw)


def test_slow_drip_body_times_out_on_the_deadline(
    serve: Callable[[dict[str, Writer]], str],
) -> None:
    # 60 bytes at 0.05 s: 3 s in all, each read far inside the 1 s read timeout.
    url = serve(
        {
            "/ws/v1/cluster/info": plain(INFO),
            "/ws/v1/cluster/metrics": drip(b" " * 60, 0.05),
            "/ws/v1/cluster/scheduler": plain(SCHEDULER),
        }
    )
    c = client(url)
    assert c.deadline_s == 1.5  # connect + read timeout: the default budget
    start = time.monotonic()
    with pytest.raises(ObservationError) as err:
        c.observe()
    took = time.monotonic() - start
    assert err.value.reason == "timeout" and "deadline" in err.value.message
    assert took < 2.5


def test_deadline_is_shared_by_the_requests_of_one_observation(
    serve: Callable[[dict[str, Writer]], str],
) -> None:
    """Each request alone would fit; together they would not, and the observation stops."""

    def slow(body: bytes) -> Writer:
        def write(h: BaseHTTPRequestHandler) -> None:
            time.sleep(0.6)
            plain(body)(h)

        return write

    url = serve(
        {
            "/ws/v1/cluster/info": slow(INFO),
            "/ws/v1/cluster/metrics": slow(METRICS),
            "/ws/v1/cluster/scheduler": slow(SCHEDULER),
        }
    )
    start = time.monotonic()
    with pytest.raises(ObservationError) as err:
        client(url).observe()
    assert err.value.reason == "timeout" and time.monotonic() - start < 2.0
    # A fresh observation gets a fresh budget: with room for all three it succeeds.
    assert client(url, deadline_s=5.0).observe().pending_apps == 3


def test_huge_declared_body_is_refused_unread(serve: Callable[[dict[str, Writer]], str]) -> None:
    def huge(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(10 * 1024**3))
        h.end_headers()
        h.wfile.write(b"{" + b" " * 65536)

    url = serve({"/ws/v1/cluster/info": plain(INFO), "/ws/v1/cluster/metrics": huge})
    with pytest.raises(ObservationError) as err:
        client(url).observe()
    assert err.value.reason == "bad-response" and "Content-Length 10737418240" in err.value.message


def test_huge_undeclared_body_is_cut_at_the_cap(
    serve: Callable[[dict[str, Writer]], str],
) -> None:
    """Valid JSON padded to 40 MiB, sent without a length (ends when the server closes)."""
    sent = [0]

    def padded(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Connection", "close")
        h.end_headers()
        h.close_connection = True
        h.wfile.write(METRICS[:-1])
        pad = b" " * (1024 * 1024)
        for _ in range(40):
            h.wfile.write(pad)
            sent[0] += len(pad)
        h.wfile.write(METRICS[-1:])

    url = serve(
        {
            "/ws/v1/cluster/info": plain(INFO),
            "/ws/v1/cluster/metrics": padded,
            "/ws/v1/cluster/scheduler": plain(SCHEDULER),
        }
    )
    with pytest.raises(ObservationError) as err:
        client(url, read_timeout_s=5.0).observe()
    assert err.value.reason == "bad-response" and "33554432 byte cap" in err.value.message


def test_redirect_body_is_bounded_too(serve: Callable[[dict[str, Writer]], str]) -> None:
    """requests reads a redirect's body whole on its own to find the next hop; this one is
    read within the cap before it can."""
    target = serve({"/ws/v1/cluster/metrics": plain(METRICS)})

    def redirect(h: BaseHTTPRequestHandler) -> None:
        h.send_response(307)
        h.send_header("Location", target + "/ws/v1/cluster/metrics")
        h.send_header("Content-Length", str(64 * 1024**2))
        h.end_headers()
        h.wfile.write(b"x" * 65536)

    url = serve({"/ws/v1/cluster/info": plain(INFO), "/ws/v1/cluster/metrics": redirect})
    start = time.monotonic()
    with pytest.raises(ObservationError) as err:
        client(url).observe()
    assert err.value.reason == "bad-response" and "byte cap" in err.value.message
    assert time.monotonic() - start < 2.0
