"""The app trace: finished YARN applications as the RM's apps API reports them, one JSON line
each, so a recorded period can be replayed through the simulator (`amtuner advise`).

The file is JSON lines. The first line is the header, ``{"format": "amtuner-apps", "version":
3, …}`` with what the recorder saw of the cluster (``nodes``, ``node_memory_mb``,
``node_vcores``: active NodeManagers and the cluster's total divided among them, from
``/ws/v1/cluster/metrics``). Every further line is one application, in the order recorded, with
the fields of Hadoop's ``AppInfo`` (``/ws/v1/cluster/apps``) renamed to say their unit:

``id``, ``queue``, ``user``, ``type`` (``applicationType``), ``state`` (FINISHED, FAILED or
KILLED), ``submit_ms`` (``startedTime``: the RM's name for the submission), ``launch_ms``
(``launchTime``, Hadoop 3: when the AM container started; 0 when it never did), ``finish_ms``
(``finishedTime``), ``memory_mb_s`` and ``vcore_s`` (``memorySeconds``, ``vcoreSeconds``: the
size of every container of the app, its AM's included, times its life), ``am_memory_mb`` (the
memory of its AM container as the recorder saw it while the app ran, `amtuner.record.am_size`;
null when it never saw it running: the apps API does not report it for a finished app).

Version 2 adds, for a MapReduce app, what the MapReduce JobHistory server reports of its tasks
(`amtuner.jobhistory`), null where it was not asked or did not tell: ``maps`` and ``reduces``
(``mapsTotal``, ``reducesTotal``), ``map_ms`` (``avgMapTime``), ``shuffle_ms``, ``merge_ms``
and ``reduce_ms`` (``avgShuffleTime``, ``avgMergeTime``, ``avgReduceTime``: the three phases of
a reduce, one after another), averages over the successful attempts.

Version 3 adds the size of those tasks, from the job's configuration on the same server, null
where it was not asked or did not tell: ``map_mb`` and ``reduce_mb`` (``mapreduce.map.memory.mb``,
``mapreduce.reduce.memory.mb``), ``map_vcores`` and ``reduce_vcores``
(``mapreduce.map.cpu.vcores``, ``mapreduce.reduce.cpu.vcores``); and, for an app whose AM the
recorder never saw running, ``am_memory_mb`` is the AM's ask there
(``yarn.app.mapreduce.am.resource.mb``).

It adds too, for any app, what YARN's generic application history (the timeline server)
reports of its last attempt's containers other than its AM's (`amtuner.timeline`), null where it
was not asked or did not tell: ``tasks`` (how many), ``task_mb`` and ``task_vcores`` (their mean
``allocatedMB`` and ``allocatedVCores``), ``task_ms`` (their mean life, allocation to finish),
means rounded. It is asked of the apps the JobHistory server gave no ``maps``: every app but
MapReduce, and the MapReduce apps it did not tell of. Where it lists the AM container with its
size, that is ``am_memory_mb``.

The recorder's cursor is the file itself: the largest ``finish_ms`` recorded, asked for again
as ``finishedTimeBegin`` (both ends are inclusive), with the apps that finished at that very
millisecond skipped by id. A restart so resumes where the last run stopped, nothing twice.

Version 1 is this list without the JobHistory fields, version 2 without the task sizes and the
timeline's figures; this amtuner reads all three and writes 3 (a file of an older version it
continues gets the fields of that version only, `amtuner.record`). A reader refuses a
file of another format or a later version rather than guessing; new fields are added to a later
version.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from amtuner.jobhistory import FIELDS, SIZES
from amtuner.timeline import FIELDS as TIMELINE_FIELDS

FORMAT = "amtuner-apps"
VERSION = 3
READS = (1, 2, 3)
"""The versions this amtuner reads; a file of an older version is read with the fields added
since null."""
ADDED: dict[int, tuple[str, ...]] = {2: tuple(FIELDS), 3: (*SIZES, *TIMELINE_FIELDS)}
"""The fields each version added: a line of an older version has none of the later ones."""
FINAL_STATES = ("FINISHED", "FAILED", "KILLED")


class TraceError(ValueError):
    """A trace file that cannot be read or continued; the message names file and line."""


@dataclass(frozen=True, slots=True)
class AppRecord:
    id: str
    queue: str
    user: str
    type: str
    state: str
    submit_ms: int
    launch_ms: int
    """0: its AM never started (killed or failed while ACCEPTED)."""
    finish_ms: int
    memory_mb_s: int | None
    vcore_s: int | None
    """None where the RM does not report them (Hadoop before 2.6)."""
    am_memory_mb: int | None = None
    maps: int | None = None
    reduces: int | None = None
    map_ms: int | None = None
    shuffle_ms: int | None = None
    merge_ms: int | None = None
    reduce_ms: int | None = None
    """Version 2: the JobHistory server's figures (`amtuner.jobhistory.FIELDS`)."""
    map_mb: int | None = None
    map_vcores: int | None = None
    reduce_mb: int | None = None
    reduce_vcores: int | None = None
    """Version 3: the job configuration's task sizes (`amtuner.jobhistory.SIZES`)."""
    tasks: int | None = None
    task_mb: int | None = None
    task_vcores: int | None = None
    task_ms: int | None = None
    """Version 3 too: the timeline server's figures (`amtuner.timeline.FIELDS`)."""

    @classmethod
    def from_app_info(cls, app: Mapping[str, Any]) -> AppRecord:
        """One ``AppInfo`` of the apps API; raises TraceError for one without the fields every
        Hadoop version reports."""

        def ms(key: str, default: int | None = None) -> int:
            value = app.get(key, default)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TraceError(f"app {app.get('id')!r}: {key} is not a time in ms: {value!r}")
            return value

        def optional(key: str) -> int | None:
            value = app.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        text = {k: app.get(k) for k in ("id", "queue", "user", "state")}
        bad = [k for k, v in text.items() if not isinstance(v, str) or not v]
        if bad:
            raise TraceError(f"app {app.get('id')!r}: no {', '.join(bad)}")
        return cls(
            id=app["id"],
            queue=app["queue"],
            user=app["user"],
            type=str(app.get("applicationType") or "unknown"),
            state=app["state"],
            submit_ms=ms("startedTime"),
            launch_ms=ms("launchTime", 0),
            finish_ms=ms("finishedTime"),
            memory_mb_s=optional("memorySeconds"),
            vcore_s=optional("vcoreSeconds"),
        )

    def line(self, version: int = VERSION) -> str:
        """Its JSON line in a file of ``version``, without the fields added after it."""
        doc = asdict(self)
        for added, names in ADDED.items():
            if version < added:
                for name in names:
                    del doc[name]
        return json.dumps(doc, separators=(",", ":")) + "\n"


def header_line(cluster: Mapping[str, int], rm: str) -> str:
    doc = {"format": FORMAT, "version": VERSION, "rm": rm, **cluster}
    return json.dumps(doc, separators=(",", ":")) + "\n"


def read_trace(path: str | Path) -> tuple[dict[str, Any], list[AppRecord]]:
    """The header and the apps of a trace file; a torn last line (the recorder stopped while
    writing it) is left out, any other bad line refused with its number."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise TraceError(f"{path}: cannot read: {e}") from None
    if not lines:
        raise TraceError(f"{path}: empty, not an {FORMAT} trace")
    header = _header(path, lines[0])
    apps = []
    for lineno, text in _numbered(lines[1:]):
        if not text.endswith("\n") and lineno == len(lines):
            break  # torn: the recorder appends whole lines and was stopped mid-write
        try:
            doc = json.loads(text)
            apps.append(AppRecord(**doc))
        except (ValueError, TypeError) as e:
            raise TraceError(f"{path}:{lineno}: not an app record: {e}") from None
    return header, apps


def _numbered(lines: list[str]) -> Iterator[tuple[int, str]]:
    for i, text in enumerate(lines, 2):
        if text.strip():
            yield i, text


def _header(path: str | Path, text: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise TraceError(f"{path}:1: not an {FORMAT} trace (no header naming the format)")
    version = doc.get("version")
    if isinstance(version, bool) or version not in READS:
        raise TraceError(
            f"{path}:1: {FORMAT} version {version!r}; this amtuner reads versions "
            f"{', '.join(map(str, READS))}: a newer amtuner wrote it, read it with that one"
        )
    return doc


def cursor(apps: list[AppRecord]) -> tuple[int, frozenset[str]]:
    """Where recording resumes: the last finish time recorded, and the apps finished then."""
    last = max((a.finish_ms for a in apps), default=0)
    return last, frozenset(a.id for a in apps if a.finish_ms == last)
