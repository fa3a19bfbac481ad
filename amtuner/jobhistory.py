"""A finished MapReduce app's tasks as the MapReduce JobHistory server tells them, for
`amtuner record`: what the RM's apps API does not report.

One bounded request per app, ``GET /ws/v1/history/mapreduce/jobs/{job id}`` (Hadoop's
``HsWebServices.getJob``; the job id is the application id with ``application_`` read as
``job_``, as ``TypeConverter.toYarn`` maps them), through the monitor's client: the deadline,
the size cap, TLS, Kerberos and ``user.name`` of the config's ``rm`` section, without the RM's HA
probe (`RMClient.ha`). Of its ``job`` object (``JobInfo``) the recorder keeps ``mapsTotal``,
``reducesTotal`` and the average times, in ms, over the successful attempts
(``JobInfo.countTasksAndAttempts``): ``avgMapTime`` a map's launch to finish; for a reduce,
``avgShuffleTime`` launch to shuffle finish, ``avgMergeTime`` shuffle to sort finish,
``avgReduceTime`` sort finish to finish, so a reduce lasted their sum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import requests

    from amtuner.config import RMSettings
    from amtuner.monitor import RMClient

JOB_PATH = "/history/mapreduce/jobs/"
"""Below the server's REST base (``…/ws/v1``, `amtuner.config.RMEndpoint`)."""
FIELDS = {
    "maps": "mapsTotal",
    "reduces": "reducesTotal",
    "map_ms": "avgMapTime",
    "shuffle_ms": "avgShuffleTime",
    "merge_ms": "avgMergeTime",
    "reduce_ms": "avgReduceTime",
}
"""The app trace's name of each figure kept (`amtuner.apptrace`), and ``JobInfo``'s."""


class JobDocumentError(ValueError):
    """A JobHistory answer that is not a job document with the figures kept."""


def job_id(app_id: str) -> str | None:
    """``job_<cluster>_<seq>`` of ``application_<cluster>_<seq>``; None for another id."""
    prefix = "application_"
    return "job_" + app_id[len(prefix) :] if app_id.startswith(prefix) else None


def job_figures(doc: Any, expected_id: str) -> dict[str, int] | None:
    """The figures of a ``{"job": JobInfo}`` document, under the trace's names; None for an
    uber job (``uberized``: its tasks ran inside its AM, in no container of their own). Raises
    JobDocumentError for another document, another job, or a figure that is not a whole number
    >= 0."""
    job = doc.get("job") if isinstance(doc, Mapping) else None
    if not isinstance(job, Mapping):
        raise JobDocumentError(f"not a job document: {str(doc)[:200]}")
    if job.get("id") != expected_id:
        raise JobDocumentError(f"the document is of job {job.get('id')!r}, not {expected_id}")
    if job.get("uberized") is True:
        return None
    out = {}
    for name, key in FIELDS.items():
        value = job.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise JobDocumentError(f"job {expected_id}: {key} is not a count or ms: {value!r}")
        out[name] = value
    return out


def history_client(rm: RMSettings, urls: Sequence[str], session: requests.Session) -> RMClient:
    """The JobHistory servers of ``urls`` asked as the RM is, in the order given."""
    from amtuner.monitor import RMClient

    return RMClient(
        urls,
        session,
        connect_timeout_s=rm.connect_timeout_seconds,
        read_timeout_s=rm.read_timeout_seconds,
        user_name=rm.user_name,
        web_ui_fallback=False,
        ha=False,
    )


def fetch(client: RMClient, app_id: str) -> dict[str, int] | None:
    """`job_figures` of one app, asked of the JobHistory server. None for an uber job or an id
    that names no MapReduce job; raises ObservationError as `RMClient.get_json` does (a 404,
    the server not knowing the job, is an ``http-error``) and JobDocumentError."""
    jid = job_id(app_id)
    if jid is None:
        return None
    return job_figures(client.get_json(JOB_PATH + jid), jid)
