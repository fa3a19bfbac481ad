"""Talk to the ResourceManager (or its HA pair) over HTTP and hand back one `Observation`.

HA (yarn-facts §4.1): ``/ws/v1/cluster/info`` is never redirected by a standby, so its
``haState`` tells which RM is active without a redirect. The RM that answered last is asked first
next time, so a steady cluster costs one info request plus the two scrapes. A standby's 307 is
followed once: a second redirect means no RM is active (failover in progress, or the standby
points at itself while it searches) and is reported as ``standby`` instead of being chased.

Every request carries a ``(connect, read)`` timeout and never follows redirects on its own, so a
broken RM costs a bounded time and no request leaves the configured RMs except the one redirect.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urljoin, urlsplit

import requests

from amtuner import __version__
from amtuner.config import RMSettings
from amtuner.model import GLOBAL_TARGET, Observation, SchedulerKind
from amtuner.monitor.rest import (
    INFO_PATH,
    METRICS_PATH,
    SCHEDULER_PATH,
    ObservationError,
    build_observation,
    decode_json,
    scheduler_kind_of,
)
from amtuner.monitor.webui import ClusterPage, parse_cluster_page

log = logging.getLogger(__name__)

WEBUI_PATH = "/cluster"
_T = TypeVar("_T")


def make_session(rm: RMSettings) -> requests.Session:
    """One session for every RM request: TLS, client certificate, simple auth and SPNEGO.

    ``trust_env`` is off because requests lets ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE`` override
    ``session.verify`` and applies proxy variables; the config file is the only source of truth.
    Raises ObservationError("auth") when the TLS or Kerberos setup cannot work at all.
    """
    session = requests.Session()
    session.trust_env = False
    session.headers["User-Agent"] = f"amtuner/{__version__}"
    if rm.insecure_skip_verify:
        log.warning("rm.insecure_skip_verify is set: the RM's TLS certificate is not checked")
        session.verify = False
    else:
        if isinstance(rm.verify, str) and not Path(rm.verify).exists():
            raise ObservationError("auth", f"rm.verify: CA bundle {rm.verify} does not exist")
        session.verify = rm.verify
    if rm.client_cert:
        session.cert = (rm.client_cert, rm.client_key) if rm.client_key else rm.client_cert
    if rm.user_name:
        session.params = {"user.name": rm.user_name}
    if rm.kerberos:
        try:
            from requests_gssapi import HTTPSPNEGOAuth
        except ImportError as exc:
            raise ObservationError(
                "auth",
                "rm.kerberos is true but requests-gssapi is not installed: "
                "pip install 'amtuner[kerberos]' (needs libkrb5-dev and gcc)",
            ) from exc
        # The RM answers with a hadoop.auth cookie; the session keeps it, so one negotiation
        # serves many requests.
        session.auth = HTTPSPNEGOAuth()
    return session


class _Unreachable(Exception):
    """This RM did not answer at all: try the next one."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


class _RestUnavailable(Exception):
    """The RM answered, but its REST API is blocked or disabled (403/404)."""

    def __init__(self, url: str, status: int) -> None:
        super().__init__(f"{url} answered HTTP {status}")
        self.status = status


def _base_of(location: str, path: str) -> str:
    """The RM base URL of a redirect target, keeping a gateway path prefix if there is one."""
    parts = urlsplit(location)
    prefix = parts.path[: -len(path)] if parts.path.endswith(path) else ""
    return f"{parts.scheme}://{parts.netloc}{prefix}"


def _snippet(resp: requests.Response) -> str:
    return " ".join(resp.text[:160].split())


class RMClient:
    """Observes one YARN cluster through the REST API of whichever RM is active."""

    def __init__(
        self,
        urls: Sequence[str],
        session: requests.Session,
        *,
        connect_timeout_s: float = 3.0,
        read_timeout_s: float = 10.0,
        clock: Callable[[], float] = time.time,
        user_name: str | None = None,
        web_ui_fallback: bool = True,
        scheduler_hint: SchedulerKind | str | None = None,
    ) -> None:
        if not urls:
            raise ValueError("RMClient needs at least one RM URL")
        self.urls = tuple(u.rstrip("/") for u in urls)
        self.session = session
        self.timeout = (connect_timeout_s, read_timeout_s)
        self.clock = clock
        self.user_name = user_name
        self.web_ui_fallback = web_ui_fallback
        self.scheduler_hint = (
            None if scheduler_hint in (None, "auto") else SchedulerKind(scheduler_hint)
        )
        """The kind to assume when only the web UI answers and its page does not name one."""
        self.active_url: str | None = None

    @classmethod
    def from_settings(
        cls,
        rm: RMSettings,
        session: requests.Session | None = None,
        clock: Callable[[], float] = time.time,
        *,
        scheduler_hint: SchedulerKind | str | None = None,
    ) -> RMClient:
        return cls(
            rm.urls,
            session if session is not None else make_session(rm),
            connect_timeout_s=rm.connect_timeout_seconds,
            read_timeout_s=rm.read_timeout_seconds,
            clock=clock,
            user_name=rm.user_name,
            web_ui_fallback=rm.web_ui_fallback,
            scheduler_hint=scheduler_hint,
        )

    def observe(self, targets: Sequence[str] = ()) -> Observation:
        """P, R, memory and per-leaf-queue figures; raises ObservationError, never a partial."""
        wanted = tuple(targets)
        return self._on_active(lambda base: self._observe_at(base, wanted))

    def scheduler_kind(self) -> SchedulerKind:
        """What ``scheduler.kind: auto`` resolves to (the paper's detect()), read from the RM."""
        return self._on_active(self._kind_at)

    # HA: which RM to ask

    def _on_active(self, fn: Callable[[str], _T]) -> _T:
        order = list(self.urls)
        if self.active_url:
            order = [self.active_url, *(u for u in order if u != self.active_url)]
        failures: list[str] = []
        reasons: set[str] = set()
        active: list[str] = []
        others: list[str] = []
        for i, base in enumerate(order):
            try:
                state = self._ha_state(base)
            except _Unreachable as exc:
                failures.append(exc.detail)
                reasons.add(exc.reason)
                continue
            if state == "ACTIVE":
                active.append(base)
                others.extend(order[i + 1 :])  # not probed: only tried if the active one fails
                break
            others.append(base)
        for base in active + others:
            try:
                return fn(base)
            except _Unreachable as exc:
                failures.append(exc.detail)
                reasons.add(exc.reason)
        reason = "timeout" if reasons == {"timeout"} else "rm-unreachable"
        raise ObservationError(reason, "no ResourceManager answered: " + "; ".join(failures))

    def _ha_state(self, base: str) -> str:
        """``haState`` from /ws/v1/cluster/info, or UNKNOWN when the RM does not say."""
        resp = self._send(base + INFO_PATH, "application/json")
        if resp.status_code != 200:
            return "UNKNOWN"
        try:
            info = decode_json(resp.content, resp.headers.get("Content-Type", ""), resp.url)
        except ObservationError:
            return "UNKNOWN"
        cluster = info.get("clusterInfo") if isinstance(info, dict) else None
        state = cluster.get("haState") if isinstance(cluster, dict) else None
        return state if isinstance(state, str) else "UNKNOWN"

    # HTTP

    def _send(self, url: str, accept: str) -> requests.Response:
        params = {"user.name": self.user_name} if self.user_name else None
        try:
            return self.session.get(
                url,
                params=params,
                headers={"Accept": accept},
                timeout=self.timeout,
                allow_redirects=False,
            )
        except requests.Timeout as exc:
            raise _Unreachable("timeout", f"{url}: timed out ({type(exc).__name__})") from exc
        except requests.RequestException as exc:
            raise _Unreachable("rm-unreachable", f"{url}: {type(exc).__name__}: {exc}") from exc
        except OSError as exc:  # e.g. an unreadable client certificate file
            raise ObservationError("auth", f"{url}: TLS setup failed: {exc}") from exc

    def _get(self, base: str, path: str, accept: str) -> tuple[requests.Response, str]:
        """GET base+path, following one standby redirect; returns the answer and its RM base."""
        url = base + path
        resp = self._send(url, accept)
        if not resp.is_redirect:
            return resp, base
        target = urljoin(url, resp.headers["Location"])
        if resp.status_code != 307:
            # A standby RM only ever answers 307; anything else is a gateway (e.g. a 302 to an
            # SSO login page) or a scheme change, and credentials must not follow it blindly.
            raise ObservationError(
                "http-error",
                f"{url}: HTTP {resp.status_code} redirect to {target}, not a standby RM's 307 "
                "(a gateway's login page, or http:// where the RM wants https://?)",
            )
        new_base = _base_of(target, path)
        log.info("%s redirected to %s (standby RM)", url, target)
        again = self._send(new_base + path, accept)
        if again.is_redirect:
            raise ObservationError(
                "standby",
                f"standby loop: {url} redirected to {target}, which redirected again to "
                f"{again.headers['Location']} ({_snippet(again)}); no active RM answered",
            )
        return again, new_base

    def _checked(self, resp: requests.Response, *, rest: bool) -> requests.Response:
        if resp.status_code == 200:
            return resp
        if resp.status_code == 401:
            raise ObservationError(
                "auth",
                f"{resp.url}: HTTP 401 Unauthorized (Kerberos ticket expired, or simple auth "
                "needs rm.user_name?)",
            )
        if rest and resp.status_code in (403, 404):
            raise _RestUnavailable(resp.url, resp.status_code)
        label = "auth" if resp.status_code == 403 else "http-error"
        raise ObservationError(
            label, f"{resp.url}: HTTP {resp.status_code} {resp.reason}: {_snippet(resp)}"
        )

    def _get_json(self, base: str, path: str) -> tuple[Any, str]:
        resp, answered = self._get(base, path, "application/json")
        self._checked(resp, rest=True)
        return decode_json(resp.content, resp.headers.get("Content-Type", ""), resp.url), answered

    def _get_page(self, base: str) -> tuple[ClusterPage, str]:
        resp, answered = self._get(base, WEBUI_PATH, "text/html")
        self._checked(resp, rest=False)
        return parse_cluster_page(resp.content, resp.url), answered

    # What to read

    def _observe_at(self, base: str, targets: tuple[str, ...]) -> Observation:
        now = self.clock()
        try:
            metrics, answered = self._get_json(base, METRICS_PATH)
        except _RestUnavailable as exc:
            return self._observe_webui(base, targets, now, exc)
        try:
            scheduler, answered = self._get_json(answered, SCHEDULER_PATH)
        except _RestUnavailable as exc:
            raise ObservationError("http-error", f"{exc} after the metrics answered") from exc
        source = f"rest {answered}"
        obs = build_observation(metrics, scheduler, time=now, source=source, targets=targets)
        self.active_url = answered
        return obs

    def _observe_webui(
        self, base: str, targets: tuple[str, ...], now: float, why: _RestUnavailable
    ) -> Observation:
        if not self.web_ui_fallback:
            raise ObservationError(
                "auth" if why.status == 403 else "http-error",
                f"{why}; the REST API is unavailable and rm.web_ui_fallback is off",
            )
        page, answered = self._get_page(base)
        source = f"webui {answered}"
        named = [t for t in targets if t != GLOBAL_TARGET]
        if named:
            raise ObservationError(
                "unknown-queue",
                f"{why}, and the web UI at {answered} has no per-queue figures for "
                f"{', '.join(named)}",
            )
        # The page names the scheduler the RM really runs; the hint only fills in for old pages.
        kind = page.scheduler or self.scheduler_hint
        if kind is None:
            raise ObservationError(
                "bad-response",
                f"{source}: the page does not name the scheduler (RM older than 2.8); "
                "set scheduler.kind to capacity or fair",
            )
        m = page.metrics
        log.debug("REST unavailable (%s); observed %s", why, source)
        self.active_url = answered
        return Observation(
            time=now,
            scheduler=kind,
            pending_apps=m.pending_apps,
            running_apps=m.running_apps,
            memory_used_mb=m.memory_used_mb,
            memory_total_mb=m.memory_total_mb,
            vcores_used=m.vcores_used,
            vcores_total=m.vcores_total,
            source=source,
        )

    def _kind_at(self, base: str) -> SchedulerKind:
        try:
            doc, answered = self._get_json(base, SCHEDULER_PATH)
            kind = scheduler_kind_of(doc, f"{answered}{SCHEDULER_PATH}")
        except _RestUnavailable as exc:
            if not self.web_ui_fallback:
                raise ObservationError("http-error", f"{exc}; rm.web_ui_fallback is off") from exc
            page, answered = self._get_page(base)
            if page.scheduler is None:
                raise ObservationError(
                    "bad-response",
                    f"{exc}, and {answered}{WEBUI_PATH} does not name the scheduler",
                ) from exc
            kind = page.scheduler
        self.active_url = answered
        return kind
