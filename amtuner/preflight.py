"""What would stop the first live cycle on this host, found by `amtuner check` before it runs.

A cycle that decided a change still fails if it cannot write what follows the decision: the
scheduler file is replaced through a temporary file in its own directory (so the directory must
be writable), a backup goes to ``backup_dir``, the controller's memory to ``state_file`` and a
line to ``audit_log``; missing directories are created, so the nearest existing ancestor must
be writable. ``refresh.method: command`` runs ``argv[0]`` from ``PATH`` (``yarn rmadmin
-refreshQueues``, Hadoop's ``RMAdminCLI``), and ``amtuner run`` binds the metrics address before
its first cycle. Each finding names the key to change.

Permissions are asked with ``os.access`` for the running user, which says yes to everything
for root: run ``check`` as the service's own user.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from pathlib import Path
from urllib.parse import urlsplit

from amtuner.config import Config

_WEB_UI_PATH = re.compile(r"/(cluster|ui2)(/.*)?$")
"""Paths of the RM's web UI (``RMWebApp``'s ``/cluster/…`` pages and the new UI, ``/ui2``)."""


def live_cycle_problems(cfg: Config) -> list[str]:
    """One sentence per thing that would make the first live cycle fail; [] when none."""
    problems = _url_problems(cfg)
    writes: list[tuple[str, Path, bool]] = []
    if not cfg.dry_run:
        if cfg.scheduler.config_file is not None:
            writes.append(("scheduler.config_file", cfg.scheduler.config_file, False))
            if cfg.keep_backups > 0:
                writes.append(("backup_dir", cfg.backup_dir, True))
        writes.append(("state_file", cfg.state_file, False))
    if cfg.audit_log is not None:
        writes.append(("audit_log", cfg.audit_log, False))
    for key, path, is_dir in writes:
        reason = cannot_write(path, directory=is_dir)
        if reason:
            problems.append(f"{key}: {reason}")
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


def cannot_write(path: Path, *, directory: bool) -> str | None:
    """Why the running user could not create or replace ``path`` (a file, or a directory to
    write files in), or None when it could."""
    if not directory and path.exists() and not os.access(path, os.W_OK):
        return f"{path} is not writable by uid {os.geteuid()}"
    folder = path if directory else path.parent
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
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
