"""How one GET reaches a ResourceManager: everything below the monitor's parsing, HA probing and
redirect handling (`amtuner.monitor.client`), so another transport (the simulator's in-process
one, `amtuner.sim.control.SimTransport`) changes only how the bytes arrive.

Time and size over HTTP: requests' read timeout bounds each socket read, not a whole request, so
an RM that drips a byte a second would never time out. Every request of one observation
therefore shares one wall-clock deadline (`Budget`): each request's timeouts are clipped to what
is left, and the body is streamed one socket read at a time, each read given only the time that
remains. A body larger than the cap is refused as soon as it says or grows so.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import requests
import urllib3

from amtuner.monitor.rest import ObservationError

_CHUNK = 64 * 1024


def _root_cause(exc: BaseException) -> str:
    """The socket's own words for a failed request ("Connection refused", "Name or service not
    known"), not requests' and urllib3's wrappers around them (``MaxRetryError``,
    ``NewConnectionError`` and the pool's repr): an operator reads one short line."""
    seen: set[int] = set()
    found: OSError | None = None
    todo: list[BaseException] = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            found = current
        reason = getattr(current, "reason", None)  # urllib3's MaxRetryError
        nested = [current.__cause__, current.__context__, reason, *current.args]
        todo.extend(e for e in nested if isinstance(e, BaseException))
    if found is not None:
        return str(found.strerror)
    return f"{type(exc).__name__}: {exc}"


class Unreachable(Exception):
    """This RM did not answer at all (or not in time): try the next one."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class Answer:
    """One RM answer, read whole within the deadline and the size cap."""

    url: str
    status: int
    reason: str
    headers: Mapping[str, str]
    body: bytes

    def snippet(self) -> str:
        return " ".join(self.body[:160].decode("utf-8", errors="replace").split())


@dataclass(frozen=True, slots=True)
class Budget:
    """What one request may take: the observation's shared wall-clock deadline, each socket
    operation's timeouts, and the largest answer read."""

    ends_at: float
    """`time.monotonic()` by which the whole observation must be done."""
    total_s: float
    """The observation's whole budget, for messages."""
    timeout: tuple[float, float]
    """requests' (connect, read) timeouts, before clipping to what is left."""
    max_body_bytes: int


class Transport(Protocol):
    """How one GET reaches an RM: everything below the monitor's parsing, HA probing and
    redirect handling, so another transport (the simulator's in-process one) changes only how
    the bytes arrive."""

    def get(
        self, url: str, accept: str, params: Mapping[str, str] | None, budget: Budget
    ) -> Answer:
        """The answer to GET ``url`` (never redirected), read whole within ``budget``.

        Raises `Unreachable` when the RM did not answer (in time), `ObservationError` for a
        setup failure or an answer over the cap."""
        ...


def too_large(url: str, budget: Budget, how: str) -> ObservationError:
    return ObservationError(
        "bad-response",
        f"{url}: answer larger than the {budget.max_body_bytes} byte cap ({how}); refused",
    )


class RequestsTransport:
    """The RM over HTTP(S) with requests: the session's TLS, certificate and SPNEGO settings,
    the body streamed one socket read at a time, each read given only the time that remains."""

    def __init__(self, session: requests.Session) -> None:
        self.session = session

    def get(
        self, url: str, accept: str, params: Mapping[str, str] | None, budget: Budget
    ) -> Answer:
        left = budget.ends_at - time.monotonic()
        bodies: list[bytes] = []

        def read(resp: requests.Response, *args: object, **kwargs: object) -> None:
            # A response hook, so the body is read here, bounded, before requests would read a
            # redirect's body whole on its own (Session.send consumes it to find ``next``).
            try:
                bodies.append(_read_body(resp, budget))
            finally:
                resp.close()

        try:
            resp = self.session.get(
                url,
                params=params,
                headers={"Accept": accept},
                timeout=(min(budget.timeout[0], left), min(budget.timeout[1], left)),
                allow_redirects=False,
                stream=True,
                hooks={"response": read},
            )
        except requests.Timeout as exc:
            raise Unreachable("timeout", f"{url}: timed out ({type(exc).__name__})") from exc
        except requests.RequestException as exc:
            raise Unreachable("rm-unreachable", f"{url}: {_root_cause(exc)}") from exc
        except OSError as exc:  # e.g. an unreadable client certificate file
            raise ObservationError("auth", f"{url}: TLS setup failed: {exc}") from exc
        return Answer(resp.url, resp.status_code, resp.reason or "", resp.headers, bodies[-1])


def _read_body(resp: requests.Response, budget: Budget) -> bytes:
    url = resp.url
    declared = resp.headers.get("Content-Length", "").strip()
    if declared.isdigit() and int(declared) > budget.max_body_bytes:
        raise too_large(url, budget, f"says Content-Length {declared}")
    raw = resp.raw
    conn = getattr(raw, "connection", None)
    sock = getattr(conn, "sock", None)
    chunks: list[bytes] = []
    size = 0
    while True:
        left = budget.ends_at - time.monotonic()
        if left <= 0:
            raise Unreachable(
                "timeout",
                f"{url}: the answer was not whole within the {budget.total_s:g} s deadline "
                f"({size} bytes read; a slow-drip RM or link?)",
            )
        if sock is not None:  # this socket read gets only the time that is left
            sock.settimeout(min(budget.timeout[1], left))
        try:
            chunk = (
                raw.read1(_CHUNK, decode_content=True)
                if isinstance(raw, urllib3.response.BaseHTTPResponse)
                else raw.read(_CHUNK)  # an in-process requests adapter's file object (SimAdapter)
            )
        except (urllib3.exceptions.ReadTimeoutError, TimeoutError) as exc:
            raise Unreachable(
                "timeout",
                f"{url}: the answer stalled after {size} bytes (read timeout, or the "
                f"{budget.total_s:g} s deadline)",
            ) from exc
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unreachable(
                "rm-unreachable", f"{url}: body broke off after {size} bytes: {exc}"
            ) from exc
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > budget.max_body_bytes:
            raise too_large(url, budget, "kept sending")
        chunks.append(chunk)
