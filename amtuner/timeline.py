"""A finished app's task containers as YARN's generic application history tells them (the
timeline server's ``ApplicationHistoryServer``, timeline service v1 and v1.5), for
`amtuner record`: what the RM's apps API does not report, for any framework.

The RM publishes every app, attempt and container to the timeline store when
``yarn.timeline-service.enabled`` and ``yarn.resourcemanager.system-metrics-publisher.enabled``
are set (``TimelineServiceV1Publisher``; the containers other than the AM's only while
``yarn.timeline-service.generic-application-history.save-non-am-container-meta-info`` is
true, its default), and the server answers for them (``AHSWebServices``). Two bounded requests
per app, through the monitor's client as for the JobHistory server (`amtuner.jobhistory`):

* ``GET /ws/v1/applicationhistory/apps/{app id}/appattempts``: the attempts, of which the last
  (the one that ended the app) names its AM container, ``amContainerId``;
* ``GET …/appattempts/{attempt id}/containers``: that attempt's containers, each with
  ``allocatedMB``, ``allocatedVCores``, ``startedTime`` and ``finishedTime``
  (``ContainerInfo``; -1 where the store lacks the size).

Every container but the AM's is a task: the recorder keeps how many, their mean size and their
mean life. A container's ``startedTime`` is when the RM created it (``YARN_CONTAINER_CREATED``,
the allocation), its ``finishedTime`` when it completed, so the life is what it held its
resources for, launch and wait for its AM included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from amtuner.monitor import RMClient

APPS_PATH = "/applicationhistory/apps/"
"""Below the server's REST base (``…/ws/v1``, `amtuner.config.RMEndpoint`)."""
FIELDS = ("tasks", "task_mb", "task_vcores", "task_ms")
"""The app trace's names of the figures kept (`amtuner.apptrace`)."""


class TimelineDocumentError(ValueError):
    """A timeline server's answer that is not the attempts or containers document asked for."""


def collection(doc: Any, outers: tuple[str, ...], inner: str) -> list[Any]:
    """The items of a collection document, in each shape Hadoop answers: ``{outer: {inner:
    [...]}}`` (JAXB's names: ``AHSWebServices`` as Hadoop's ``TestAHSWebServices`` reads it;
    one item may come as an object, none as null), ``{outer: [...]}`` (Hadoop 3.5.0's Jersey 2
    answers so too, under the Java field's name: ``attempts``; which of the two a server gives
    is fixed when it starts), or ``{inner: [...]}`` as the Timeline Server's REST documentation
    prints it."""
    if not isinstance(doc, Mapping):
        raise TimelineDocumentError(f"not a JSON object: {str(doc)[:200]}")
    outer = next((key for key in outers if key in doc), None)
    if outer is not None:
        body = doc[outer]
        if body is None or body == {}:
            return []
        if isinstance(body, list):
            return body
    elif inner in doc:
        body = doc
    else:
        raise TimelineDocumentError(f"not an {outers[0]} document: {str(doc)[:200]}")
    items = body.get(inner) if isinstance(body, Mapping) else None
    if isinstance(items, Mapping):
        return [items]
    if not isinstance(items, list):
        raise TimelineDocumentError(f"{outers[0]}.{inner} is not a list: {str(items)[:200]}")
    return items


def last_attempt(doc: Any, app_id: str) -> tuple[str, str]:
    """The id and AM container id of the last attempt of an ``appAttempts`` document; raises
    TimelineDocumentError for none, another app's, or one that names no AM container."""
    listed = collection(doc, ("appAttempts", "attempts"), "appAttempt")
    attempts = [a for a in listed if isinstance(a, Mapping)]
    if not attempts:
        raise TimelineDocumentError(f"{app_id}: no attempt")
    attempt = max(attempts, key=lambda a: str(a.get("appAttemptId")))
    attempt_id, am = attempt.get("appAttemptId"), attempt.get("amContainerId")
    suffix = app_id.removeprefix("application_")
    if not isinstance(attempt_id, str) or not attempt_id.startswith(f"appattempt_{suffix}_"):
        raise TimelineDocumentError(f"{app_id}: the attempt {attempt_id!r} is not its own")
    if not isinstance(am, str) or not am:
        raise TimelineDocumentError(f"{attempt_id}: no amContainerId")
    return attempt_id, am


def _number(container: Mapping[str, Any], key: str) -> int:
    value = container.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TimelineDocumentError(
            f"container {container.get('containerId')!r}: {key} is not a number: {value!r}"
        )
    return value


def _mean(values: list[int]) -> int | None:
    return round(sum(values) / len(values)) if values else None


def task_figures(doc: Any, am_container_id: str) -> dict[str, int | None]:
    """Of a ``containers`` document, the containers other than ``am_container_id``: how many,
    and the mean of their ``allocatedMB``, ``allocatedVCores`` and life (``finishedTime -
    startedTime``), each over the containers that report it (a size of -1, a container not
    finished: left out), rounded; ``am_memory_mb`` too where the AM container is listed with
    its size. Raises TimelineDocumentError for another document or a figure not a number."""
    containers = collection(doc, ("containers",), "container")
    tasks, am_mb = [], None
    for c in containers:
        if not isinstance(c, Mapping) or not isinstance(c.get("containerId"), str):
            raise TimelineDocumentError(f"not a container: {str(c)[:200]}")
        if c["containerId"] == am_container_id:
            am_mb = _number(c, "allocatedMB")
        else:
            tasks.append(c)
    mbs = [m for m in (_number(c, "allocatedMB") for c in tasks) if m > 0]
    vcores = [v for v in (_number(c, "allocatedVCores") for c in tasks) if v > 0]
    lives = []
    for c in tasks:
        start, end = _number(c, "startedTime"), _number(c, "finishedTime")
        if 0 < start <= end:
            lives.append(end - start)
    figures: dict[str, int | None] = {
        "tasks": len(tasks), "task_mb": _mean(mbs), "task_vcores": _mean(vcores),
        "task_ms": _mean(lives),
    }  # fmt: skip
    if am_mb is not None and am_mb > 0:
        figures["am_memory_mb"] = am_mb
    return figures


def fetch(client: RMClient, app_id: str) -> dict[str, int | None]:
    """`task_figures` of one app's last attempt, asked of the timeline server (two requests).
    Raises ObservationError as `RMClient.get_json` does (a 404, the server not knowing the app,
    is an ``http-error``) and TimelineDocumentError."""
    attempts = APPS_PATH + app_id + "/appattempts"
    attempt_id, am = last_attempt(client.get_json(attempts), app_id)
    return task_figures(client.get_json(f"{attempts}/{attempt_id}/containers"), am)
