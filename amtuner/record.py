"""`amtuner record`: append the apps the RM reports finished to an app trace (`amtuner.apptrace`).

Two bounded requests per poll through the monitor's client (the RMs of ``rm.urls`` with HA
failover, one deadline per request, TLS and Kerberos as the config sets them): the apps running
(``/ws/v1/cluster/apps?states=RUNNING&limit=N``), for their AM's size, which the RM reports only
while an app runs (`am_size`), and the apps finished since the cursor
(``?states=FINISHED,FAILED,KILLED&finishedTimeBegin=CURSOR&limit=N``). The RM keeps only its
last ``yarn.resourcemanager.max-completed-applications`` finished apps (1000 in Hadoop 3), so a
poll must come before that many more have finished; a full answer (``limit`` apps) is said in
the log, since some apps of that window may then be missing.

Where a MapReduce JobHistory server is named (``history.urls``, ``--history``), each finished
MapReduce app whose AM started costs one more bounded request there, for its task counts and
durations (`amtuner.jobhistory`). An app the server cannot tell of is recorded without them:
the trace loses no app to the JobHistory server, and one warning a poll says how many.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amtuner.exitcodes import ExitCode

if TYPE_CHECKING:
    from amtuner.apptrace import AppRecord
    from amtuner.monitor import RMClient

log = logging.getLogger(__name__)

APPS_PATH = "/cluster/apps"
DEFAULT_LIMIT = 1000
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""About 200,000 apps at some 300 bytes a line."""


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


def with_history(records: list[AppRecord], history: RMClient) -> list[AppRecord]:
    """``records`` with the JobHistory server's figures of each MapReduce app whose AM started
    (`amtuner.jobhistory.fetch`). An app it does not know (404: not moved to its done
    directory yet, or past its retention), or answers badly about, keeps null figures; once it
    cannot be reached at all, the rest of the poll does not ask it. One warning says how many
    went without."""
    from amtuner.jobhistory import JobDocumentError, fetch
    from amtuner.monitor import ObservationError

    out: list[AppRecord] = []
    asked = 0
    missed: list[str] = []
    down = False
    for rec in records:
        if rec.type == "MAPREDUCE" and rec.launch_ms > 0 and not down:
            asked += 1
            try:
                figures = fetch(history, rec.id)
            except ObservationError as exc:
                missed.append(f"{rec.id}: {exc.reason}: {exc}")
                down = exc.reason != "http-error"
            except JobDocumentError as exc:
                missed.append(f"{rec.id}: bad-response: {exc}")
            else:
                if figures is not None:
                    rec = dataclasses.replace(
                        rec, maps=figures["maps"], reduces=figures["reduces"],
                        map_ms=figures["map_ms"], shuffle_ms=figures["shuffle_ms"],
                        merge_ms=figures["merge_ms"], reduce_ms=figures["reduce_ms"],
                    )  # fmt: skip
        out.append(rec)
    if missed:
        skipped = sum(r.type == "MAPREDUCE" and r.launch_ms > 0 for r in records) - asked
        log.warning(
            "the JobHistory server did not give %d of %d MapReduce apps their task figures%s "
            "(recorded without them); first: %s", len(missed) + skipped, asked + skipped,
            f", and was not asked about {skipped} after it failed" if skipped else "",
            missed[0].replace("no ResourceManager answered", "no JobHistory server answered"),
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
) -> tuple[tuple[int, frozenset[str]], int]:
    """One request; appends the apps not yet recorded, each with its AM size if ``am_sizes``
    (`poll_running`) knows it, and, with ``history``, its tasks (`with_history`), as lines of
    a file of ``version`` (default: the current). Returns the new cursor and how many."""
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
            "(poll more often, or raise --limit)", len(infos), begin,
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
    if history is not None:
        records = with_history(records, history)
    text = "".join(r.line(version or VERSION) for r in records).encode()
    if path.stat().st_size + len(text) > max_bytes:
        raise TraceFull(
            f"{path}: {len(records)} more apps would take it past --max-bytes {max_bytes}; "
            "stopped without writing them. Start a new file (the next one resumes from its "
            "own start) or raise --max-bytes"
        )
    if text:
        with path.open("ab") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    if not records:
        return since, 0
    last, ids = cursor(records)
    return (last, ids | seen if last == begin else ids), len(records)


def cmd_record(args: argparse.Namespace) -> int:
    from amtuner.apptrace import TraceError
    from amtuner.commands import kerberos_login, startup_errors
    from amtuner.config import load_config
    from amtuner.jobhistory import history_client
    from amtuner.monitor import ObservationError, RMClient, make_session

    try:
        cfg = load_config(args.config)
        session = make_session(cfg.rm, kerberos_login(cfg))
    except startup_errors() as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    client = RMClient.from_settings(cfg.rm, session=session)
    history_urls = tuple(args.history) or cfg.history.urls
    history = history_client(cfg.rm, history_urls, session) if history_urls else None
    stop = threading.Event()
    if not args.once:
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        since, version = open_trace(args.out, client, ",".join(cfg.rm.urls))
        if history is not None and version < 2:
            log.warning(
                "%s is a version %d trace, which has no JobHistory fields: the JobHistory "
                "server is not asked; start a new file to record them", args.out, version,
            )  # fmt: skip
            history = None
        am_sizes: dict[str, int | None] = {}
        while True:
            poll_running(client, am_sizes, args.limit)
            since, n = poll(
                args.out, client, since, args.limit, args.max_bytes, am_sizes, history, version
            )
            log.info("%d apps recorded; cursor finishedTimeBegin=%d", n, since[0])
            if args.once or stop.wait(args.interval):
                return ExitCode.OK
    except TraceFull as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except (TraceError, OSError) as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.FILE
    except ObservationError as exc:
        print(f"amtuner: {exc.reason}: {exc}", file=sys.stderr)
        return ExitCode.for_error(exc.reason)


def _url_option(text: str) -> str:
    from amtuner.config import check_url

    try:
        return check_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from amtuner.commands import add_config_option

    p = subparsers.add_parser(
        "record",
        help="append the apps the RM reports finished to a trace file, for `amtuner advise`",
        description="Poll the RM's apps API (the config's rm section: URLs, TLS, Kerberos) and "
        "append every app that finished to OUT, a versioned JSON-lines trace (docs/advise.md). "
        "A restart resumes from the file. SIGTERM stops it between polls.",
    )
    add_config_option(p)
    p.add_argument("--out", "-o", type=Path, required=True, help="the trace file to append to")
    p.add_argument(
        "--interval", type=float, default=60.0, help="seconds between polls (default: %(default)s)"
    )
    p.add_argument("--once", action="store_true", help="poll once and exit")
    p.add_argument(
        "--history", action="append", default=[], metavar="URL", type=_url_option,
        help="the MapReduce JobHistory server to ask for each MapReduce app's tasks "
        "(repeatable; instead of the config's history.urls)",
    )  # fmt: skip
    p.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT,
        help="most apps asked for per poll (default: %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
        help="stop (exit 1) rather than grow the file past this size (default: %(default)s)",
    )  # fmt: skip
    p.set_defaults(func=cmd_record)
