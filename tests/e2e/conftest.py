"""Fixtures that start real processes: the simulated RM over loopback, and tiny canned RMs for
the failure cases a real RM can produce (standby loops, garbage, an empty cluster)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from amtuner.demo import running_sim

Handler = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]


@pytest.fixture
def sim(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """`amtuner sim` in a child process; parametrise indirectly with (scheduler, extra args)."""
    scheduler, extra = request.param
    sched_file = tmp_path / "conf" / f"{scheduler}-scheduler.xml"
    sched_file.parent.mkdir()
    argv = [
        "--scheduler", scheduler, "--workload", "paper:mixed", "--port", "0",
        "--speed", "20", "--scheduler-config", str(sched_file), *extra,
    ]
    with running_sim(argv) as started:
        yield started


@pytest.fixture
def canned_rm() -> Iterator[Callable[[Handler], str]]:
    """Serve whatever a test's handler returns, on 127.0.0.1; yields a starter returning the URL."""
    servers: list[ThreadingHTTPServer] = []

    def start(handler: Handler, methods: tuple[str, ...] = ("GET",)) -> str:
        class H(BaseHTTPRequestHandler):
            def answer(self) -> None:
                status, headers, body = handler(self)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        for method in methods:  # a request body is left unread: the handlers answer by path
            setattr(H, f"do_{method}", H.answer)
        server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


def write_config(path: Path, **sections: Any) -> Path:
    """A config for tests: state and backups beside it, no hold-off, no metrics port, and the
    paper's loop, whose moves these tests of the daemon's mechanics predict (a test of a policy
    names it)."""
    doc: dict[str, Any] = {
        "controller": {"policy": "paper"},
        "guard": {"hold_off_seconds": 0},
        "metrics": {"enabled": False},
        "backup_dir": str(path.parent / "backups"),
        "state_file": str(path.parent / "state.json"),
    }
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key] = {**doc[key], **value}
        else:
            doc[key] = value
    path.write_text(yaml.safe_dump(doc))
    return path


def amtuner(*argv: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amtuner", *argv],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        **kw,
    )


def json_body(doc: object) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(doc).encode()
