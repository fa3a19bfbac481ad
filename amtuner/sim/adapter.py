"""A requests transport that answers from an in-process simulation, with no socket.

Mounted on a session (``session.mount("http://sim", SimAdapter(sim))``) it lets code that speaks
requests (the executor's REST refresher, the monitor given a session) talk to a simulation
running in virtual time: the answers are the bytes `rmapi` renders for the HTTP server, so what
a benchmark sees is what a daemon would see over the wire. A controlled run gives the monitor
`amtuner.sim.control.SimTransport` instead, the same bytes without requests' machinery.
`watch_allocation_file` gives such a run the FairScheduler's own reloading of its file.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Mapping
from http import HTTPStatus
from pathlib import Path
from typing import Any, Protocol

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from amtuner.sim import rmapi
from amtuner.sim.rmapi import FaceOptions, SimLike
from amtuner.sim.server import ALLOC_RELOAD_INTERVAL_S, AllocationFileWatcher


class SimAdapter(BaseAdapter):
    """Share ``lock`` with whatever else advances the simulation (e.g. a `SimServer`)."""

    def __init__(
        self,
        sim: SimLike,
        lock: threading.RLock | None = None,
        options: FaceOptions | None = None,
    ) -> None:
        super().__init__()
        self.sim = sim
        self.lock = lock if lock is not None else threading.RLock()
        self.options = options or FaceOptions()

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: float | tuple[float, float] | tuple[float, None] | None = None,
        verify: bool | str = True,
        cert: bytes | str | tuple[bytes | str, bytes | str] | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        path_qs = rmapi.path_and_query(request.url or "")
        body = request.body
        data = body.encode() if isinstance(body, str) else bytes(body or b"")
        with self.lock:
            answer = rmapi.handle(
                self.sim,
                request.method or "GET",
                path_qs,
                data,
                dict(request.headers),
                options=self.options,
            )
        response = requests.Response()
        response.status_code = answer.status
        response.reason = HTTPStatus(answer.status).phrase
        response.headers = CaseInsensitiveDict(answer.headers)
        response.encoding = get_encoding_from_headers(response.headers)
        response.raw = io.BytesIO(answer.body)
        response._content = answer.body
        response.url = request.url or ""
        response.request = request
        # requests' stubs type this as an HTTPAdapter; any adapter closes it the same way.
        response.connection = self  # type: ignore[assignment]
        return response

    def close(self) -> None:
        """Nothing to release: no connections."""


class PeriodicSim(SimLike, Protocol):
    @property
    def now(self) -> float: ...

    def schedule_every(
        self, period_s: float, fn: Callable[[Any], None], first_at: float = 0.0
    ) -> None: ...


def watch_allocation_file(
    sim: PeriodicSim,
    path: Path,
    written_at: Callable[[float], float] | None = None,
    *,
    due: Callable[[], bool] | None = None,
    first_poll_s: float = ALLOC_RELOAD_INTERVAL_S,
) -> AllocationFileWatcher:
    """Poll ``path`` every 10 simulated seconds from inside the simulation, as FairScheduler does.

    In virtual time a file's mtime says nothing about simulated time. A writer that knows when
    (in simulated time) it wrote passes ``written_at(mtime)``, and the reload follows the RM's
    rule exactly (5-15 s later). Without it a change counts as made when a poll first sees it,
    and is reloaded one poll later (10 s, where a real RM takes 5-15 s). A writer that knows
    which polls can find something new passes ``due()``, asked at each poll; the others skip
    the stat and read. The first poll comes ``first_poll_s`` after the watch starts: where in
    its 10 s cycle the RM's poll runs (`amtuner.sim.control.allocation_poll_phase`).
    """
    seen: dict[float, float] = {}

    def first_seen(mtime: float) -> float:
        return seen.setdefault(mtime, sim.now)

    watcher = AllocationFileWatcher(path, written_at or first_seen)

    def poll(s: PeriodicSim) -> None:
        if due is None or due():
            watcher.poll(s, s.now)

    sim.schedule_every(ALLOC_RELOAD_INTERVAL_S, poll, first_at=sim.now + first_poll_s)
    return watcher
