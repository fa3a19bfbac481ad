"""Make the ResourceManager load the edited scheduler configuration, and apply an edit safely.

Three ways, as the operator configures (``refresh.method``):

* ``command``: ``yarn rmadmin -refreshQueues`` (RMAdminCLI finds the active RM of an HA pair
  itself), run without a shell, in a process group of its own that is killed whole at the
  timeout, its output bounded (`amtuner.executor.command`). With FairScheduler it reloads the
  allocation file at once instead of within 5-15 s (but the RM only logs a bad file, never
  fails the call).
* ``rest``: PUT /ws/v1/cluster/scheduler-conf, for a CapacityScheduler with a mutable
  configuration store, where ``-refreshQueues`` is refused. The RM refreshes the queues itself.
* ``none``: FairScheduler polls the allocation file and reloads it 5-15 s after the write.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol
from xml.sax.saxutils import escape

import requests

from amtuner.config import RefreshSettings
from amtuner.executor.command import run_bounded
from amtuner.executor.errors import ExecutorError, RefreshError, RefreshNotRunError
from amtuner.executor.files import restore, write_atomically
from amtuner.executor.xmledit import (
    CS_GLOBAL_KEY,
    Edit,
    format_value,
)
from amtuner.kerberos import KerberosError, SpnegoAuth, short_name
from amtuner.model import GLOBAL_TARGET, queue_path
from amtuner.safetext import redact

SCHEDULER_CONF_PATH = "/ws/v1/cluster/scheduler-conf"
_TAIL = 600
"""How much of a failed command's output or an RM's error body to quote."""


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _TAIL else "…" + text[-_TAIL:]


ADMIN_HINT = (
    "scheduler-conf is for the RM's administrators (yarn.admin.acl): set rm.user_name to one "
    "(simple authentication) or rm.kerberos: true"
)
"""Why the mutation API answers 401/403: Hadoop 3.5's RM refuses an anonymous GET too."""


def _http_failure(
    verb: str, url: str, response: requests.Response, principal: str | None
) -> str:
    """Why the RM refused: with Kerberos, which of the ticket (401) or the ACL (403) it was."""
    hint = ""
    if response.status_code in (401, 403):
        hint = f"; {ADMIN_HINT}"
    if principal is not None and response.status_code == 401:
        hint = f"; the RM did not accept the SPNEGO token of {principal}"
    elif principal is not None and response.status_code == 403:
        hint = (
            f"; {principal} is authenticated but not an administrator: yarn.admin.acl must name "
            f"{short_name(principal)!r} (or a group of it)"
        )
    return (
        f"{verb} {url} failed with HTTP {response.status_code}: "
        f"{_tail(response.text) or response.reason}{hint}"
    )


RMADMIN_HINTS = (
    ("doesn't have permission to call", "the caller is not in the RM's yarn.admin.acl"),
    (
        "Client cannot authenticate via:[KERBEROS]",
        "no valid Kerberos ticket in the cache KRB5CCNAME names: set rm.keytab so amtuner "
        "keeps one",
    ),
)
"""What Hadoop 3.5's RMAdminCLI prints when the RM refuses the caller (``AdminService``'s
AccessControlException) or the caller has no ticket (``SaslRpcClient``), and what that means."""


class Refresher(Protocol):
    def describe(self) -> str:
        """What the refresh does, for dry-run output and logs."""
        ...

    def refresh(self, edit: Edit) -> None:
        """Make the RM use the edited configuration; raise RefreshError if that failed."""
        ...


class CommandRefresher:
    """``yarn rmadmin -refreshQueues`` or the operator's own command: run in a process group of
    its own, killed whole at its timeout, its output bounded (`amtuner.executor.command`)."""

    def __init__(
        self,
        argv: Sequence[str],
        timeout_s: float,
        environment: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        if not argv:
            raise ExecutorError("refresh.command is empty")
        self.argv = list(argv)
        self.timeout_s = timeout_s
        self._environment = environment
        """What the command gets beyond amtuner's own environment, asked for at each refresh:
        amtuner's Kerberos ticket cache, renewed just before (`KerberosLogin.fresh_environment`)."""

    def describe(self) -> str:
        return shlex.join(self.argv)

    def refresh(self, edit: Edit) -> None:
        extra: Mapping[str, str] = {}
        if self._environment is not None:
            try:
                extra = self._environment()
            except KerberosError as exc:
                raise RefreshError(f"`{self.describe()}` not run: {exc}") from None
        try:
            done = run_bounded(self.argv, self.timeout_s, environment=extra)
        except FileNotFoundError:
            raise RefreshNotRunError(
                f"refresh command not found: {self.argv[0]} (is it on PATH?)"
            ) from None
        except PermissionError:
            raise RefreshNotRunError(f"refresh command not executable: {self.argv[0]}") from None
        output = done.output.decode("utf-8", "replace")
        said = f": {_tail(output)}" if output.strip() else ""
        if done.returncode is None:
            raise RefreshError(
                f"`{self.describe()}` did not finish within {self.timeout_s:g} s (its process "
                f"group was killed){said}"
            )
        if done.returncode != 0:
            hints = "".join(f" ({hint})" for text, hint in RMADMIN_HINTS if text in output)
            raise RefreshError(
                f"`{self.describe()}` exited with status {done.returncode}{hints}{said}"
            )


def sched_conf_xml(targets: Mapping[str, tuple[float | None, float | None]]) -> bytes:
    """The ``<sched-conf>`` body that sets the same keys the file edit set.

    Global keys go in ``global-updates`` with their full name; queue keys go in
    ``update-queue`` with the queue path and the relative key (yarn-facts, mutation API). A
    value of None (undoing an edit that added the key) is sent empty, which removes the key
    (``MutableCSConfigurationProvider`` unsets a key whose new value is empty).
    """
    parts = ['<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<sched-conf>\n']
    for target, (_old, new) in targets.items():
        value = "" if new is None else escape(format_value(new))
        if target == GLOBAL_TARGET:
            parts.append(
                "  <global-updates>\n    <entry>\n"
                f"      <key>{CS_GLOBAL_KEY}</key>\n      <value>{value}</value>\n"
                "    </entry>\n  </global-updates>\n"
            )
        else:
            queue = escape(queue_path(target))
            parts.append(
                f"  <update-queue>\n    <queue-name>{queue}</queue-name>\n    <params>\n"
                "      <entry>\n        <key>maximum-am-resource-percent</key>\n"
                f"        <value>{value}</value>\n      </entry>\n    </params>\n"
                "  </update-queue>\n"
            )
    parts.append("</sched-conf>\n")
    return "".join(parts).encode()


class RestRefresher:
    def __init__(self, rm_urls: Sequence[str], session: requests.Session, timeout_s: float) -> None:
        if not rm_urls:
            raise ExecutorError("refresh.method rest needs at least one rm.urls entry")
        self.rm_urls = [u.rstrip("/") for u in rm_urls]
        self.session = session
        self.timeout_s = timeout_s

    def describe(self) -> str:
        return redact(f"PUT {self.rm_urls[0]}{SCHEDULER_CONF_PATH} (maximum-am-resource-percent)")

    def fetch(self) -> bytes:
        """The RM's current CS configuration (GET scheduler-conf, admin only). Raises
        ExecutorError (the scheduler configuration could not be read; nothing was changed).

        It has the capacity-scheduler.xml shape, so ``SchedulerFile(Path("scheduler-conf"),
        "capacity", data).edit(...)`` followed by ``refresh(edit)`` tunes an RM whose
        configuration lives only in its mutable store.
        """
        failures = []
        for base in self.rm_urls:
            url = base + SCHEDULER_CONF_PATH
            try:
                response = self.session.get(
                    url, headers={"Accept": "application/xml"}, timeout=self.timeout_s
                )
            except requests.RequestException as e:
                failures.append(f"{url}: {e}")
                continue
            except KerberosError as e:  # nothing was sent
                raise ExecutorError(f"GET {url} not sent: {e}") from None
            if response.status_code == 200:
                return response.content
            raise ExecutorError(_http_failure("GET", url, response, self._principal()))
        raise ExecutorError("no ResourceManager reachable: " + "; ".join(failures))

    def refresh(self, edit: Edit) -> None:
        changed = {t: v for t, v in edit.targets.items() if v[0] != v[1]}
        if not changed:
            return
        body = sched_conf_xml(changed)
        failures = []
        for base in self.rm_urls:
            url = base + SCHEDULER_CONF_PATH
            try:
                response = self._put(url, body)
                if response.status_code == 307:  # a standby RM names the active one; once
                    location = response.headers.get("Location", "")
                    if not location:
                        raise RefreshError(f"{url}: standby RM answered 307 without a Location")
                    url = location
                    response = self._put(url, body)
                    if response.status_code == 307:
                        raise RefreshError(f"{url}: redirected again (no active RM?)")
            except requests.RequestException as e:
                failures.append(f"{url}: {e}")
                continue
            except KerberosError as e:  # nothing was sent
                raise RefreshError(f"PUT {url} not sent: {e}") from None
            if 200 <= response.status_code < 300:
                return
            raise RefreshError(_http_failure("PUT", url, response, self._principal()))
        raise RefreshError("no ResourceManager reachable: " + "; ".join(failures))

    def _principal(self) -> str | None:
        """Who the RM saw, when the session speaks SPNEGO."""
        auth = self.session.auth
        if isinstance(auth, SpnegoAuth):
            return auth.principal or "amtuner's principal"
        return None

    def _put(self, url: str, body: bytes) -> requests.Response:
        return self.session.put(
            url,
            data=body,
            headers={"Content-Type": "application/xml", "Accept": "application/json"},
            timeout=self.timeout_s,
            allow_redirects=False,
        )


class NoRefresh:
    def describe(self) -> str:
        return "none (FairScheduler reloads the allocation file by itself 5-15 s after the write)"

    def refresh(self, edit: Edit) -> None:
        return None


def make_refresher(
    settings: RefreshSettings,
    rm_urls: Sequence[str],
    session: requests.Session | None = None,
    environment: Callable[[], Mapping[str, str]] | None = None,
) -> Refresher:
    """``environment``: what a refresh command needs beyond amtuner's own (`CommandRefresher`)."""
    if settings.method == "command":
        return CommandRefresher(settings.command, settings.timeout_seconds, environment)
    if settings.method == "rest":
        return RestRefresher(rm_urls, session or requests.Session(), settings.timeout_seconds)
    if settings.method == "none":
        return NoRefresh()
    raise ExecutorError(f"refresh.method: unknown method {settings.method!r}")


def apply_edit(
    edit: Edit,
    refresher: Refresher,
    *,
    backup_dir: Path | None,
    keep_backups: int = 10,
    durable: bool = True,
) -> None:
    """Write, then refresh; if the refresh fails, put the previous bytes back and refresh again.

    A failed refresh does not mean the RM did not reload: ``yarn rmadmin -refreshQueues`` can
    time out after the RM applied the change, and a PUT can be applied after its connection
    dropped. So after the restore the RM is told to reload the restored file too; if that fails
    as well, the error says the file and the RM may disagree. ``durable``: see `replace_file`.
    """
    if not edit.changed:
        return
    backup = write_atomically(
        edit, backup_dir=backup_dir, keep_backups=keep_backups, durable=durable
    )
    try:
        refresher.refresh(edit)
    except RefreshError as e:
        try:
            restore(edit, durable=durable)
        except ExecutorError as restore_error:
            where = f"; the backup is {backup}" if backup else ""
            raise RefreshError(
                f"{e}; could NOT restore the previous file {edit.path}: {restore_error}{where}; "
                f"{MAY_DISAGREE}"
            ) from e
        raise refresh_back(edit, refresher, e, f"restored the previous file {edit.path}") from e


MAY_DISAGREE = (
    "the scheduler configuration and the RM MAY DISAGREE: check the RM's queues and run the "
    "refresh by hand"
)


def refresh_back(
    edit: Edit, refresher: Refresher, failure: RefreshError, done: str = ""
) -> RefreshError:
    """After ``failure`` (and ``done``, the undo of the file if there is one): make the RM load
    the previous configuration again, and return the error to raise, which says whether that
    worked."""
    said = f"{failure}; {done}" if done else str(failure)
    if isinstance(failure, RefreshNotRunError):
        return RefreshNotRunError(
            f"{said}; the RM was not asked to reload: it still runs the previous configuration"
        )
    try:
        refresher.refresh(edit.reverted())
    except RefreshError as again:
        return RefreshError(f"{said}; refreshing again failed too ({again}); {MAY_DISAGREE}")
    return RefreshError(f"{said}; refreshed again with the previous configuration")
