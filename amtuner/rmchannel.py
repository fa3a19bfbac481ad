"""How the executor's REST refresh (``scheduler-conf``) reaches the RMs: with the monitor's
transport, its wall-clock deadline and size cap, and its redirect rule.

An HA standby answers 307 with a ``Location`` on the active RM (``RMWebAppFilter``, yarn-facts
§4.1). That redirect is followed once, and only when it names another configured RM
(`amtuner.config.settings.names_path`, the monitor's test). Anything else (a redirect to
another host or port, a 301/302/303/308 from a gateway, a second redirect) is not followed, and
the next configured RM is asked by its own URL (a standby names the active by the address in its
yarn-site, which need not be the one amtuner is given). So the session's ``user.name``, SPNEGO
token and client certificate never leave the configured RMs, and a PUT is never replayed
somewhere unknown. Each exchange (the GET before a PUT, the PUT) gets ``deadline_s`` of
wall-clock time in all, its answer read within it and within the cap, as the monitor reads one
observation (`amtuner.monitor.transport`).

It sits outside both the monitor and the executor: the executor never imports the monitor
(`tests/test_layers.py`), and takes this as a collaborator (`amtuner.executor.refresh.RestChannel`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from urllib.parse import urljoin

import requests

from amtuner.config import RMEndpoint, RMSettings
from amtuner.config.settings import names_path
from amtuner.kerberos import SpnegoAuth
from amtuner.monitor.client import MAX_BODY_BYTES
from amtuner.monitor.rest import ObservationError
from amtuner.monitor.transport import Answer, Budget, RequestsTransport, Unreachable


class _Refused(Exception):
    """A redirect not followed; the next configured RM is asked."""


class RMChannel:
    """Requests to whichever configured RM answers, first to last."""

    def __init__(
        self,
        urls: Sequence[str],
        transport: RequestsTransport,
        *,
        deadline_s: float,
        timeout: tuple[float, float],
        max_body_bytes: int = MAX_BODY_BYTES,
        principal: str | None = None,
    ) -> None:
        if not urls:
            raise ValueError("RMChannel needs at least one RM URL")
        self.endpoints = tuple(RMEndpoint.of(u) for u in urls)
        self.transport = transport
        self.deadline_s = deadline_s
        self.timeout = timeout
        self.max_body_bytes = max_body_bytes
        self.principal = principal
        """Who the RM sees, when the session speaks SPNEGO (for why a 401 or 403 came)."""

    @classmethod
    def for_settings(
        cls, rm: RMSettings, session: requests.Session, deadline_s: float
    ) -> RMChannel:
        """The channel of a refresh whose whole budget is ``deadline_s`` (refresh.timeout_seconds),
        each socket operation within the RM's connect and read timeouts."""
        auth = session.auth
        principal = (auth.principal or "amtuner's principal") if isinstance(
            auth, SpnegoAuth
        ) else None  # fmt: skip
        return cls(
            rm.urls, RequestsTransport(session), deadline_s=deadline_s,
            timeout=(rm.connect_timeout_seconds, max(rm.read_timeout_seconds, deadline_s)),
            principal=principal,
        )  # fmt: skip

    @property
    def rest_bases(self) -> tuple[str, ...]:
        return tuple(e.rest for e in self.endpoints)

    def exchange(
        self,
        method: str,
        path: str,
        accept: str,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> Answer:
        """The answer to ``method`` on ``path`` below an RM's REST base (``/cluster/...``), from
        the first configured RM that answers (or the active RM a standby names).

        Raises OSError, with the reasons, when none answered whole in time (or only with a
        redirect that is not followed), or an answer was over the cap."""
        ends = time.monotonic() + self.deadline_s
        budget = Budget(ends, self.deadline_s, self.timeout, self.max_body_bytes)

        def send(url: str) -> Answer:
            return self.transport.send(method, url, accept, None, budget, body, content_type)

        failures: list[str] = []
        for base in self.rest_bases:
            url = base + path
            try:
                answer = send(url)
                return self._follow(send, f"{method} {url}", path, answer)
            except Unreachable as exc:
                failures.append(exc.detail)
            except _Refused as exc:  # the active RM may be another entry, asked by its own URL
                failures.append(str(exc))
            except ObservationError as exc:
                raise OSError(str(exc)) from exc
        raise OSError("no ResourceManager answered: " + "; ".join(failures))

    def _follow(
        self, send: Callable[[str], Answer], asked: str, path: str, answer: Answer
    ) -> Answer:
        """``answer``, or, for a standby's 307 to another configured RM, that RM's answer."""
        if not 300 <= answer.status < 400:
            return answer
        location = answer.headers.get("Location")
        target = urljoin(answer.url, location) if location else None
        if answer.status != 307 or target is None:
            raise _Refused(
                f"{asked}: HTTP {answer.status} "
                + (f"redirect to {target}" if target else "redirect without a Location")
                + ", not a standby RM's 307 to the active one; not followed"
            )
        peer = next((b for b in self.rest_bases if names_path(target, b, path)), None)
        if peer is None:
            raise _Refused(
                f"{asked}: redirected to {target}, which is not one of the configured RMs "
                f"({', '.join(e.url for e in self.endpoints)}); not followed: list the active RM "
                "in rm.urls"
            )
        again = send(peer + path)
        if 300 <= again.status < 400:
            raise _Refused(f"{asked}: redirected to {target}, which redirected again; no active RM")
        return again
