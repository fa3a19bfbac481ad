"""Talk to the ResourceManager (or its HA pair) over HTTP and hand back one `Observation`.

HA (yarn-facts §4.1): ``/ws/v1/cluster/info`` is never redirected by a standby, so its
``haState`` tells which RM is active without a redirect. The RM that answered last is asked first
next time, so a steady cluster costs one info request plus the two scrapes.

Redirects (``RMWebAppFilter``, Hadoop 2.x-3.5): a standby answers 307 with a ``Location`` on the
active RM, or, when it knows no active RM, 307 with a ``Refresh`` header and no ``Location``
("Can not find any active RM"); that is reported as ``standby``, not as an HTTP error. A 307 is
followed once and only to another configured RM (``rm.urls``, an HA peer), asked at its own
configured base; one that points anywhere else is reported, not followed, so no request (and no
``user.name``, SPNEGO token or client certificate) ever leaves the configured RMs. A second
redirect means no RM is active (failover in progress) and is ``standby`` too. Which RM answered
is remembered only as the first to probe next time: every observation re-reads ``haState``.

Time and size: every request of one observation shares one wall-clock deadline,
``rm.connect_timeout_seconds + rm.read_timeout_seconds`` (the figure ``amtuner run`` checks
against the period), and a body larger than `MAX_BODY_BYTES` is refused; how a transport keeps
to them is in `amtuner.monitor.transport`. How a GET reaches the RM is that collaborator (HTTP
with requests unless another is given); everything here (HA probing, redirects, status checks,
parsing) is the same for all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from http.cookiejar import DefaultCookiePolicy
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urljoin

import requests

from amtuner import __version__
from amtuner.config import RMEndpoint, RMSettings
from amtuner.config.settings import names_path
from amtuner.kerberos import EXTRA_MISSING, KerberosLogin, SpnegoAuth
from amtuner.model import GLOBAL_TARGET, Observation, QueueStats, SchedulerKind
from amtuner.monitor.rest import (
    INFO_PATH,
    METRICS_PATH,
    SCHEDULER_PATH,
    UNFINISHED_APPS_PATH,
    ObservationError,
    build_observation,
    check_targets,
    decode_json,
    scheduler_kind_of,
)
from amtuner.monitor.transport import (
    Answer,
    Budget,
    RequestsTransport,
    Transport,
    Unreachable,
    too_large,
)
from amtuner.monitor.waits import UnfinishedApp, classify, parse_unfinished_apps
from amtuner.safetext import shown

if TYPE_CHECKING:  # the fallback's HTML reader loads only when it is used
    from amtuner.monitor.webui import ClusterPage

log = logging.getLogger(__name__)

WEBUI_PATH = "/cluster"
MAX_BODY_BYTES = 32 * 1024 * 1024
"""Largest answer read from an RM. The biggest is the scheduler document: Hadoop 3.5.0's
CapacityScheduler writes about 8 KB per queue (16 KB for root and one leaf), so this holds some
thousands of queues; a larger answer is a misbehaving server or a gateway's error stream."""
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_T = TypeVar("_T")


def make_session(rm: RMSettings, login: KerberosLogin | None = None) -> requests.Session:
    """One session for every RM request: TLS, client certificate, simple auth and SPNEGO (as
    ``login``, by default the principal, keytab and cache of ``rm`` as they are).

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
    for key, path in (("client_cert", rm.client_cert), ("client_key", rm.client_key)):
        if path is not None and not Path(path).is_file():
            # requests would fail each request with a bare OSError; this cannot work at all.
            raise ObservationError("auth", f"rm.{key}: {path} does not exist or is not a file")
    if rm.client_cert:
        session.cert = (rm.client_cert, rm.client_key) if rm.client_key else rm.client_cert
    if rm.user_name:
        session.params = {"user.name": rm.user_name}
    if rm.kerberos:
        try:
            import requests_gssapi  # noqa: F401
        except ImportError as exc:
            raise ObservationError("auth", EXTRA_MISSING) from exc
        login = login or KerberosLogin(rm.principal, rm.keytab, rm.ticket_cache)
        problem = login.keytab_problem()
        if problem:  # a setting that cannot work, unlike a ticket that may come later
            raise ObservationError("auth", f"rm.keytab: {problem}")
        session.auth = SpnegoAuth(login)
        # Every request proves the ticket afresh (`SpnegoAuth`): no hadoop.auth cookie is kept.
        session.cookies.set_policy(DefaultCookiePolicy(allowed_domains=[]))
    return session


class _RestUnavailable(Exception):
    """The RM answered, but its REST API is blocked or disabled (403/404)."""

    def __init__(self, url: str, status: int) -> None:
        super().__init__(f"{url} answered HTTP {status}")
        self.status = status


class RMClient:
    """Observes one YARN cluster through the REST API of whichever RM is active."""

    def __init__(
        self,
        urls: Sequence[str | RMEndpoint],
        session: requests.Session | None = None,
        *,
        transport: Transport | None = None,
        connect_timeout_s: float = 3.0,
        read_timeout_s: float = 10.0,
        clock: Callable[[], float] = time.time,
        user_name: str | None = None,
        web_ui_fallback: bool = True,
        scheduler_hint: SchedulerKind | str | None = None,
        web_ui_urls: Sequence[str] = (),
        deadline_s: float | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        ha: bool = True,
    ) -> None:
        if not urls:
            raise ValueError("RMClient needs at least one RM URL")
        self.endpoints = tuple(RMEndpoint.of(u) if isinstance(u, str) else u for u in urls)
        self.urls = tuple(e.url for e in self.endpoints)
        self.web_ui_urls = tuple(u.rstrip("/") for u in web_ui_urls)
        if transport is None:
            if session is None:
                raise ValueError("RMClient needs a requests session or a transport")
            transport = RequestsTransport(session)
        self.transport = transport
        """How requests reach the RM: over HTTP with ``session`` unless one is given."""
        self.timeout = (connect_timeout_s, read_timeout_s)
        self.deadline_s = connect_timeout_s + read_timeout_s if deadline_s is None else deadline_s
        """Wall-clock budget of every request of one observation together."""
        self.max_body_bytes = max_body_bytes
        self.clock = clock
        self.user_name = user_name
        self.web_ui_fallback = web_ui_fallback
        self.scheduler_hint = (
            None if scheduler_hint in (None, "auto") else SchedulerKind(scheduler_hint)
        )
        """The kind to assume when only the web UI answers and its page does not name one."""
        self.ha = ha
        """False: a server with no HA state to probe (the MapReduce JobHistory server,
        `amtuner.jobhistory`), asked in the order given."""
        self.active_url: str | None = None
        self.scheduler_page_lost: str | None = None
        """Why the web UI's scheduler page last failed (an `ObservationError` reason), while it
        does: warned of once, not every cycle, until it answers again or fails otherwise."""
        self._deadline = time.monotonic() + self.deadline_s

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
            web_ui_urls=rm.web_ui_urls,
        )

    def observe(self, targets: Sequence[str] = ()) -> Observation:
        """P, R, memory and per-leaf-queue figures; raises ObservationError, never a partial."""
        wanted = tuple(targets)
        return self._on_active(lambda rm: self._observe_at(rm, wanted))

    def get_json(self, path: str) -> Any:
        """One REST document of the active RM (``/ws/v1/cluster/…`` with its query), with the
        observation's HA failover, deadline, size cap and authentication: what `amtuner record`
        reads. A REST API that is not there (403/404) is an ``http-error``: no web UI page
        holds these figures."""

        def at(rm: RMEndpoint) -> Any:
            try:
                doc, answered = self._get_json(rm, path)
            except _RestUnavailable as exc:
                raise ObservationError("http-error", str(exc)) from exc
            self._remember(answered)
            return doc

        return self._on_active(at)

    def unfinished_apps(self) -> tuple[UnfinishedApp, ...]:
        """The apps the RM has accepted and not finished (`UNFINISHED_APPS_PATH`): whose apps
        wait, where a FairScheduler's users' limits may hold some, and which hold their AM
        alone (`amtuner.monitor.idle`)."""
        return parse_unfinished_apps(self.get_json(UNFINISHED_APPS_PATH), UNFINISHED_APPS_PATH)

    def cancel(self) -> None:
        """End the requests in flight and refuse new ones: amtuner is stopping, and a request
        to a stuck RM must not hold the exit up until its deadline."""
        self.transport.cancel()

    def scheduler_kind(self) -> SchedulerKind:
        """What ``scheduler.kind: auto`` resolves to (the paper's detect()), read from the RM."""
        return self._on_active(self._kind_at)

    # HA: which RM to ask

    def _on_active(self, fn: Callable[[RMEndpoint], _T]) -> _T:
        self._deadline = time.monotonic() + self.deadline_s
        order = list(self.endpoints)
        if self.active_url:
            order.sort(key=lambda e: e.url != self.active_url)
        failures: list[str] = []
        reasons: set[str] = set()
        active: list[RMEndpoint] = []
        others: list[RMEndpoint] = []
        for i, rm in enumerate(order):
            try:
                state = self._ha_state(rm) if self.ha else "ACTIVE"
            except Unreachable as exc:
                failures.append(exc.detail)
                reasons.add(exc.reason)
                continue
            if state == "ACTIVE":
                active.append(rm)
                others.extend(order[i + 1 :])  # not probed: only tried if the active one fails
                break
            others.append(rm)
        for rm in active + others:
            try:
                return fn(rm)
            except Unreachable as exc:
                failures.append(exc.detail)
                reasons.add(exc.reason)
        reason = "timeout" if reasons == {"timeout"} else "rm-unreachable"
        raise ObservationError(reason, "no ResourceManager answered: " + "; ".join(failures))

    def _ha_state(self, rm: RMEndpoint) -> str:
        """``haState`` from the REST ``/cluster/info``, or UNKNOWN when the RM does not say."""
        resp = self._send(rm.rest + INFO_PATH, "application/json")
        if resp.status != 200:
            return "UNKNOWN"
        try:
            info = decode_json(resp.body, resp.headers.get("Content-Type", ""), resp.url)
        except ObservationError:
            return "UNKNOWN"
        cluster = info.get("clusterInfo") if isinstance(info, dict) else None
        state = cluster.get("haState") if isinstance(cluster, dict) else None
        return state if isinstance(state, str) else "UNKNOWN"

    # HTTP

    def _send(self, url: str, accept: str) -> Answer:
        """One GET through the transport, within what is left of the deadline and the cap."""
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise Unreachable(
                "timeout", f"{url}: not asked: the {self.deadline_s:g} s deadline had passed"
            )
        params = {"user.name": self.user_name} if self.user_name else None
        budget = Budget(self._deadline, self.deadline_s, self.timeout, self.max_body_bytes)
        answer = self.transport.get(url, accept, params, budget)
        if len(answer.body) > self.max_body_bytes:
            raise too_large(url, budget, "kept sending")
        return answer

    def _web_bases(self, rm: RMEndpoint) -> list[str]:
        if self.web_ui_urls:
            return list(self.web_ui_urls)
        return [rm.web] if rm.web else []

    def _peer(self, target: str, path: str, *, rest: bool) -> str | None:
        """The configured base a redirect target names, if it names one; never another host."""
        if rest:
            bases = [e.rest for e in self.endpoints]
        else:
            bases = [*self.web_ui_urls, *(e.web for e in self.endpoints if e.web)]
        return next((b for b in bases if names_path(target, b, path)), None)

    def _get(self, base: str, path: str, accept: str, *, rest: bool) -> tuple[Answer, str]:
        """GET base+path, following one standby redirect to a configured RM; returns the answer
        and the base that gave it."""
        url = base + path
        resp = self._send(url, accept)
        if resp.status not in _REDIRECTS:
            return resp, base
        location = resp.headers.get("Location")
        if not location:
            if resp.status == 307:
                raise ObservationError(
                    "standby",
                    f"{url}: a standby RM that knows of no active RM (HTTP 307 without "
                    f"Location, Refresh: {resp.headers.get('Refresh', '-')}): {resp.snippet()}",
                )
            return resp, base  # reported by _checked as the HTTP error it is
        target = urljoin(url, location)
        if resp.status != 307:
            # A standby RM only ever answers 307; anything else is a gateway (e.g. a 302 to an
            # SSO login page) or a scheme change, and credentials must not follow it blindly.
            raise ObservationError(
                "http-error",
                f"{url}: HTTP {resp.status} redirect to {target}, not a standby RM's 307 "
                "(a gateway's login page, or http:// where the RM wants https://?)",
            )
        peer = self._peer(target, path, rest=rest)
        if peer is None:
            raise ObservationError(
                "standby",
                f"{url}: a standby RM redirects to {target}, which is not one of the configured "
                f"RMs ({', '.join(self.urls)}); not followed: list the active RM in rm.urls",
            )
        log.info("%s redirected to %s (standby RM)", url, target)
        again = self._send(peer + path, accept)
        if again.status in _REDIRECTS:
            raise ObservationError(
                "standby",
                f"standby loop: {url} redirected to {target}, which redirected again to "
                f"{again.headers.get('Location', '(no Location)')} ({again.snippet()}); "
                "no active RM answered",
            )
        return again, peer

    def _checked(self, resp: Answer, *, rest: bool) -> Answer:
        if resp.status == 200:
            return resp
        if resp.status == 401:
            raise ObservationError(
                "auth",
                f"{resp.url}: HTTP 401 Unauthorized (Kerberos ticket expired, or simple auth "
                "needs rm.user_name?)",
            )
        if rest and resp.status in (403, 404):
            raise _RestUnavailable(resp.url, resp.status)
        label = "auth" if resp.status == 403 else "http-error"
        raise ObservationError(
            label, f"{resp.url}: HTTP {resp.status} {resp.reason}: {resp.snippet()}"
        )

    def _get_json(self, rm: RMEndpoint, path: str) -> tuple[Any, RMEndpoint]:
        resp, answered = self._get(rm.rest, path, "application/json", rest=True)
        self._checked(resp, rest=True)
        doc = decode_json(resp.body, resp.headers.get("Content-Type", ""), resp.url)
        return doc, next(e for e in self.endpoints if e.rest == answered)

    def _get_page(self, rm: RMEndpoint, why: Exception) -> tuple[ClusterPage, str]:
        """The /cluster page from the first web UI base that answers; returns it and its base."""
        from amtuner.monitor.webui import parse_cluster_page

        bases = self._web_bases(rm)
        if not bases:
            raise ObservationError(
                "auth" if isinstance(why, _RestUnavailable) and why.status == 403 else "http-error",
                f"{why}; no web UI is known for {rm.url} (a gateway's REST path): "
                "name one in rm.web_ui_urls",
            )
        failures: list[str] = []
        for base in bases:
            try:
                resp, answered = self._get(base, WEBUI_PATH, "text/html", rest=False)
            except Unreachable as exc:
                failures.append(exc.detail)
                continue
            self._checked(resp, rest=False)
            return parse_cluster_page(resp.body, resp.url), answered
        raise Unreachable("rm-unreachable", "; ".join(failures))

    def _remember(self, rm: RMEndpoint, web_base: str | None = None) -> None:
        """The RM to probe first next time: the configured entry that answered."""
        by_web = next((e for e in self.endpoints if web_base and e.web == web_base), None)
        self.active_url = (by_web or rm).url

    # What to read

    def _observe_at(self, rm: RMEndpoint, targets: tuple[str, ...]) -> Observation:
        now = self.clock()
        try:
            metrics, answered = self._get_json(rm, METRICS_PATH)
        except _RestUnavailable as exc:
            return self._observe_webui(rm, targets, now, exc)
        try:
            scheduler, answered = self._get_json(answered, SCHEDULER_PATH)
        except _RestUnavailable as exc:
            raise ObservationError("http-error", f"{exc} after the metrics answered") from exc
        source = shown(f"rest {answered.url}")
        obs = build_observation(metrics, scheduler, time=now, source=source, targets=targets)
        self._remember(answered)
        return obs

    def _observe_webui(
        self, rm: RMEndpoint, targets: tuple[str, ...], now: float, why: _RestUnavailable
    ) -> Observation:
        if not self.web_ui_fallback:
            raise ObservationError(
                "auth" if why.status == 403 else "http-error",
                f"{why}; the REST API is unavailable and rm.web_ui_fallback is off",
            )
        page, answered = self._get_page(rm, why)
        source = shown(f"webui {answered}")
        # The page names the scheduler the RM really runs; the hint only fills in for old pages.
        kind = page.scheduler or self.scheduler_hint
        if kind is None:
            raise ObservationError(
                "bad-response",
                f"{source}: the page does not name the scheduler (RM older than 2.8); "
                "set scheduler.kind to capacity or fair",
            )
        m = page.metrics
        leaves = self._web_leaves(answered, kind, m.memory_total_mb, m.vcores_total)
        named = [t for t in targets if t != GLOBAL_TARGET]
        if named and not leaves:
            raise ObservationError(
                "unknown-queue",
                f"{why}, and the web UI at {answered} has no per-queue figures for "
                f"{', '.join(named)}",
            )
        check_targets(named, leaves, source)
        log.debug("REST unavailable (%s); observed %s", why, source)
        self._remember(rm, answered)
        obs = Observation(
            time=now,
            scheduler=kind,
            pending_apps=m.pending_apps,
            running_apps=m.running_apps,
            memory_used_mb=m.memory_used_mb,
            memory_total_mb=m.memory_total_mb,
            vcores_used=m.vcores_used,
            vcores_total=m.vcores_total,
            am_memory_used_mb=sum(q.am_memory_used_mb or 0 for q in leaves) if leaves else None,
            queues=leaves,
            source=source,
        )
        return classify(obs) if leaves else obs

    def _web_leaves(
        self, base: str, kind: SchedulerKind, total_mb: int, total_vcores: int
    ) -> tuple[QueueStats, ...]:
        """The leaves from the scheduler's page, for the waits; () when that page cannot be
        had or read, and the observation is the cluster's figures alone, as before the page
        was read (the cycle goes on without the waits). ``total_mb``, ``total_vcores``: the
        cluster's the observation reports, of which an older CapacityScheduler page gives
        guarantees and shares in percent, as REST's are scaled by its metrics' totals."""
        from amtuner.monitor.webfair import parse_fair_page
        from amtuner.monitor.webqueues import SCHEDULER_PAGE_PATH, parse_capacity_page

        try:
            resp, _ = self._get(base, SCHEDULER_PAGE_PATH, "text/html", rest=False)
            self._checked(resp, rest=False)
            if kind is SchedulerKind.CAPACITY:
                leaves = parse_capacity_page(resp.body, resp.url, total_mb, total_vcores)
            else:
                leaves = parse_fair_page(resp.body, resp.url)
        except (ObservationError, Unreachable) as exc:
            if exc.reason == self.scheduler_page_lost:
                log.debug("still no waits from the web UI: %s", exc)
            else:
                log.warning("no waits from the web UI (said once while it lasts): %s", exc)
                self.scheduler_page_lost = exc.reason
            return ()
        if self.scheduler_page_lost is not None:
            log.warning("the web UI's scheduler page answers again: waits are named")
            self.scheduler_page_lost = None
        return leaves

    def _kind_at(self, rm: RMEndpoint) -> SchedulerKind:
        try:
            doc, answered = self._get_json(rm, SCHEDULER_PATH)
            kind = scheduler_kind_of(doc, f"{answered.rest}{SCHEDULER_PATH}")
            self._remember(answered)
        except _RestUnavailable as exc:
            if not self.web_ui_fallback:
                raise ObservationError("http-error", f"{exc}; rm.web_ui_fallback is off") from exc
            page, base = self._get_page(rm, exc)
            if page.scheduler is None:
                raise ObservationError(
                    "bad-response",
                    f"{exc}, and {base}{WEBUI_PATH} does not name the scheduler",
                ) from exc
            kind = page.scheduler
            self._remember(rm, base)
        return kind
