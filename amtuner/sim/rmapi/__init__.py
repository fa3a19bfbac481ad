"""The simulated RM's face: a snapshot rendered as a real ResourceManager's REST API and web UI.

The rendering functions are pure (a `ClusterView` / `AppView` in, JSON-ready dicts or HTML out)
so they can be checked field by field against real RM responses. `handle` dispatches one HTTP
request; the HTTP server (`server.py`) and the in-process requests adapter (`adapter.py`) both
call it, holding their lock around it, so a monitor sees the same bytes either way.

Modules:

* `face` — `FaceOptions` (how this RM presents itself), `Response` and the content types;
* `rest` — the REST documents (``/ws/v1/cluster/info``, ``metrics``, ``scheduler``, ``apps``),
  and a finished app's job and its configuration as the MapReduce JobHistory server serves them
  (``/ws/v1/history/mapreduce/jobs/{job id}``, ``…/{job id}/conf``, and the server's own
  ``/ws/v1/history/info``: the simulated RM is its own JobHistory server);
* `apphistory` — a finished app's attempts and containers as the timeline server's generic
  history serves them
  (``/ws/v1/applicationhistory/apps/{app id}/appattempts[/{attempt id}/containers]``: the
  simulated RM is its own timeline server too);
* `webui` — the web UI pages (``/cluster``, ``/cluster/cluster``) in the 3.3 or 3.4 layout;
* `store` — the CapacityScheduler's mutable configuration store (``scheduler-conf``);
* this module — request routing (`handle`), the apps query, standby redirects and the refresh
  endpoint below.

One endpoint is the simulator's own, standing in for ``yarn rmadmin -refreshQueues`` (the admin
RPC has no HTTP equivalent): ``POST /ws/v1/cluster/sim/refresh-queues`` re-reads the scheduler
file from disk. CapacityScheduler: a bad file answers 400 with the reason and the old
configuration stays. FairScheduler: like the real RM it logs the failure and still answers 200
(yarn-facts §2.3). With a mutable configuration store it is refused, as the RM refuses
refreshQueues then (§3.5).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from amtuner.model import SchedulerKind
from amtuner.sim.rmapi.apphistory import app_attempts_info, attempt_ids, containers_info
from amtuner.sim.rmapi.face import (
    DEFAULT_APPS_LIMIT,
    HTML_TYPE,
    JSON_TYPE,
    TEXT_TYPE,
    XML_TYPE,
    FaceOptions,
    Response,
    WebUILayout,
    html_response,
    json_response,
    text_response,
)
from amtuner.sim.rmapi.rest import (
    app_info,
    apps_info,
    cluster_info,
    cluster_metrics,
    history_info,
    job_conf,
    job_info,
    nodes_info,
    scheduler_info,
)
from amtuner.sim.rmapi.schedpage import scheduler_page
from amtuner.sim.rmapi.store import (
    ConfUpdateError,
    apply_sched_conf,
    conf_document,
    conf_properties,
)
from amtuner.sim.rmapi.webui import byte_desc, cluster_page, metrics_overview
from amtuner.sim.view import AppView, ClusterView, NodeView

__all__ = [
    "APP_STATES",
    "DEFAULT_APPS_LIMIT",
    "HTML_TYPE",
    "JSON_TYPE",
    "MUTABLE_NO_REFRESH",
    "NOT_MUTABLE",
    "REFRESH_PATH",
    "TEXT_TYPE",
    "XML_TYPE",
    "ConfUpdateError",
    "FaceOptions",
    "Response",
    "SimLike",
    "WebUILayout",
    "app_info",
    "apply_sched_conf",
    "apps_info",
    "byte_desc",
    "cluster_info",
    "cluster_metrics",
    "cluster_page",
    "conf_document",
    "conf_properties",
    "handle",
    "history_info",
    "job_conf",
    "job_info",
    "metrics_overview",
    "path_and_query",
    "refresh_queues",
    "remote_exception",
    "scheduler_info",
    "scheduler_page",
]

log = logging.getLogger(__name__)

APP_STATES = (
    "NEW",
    "NEW_SAVING",
    "SUBMITTED",
    "ACCEPTED",
    "RUNNING",
    "FINISHED",
    "FAILED",
    "KILLED",
)
NOT_MUTABLE = "Configuration change only supported by MutableConfScheduler."
MUTABLE_NO_REFRESH = (
    "Scheduler configuration is mutable. refreshQueues is not allowed in this scenario."
)
REFRESH_PATH = "/ws/v1/cluster/sim/refresh-queues"
JOBS_PATH = "/ws/v1/history/mapreduce/jobs/"
HISTORY_APPS_PATH = "/ws/v1/applicationhistory/apps/"
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


class SimLike(Protocol):
    """What the face needs of a simulation (`amtuner.sim.simulation.Simulation` provides it)."""

    scheduler_kind: SchedulerKind

    def view(self) -> ClusterView: ...

    def node_views(self) -> list[NodeView]: ...

    def app_views(
        self, states: Collection[str] | None = None, limit: int | None = None
    ) -> list[AppView]: ...

    def scheduler_config(self) -> bytes: ...

    def reload_scheduler_config(self, data: bytes) -> None: ...


def remote_exception(status: int, exception: str, message: str) -> Response:
    """The RM's error body (`RemoteExceptionData`)."""
    doc = {
        "RemoteException": {
            "exception": exception,
            "message": message,
            "javaClassName": f"org.apache.hadoop.yarn.webapp.{exception}",
        }
    }
    return json_response(status, doc)


def _not_found(path: str) -> Response:
    return remote_exception(
        404, "NotFoundException", f"java.lang.Exception: Path not found: {path}"
    )


def _bad_request(message: str) -> Response:
    return remote_exception(400, "BadRequestException", message)


def _apps(sim: SimLike, query: Mapping[str, list[str]], options: FaceOptions) -> Response:
    states: set[str] = set()
    for raw in query.get("states", []) + query.get("state", []):
        states.update(s.strip().upper() for s in raw.split(",") if s.strip())
    bad = sorted(states - set(APP_STATES))
    if bad:
        return _bad_request(
            f"Invalid application-state {bad[0]} specified. It should be one of "
            + ", ".join(APP_STATES)
        )
    try:
        limit = int(query["limit"][0]) if "limit" in query else options.apps_limit
    except ValueError:
        return _bad_request(f"limit value must be a number: {query['limit'][0]}")
    if limit <= 0:
        return _bad_request("limit value must be greater then 0")  # sic, the RM's wording
    limit = min(limit, options.apps_limit)
    queue = query.get("queue", [None])[0]
    user = query.get("user", [None])[0]
    window = _time_window(query, "finishedTime")
    if isinstance(window, Response):
        return window
    filtered = queue is not None or user is not None or window is not None
    apps = sim.app_views(sorted(states) or None, None if filtered else limit)
    if filtered:

        def finished_ms(a: AppView) -> int:
            return 0 if a.finished_s is None else options.started_on_ms + round(a.finished_s * 1000)

        apps = [
            a
            for a in apps
            if (queue is None or a.queue in (queue, f"root.{queue}"))
            and (user is None or a.user == user)
            and (window is None or window[0] <= finished_ms(a) <= window[1])
        ][:limit]
    return json_response(200, apps_info(apps, sim.view(), options))


def _time_window(query: Mapping[str, list[str]], field: str) -> tuple[int, int] | Response | None:
    """``{field}Begin``/``{field}End`` (epoch ms, both ends included) as RMWebServices reads
    them: a number >= 0 each, begin <= end; None when neither is given."""
    begin_raw = query.get(f"{field}Begin", [None])[0]
    end_raw = query.get(f"{field}End", [None])[0]
    if begin_raw is None and end_raw is None:
        return None
    bounds = []
    for name, raw, default in (("Begin", begin_raw, 0), ("End", end_raw, 2**63 - 1)):
        try:
            value = default if raw is None else int(raw)
        except ValueError:
            return _bad_request(f"{field}{name} value must be a number: {raw}")
        if value < 0:
            return _bad_request(f"{field}{name} must be greater than 0")
        bounds.append(value)
    if bounds[0] > bounds[1]:
        return _bad_request(f"{field}End must be greater than {field}Begin")
    return bounds[0], bounds[1]


def _job(sim: SimLike, path: str, options: FaceOptions) -> Response:
    """A finished app's job or its configuration (``…/conf``), as the JobHistory server
    answers: 404 with its message for a job it does not hold
    (``AMWebServices.getJobFromJobIdString``), a running one included."""
    jid, _, doc = path.removeprefix(JOBS_PATH).partition("/")
    app_id = "application_" + jid.removeprefix("job_")
    found = [a for a in sim.app_views(FINAL_STATES) if a.app_id == app_id]
    if not jid.startswith("job_") or not found:
        return remote_exception(404, "NotFoundException", f"job, {jid}, is not found")
    render = job_conf if doc == "conf" else job_info
    return json_response(200, render(found[0], options))


def _app_history(sim: SimLike, route: str, path: str, options: FaceOptions) -> Response:
    """A finished app's attempts or its attempt's containers, as the timeline server's generic
    history answers: 404 for an app it does not hold (a running one included: the simulated RM
    publishes an app when it ends) or an attempt not its own."""
    app_id, _, rest = path.removeprefix(HISTORY_APPS_PATH).partition("/")
    found = [a for a in sim.app_views(FINAL_STATES) if a.app_id == app_id]
    if not found:
        return remote_exception(404, "NotFoundException", f"app with id: {app_id} not found")
    if route == "attempts":
        return json_response(200, app_attempts_info(found[0]))
    attempt_id = rest.removeprefix("appattempts/").removesuffix("/containers")
    if attempt_id != attempt_ids(found[0])[0]:
        return remote_exception(
            404, "NotFoundException", f"appattempt with id: {attempt_id} not found"
        )
    return json_response(200, containers_info(found[0], options))


def _redirect(location_base: str, path_qs: str) -> Response:
    url = location_base.rstrip("/") + path_qs
    return Response(
        307,
        {"Location": url, "Content-Type": TEXT_TYPE},
        f"This is standby RM. The redirect url is: {url}".encode(),
    )


def _scheduler_conf(
    sim: SimLike,
    kind: str,
    method: str,
    body: bytes,
    headers: Mapping[str, str],
    options: FaceOptions,
) -> Response:
    if kind != "capacity" or not options.mutable_conf:
        return text_response(400, NOT_MUTABLE)
    if method == "PUT" and "json" in headers.get("content-type", ""):
        return text_response(
            415, "The simulated RM accepts sched-conf updates as application/xml only."
        )
    try:
        if method == "GET":
            props = conf_properties(sim.scheduler_config())
            return conf_document(props, headers.get("accept", ""))
        new = apply_sched_conf(sim.scheduler_config(), body)
        sim.reload_scheduler_config(new)
    except ValueError as e:  # ConfUpdateError, SchedulerConfigError
        log.warning("scheduler-conf update refused: %s", e)
        return text_response(400, str(e))
    log.info("scheduler-conf update applied")
    return text_response(200, "Configuration change successfully applied.")


def refresh_queues(sim: SimLike, kind: str, options: FaceOptions) -> Response:
    """The `yarn rmadmin -refreshQueues` stand-in (see the module docstring)."""
    if options.mutable_conf:
        return text_response(400, MUTABLE_NO_REFRESH)
    path = options.scheduler_config_path
    if path is None:
        return text_response(
            400, "This simulated RM has no scheduler configuration file to refresh."
        )
    try:
        data = path.read_bytes()
        sim.reload_scheduler_config(data)
    except (OSError, ValueError) as e:
        if kind == "fair":
            log.error("Failed to reload allocations file %s: %s", path, e)
            return text_response(200, "Queues refreshed.")
        log.warning("refreshQueues failed, keeping the previous configuration: %s", e)
        return text_response(400, f"Failed to re-init queues : {e}")
    log.info("refreshQueues: reloaded %s", path)
    return text_response(200, "Queues refreshed.")


_ROUTES: dict[str, str] = {
    "/ws/v1/cluster": "info",
    "/ws/v1/cluster/info": "info",
    "/ws/v1/cluster/metrics": "metrics",
    "/ws/v1/cluster/scheduler": "scheduler",
    "/ws/v1/cluster/apps": "apps",
    "/ws/v1/cluster/nodes": "nodes",
    "/ws/v1/cluster/scheduler-conf": "conf",
    "/ws/v1/history": "history",
    "/ws/v1/history/info": "history",
    REFRESH_PATH: "refresh",
    "/": "page",
    "/cluster": "page",
    "/cluster/apps": "page",
    "/cluster/scheduler": "scheduler-page",
    "/cluster/nodes": "page",
    "/cluster/cluster": "about",
    "/isActive": "isactive",
}
_METHODS: dict[str, tuple[str, ...]] = {"conf": ("GET", "PUT"), "refresh": ("POST",)}
_DEFAULT_OPTIONS = FaceOptions()


def _document(
    sim: SimLike, route: str, path: str, query: str, options: FaceOptions
) -> Response:
    """The REST documents a GET reads."""
    match route:
        case "info":
            return json_response(200, cluster_info(sim.view(), options))
        case "metrics":
            return json_response(200, cluster_metrics(sim.view()))
        case "scheduler":
            return json_response(200, scheduler_info(sim.view()))
        case "nodes":
            return json_response(200, nodes_info(sim.node_views(), options))
        case "apps":
            return _apps(sim, parse_qs(query), options)
        case "history":
            return json_response(200, history_info(options))
        case "attempts" | "containers":
            return _app_history(sim, route, path, options)
        case _:
            return _job(sim, path, options)


def _route(path: str) -> str | None:
    jid, slash, doc = path.removeprefix(JOBS_PATH).partition("/")
    if path.startswith(JOBS_PATH) and jid and (not slash or doc == "conf"):
        return "job"
    if path.startswith(HISTORY_APPS_PATH):
        parts = path.removeprefix(HISTORY_APPS_PATH).split("/")
        if len(parts) == 2 and parts[1] == "appattempts":
            return "attempts"
        if len(parts) == 4 and parts[1] == "appattempts" and parts[3] == "containers":
            return "containers"
    return _ROUTES.get(path)


def path_and_query(url: str) -> str:
    """The request target `handle` takes (``/ws/v1/...?a=b``) from a whole URL."""
    split = urlsplit(url)
    return (split.path or "/") + ("?" + split.query if split.query else "")


def handle(
    sim: SimLike,
    method: str,
    path_qs: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    options: FaceOptions = _DEFAULT_OPTIONS,
) -> Response:
    """Answer one request as the RM would. The caller holds the simulation's lock."""
    split = urlsplit(path_qs)
    path = split.path.rstrip("/") or "/"
    route = _route(path)
    redirected = path.startswith(("/ws/", "/cluster")) or path == "/"
    if options.standby_of and redirected and route not in ("info", "about", "isactive"):
        return _redirect(options.standby_of, path_qs)
    if route is None:
        if path.startswith("/ws/"):
            return _not_found(path)
        return Response(404, {"Content-Type": TEXT_TYPE}, b"Not Found")
    method = method.upper()
    allowed = _METHODS.get(route, ("GET", "HEAD"))
    if method not in allowed:
        return Response(
            405, {"Allow": ", ".join(allowed), "Content-Type": TEXT_TYPE}, b"Method Not Allowed"
        )
    lower = {k.lower(): v for k, v in headers.items()}
    kind = str(sim.scheduler_kind)
    match route:
        case "info" | "metrics" | "scheduler" | "nodes" | "apps" | "job" | "history" | (
            "attempts" | "containers"
        ):
            response = _document(sim, route, path, split.query, options)
        case "page" | "about":
            response = html_response(cluster_page(sim.view(), options, about=route == "about"))
        case "scheduler-page":
            response = html_response(scheduler_page(sim.view(), options))
        case "isactive":
            active = options.standby_of is None
            response = (
                text_response(200, "I am Active!")
                if active
                else text_response(405, "I am not Active!")
            )
        case "conf":
            return _scheduler_conf(sim, kind, method, body, lower, options)
        case _:
            return refresh_queues(sim, kind, options)
    if method == "HEAD":
        return Response(response.status, response.headers, b"")
    return response
