"""A running simulated RM: the face of `rmapi` over HTTP, with the simulation in accelerated time.

Simulated time follows the wall clock times ``speed``: a background thread advances the
simulation in small steps, and every access to the simulation (a step, a request, a reload)
holds one lock, so a request always sees a consistent snapshot between two steps.

A FairScheduler re-reads its allocation file on its own, as the real one does (yarn-facts §2.3):
it looks every 10 s and reloads a file whose modification is more than 5 s old, both in simulated
time; a bad file is logged once and the old allocations stay. A CapacityScheduler reloads only
when asked (``POST /ws/v1/cluster/sim/refresh-queues``, see `rmapi`).

Every answer carries an ``X-Simulated-Time`` header (seconds), which a real RM does not send: it
lets a client wait for simulated time to pass instead of guessing from the wall clock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Protocol

from amtuner.model import SchedulerKind
from amtuner.sim import rmapi
from amtuner.sim.rmapi import FaceOptions, SimLike

log = logging.getLogger(__name__)

ALLOC_RELOAD_INTERVAL_S = 10.0
ALLOC_RELOAD_WAIT_S = 5.0
SIM_TIME_HEADER = "X-Simulated-Time"


class RunnableSim(SimLike, Protocol):
    @property
    def now(self) -> float: ...

    def run_until(self, t: float) -> None: ...


class AllocationFileWatcher:
    """FairScheduler's `AllocationFileLoaderService` rule, with the clock handed in.

    ``sim_time_of`` maps a wall-clock epoch (the file's mtime) to simulated time, so "modified
    more than 5 s ago" (``time > lastModified + ALLOC_RELOAD_WAIT_MS``, strictly) is judged on the
    simulated clock.
    """

    def __init__(
        self,
        path: Path,
        sim_time_of: Callable[[float], float],
        *,
        settle_s: float = ALLOC_RELOAD_WAIT_S,
    ) -> None:
        self.path = path
        self._sim_time_of = sim_time_of
        self._settle_s = settle_s
        self._handled = self._version()
        """The version last loaded or refused; the RM tracks lastSuccessfulReload."""
        self.reloads = 0

    def _version(self) -> tuple[int, bytes] | None:
        """mtime and content. The RM compares mtimes alone, which is enough when writes are
        seconds apart; in virtual time many simulated seconds pass per wall millisecond, so two
        writes can share one filesystem timestamp tick (and, as 0.4 and 0.5 do, one size), and
        the second would never be loaded."""
        try:
            mtime_ns = self.path.stat().st_mtime_ns
            return mtime_ns, self.path.read_bytes()
        except OSError:
            return None

    def poll(self, sim: SimLike, now: float) -> None:
        version = self._version()
        if version is None:
            if self._handled is not None:
                log.warning(
                    "allocation file %s is missing; keeping the current allocations", self.path
                )
                self._handled = None
            return
        if version == self._handled or now <= self._sim_time_of(version[0] / 1e9) + self._settle_s:
            return
        self._handled = version
        try:
            sim.reload_scheduler_config(version[1])
        except ValueError as e:
            log.warning(
                "Failed to reload fair scheduler config file - will use existing allocations. "
                "(%s: %s)",
                self.path,
                e,
            )
            return
        self.reloads += 1
        log.info("reloaded allocation file %s at simulated t=%.1f", self.path, now)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: SimServer


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """Headers and body go out in two writes; with Nagle, keep-alive answers wait ~40 ms."""

    def _serve(self) -> None:
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            self.send_error(411, "a request body needs a Content-Length")
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        owner = self.server.owner
        with owner.lock:
            clock = owner.clock
            response = rmapi.handle(
                owner.sim,
                self.command,
                self.path,
                body,
                dict(self.headers.items()),
                options=owner.options,
            )
        self.send_response(response.status)
        self.send_header(SIM_TIME_HEADER, f"{clock:.3f}")
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _serve

    def log_message(self, format: str, *args: object) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class SimServer:
    """Serves one simulation on ``host:port`` (0 = any free port) until `stop`.

    ``run_clock=False`` serves the simulation as it stands (a standby has nothing to run).
    """

    def __init__(
        self,
        sim: RunnableSim,
        *,
        options: FaceOptions | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        speed: float = 1.0,
        tick_s: float = 0.02,
        run_clock: bool = True,
        poll_s: float = ALLOC_RELOAD_INTERVAL_S,
        settle_s: float = ALLOC_RELOAD_WAIT_S,
    ) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        self.sim = sim
        self.options = options = options or FaceOptions()
        self.speed = speed
        self.lock = threading.RLock()
        self._tick_s = tick_s
        self._run_clock = run_clock
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._reset_clock()
        path = options.scheduler_config_path
        self.watcher = (
            AllocationFileWatcher(path, self.sim_time_of, settle_s=settle_s)
            if path is not None and sim.scheduler_kind == SchedulerKind.FAIR
            else None
        )
        self._http = _HTTPServer((host, port), _Handler)
        self._http.owner = self
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}"

    @property
    def clock(self) -> float:
        """Simulated time the simulation has been run to."""
        return self._clock

    def sim_time_of(self, epoch_s: float) -> float:
        """The simulated instant that a wall-clock time stands for."""
        return self._sim0 + (epoch_s - self._epoch0) * self.speed

    def _reset_clock(self) -> None:
        self._wall0, self._epoch0, self._sim0 = time.monotonic(), time.time(), self.sim.now
        self._clock = self._sim0
        self._next_poll = self._clock + self._poll_s

    def start(self) -> None:
        self._reset_clock()
        loops: list[tuple[Callable[[], None], str]] = [(self._http.serve_forever, "rm-http")]
        if self._run_clock:
            with self.lock:  # what happens at the first instant (a batch submitted at t=0)
                self.sim.run_until(self._clock)  # is visible to the first request
            loops.append((self._tick, "sim-clock"))
        for target, name in loops:
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self._stop.set()
        if self._threads:  # shutdown() waits for serve_forever, which only runs once started
            self._http.shutdown()
        self._http.server_close()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> SimServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _tick(self) -> None:
        try:
            while not self._stop.wait(self._tick_s):
                self.advance_to(self._sim0 + (time.monotonic() - self._wall0) * self.speed)
        except Exception:
            log.exception("the simulation failed; still serving its last state")

    def advance_to(self, target: float) -> None:
        """Run the simulation to ``target`` in steps of at most one tick, polling the allocation
        file on the 10 s grid; the lock is released between steps so requests get through."""
        max_step = max(self._tick_s * self.speed, 1e-3)
        while self._clock < target and not self._stop.is_set():
            end = min(target, self._clock + max_step)
            if self.watcher is not None:
                end = min(end, self._next_poll)
            with self.lock:
                self.sim.run_until(end)
                self._clock = end
                if self.watcher is not None and end >= self._next_poll:
                    self.watcher.poll(self.sim, end)
                    self._next_poll += self._poll_s
