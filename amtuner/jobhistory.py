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

A second request, ``GET …/jobs/{job id}/conf`` (``HsWebServices.getJobConf``: ``{"conf":
ConfInfo}``, every property of the job's ``job.xml`` as a ``{"name", "value", "source"}``),
tells the size of its containers, which the job document does not: ``mapreduce.map.memory.mb``
and ``mapreduce.reduce.memory.mb`` as ``JobConf.getMemoryRequired`` resolves them (Hadoop 3's
default -1 derives the size from the task's ``-Xmx``, else 1024), ``mapreduce.map.cpu.vcores``
and ``mapreduce.reduce.cpu.vcores`` (default 1), and the AM's ``yarn.app.mapreduce.am.resource.mb``
(default 1536), what the job asked for: the RM rounds each ask up to its minimum allocation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import requests

    from amtuner.config import RMSettings
    from amtuner.monitor import RMClient

JOB_PATH = "/history/mapreduce/jobs/"
"""Below the server's REST base (``…/ws/v1``, `amtuner.config.RMEndpoint`)."""
INFO_PATH = "/history/info"
"""The server's own description (``HsWebServices.get``: ``{"historyInfo": HistoryInfo}``)."""
FIELDS = {
    "maps": "mapsTotal",
    "reduces": "reducesTotal",
    "map_ms": "avgMapTime",
    "shuffle_ms": "avgShuffleTime",
    "merge_ms": "avgMergeTime",
    "reduce_ms": "avgReduceTime",
}
"""The app trace's name of each figure kept (`amtuner.apptrace`), and ``JobInfo``'s."""
SIZES = {
    "map_mb": "mapreduce.map.memory.mb",
    "map_vcores": "mapreduce.map.cpu.vcores",
    "reduce_mb": "mapreduce.reduce.memory.mb",
    "reduce_vcores": "mapreduce.reduce.cpu.vcores",
}
"""The app trace's name of each task size kept, and the job configuration's
(``MRJobConfig``)."""
AM_MB = "yarn.app.mapreduce.am.resource.mb"
DEFAULTS = {
    "mapreduce.map.memory.mb": -1,
    "mapreduce.reduce.memory.mb": -1,
    "mapreduce.map.cpu.vcores": 1,
    "mapreduce.reduce.cpu.vcores": 1,
    AM_MB: 1536,
    "mapreduce.job.heap.memory-mb.ratio": 0.8,
}
"""``mapred-default.xml``'s (Hadoop 3), what ``JobConf`` takes for a property not set."""
TASK_MB_DEFAULT = 1024
"""``MRJobConfig.DEFAULT_MAP_MEMORY_MB``: a task's memory with no size and no ``-Xmx``."""
_XMX = re.compile(r".*(?:^|\s)-Xmx(\d+)([gGmMkK]?)(?:$|\s).*")
"""``JobConf.JAVA_OPTS_XMX_PATTERN``: the last ``-Xmx`` of the options wins."""


class JobDocumentError(ValueError):
    """A JobHistory answer that is not a job document with the figures kept."""


class JobNotKnown(Exception):
    """The server answered 404 for the job: its history file not in its done directory yet,
    past its retention, or a job of another cluster (`amtuner.record` asks again a while)."""


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


def conf_properties(doc: Any) -> dict[str, str]:
    """The properties of a ``{"conf": ConfInfo}`` document, by name; raises JobDocumentError
    for another document."""
    conf = doc.get("conf") if isinstance(doc, Mapping) else None
    props = conf.get("property") if isinstance(conf, Mapping) else None
    if not isinstance(props, list):
        raise JobDocumentError(f"not a job configuration document: {str(doc)[:200]}")
    return {
        p["name"]: p["value"]
        for p in props
        if isinstance(p, Mapping) and isinstance(p.get("name"), str)
        and isinstance(p.get("value"), str)
    }  # fmt: skip


def conf_figures(doc: Any) -> dict[str, int | None]:
    """The task sizes (`SIZES`' names) and the AM's memory (``am_memory_mb``) of a job
    configuration document, as the job's ``JobConf`` resolves them; None for one whose value
    is not a whole number > 0 (the job could not have run with it). Raises JobDocumentError
    for another document."""
    props = conf_properties(doc)
    out: dict[str, int | None] = {
        "map_mb": task_memory_mb(props, "map"),
        "map_vcores": _positive(props, SIZES["map_vcores"]),
        "reduce_mb": task_memory_mb(props, "reduce"),
        "reduce_vcores": _positive(props, SIZES["reduce_vcores"]),
        "am_memory_mb": _positive(props, AM_MB),
    }
    return out


def task_memory_mb(props: Mapping[str, str], kind: str) -> int | None:
    """``JobConf.getMemoryRequired``: ``mapreduce.<kind>.memory.mb`` when > 0, else the heap of
    the task's JVM options (the admin's, then the user's: ``mapreduce.<kind>.java.opts``, else
    ``mapred.child.java.opts``) over ``mapreduce.job.heap.memory-mb.ratio``, rounded up; else
    1024."""
    key = f"mapreduce.{kind}.memory.mb"
    mb = _number(props, key, int)
    if mb is None:
        return None
    if mb > 0:
        return int(mb)
    opts = " ".join((
        props.get(f"mapreduce.admin.{kind}.child.java.opts", ""),
        props.get(f"mapreduce.{kind}.java.opts", props.get("mapred.child.java.opts", "")),
    ))  # fmt: skip
    heap = heap_mb(opts)
    ratio = _number(props, "mapreduce.job.heap.memory-mb.ratio", float)
    if heap <= 0 or ratio is None or ratio <= 0:
        return TASK_MB_DEFAULT
    return math.ceil(heap / ratio)


def heap_mb(java_opts: str) -> int:
    """``JobConf.parseMaximumHeapSizeMB``: the ``-Xmx`` of JVM options in MB; -1 without."""
    m = _XMX.fullmatch(java_opts)
    if m is None:
        return -1
    size = int(m.group(1))
    unit = m.group(2).lower()
    scale = {"": 1 / (1024 * 1024), "g": 1024, "m": 1, "k": 1 / 1024}[unit]
    return int(size * scale)


def _number(props: Mapping[str, str], key: str, kind: type[int] | type[float]) -> float | None:
    """A property as ``Configuration.getInt``/``getFloat`` reads it (its default when unset);
    None where it is not a number."""
    raw = props.get(key)
    if raw is None:
        return DEFAULTS[key]
    try:
        return kind(raw.strip())
    except ValueError:
        return None


def _positive(props: Mapping[str, str], key: str) -> int | None:
    value = _number(props, key, int)
    return int(value) if value is not None and value > 0 else None


def server_info(client: RMClient) -> Mapping[str, Any]:
    """The ``historyInfo`` of the first JobHistory server of ``client`` that answers, for
    `amtuner check`. Raises ObservationError as `RMClient.get_json` does (a server that is not a
    JobHistory server, the RM say, answers 404: an ``http-error``) and JobDocumentError for an
    answer that is not one."""
    doc = client.get_json(INFO_PATH)
    info = doc.get("historyInfo") if isinstance(doc, Mapping) else None
    if not isinstance(info, Mapping) or not isinstance(info.get("hadoopVersion"), str):
        raise JobDocumentError(f"not a JobHistory server's info: {str(doc)[:200]}")
    return info


def history_client(rm: RMSettings, urls: Sequence[str], session: requests.Session) -> RMClient:
    """The history servers of ``urls`` (JobHistory, or timeline: `amtuner.timeline`) asked as
    the RM is, in the order given."""
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
    that names no MapReduce job; raises JobNotKnown for a 404, ObservationError as
    `RMClient.get_json` does for another failure, and JobDocumentError."""
    jid = job_id(app_id)
    if jid is None:
        return None
    return job_figures(_get(client, JOB_PATH + jid), jid)


def fetch_conf(client: RMClient, app_id: str) -> dict[str, int | None] | None:
    """`conf_figures` of one app's job, asked of the JobHistory server; None for an id that
    names no MapReduce job. Raises as `fetch` does."""
    jid = job_id(app_id)
    if jid is None:
        return None
    return conf_figures(_get(client, JOB_PATH + jid + "/conf"))


def _get(client: RMClient, path: str) -> Any:
    from amtuner.monitor import ObservationError

    try:
        return client.get_json(path)
    except ObservationError as exc:
        if getattr(exc.__cause__, "status", None) == 404:  # the server's "job … is not found"
            raise JobNotKnown(str(exc)) from exc
        raise
