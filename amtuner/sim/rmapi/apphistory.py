"""A finished app's attempts and containers as the timeline server's generic application
history serves them (``AHSWebServices``): the simulated RM is its own timeline server, so
`amtuner record --timeline` is tested over HTTP (`amtuner.timeline`)."""

from __future__ import annotations

from typing import Any

from amtuner.sim.rmapi.face import FaceOptions
from amtuner.sim.view import AppView


def attempt_ids(app: AppView) -> tuple[str, str]:
    """Its one attempt's id and its AM container's, as the RM numbers them
    (``ApplicationAttemptId``, ``ContainerId``: the AM's is the attempt's first container)."""
    suffix = app.app_id.removeprefix("application_")
    return f"appattempt_{suffix}_000001", f"container_{suffix}_01_000001"


def app_attempts_info(app: AppView) -> dict[str, Any]:
    """A finished app's attempts as the timeline server's generic history answers
    (``AHSWebServices.getAppAttempts``: ``{"appAttempts": {"appAttempt": [AppAttemptInfo]}}``):
    the simulator runs one attempt per app; an AM that never started names no container."""
    attempt_id, am = attempt_ids(app)
    attempt: dict[str, Any] = {
        "appAttemptId": attempt_id,
        "host": "N/A",
        "rpcPort": -1,
        "trackingUrl": f"http://localhost:8088/proxy/{app.app_id}/",
        "originalTrackingUrl": "N/A",
        "diagnosticsInfo": "",
        "appAttemptState": app.state,
    }
    if app.started_s is not None:
        attempt["amContainerId"] = am
    return {"appAttempts": {"appAttempt": [attempt]}}


def containers_info(app: AppView, options: FaceOptions) -> dict[str, Any]:
    """A finished app's containers as the timeline server's generic history answers
    (``AHSWebServices.getContainers``: ``{"containers": {"container": [ContainerInfo]}}``): its
    AM's, from its start to its end, and one per task of its spec over its runs, of the size the
    RM allocates, lasting the spec's time alone on an idle node from the AM's start-up on, as
    the JobHistory face (`job_info`) reports them: the simulator keeps no container's own
    times, so a task's wait for its maps or for a node it shared is not in them."""
    suffix = app.app_id.removeprefix("application_")

    def ms(t: float) -> int:
        return options.started_on_ms + round(t * 1000)

    def container(n: int, mb: int, vcores: int, start_s: float, end_s: float) -> dict[str, Any]:
        cid = f"container_{suffix}_01_{n:06d}"
        return {
            "containerId": cid,
            "allocatedMB": mb,
            "allocatedVCores": vcores,
            "assignedNodeId": "N/A",
            "priority": 0 if n == 1 else 20,
            "startedTime": ms(start_s),
            "finishedTime": ms(end_s),
            "elapsedTime": round((end_s - start_s) * 1000),
            "diagnosticsInfo": "",
            "logUrl": "N/A",
            "containerExitStatus": 0,
            "containerState": "COMPLETE",
            "nodeHttpAddress": "N/A",
        }

    if app.started_s is None:
        return {"containers": None}
    end_s = app.finished_s if app.finished_s is not None else app.started_s
    out = [container(1, app.am_container_mb, app.am_vcores, app.started_s, end_s)]
    begin_s = app.started_s + app.am_startup_s
    for count, mb, vcores, duration_s in app.task_groups:
        for _ in range(count):
            out.append(container(len(out) + 1, mb, vcores, begin_s, begin_s + duration_s))
    return {"containers": {"container": out}}
