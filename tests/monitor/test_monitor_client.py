"""RMClient over real HTTP on loopback: HA, redirects, fallbacks and failures."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from amtuner.config import RMSettings
from amtuner.model import SchedulerKind
from amtuner.monitor import ObservationError, RMClient, make_session
from amtuner.monitor.rest import build_observation
from tests.monitor.test_monitor_webqueues import before_3_1, with_row

DATA = Path(__file__).resolve().parents[1] / "data" / "monitor"
Reply = tuple[int, dict[str, str], bytes]
Route = Reply | Callable[[str], Reply]


def jsonr(doc: Any) -> Reply:
    return 200, {"Content-Type": "application/json"}, json.dumps(doc).encode()


def info(state: str) -> Reply:
    return jsonr({"clusterInfo": {"id": 1, "state": "STARTED", "haState": state}})


def data(name: str) -> bytes:
    return (DATA / name).read_bytes()


METRICS = (200, {"Content-Type": "application/json"}, data("cluster-metrics-3.3.json"))
SCHEDULER = (200, {"Content-Type": "application/json"}, data("scheduler-fair-am.json"))


class FakeRM:
    """A canned-response RM on 127.0.0.1; records every request path (with query)."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[str] = []
        self.accepts: list[str | None] = []
        rm = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                rm.requests.append(self.path)
                rm.accepts.append(self.headers.get("Accept"))
                route = rm.routes.get(urlsplit(self.path).path)
                reply = route(self.path) if callable(route) else route
                status, headers, body = reply or (404, {"Content-Type": "text/plain"}, b"no")
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def active(self) -> FakeRM:
        self.routes.update(
            {"/ws/v1/cluster/info": info("ACTIVE"), "/ws/v1/cluster/metrics": METRICS}
        )
        self.routes["/ws/v1/cluster/scheduler"] = SCHEDULER
        return self

    def standby_of(self, other: FakeRM) -> FakeRM:
        """Answers info itself (as a standby does) and 307s everything else to `other`."""

        def redirect(path_qs: str) -> Reply:
            location = other.url + path_qs
            body = f"This is standby RM. The redirect url is: {location}".encode()
            return 307, {"Location": location, "Content-Type": "text/plain"}, body

        self.routes = {p: redirect for p in ("/ws/v1/cluster/metrics", "/ws/v1/cluster/scheduler")}
        self.routes["/ws/v1/cluster/info"] = info("STANDBY")
        self.routes["/cluster"] = redirect
        return self

    def paths(self) -> list[str]:
        return [urlsplit(p).path for p in self.requests]


@pytest.fixture
def rm_factory() -> Iterator[Callable[[], FakeRM]]:
    servers: list[FakeRM] = []

    def make() -> FakeRM:
        servers.append(FakeRM())
        return servers[-1]

    yield make
    for s in servers:
        s.server.shutdown()
        s.server.server_close()


@pytest.fixture
def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def client(*urls: str, **kw: Any) -> RMClient:
    session = requests.Session()
    session.trust_env = False
    kw.setdefault("connect_timeout_s", 1.0)
    kw.setdefault("read_timeout_s", 2.0)
    return RMClient(urls, session, clock=lambda: 42.0, **kw)


def test_single_active_rm(rm_factory: Callable[[], FakeRM]) -> None:
    rm = rm_factory().active()
    c = client(rm.url + "/", user_name="amtuner")
    obs = c.observe(["root.prod.etl"])
    assert (obs.pending_apps, obs.running_apps, obs.memory_total_mb) == (3, 3, 16384)
    assert obs.scheduler is SchedulerKind.FAIR and obs.time == 42.0
    assert obs.am_memory_used_mb == 3072 and obs.source == f"rest {rm.url}"
    assert c.active_url == rm.url
    # Three fixed requests, never the apps list; simple auth rides on every one.
    assert rm.paths() == [
        "/ws/v1/cluster/info",
        "/ws/v1/cluster/metrics",
        "/ws/v1/cluster/scheduler",
    ]
    assert all(p.endswith("?user.name=amtuner") for p in rm.requests)
    assert set(rm.accepts) == {"application/json"}
    assert c.scheduler_kind() is SchedulerKind.FAIR


def test_active_preferred_over_standby_listed_first(rm_factory: Callable[[], FakeRM]) -> None:
    active = rm_factory().active()
    standby = rm_factory().standby_of(active)
    c = client(standby.url, active.url)
    assert c.observe().source == f"rest {active.url}"
    assert standby.paths() == ["/ws/v1/cluster/info"]
    # Next time the active RM is asked first and alone.
    standby.requests.clear()
    c.observe()
    assert standby.requests == [] and active.paths()[-3] == "/ws/v1/cluster/info"


def test_standby_redirect_followed_once_to_a_configured_peer(
    rm_factory: Callable[[], FakeRM],
) -> None:
    active = rm_factory().active()
    standby = rm_factory().standby_of(active)
    standby.routes["/ws/v1/cluster/info"] = info("ACTIVE")  # failed over since it said so
    c = client(standby.url, active.url, user_name="amtuner")
    obs = c.observe()
    assert obs.source == f"rest {active.url}" and c.active_url == active.url
    assert standby.paths() == ["/ws/v1/cluster/info", "/ws/v1/cluster/metrics"]
    assert active.paths() == ["/ws/v1/cluster/metrics", "/ws/v1/cluster/scheduler"]
    assert all(p.endswith("?user.name=amtuner") for p in active.requests)
    c.observe()
    assert active.paths()[2] == "/ws/v1/cluster/info" and len(standby.requests) == 2


def test_redirect_to_an_unconfigured_host_is_not_followed(
    rm_factory: Callable[[], FakeRM],
) -> None:
    """A standby's Location naming any RM not in rm.urls is reported, not followed: no request,
    no user.name and no credentials go to it."""
    elsewhere = rm_factory().active()
    standby = rm_factory().standby_of(elsewhere)
    c = client(standby.url, user_name="amtuner")
    with pytest.raises(ObservationError) as err:
        c.observe()
    assert err.value.reason == "standby" and "not one of the configured RMs" in err.value.message
    assert elsewhere.url in err.value.message
    assert elsewhere.requests == [] and c.active_url is None


def test_redirect_to_another_path_of_a_configured_host_is_not_followed(
    rm_factory: Callable[[], FakeRM],
) -> None:
    rm = rm_factory().active()
    standby = rm_factory()
    standby.routes["/ws/v1/cluster/info"] = info("ACTIVE")  # stale: asked first, then 307s
    location = f"{rm.url}/proxy/ws/v1/cluster/metrics"
    standby.routes["/ws/v1/cluster/metrics"] = (307, {"Location": location}, b"")
    with pytest.raises(ObservationError) as err:
        client(standby.url, rm.url).observe()
    assert err.value.reason == "standby" and location in err.value.message
    assert rm.requests == []


def test_get_json_follows_a_standby_with_the_query(rm_factory: Callable[[], FakeRM]) -> None:
    """`amtuner record`'s apps query, asked of a standby that still says ACTIVE: its 307 names
    the active RM's same path and query, and that is followed."""
    rm = rm_factory().active()
    apps = {"apps": {"app": [{"id": "application_1_0001"}]}}
    rm.routes["/ws/v1/cluster/apps"] = jsonr(apps)
    standby = rm_factory()
    standby.routes["/ws/v1/cluster/info"] = info("ACTIVE")
    query = "?states=FINISHED&finishedTimeBegin=5"
    location = f"{rm.url}/ws/v1/cluster/apps{query}"
    standby.routes["/ws/v1/cluster/apps"] = (307, {"Location": location}, b"")
    c = client(standby.url, rm.url)
    assert c.get_json("/cluster/apps" + query) == apps
    assert rm.requests[-1] == "/ws/v1/cluster/apps" + query and c.active_url == rm.url


def test_dead_url_first(rm_factory: Callable[[], FakeRM], dead_url: str) -> None:
    rm = rm_factory().active()
    c = client(dead_url, rm.url)
    assert c.observe().source == f"rest {rm.url}" and c.active_url == rm.url


def test_all_unreachable_names_every_url(dead_url: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        other = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(ObservationError) as err:
        client(dead_url, other).observe()
    assert err.value.reason == "rm-unreachable"
    assert dead_url in err.value.message and other in err.value.message
    # The socket's words, once per RM, without requests' and urllib3's wrappers.
    assert err.value.message.count(": Connection refused") == 2, err.value.message
    for noise in ("HTTPConnectionPool", "Max retries", "NewConnectionError", "object at 0x"):
        assert noise not in err.value.message


def test_silent_rm_times_out() -> None:
    with socket.socket() as sock:  # accepts connections into the backlog, never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with pytest.raises(ObservationError) as err:
            client(url, read_timeout_s=0.2).observe()
    assert err.value.reason == "timeout" and url in err.value.message


def test_rm_answering_an_error_is_reported_not_skipped(rm_factory: Callable[[], FakeRM]) -> None:
    broken = rm_factory().active()
    good = rm_factory().active()
    broken.routes["/ws/v1/cluster/metrics"] = lambda _: (503, {}, b"shutting down")
    with pytest.raises(ObservationError) as err:
        client(broken.url, good.url).observe()
    # An RM that answers with an error is not skipped silently: the operator sees the 503.
    assert err.value.reason == "http-error" and "503" in err.value.message


def test_rest_404_falls_back_to_web_ui(rm_factory: Callable[[], FakeRM]) -> None:
    rm = rm_factory()
    rm.routes["/cluster"] = (200, {"Content-Type": "text/html"}, data("cluster-3.3.html"))
    c = client(rm.url)
    obs = c.observe()
    assert obs.source == f"webui {rm.url}" and obs.scheduler is SchedulerKind.CAPACITY
    assert (obs.pending_apps, obs.memory_used_mb, obs.queues, obs.am_memory_used_mb) == (
        3,
        9216,
        (),
        None,
    )
    # A CapacityScheduler's leaves are asked of its scheduler page; a 404 there leaves the
    # observation the cluster's figures alone.
    assert rm.paths() == [
        "/ws/v1/cluster/info", "/ws/v1/cluster/metrics", "/cluster", "/cluster/scheduler"
    ]  # fmt: skip
    assert c.scheduler_kind() is SchedulerKind.CAPACITY
    with pytest.raises(ObservationError) as err:
        c.observe(["root.default"])
    assert err.value.reason == "unknown-queue" and "no per-queue figures" in err.value.message


@pytest.mark.parametrize(
    "scene", ["capacity", "capacity-user-am-limit", "fair", "fair-max-running-apps"]
)
def test_web_ui_names_the_waits_rest_names(
    rm_factory: Callable[[], FakeRM], scene: str
) -> None:
    """Hadoop 3.5.0's /cluster and /cluster/scheduler pages, recorded at the moment of its REST
    documents: the fallback finds the same leaf, users' rooms, share and waits as REST (a
    FairScheduler's page has no containers)."""
    here = DATA / "hadoop-3.5.0" / scene
    rest = build_observation(
        json.loads((here / "metrics.json").read_bytes()),
        json.loads((here / "scheduler.json").read_bytes()),
        time=0.0, source="rest",
    )  # fmt: skip
    rm = rm_factory()
    for path, name in (("/cluster", "cluster.html"), ("/cluster/scheduler", "scheduler.html")):
        rm.routes[path] = (200, {"Content-Type": "text/html"}, (here / name).read_bytes())
    obs = client(rm.url).observe(["root.default"])
    assert obs.source == f"webui {rm.url}" and obs.waits == rest.waits and obs.waits
    (leaf,), (expected,) = obs.queues, rest.queues
    figures = ("name", "pending_apps", "running_apps", "memory_used_mb", "am_memory_used_mb",
               "am_memory_limit_mb", "user_am_room_mb", "user_room_mb", "guarantee_mb",
               "memory_share_mb", "vcores_share")  # fmt: skip
    if obs.scheduler is SchedulerKind.CAPACITY:
        figures += ("containers",)
    assert obs.scheduler is rest.scheduler
    assert [getattr(leaf, f) for f in figures] == [getattr(expected, f) for f in figures]
    assert obs.am_memory_used_mb == rest.am_memory_used_mb
    with pytest.raises(ObservationError) as err:
        client(rm.url).observe(["root.nope"])
    assert err.value.reason == "unknown-queue"


def test_web_ui_scales_percent_capacities_by_the_cluster_page(
    rm_factory: Callable[[], FakeRM],
) -> None:
    """A CapacityScheduler page before 3.1 gives a leaf's guarantee and share only as its
    absolute capacities: the fallback takes them of the memory and vcores /cluster reports, as
    REST of totalMB and totalVirtualCores."""
    html = with_row(before_3_1("capacity"), "Absolute Configured Capacity:", "25.0%")
    html = with_row(html, "Absolute Configured Max Capacity:", "50.0%")
    page = (DATA / "hadoop-3.5.0" / "capacity" / "cluster.html").read_bytes()
    rm = rm_factory()
    rm.routes["/cluster"] = (200, {"Content-Type": "text/html"}, page)
    rm.routes["/cluster/scheduler"] = (200, {"Content-Type": "text/html"}, html.encode())
    obs = client(rm.url).observe()
    (leaf,) = obs.queues
    assert (obs.memory_total_mb, obs.vcores_total) == (16384, 16)
    assert (leaf.guarantee_mb, leaf.memory_share_mb, leaf.vcores_share) == (4096, 8192, 8)


def test_a_blocked_scheduler_page_is_warned_of_once(
    rm_factory: Callable[[], FakeRM], caplog: pytest.LogCaptureFixture
) -> None:
    """A proxy that lets /cluster through and blocks /cluster/scheduler must not fill the log
    with one line a cycle: a warning when the page is lost, one when it answers again, one
    more when it is lost again, and one when it fails otherwise (a page it cannot read)."""
    here = DATA / "hadoop-3.5.0" / "fair"
    page = (200, {"Content-Type": "text/html"}, (here / "scheduler.html").read_bytes())
    blocked = (403, {"Content-Type": "text/html"}, b"<html>Forbidden by policy</html>")
    rm = rm_factory()
    cluster = (here / "cluster.html").read_bytes()
    rm.routes["/cluster"] = (200, {"Content-Type": "text/html"}, cluster)
    c = client(rm.url)

    def cycles(reply: Reply, n: int) -> list[str]:
        rm.routes["/cluster/scheduler"] = reply
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="amtuner.monitor.client"):
            waits = [c.observe().waits for _ in range(n)]
        assert all(waits) if reply is page else not any(waits)
        return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]

    lost = cycles(blocked, 3)
    assert len(lost) == 1 and "no waits from the web UI" in lost[0] and "403" in lost[0]
    back = cycles(page, 3)
    assert len(back) == 1 and "answers again" in back[0]
    assert len(cycles(blocked, 2)) == 1
    unreadable = page[2].replace(b"&lt;memory:3072, vCores:3&gt;", b"3 GB")
    (other,) = cycles((200, page[1], unreadable), 2)
    assert "cannot read resource value" in other


def test_web_ui_through_standby_and_with_hint(rm_factory: Callable[[], FakeRM]) -> None:
    active = rm_factory()
    active.routes["/ws/v1/cluster/metrics"] = (403, {}, b"forbidden")
    active.routes["/cluster"] = (200, {"Content-Type": "text/html"}, data("cluster-2.7.html"))
    standby = rm_factory().standby_of(active)
    with pytest.raises(ObservationError, match=r"set scheduler\.kind"):
        client(standby.url, active.url).observe()
    obs = client(standby.url, active.url, scheduler_hint="fair").observe()
    assert obs.scheduler is SchedulerKind.FAIR and obs.source == f"webui {active.url}"
    assert (obs.pending_apps, obs.running_apps, obs.memory_total_mb) == (4, 2, 24576)


def test_fallback_off(rm_factory: Callable[[], FakeRM]) -> None:
    rm = rm_factory()
    with pytest.raises(ObservationError) as err:
        client(rm.url, web_ui_fallback=False).observe()
    assert err.value.reason == "http-error" and "web_ui_fallback is off" in err.value.message


LOGIN = b"<!DOCTYPE html><html><body><form>Knox SSO sign in</form></body></html>"


@pytest.mark.parametrize(
    ("reply", "reason", "words"),
    [
        ((401, {"WWW-Authenticate": "Negotiate"}, b""), "auth", "401"),
        ((500, {}, b"java.lang.NullPointerException"), "http-error", "NullPointerException"),
        ((200, {"Content-Type": "text/html"}, LOGIN), "bad-response", "HTML page"),
        ((200, {"Content-Type": "application/json"}, b'{"clusterMet'), "bad-response", "JSON"),
        ((200, {"Content-Type": "application/json"}, b"\xde\xad\xbe\xef"), "bad-response", "JSON"),
        (
            jsonr(
                {
                    "clusterMetrics": {
                        "appsPending": 0,
                        "appsRunning": 0,
                        "allocatedMB": 0,
                        "totalMB": 0,
                    }
                }
            ),
            "zero-total",
            "totalMB is 0",
        ),
    ],
)
def test_bad_metrics_answers(
    rm_factory: Callable[[], FakeRM], reply: Reply, reason: str, words: str
) -> None:
    rm = rm_factory().active()
    rm.routes["/ws/v1/cluster/metrics"] = reply
    c = client(rm.url)
    with pytest.raises(ObservationError) as err:
        c.observe()
    assert err.value.reason == reason and words in err.value.message
    assert c.active_url is None  # nothing answered usably


class RecordingSession(requests.Session):
    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[object] = []

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.timeouts.append(kwargs.get("timeout"))
        return super().request(*args, **kwargs)


def test_from_settings_timeouts_on_every_request(
    rm_factory: Callable[[], FakeRM], dead_url: str
) -> None:
    active = rm_factory().active()
    standby = rm_factory().standby_of(active)
    settings = RMSettings(
        urls=(dead_url, standby.url, active.url),
        connect_timeout_seconds=1.5,
        read_timeout_seconds=2.5,
    )
    session = RecordingSession()
    c = RMClient.from_settings(settings, session, clock=lambda: 1.0)
    c.observe()
    assert len(session.timeouts) == 5 and set(session.timeouts) == {(1.5, 2.5)}


def test_make_session(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("not parsed here")
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("not parsed here")
    key.write_text("not parsed here")
    s = make_session(RMSettings(verify=str(ca), client_cert=str(cert), client_key=str(key)))
    assert (s.verify, s.cert, s.trust_env) == (str(ca), (str(cert), str(key)), False)
    s = make_session(RMSettings(verify=True, insecure_skip_verify=True, user_name="yarn"))
    assert s.verify is False and s.params == {"user.name": "yarn"} and s.auth is None
    with pytest.raises(ObservationError, match="does not exist"):
        make_session(RMSettings(verify=str(tmp_path / "missing.pem")))


def test_make_session_kerberos_needs_the_extra() -> None:
    try:
        import requests_gssapi  # noqa: F401
    except ImportError:
        with pytest.raises(ObservationError) as err:
            make_session(RMSettings(kerberos=True))
        assert err.value.reason == "auth" and "amtuner[kerberos]" in err.value.message
    else:
        assert make_session(RMSettings(kerberos=True)).auth is not None


def searching(rm: FakeRM) -> Callable[[str], Reply]:
    """What ``RMWebAppFilter`` (Hadoop 2.x-3.5) answers on a standby that knows no active RM:
    307 with a ``Refresh`` header back to itself and no ``Location``."""

    def reply(path_qs: str) -> Reply:
        sep = "&" if "?" in path_qs else "?"
        headers = {
            "Refresh": f"3;url={rm.url}{path_qs}{sep}next.fresh.interval=1",
            "Content-Type": "text/plain;charset=utf-8",
        }
        body = (
            b"Can not find any active RM. Will retry in next 3 seconds.\n"
            b"HA Zookeeper Connection State: CONNECTED\n"
        )
        return 307, headers, body

    return reply


def test_no_active_rm_307_without_location_is_standby(rm_factory: Callable[[], FakeRM]) -> None:
    a, b = rm_factory(), rm_factory()
    for rm in (a, b):
        rm.routes = {
            "/ws/v1/cluster/info": info("STANDBY"),
            "/ws/v1/cluster/metrics": searching(rm),
        }
        rm.routes["/cluster"] = searching(rm)
    with pytest.raises(ObservationError) as err:
        client(a.url, b.url).observe()
    assert err.value.reason == "standby" and "Can not find any active RM" in err.value.message
    assert "without Location" in err.value.message and "next.fresh.interval" in err.value.message
    assert a.paths().count("/ws/v1/cluster/metrics") == 1 and "/cluster" not in a.paths()


def test_standby_self_redirect_is_a_loop(rm_factory: Callable[[], FakeRM]) -> None:
    """A standby whose Location names itself: followed once (it is configured), then a loop."""
    rm = rm_factory()

    def itself(path_qs: str) -> Reply:
        return 307, {"Location": f"{rm.url}{path_qs}"}, b"This is standby RM."

    rm.routes = {"/ws/v1/cluster/info": info("STANDBY"), "/ws/v1/cluster/metrics": itself}
    with pytest.raises(ObservationError) as err:
        client(rm.url).observe()
    assert err.value.reason == "standby" and "standby loop" in err.value.message
    assert rm.paths().count("/ws/v1/cluster/metrics") == 2


def test_non_307_redirect_is_not_followed(rm_factory: Callable[[], FakeRM]) -> None:
    rm = rm_factory().active()
    sso = "https://knox.example.com/gateway/knoxsso/api/v1/websso?originalUrl=x"
    rm.routes["/ws/v1/cluster/metrics"] = (302, {"Location": sso}, b"")
    with pytest.raises(ObservationError) as err:
        client(rm.url).observe()
    assert err.value.reason == "http-error" and "302 redirect to " + sso in err.value.message
    assert rm.paths()[-1] == "/ws/v1/cluster/metrics"


KNOX_REST = "/gateway/default/resourcemanager/v1"
KNOX_WEB = "/gateway/default/yarn"


def knox(rm: FakeRM) -> FakeRM:
    """Knox's RESOURCEMANAGER service maps .../resourcemanager/v1/cluster/* to /ws/v1/cluster/*
    and its YARNUI service .../yarn/* to the RM's web UI."""
    rm.routes = {
        f"{KNOX_REST}/cluster/info": info("ACTIVE"),
        f"{KNOX_REST}/cluster/metrics": METRICS,
        f"{KNOX_REST}/cluster/scheduler": SCHEDULER,
        f"{KNOX_WEB}/cluster": (200, {"Content-Type": "text/html"}, data("cluster-3.3.html")),
    }
    return rm


def test_url_naming_a_gateways_rest_base(rm_factory: Callable[[], FakeRM]) -> None:
    rm = knox(rm_factory())
    c = client(rm.url + KNOX_REST + "/")
    obs = c.observe(["root.prod.etl"])
    assert obs.source == f"rest {rm.url}{KNOX_REST}" and c.active_url == rm.url + KNOX_REST
    assert rm.paths() == [f"{KNOX_REST}/cluster/{p}" for p in ("info", "metrics", "scheduler")]
    assert c.scheduler_kind() is SchedulerKind.FAIR


def test_url_naming_the_rms_own_rest_base(rm_factory: Callable[[], FakeRM]) -> None:
    rm = rm_factory().active()
    rm.routes["/cluster"] = (200, {"Content-Type": "text/html"}, data("cluster-3.3.html"))
    c = client(rm.url + "/ws/v1")
    assert c.observe().source == f"rest {rm.url}/ws/v1"
    # Its web UI is the RM itself: the fallback reads /cluster there.
    del rm.routes["/ws/v1/cluster/metrics"]
    assert c.observe().source == f"webui {rm.url}"


def test_gateway_web_ui_fallback(rm_factory: Callable[[], FakeRM]) -> None:
    rm = knox(rm_factory())
    rm.routes[f"{KNOX_REST}/cluster/metrics"] = (403, {}, b"blocked by the topology's ACL")
    with pytest.raises(ObservationError) as err:
        client(rm.url + KNOX_REST).observe()
    assert err.value.reason == "auth" and "rm.web_ui_urls" in err.value.message
    obs = client(rm.url + KNOX_REST, web_ui_urls=[rm.url + KNOX_WEB]).observe()
    assert obs.source == f"webui {rm.url}{KNOX_WEB}" and obs.pending_apps == 3


def test_from_settings_reads_web_ui_urls(rm_factory: Callable[[], FakeRM]) -> None:
    rm = knox(rm_factory())
    rm.routes[f"{KNOX_REST}/cluster/metrics"] = (404, {}, b"no")
    settings = RMSettings(urls=(rm.url + KNOX_REST,), web_ui_urls=(rm.url + KNOX_WEB,))
    obs = RMClient.from_settings(settings, requests.Session()).observe()
    assert obs.source == f"webui {rm.url}{KNOX_WEB}"
