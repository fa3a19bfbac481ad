"""What would stop the first live cycle on this host, found by `amtuner check` before it runs.

A cycle that decided a change still fails if it cannot write what follows the decision: the
scheduler file is replaced through a temporary file in its own directory (so the directory must
be writable, have room for a copy, and the new file must be given the old one's owner and
group, which ``chown(2)`` allows an unprivileged user only for its own uid and groups), a backup
goes to ``backup_dir``, the controller's memory to ``state_file`` (which must load: a corrupt one
stops ``run`` at start) beside its lock, a line to ``audit_log``, and the apps that finished to
``record.trace`` (an app trace, or no file: another file stops ``run`` at start); missing
directories are created, so the nearest existing ancestor must be writable.
``refresh.method: command`` runs ``argv[0]`` from ``PATH`` (``yarn rmadmin -refreshQueues``,
Hadoop's ``RMAdminCLI``), and ``amtuner run`` binds the metrics address before its first
cycle. Each finding names the key to change. The settings are checked whether or not
``dry_run`` is on: the first live cycle is the one after it is turned off.

Permissions are asked with ``os.access`` for the running user, which says yes to everything
for root: run ``check`` as the service's own user.
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import socket
import stat
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from amtuner import lock
from amtuner.config import Config
from amtuner.executor.errors import NotRegularFileError
from amtuner.executor.reading import refuse_irregular

_WEB_UI_PATH = re.compile(r"/(cluster|ui2)(/.*)?$")
"""Paths of the RM's web UI (``RMWebApp``'s ``/cluster/…`` pages and the new UI, ``/ui2``)."""


def live_cycle_problems(cfg: Config) -> list[str]:
    """One sentence per thing that would make the first live cycle fail; [] when none."""
    problems = _url_problems(cfg)
    writes: list[tuple[str, Path, Write, int]] = []
    sched = cfg.scheduler.config_file
    if sched is not None:
        size = _size(sched)
        writes.append(("scheduler.config_file", sched, "replaced", size))
        if cfg.keep_backups > 0:
            writes.append(("backup_dir", cfg.backup_dir, "directory", size))
        reason = cannot_keep_owner(sched)
        if reason:
            problems.append(f"scheduler.config_file: {reason}")
    state_size = max(_size(cfg.state_file), STATE_BYTES)
    writes.append(("state_file", cfg.state_file, "replaced", state_size))
    writes.append(("state_file", lock.path_for(cfg.state_file), "opened", 0))
    if cfg.audit_log is not None:
        writes.append(("audit_log", cfg.audit_log, "opened", AUDIT_LINE_BYTES))
    for key, path, how, needed in writes:
        reason = cannot_write(path, how) or no_room(path, needed, directory=how == "directory")
        if reason:
            problems.append(f"{key}: {reason}")
    reason = unloadable_state(cfg.state_file)
    if reason:
        problems.append(f"state_file: {reason}")
    if cfg.record.trace is not None:
        reason = unusable_trace(cfg.record.trace)
        reason = reason or no_room(cfg.record.trace, TRACE_LINE_BYTES, directory=False)
        if reason:
            problems.append(f"record.trace: {reason}")
    if cfg.refresh.method == "command":
        argv0 = cfg.refresh.command[0] if cfg.refresh.command else ""
        if not argv0 or shutil.which(argv0) is None:
            problems.append(
                f"refresh.command: {argv0!r} is not an executable file on the PATH of uid "
                f"{os.geteuid()}: the first change could not be refreshed"
            )
    if cfg.metrics.enabled:
        reason = cannot_bind(cfg.metrics.address, cfg.metrics.port)
        if reason:
            problems.append(
                f"metrics: cannot listen on {cfg.metrics.address}:{cfg.metrics.port} ({reason}); "
                "`amtuner run` would stop at start: free the port or change metrics.port"
            )
    return problems


STATE_BYTES = 64 * 1024
"""Room asked for a state file not written yet: a few hundred bytes per target and the last
cycle's summary, with a wide margin."""
AUDIT_LINE_BYTES = 4096
"""Room asked for one audit line (one JSON object per change)."""
TRACE_LINE_BYTES = 4096
"""Room asked for one app's line of the trace (some 300 bytes), with a wide margin."""


def _size(path: Path) -> int:
    try:
        st = path.stat()
    except OSError:
        return 0
    return st.st_size if stat.S_ISREG(st.st_mode) else 0


def _existing(folder: Path) -> Path:
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def no_room(path: Path, needed: int, *, directory: bool) -> str | None:
    """Why the file system that will hold ``path`` could not take ``needed`` more bytes and a
    new file now, or None. A user other than root cannot use the blocks reserved for root
    (``f_bavail`` against ``f_bfree``)."""
    folder = _existing(path if directory else path.parent)
    try:
        fs = os.statvfs(folder)
    except OSError:
        return None  # cannot_write has said what is wrong with the directory
    free = (fs.f_bfree if os.geteuid() == 0 else fs.f_bavail) * fs.f_frsize
    if free < needed + fs.f_frsize:
        return (
            f"no space left on the file system of {folder} ({free} bytes free, a write needs "
            f"{needed}): free some or move it"
        )
    if fs.f_files and not fs.f_favail:
        return f"no free inodes on the file system of {folder}: no new file can be made there"
    return None


def cannot_keep_owner(path: Path) -> str | None:
    """Why the rewritten ``path`` could not be given the owner and group of the file it
    replaces, or None.

    The temporary file is created by the running user, with its effective group (or the
    directory's, when the directory is set-group-ID). ``chown(2)`` lets a process without
    ``CAP_CHOWN`` keep only its own uid and change the group only to one of its own; the
    executor refuses to leave the file with another owner, so such a file cannot be changed.
    """
    try:
        st = path.stat()
        parent = path.parent.stat()
    except OSError:
        return None
    if _can_chown():
        return None
    uid = os.geteuid()
    new_gid = parent.st_gid if parent.st_mode & stat.S_ISGID else os.getegid()
    groups = {new_gid, os.getegid(), *os.getgroups()}
    if st.st_uid == uid and (st.st_gid == new_gid or st.st_gid in groups):
        return None
    return (
        f"{path} is owned by {_user(st.st_uid)}:{_group(st.st_gid)}, and uid {uid} cannot give "
        "the rewritten file that owner (chown needs root); the first change would fail: "
        f"chown {_user(uid)}:{_group(st.st_gid)} {path} (keeping a mode the RM's user can read)"
    )


def _can_chown() -> bool:
    """Whether this process holds ``CAP_CHOWN`` (bit 0 of ``CapEff``, proc(5))."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"CapEff:"):
                    return bool(int(line.split()[1], 16) & 1)
    except (OSError, ValueError):
        pass
    return os.geteuid() == 0


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)


def unloadable_state(path: Path) -> str | None:
    """Why the state file would stop `amtuner run` at start, or None (no file is a first
    start; a FIFO or a directory there is `cannot_write`'s, and is never opened)."""
    from amtuner.state import StateError, load_states

    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        load_states(path)
    except FileNotFoundError:
        return None
    except (StateError, OSError) as exc:
        return str(exc)
    return None


def unusable_trace(path: Path) -> str | None:
    """Why `amtuner run` could not append finished apps to the app trace ``path``
    (``record.trace``), or None: it cannot be opened for writing where it is (or made there),
    or it holds something other than an app trace of a version this amtuner reads. A torn
    last line is no reason: the recorder cuts it off. No file, or an empty one, is a new
    trace."""
    from amtuner.apptrace import TraceError, read_trace

    reason = cannot_write(path, "opened")
    if reason:
        return reason
    try:
        if path.stat().st_size > 0:
            read_trace(path)
    except FileNotFoundError:
        return None
    except (TraceError, OSError) as exc:
        return f"{exc}: name another file, or move it aside"
    return None


Write = Literal["directory", "replaced", "opened"]
"""How a path is written: a directory files are made in; a file replaced by a rename (only its
directory must be writable); a file opened for writing in place (the audit log, the lock)."""


def cannot_write(path: Path, how: Write) -> str | None:
    """Why the running user could not write ``path`` as ``how`` says, or None when it could."""
    directory = how == "directory"
    if not directory and path.exists():
        try:
            refuse_irregular(path, path.stat().st_mode)
        except NotRegularFileError as exc:
            return f"{exc}: move it aside"
        if how == "opened" and not os.access(path, os.W_OK):
            return f"{path} is not writable by uid {os.geteuid()}"
    folder = path if directory else path.parent
    existing = _existing(folder)
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        missing = "" if existing == folder else f" (to create {folder})"
        return f"directory {existing} is not writable by uid {os.geteuid()}{missing}"
    return None


def cannot_bind(address: str, port: int) -> str | None:
    """Why a listening socket on ``address:port`` could not be made now, or None.

    Bound and closed at once, with ``SO_REUSEADDR`` as the metrics server binds
    (``http.server.HTTPServer.allow_reuse_address``, under prometheus_client's
    ``start_http_server``): a port left in TIME_WAIT by a previous run is no problem, one another
    process listens on is.
    """
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"address does not resolve: {exc}"
    family, kind, proto, _, sockaddr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(sockaddr)
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def _url_problems(cfg: Config) -> list[str]:
    found = []
    for url in cfg.rm.urls:
        url = url.rstrip("/")
        page = _WEB_UI_PATH.search(urlsplit(url).path)
        if page:
            base = url[: len(url) - len(page[0])]
            found.append(
                f"rm.urls: {url} is a web UI page, not the REST API: the RM's queue figures are "
                f"read from {base}/ws/v1; give the RM's address ({base})"
            )
    return found
