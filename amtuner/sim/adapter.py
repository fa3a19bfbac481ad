"""A requests transport that answers from an in-process simulation, with no socket.

Mounted on a session (``session.mount("http://sim", SimAdapter(sim))``) it lets the real monitor
and executor talk to a simulation running in virtual time: the answers are the bytes `rmapi`
renders for the HTTP server, so what a benchmark sees is what a daemon would see over the wire.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Mapping
from http import HTTPStatus
from urllib.parse import urlsplit

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers

from amtuner.sim import rmapi
from amtuner.sim.rmapi import FaceOptions, SimLike


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
        cert: str | tuple[str, str] | None = None,
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
        response.connection = self
        return response

    def close(self) -> None:
        """Nothing to release: no connections."""
