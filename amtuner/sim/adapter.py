"""Transports that answer from an in-process simulation, with no socket.

`SimTransport` is the monitor's own transport (`amtuner.monitor.client.Transport`): the bytes
`rmapi` renders for the HTTP server, handed to the monitor's parsing, HA probing and redirect
handling as they are, without requests' per-call machinery (preparing, merging settings,
hooks), which cost several times the simulated RM's own answer in a controlled run.
`SimAdapter` is the same for a requests session (``session.mount("http://sim",
SimAdapter(sim))``), for code that speaks requests (the executor's REST refresher).
`watch_allocation_file` gives such a run the FairScheduler's own reloading of its file.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from http import HTTPStatus
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from amtuner.monitor.client import Answer, Budget
from amtuner.sim import rmapi
from amtuner.sim.rmapi import FaceOptions, SimLike
from amtuner.sim.server import ALLOC_RELOAD_INTERVAL_S, AllocationFileWatcher
from amtuner.sim.view import AppView, ClusterView


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
        split = urlsplit(request.url or "")
        path_qs = split.path or "/"
        if split.query:
            path_qs += "?" + split.query
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


class _Instant:
    """``sim`` as it stands at one instant: its `view()` is built once for every request."""

    def __init__(self, sim: SimLike) -> None:
        self.sim = sim
        self.scheduler_kind = sim.scheduler_kind
        self._view: ClusterView | None = None

    def view(self) -> ClusterView:
        if self._view is None:
            self._view = self.sim.view()
        return self._view

    def app_views(
        self, states: Collection[str] | None = None, limit: int | None = None
    ) -> list[AppView]:
        return self.sim.app_views(states, limit)

    def scheduler_config(self) -> bytes:
        return self.sim.scheduler_config()

    def reload_scheduler_config(self, data: bytes) -> None:
        self._view = None
        self.sim.reload_scheduler_config(data)


class SimTransport:
    """The monitor's GETs answered by `rmapi.handle` on ``sim``, in this thread (the caller
    advances the simulation, as `ControlledRun` does from inside it). In virtual time nothing
    waits, so the budget's time does not run out; its size cap is checked by the monitor."""

    def __init__(self, sim: SimLike, options: FaceOptions | None = None) -> None:
        self.sim = sim
        self.options = options or FaceOptions()
        self._instant: _Instant | None = None

    @contextmanager
    def instant(self) -> Iterator[None]:
        """Requests made within share one `view()` of the simulation: one rendering of the
        RM's state per observation instead of one per request. Only for a caller that does
        not advance the simulation meanwhile (virtual time stands still during one
        observation), so the answers are the same bytes."""
        self._instant = _Instant(self.sim)
        try:
            yield
        finally:
            self._instant = None

    def get(
        self, url: str, accept: str, params: Mapping[str, str] | None, budget: Budget
    ) -> Answer:
        if params:  # as requests would put them on the URL it reports
            url += ("&" if "?" in url else "?") + urlencode(params)
        split = urlsplit(url)
        path_qs = split.path or "/"
        if split.query:
            path_qs += "?" + split.query
        answer = rmapi.handle(
            self._instant or self.sim, "GET", path_qs, b"", {"Accept": accept}, options=self.options
        )
        return Answer(
            url, answer.status, HTTPStatus(answer.status).phrase, answer.headers, answer.body
        )


class PeriodicSim(SimLike, Protocol):
    @property
    def now(self) -> float: ...

    def schedule_every(
        self, period_s: float, fn: Callable[[Any], None], first_at: float = 0.0
    ) -> None: ...


def watch_allocation_file(
    sim: PeriodicSim, path: Path, written_at: Callable[[float], float] | None = None
) -> AllocationFileWatcher:
    """Poll ``path`` every 10 simulated seconds from inside the simulation, as FairScheduler does.

    In virtual time a file's mtime says nothing about simulated time. A writer that knows when
    (in simulated time) it wrote passes ``written_at(mtime)``, and the reload follows the RM's
    rule exactly (5-15 s later). Without it a change counts as made when a poll first sees it,
    and is reloaded one poll later (10 s, where a real RM takes 5-15 s).
    """
    seen: dict[float, float] = {}

    def first_seen(mtime: float) -> float:
        return seen.setdefault(mtime, sim.now)

    watcher = AllocationFileWatcher(path, written_at or first_seen)
    sim.schedule_every(
        ALLOC_RELOAD_INTERVAL_S,
        lambda s: watcher.poll(s, s.now),
        first_at=sim.now + ALLOC_RELOAD_INTERVAL_S,
    )
    return watcher
