"""One poll of a recorder (`amtuner.recorder`: `amtuner record`, `amtuner run`'s ``record:``):
append the apps the RM reports finished to an app trace (`amtuner.apptrace`).

Two bounded requests per poll through the monitor's client (the RMs of ``rm.urls`` with HA
failover, one deadline per request, TLS and Kerberos as the config sets them): the apps running
(``/ws/v1/cluster/apps?states=RUNNING&limit=N``), for their AM's size, which the RM reports only
while an app runs (`am_size`), and the apps finished since the cursor
(``?states=FINISHED,FAILED,KILLED&finishedTimeBegin=CURSOR&limit=N``). The RM keeps only its
last ``yarn.resourcemanager.max-completed-applications`` finished apps (1000 in Hadoop 3), so a
poll must come before that many more have finished; a full answer (``limit`` apps) is said in
the log, since some apps of that window may then be missing.

Where a MapReduce JobHistory server is named (``history.urls``, ``--history``), each finished
MapReduce app whose AM started costs two more bounded requests there, its job document and its
configuration, for its task counts, durations and sizes (`amtuner.jobhistory`). An app whose
job the server does not know yet waits a bounded time, asked again at each poll
(`HISTORY_WAIT_S`); one it cannot tell of is recorded without them: the trace loses no app to
the JobHistory server, and a warning says how many. Where a timeline server is named
(``timeline.urls``, ``--timeline``), each other finished app whose AM started (and each
MapReduce app written without JobHistory figures) costs two more there as it is written, for
its task containers (`amtuner.timeline`); an app it cannot tell of is recorded without them,
and one warning a poll says how many.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amtuner.config.settings import RecordSettings

if TYPE_CHECKING:
    from amtuner.apptrace import AppRecord
    from amtuner.monitor import RMClient

log = logging.getLogger(__name__)

APPS_PATH = "/cluster/apps"
HISTORY_WAIT_S = RecordSettings().history_wait_seconds
"""The wait of ``record.history_wait_seconds`` (`RecordSettings`), and why, by default."""


class TraceFull(Exception):
    """The trace reached its size bound: recording stops rather than grow it without end."""


def cluster_shape(client: RMClient) -> dict[str, int]:
    """Active nodes and the cluster's total memory and vcores divided among them."""
    return shape_of(client.get_json("/cluster/metrics"))


def shape_of(doc: Any) -> dict[str, int]:
    """`cluster_shape` of a ``/ws/v1/cluster/metrics`` document; {} where it does not say."""
    m = doc.get("clusterMetrics") if isinstance(doc, dict) else None
    if not isinstance(m, dict):
        return {}
    nodes = m.get("activeNodes")
    if not isinstance(nodes, int) or nodes < 1:
        return {}
    out = {"nodes": nodes}
    for key, name in (("totalMB", "node_memory_mb"), ("totalVirtualCores", "node_vcores")):
        total = m.get(key)
        if isinstance(total, int) and total > 0:
            out[name] = total // nodes
    return out


def am_size(info: dict[str, Any]) -> int | None:
    """The memory of a running app's AM container, as Hadoop's ``AppInfo`` tells it: the
    CapacityScheduler's ``resourceInfo.resourceUsagesByPartition[].amUsed`` (Hadoop 3, summed
    over partitions), else ``allocatedMB`` while the AM is the app's only container
    (``runningContainers`` 1: the FairScheduler reports no ``resourceInfo``). None when neither
    says: a finished app reports -1 and 0 for both."""
    usage = info.get("resourceInfo")
    parts = usage.get("resourceUsagesByPartition") if isinstance(usage, dict) else None
    if isinstance(parts, list):
        used = [
            p["amUsed"].get("memory")
            for p in parts
            if isinstance(p, dict) and isinstance(p.get("amUsed"), dict)
        ]
        total = sum(m for m in used if isinstance(m, int) and not isinstance(m, bool))
        if total > 0:
            return total
    mb = info.get("allocatedMB")
    if info.get("runningContainers") == 1 and isinstance(mb, int) and mb > 0:
        return mb
    return None


def am_container_size(client: RMClient, app_id: str) -> int | None:
    """The memory of a running app's AM container from the RM's container report (Hadoop 3's
    ``/apps/{id}/appattempts`` names the attempt's AM container, ``…/containers/{id}`` its
    ``allocatedMB``): what `am_size` cannot tell once the AM has tasks beside it. None where the
    RM does not serve these (404: Hadoop 2, or the app finished meanwhile)."""
    from amtuner.monitor import ObservationError

    try:
        doc = client.get_json(f"{APPS_PATH}/{app_id}/appattempts")
        attempt = doc["appAttempts"]["appAttempt"][-1]
        path = f"{APPS_PATH}/{app_id}/appattempts/{attempt['appAttemptId']}/containers/"
        mb = client.get_json(path + attempt["containerId"])["container"]["allocatedMB"]
    except ObservationError as exc:
        if exc.reason != "http-error":
            raise
        return None
    except (KeyError, IndexError, TypeError):
        return None
    return mb if isinstance(mb, int) and not isinstance(mb, bool) and mb > 0 else None


def poll_running(client: RMClient, am_sizes: dict[str, int | None], limit: int) -> None:
    """Learn the AM size of the apps running now into ``am_sizes`` (by app id; None: asked, not
    told), kept until the app is recorded; bounded by dropping the longest-known past
    ``2 * limit``. Each app costs a container report at most once, when `am_size` cannot say."""
    from amtuner.apptrace import TraceError

    doc = client.get_json(f"{APPS_PATH}?states=RUNNING&limit={limit}")
    apps: Any = doc.get("apps") if isinstance(doc, dict) else None
    infos = (apps or {}).get("app", []) if isinstance(apps, dict | None) else None
    if not isinstance(infos, list):
        raise TraceError(f"{APPS_PATH}: not an apps document: {str(doc)[:200]}")
    for info in infos:
        if not isinstance(info, dict) or not isinstance(info.get("id"), str):
            continue
        app_id = info["id"]
        if am_sizes.get(app_id) is None:
            size = am_size(info)
            if size is None and app_id not in am_sizes:
                size = am_container_size(client, app_id)
            am_sizes[app_id] = size
    for app_id in list(am_sizes)[: max(0, len(am_sizes) - 2 * limit)]:
        del am_sizes[app_id]


def open_trace(path: Path, client: RMClient, rm: str) -> tuple[tuple[int, frozenset[str]], int]:
    """The trace's cursor and version; a new file gets its header first. A torn last line (a
    recorder killed mid-write) is cut off, so the next line starts clean."""
    from amtuner.apptrace import VERSION, cursor, header_line, read_trace

    if not path.exists() or path.stat().st_size == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header_line(cluster_shape(client), rm), encoding="utf-8")
        return (0, frozenset()), VERSION
    header, apps = read_trace(path)
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)
    return cursor(apps), header["version"]


def with_history(
    records: list[AppRecord],
    history: RMClient,
    sizes: bool = True,
    waiting: Collection[str] = frozenset(),
) -> tuple[list[AppRecord], dict[str, str]]:
    """``records`` with the JobHistory server's figures of each MapReduce app whose AM started
    (`amtuner.jobhistory.fetch`) and, with ``sizes``, its tasks' sizes (`fetch_conf`, asked
    once its job document answered: none for an uber job, whose tasks ran in its AM); and the
    apps whose job the server did not know (404), by id with its answer, for the caller to ask
    again (`poll`). An app it answers badly about keeps null figures; once it cannot be reached
    at all, the rest of the call does not ask it, and the apps of ``waiting`` (not known at an
    earlier poll) stay not known rather than go without. One warning says how many went
    without."""
    from amtuner.jobhistory import JobDocumentError, JobNotKnown, fetch, fetch_conf
    from amtuner.monitor import ObservationError

    out: list[AppRecord] = []
    unknown: dict[str, str] = {}
    asked = skipped = 0
    missed: list[str] = []
    down = ""
    for rec in records:
        if rec.type != "MAPREDUCE" or rec.launch_ms <= 0:
            pass
        elif down:
            if rec.id in waiting:
                unknown[rec.id] = f"not asked again: {down}"
            else:
                skipped += 1
        else:
            asked += 1
            try:
                figures = fetch(history, rec.id)
                if figures is not None:
                    rec = dataclasses.replace(
                        rec, maps=figures["maps"], reduces=figures["reduces"],
                        map_ms=figures["map_ms"], shuffle_ms=figures["shuffle_ms"],
                        merge_ms=figures["merge_ms"], reduce_ms=figures["reduce_ms"],
                    )  # fmt: skip
                    if sizes:
                        rec = _sized(rec, fetch_conf(history, rec.id))
            except JobNotKnown as exc:
                unknown[rec.id] = str(exc)
            except ObservationError as exc:
                failure = f"{exc.reason}: {exc}".replace(
                    "no ResourceManager answered", "no JobHistory server answered"
                )
                if exc.reason != "http-error":
                    down = failure
                if down and rec.id in waiting:
                    unknown[rec.id] = failure
                else:
                    missed.append(f"{rec.id}: {failure}")
            except JobDocumentError as exc:
                missed.append(f"{rec.id}: bad-response: {exc}")
        out.append(rec)
    if missed or skipped:
        log.warning(
            "the JobHistory server did not give %d of %d MapReduce apps their task figures%s "
            "(recorded without them); first: %s", len(missed) + skipped, asked + skipped,
            f", and was not asked about {skipped} after it failed" if skipped else "",
            missed[0] if missed else down,
        )  # fmt: skip
    return out, unknown


def _sized(rec: AppRecord, conf: dict[str, int | None] | None) -> AppRecord:
    """``rec`` with its job configuration's task sizes, and its AM's ask where the recorder
    never saw the AM running (`am_size`)."""
    if conf is None:
        return rec
    am_mb = rec.am_memory_mb if rec.am_memory_mb is not None else conf["am_memory_mb"]
    return dataclasses.replace(
        rec, map_mb=conf["map_mb"], map_vcores=conf["map_vcores"], reduce_mb=conf["reduce_mb"],
        reduce_vcores=conf["reduce_vcores"], am_memory_mb=am_mb,
    )  # fmt: skip


@dataclass(slots=True)
class Held:
    """The apps read from the RM and not yet written, in the order they are written, and, for
    each whose job the JobHistory server has not known, since when (the clock of `poll`) and
    its last answer. An app that waits holds back every app after it: the trace keeps the RM's
    order and its cursor (the file's last app), so a recorder killed meanwhile leaves them all
    to the next one, which reads them again from the RM."""

    apps: list[AppRecord] = field(default_factory=list)
    unknown: dict[str, tuple[float, str]] = field(default_factory=dict)


def with_timeline(records: list[AppRecord], timeline: RMClient) -> list[AppRecord]:
    """``records`` with the timeline server's task containers (`amtuner.timeline.fetch`) of
    each app whose AM started and that has no JobHistory figures. An app it does not know (a
    404: one it never heard of, or past ``yarn.timeline-service.ttl-ms``), or answers badly
    about, keeps null figures; once the server cannot be reached at all, the rest of the poll
    does not ask it. One warning says how many went without."""
    from amtuner.monitor import ObservationError
    from amtuner.timeline import TimelineDocumentError, fetch

    def wants(rec: AppRecord) -> bool:
        return rec.launch_ms > 0 and rec.maps is None

    out: list[AppRecord] = []
    asked = 0
    missed: list[str] = []
    down = False
    for rec in records:
        if wants(rec) and not down:
            asked += 1
            try:
                figures = fetch(timeline, rec.id)
            except ObservationError as exc:
                missed.append(f"{rec.id}: {exc.reason}: {exc}")
                down = exc.reason != "http-error"
            except TimelineDocumentError as exc:
                missed.append(f"{rec.id}: bad-response: {exc}")
            else:
                if figures is not None:
                    rec = dataclasses.replace(rec, **figures)  # type: ignore[arg-type]
        out.append(rec)
    if missed:
        skipped = sum(map(wants, records)) - asked
        log.warning(
            "the timeline server did not give %d of %d apps their task figures%s (recorded "
            "without them); first: %s", len(missed) + skipped, asked + skipped,
            f", and was not asked about {skipped} after it failed" if skipped else "",
            missed[0].replace("no ResourceManager answered", "no timeline server answered"),
        )  # fmt: skip
    return out


def poll(
    path: Path,
    client: RMClient,
    since: tuple[int, frozenset[str]],
    limit: int,
    max_bytes: int,
    am_sizes: dict[str, int | None] | None = None,
    history: RMClient | None = None,
    version: int | None = None,
    held: Held | None = None,
    wait_s: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
    timeline: RMClient | None = None,
) -> tuple[tuple[int, frozenset[str]], int]:
    """One request; appends the apps not yet recorded, each with its AM size if ``am_sizes``
    (`poll_running`) knows it, and, with ``history``, its tasks (`with_history`), as lines of
    a file of ``version`` (default: the current). An app whose job the server does not know
    waits in ``held`` to be asked again at the next poll, until ``wait_s`` have passed
    (`HISTORY_WAIT_S`), also through polls the server does not answer at; then it is written
    without. The apps written are asked of ``timeline`` first (`with_timeline`). Returns the new
    cursor of the RM's apps and how many apps were written."""
    from amtuner.apptrace import FINAL_STATES, VERSION, AppRecord, TraceError, cursor

    begin, seen = since
    query = f"?states={','.join(FINAL_STATES)}&finishedTimeBegin={begin}&limit={limit}"
    doc = client.get_json(APPS_PATH + query)
    apps: Any = doc.get("apps") if isinstance(doc, dict) else None
    infos = (apps or {}).get("app", []) if isinstance(apps, dict | None) else None
    if not isinstance(infos, list):
        raise TraceError(f"{APPS_PATH}: not an apps document: {str(doc)[:200]}")
    if len(infos) >= limit:
        log.warning(
            "the RM answered %d apps, the limit: apps finished since %d may be missing "
            "(poll more often, or raise --limit, record.limit)", len(infos), begin,
        )  # fmt: skip
    records = []
    for info in infos:
        if not isinstance(info, dict) or info.get("state") not in FINAL_STATES:
            continue
        rec = AppRecord.from_app_info(info)
        if rec.finish_ms < begin or (rec.finish_ms == begin and rec.id in seen):
            continue
        if am_sizes:
            rec = dataclasses.replace(rec, am_memory_mb=am_sizes.pop(rec.id, None))
        records.append(rec)
    records.sort(key=lambda r: (r.finish_ms, r.id))
    held = held if held is not None else Held()
    version = version or VERSION
    queue = [*held.apps, *records]
    now = clock()
    if history is not None:
        again = [r for r in held.apps if r.id in held.unknown]
        told, unknown = with_history(
            [*again, *records], history, version >= 3, waiting=held.unknown.keys()
        )
        by_id = {r.id: r for r in told}
        queue = [by_id.get(r.id, r) for r in queue]
        held.unknown = {
            app_id: (held.unknown[app_id][0] if app_id in held.unknown else now, answer)
            for app_id, answer in unknown.items()
        }
    ready = 0
    for rec in queue:
        first = held.unknown.get(rec.id, (None, ""))[0]
        if first is not None and now - first < wait_s:
            break
        ready += 1
    if timeline is not None:
        queue[:ready] = with_timeline(queue[:ready], timeline)
    append(path, queue[:ready], version, max_bytes, held)
    held.apps = queue[ready:]
    if not records:
        return since, ready
    last, ids = cursor(records)
    return (last, ids | seen if last == begin else ids), ready


def append(
    path: Path, records: list[AppRecord], version: int, max_bytes: int, held: Held
) -> None:
    """Write ``records`` at the end of the trace, fsynced, or none of them past ``max_bytes``;
    those among them whose job the JobHistory server did not know leave ``held`` with one
    warning."""
    text = "".join(r.line(version) for r in records).encode()
    if path.stat().st_size + len(text) > max_bytes:
        raise TraceFull(
            f"{path}: {len(records)} more apps would take it past its bound of {max_bytes} "
            "bytes; stopped without writing them. Start a new file (the next one resumes from "
            "its own start) or raise the bound (--max-bytes, record.max_bytes)"
        )
    if text:
        with path.open("ab") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    unknown = [held.unknown.pop(r.id) for r in records if r.id in held.unknown]
    if unknown:
        log.warning(
            "the JobHistory server did not know the job of %d MapReduce apps (its history "
            "file not in its done directory yet, past its retention, or another cluster's "
            "server?): recorded without their task figures; first: %s",
            len(unknown), unknown[0][1],
        )  # fmt: skip
