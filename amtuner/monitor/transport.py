"""How one GET reaches a ResourceManager: everything below the monitor's parsing, HA probing and
redirect handling (`amtuner.monitor.client`), so another transport (the simulator's in-process
one, `amtuner.sim.control.SimTransport`) changes only how the bytes arrive.

Time and size over HTTP: requests' read timeout bounds each socket read, not a whole request, so
an RM that drips a byte a second (of its status line, its headers or its body) would never time
out. Every request of one observation therefore shares one wall-clock deadline (`Budget`): each
request's timeouts are clipped to what is left, and a watchdog (`_Deadline`) shuts down the
request's socket when the deadline passes, wherever the request is (connecting, waiting for the
status line, reading headers or the body), so the blocked read returns at once. The same cut
ends every request in flight when amtuner stops (`RequestsTransport.cancel`). A body larger
than the cap is refused as soon as it says or grows so.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from amtuner.kerberos import KerberosError
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

    def cancel(self) -> None:
        """End every request in flight and refuse new ones (amtuner is stopping)."""
        ...


def too_large(url: str, budget: Budget, how: str) -> ObservationError:
    return ObservationError(
        "bad-response",
        f"{url}: answer larger than the {budget.max_body_bytes} byte cap ({how}); refused",
    )


class _Deadline:
    """Shuts down the sockets of one request when its deadline passes (or on `fire`).

    A read blocked in the kernel returns as soon as its socket is shut down, whatever the
    socket's own timeout, so the request ends then instead of at the RM's pace. shutdown(2)
    acts on the socket, not on one descriptor: it also ends a TLS read (the SSL socket shares
    the descriptor of the socket it wraps), and a socket already closed has descriptor -1 and is
    left alone."""

    def __init__(self, ends_at: float) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._done = False
        self.fired = False
        self._timer = threading.Timer(max(0.0, ends_at - time.monotonic()), self.fire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            if self._done:
                return
            self._sockets.append(sock)
            if self.fired:
                _cut(sock)

    def fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            for sock in self._sockets:
                _cut(sock)

    def close(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()


def _cut(sock: socket.socket) -> None:
    if sock.fileno() < 0:
        return
    with contextlib.suppress(OSError):
        # The plain socket's shutdown, also for an SSL socket: its own would drop the TLS state
        # under the reading thread's feet.
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


_current = threading.local()
"""The `_Deadline` of the request this thread is making, if any."""


def _watch(sock: socket.socket | None) -> None:
    deadline: _Deadline | None = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.watch(sock)


class _WatchedHTTPConnection(HTTPConnection):
    """Hands its socket to the thread's deadline when it connects and, reused from the pool,
    when it waits for an answer."""

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        _watch(sock)
        return sock

    def getresponse(self) -> Any:  # type: ignore[override]
        _watch(self.sock)
        return super().getresponse()


class _WatchedHTTPSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        _watch(sock)  # the TLS handshake is cut too: the SSL socket shares its descriptor
        return sock

    def getresponse(self) -> Any:  # type: ignore[override]
        _watch(self.sock)
        return super().getresponse()


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class WatchedAdapter(HTTPAdapter):
    """requests' own adapter, whose connections report their sockets to the deadline of the
    request being made on this thread (none: it behaves as requests' own)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {  # type: ignore[attr-defined]
            "http": _WatchedHTTPPool,
            "https": _WatchedHTTPSPool,
        }


class RequestsTransport:
    """The RM over HTTP(S) with requests: the session's TLS, certificate and SPNEGO settings,
    the body streamed one socket read at a time, the whole request cut at the deadline.

    The session's plain http/https adapters are replaced by `WatchedAdapter` (the same but for
    the deadline), so a session built elsewhere (tests, the REST refresher's) keeps working."""

    def __init__(self, session: requests.Session) -> None:
        self.session = session
        for prefix in ("http://", "https://"):
            if type(session.adapters.get(prefix)) is HTTPAdapter:
                session.mount(prefix, WatchedAdapter())
        self._lock = threading.Lock()
        self._in_flight: set[_Deadline] = set()
        self._cancelled = False

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            in_flight = list(self._in_flight)
        for deadline in in_flight:
            deadline.fire()

    @contextlib.contextmanager
    def _deadline(self, url: str, ends_at: float) -> Iterator[_Deadline]:
        deadline = _Deadline(ends_at)
        with self._lock:
            if self._cancelled:
                deadline.close()
                raise Unreachable("rm-unreachable", f"{url}: not asked: amtuner is stopping")
            self._in_flight.add(deadline)
        _current.deadline = deadline
        try:
            yield deadline
        finally:
            _current.deadline = None
            deadline.close()
            with self._lock:
                self._in_flight.discard(deadline)

    def _cut_short(self, url: str, budget: Budget) -> Unreachable:
        if self._cancelled:
            return Unreachable("rm-unreachable", f"{url}: abandoned: amtuner is stopping")
        return Unreachable(
            "timeout",
            f"{url}: no whole answer within the {budget.total_s:g} s deadline "
            "(a slow-drip RM or link?)",
        )

    def _failed(self, url: str, budget: Budget, deadline: _Deadline, exc: Exception) -> Exception:
        if deadline.fired:
            return self._cut_short(url, budget)
        if isinstance(exc, requests.Timeout):
            return Unreachable("timeout", f"{url}: timed out ({type(exc).__name__})")
        if isinstance(exc, requests.RequestException):
            return Unreachable("rm-unreachable", f"{url}: {_root_cause(exc)}")
        # e.g. an unreadable client certificate file
        return ObservationError("auth", f"{url}: TLS setup failed: {exc}")

    def get(
        self, url: str, accept: str, params: Mapping[str, str] | None, budget: Budget
    ) -> Answer:
        return self.send("GET", url, accept, params, budget)

    def send(
        self,
        method: str,
        url: str,
        accept: str,
        params: Mapping[str, str] | None,
        budget: Budget,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> Answer:
        """Any request, as `get` (the executor's PUT of scheduler-conf keeps the same deadline
        and cap)."""
        left = max(0.001, budget.ends_at - time.monotonic())
        headers = {"Accept": accept} | ({"Content-Type": content_type} if content_type else {})
        bodies: list[bytes] = []

        def read(resp: requests.Response, *args: object, **kwargs: object) -> None:
            # A response hook, so the body is read here, bounded, before requests would read a
            # redirect's body whole on its own (Session.send consumes it to find ``next``).
            try:
                bodies.append(_read_body(resp, budget))
            finally:
                resp.close()

        with self._deadline(url, budget.ends_at) as deadline:
            try:
                resp = self.session.request(
                    method,
                    url,
                    params=params,
                    data=body,
                    headers=headers,
                    timeout=(min(budget.timeout[0], left), min(budget.timeout[1], left)),
                    allow_redirects=False,
                    stream=True,
                    hooks={"response": read},
                )
            except KerberosError as exc:  # nothing was sent
                raise ObservationError("auth", f"{url}: {exc}") from exc
            except Unreachable as exc:
                if not deadline.fired:
                    raise
                raise self._cut_short(url, budget) from exc
            except (requests.RequestException, OSError) as exc:
                raise self._failed(url, budget, deadline, exc) from exc
            if deadline.fired:  # the cut may look like the end of the body
                raise self._cut_short(url, budget)
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
