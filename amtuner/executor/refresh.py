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

from amtuner.config import RefreshSettings
from amtuner.executor.command import run_bounded
from amtuner.executor.errors import (
    Disagree,
    ExecutorError,
    RefreshError,
    RefreshNotRunError,
    StoreChanged,
)
from amtuner.executor.files import restore, write_atomically
from amtuner.executor.xmledit import CS_GLOBAL_KEY, Edit, SchedulerFile, format_value
from amtuner.kerberos import KerberosError, short_name
from amtuner.model import GLOBAL_TARGET, queue_path, same_a, split_target
from amtuner.safetext import redact

CONF_PATH = "/cluster/scheduler-conf"
"""The mutation API below an RM's REST base (``RMWebServices``, YARN-5734)."""
SCHEDULER_CONF_PATH = "/ws/v1" + CONF_PATH
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


class Reply(Protocol):
    """One RM answer, read whole (`amtuner.monitor.transport.Answer` is one)."""

    @property
    def url(self) -> str: ...
    @property
    def status(self) -> int: ...
    @property
    def reason(self) -> str: ...
    @property
    def body(self) -> bytes: ...


class RestChannel(Protocol):
    """How a REST refresh reaches the RMs (`amtuner.rmchannel.RMChannel`): within a deadline
    and a size cap, redirects followed only to a configured RM."""

    @property
    def rest_bases(self) -> tuple[str, ...]:
        """The configured RMs' REST bases (``http://rm1:8088/ws/v1``), first to last."""
        ...

    @property
    def principal(self) -> str | None:
        """Who the RM sees, when the requests speak SPNEGO; None otherwise."""
        ...

    def exchange(
        self,
        method: str,
        path: str,
        accept: str,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> Reply:
        """The answer of the first RM that answers; OSError, with the reason, when none did;
        KerberosError when no SPNEGO token could be made (nothing was sent)."""
        ...


def _http_failure(verb: str, reply: Reply, principal: str | None) -> str:
    """Why the RM refused: with Kerberos, which of the ticket (401) or the ACL (403) it was."""
    hint = ""
    if reply.status in (401, 403):
        hint = f"; {ADMIN_HINT}"
    if principal is not None and reply.status == 401:
        hint = f"; the RM did not accept the SPNEGO token of {principal}"
    elif principal is not None and reply.status == 403:
        hint = (
            f"; {principal} is authenticated but not an administrator: yarn.admin.acl must name "
            f"{short_name(principal)!r} (or a group of it)"
        )
    text = reply.body.decode("utf-8", "replace")
    return (
        f"{verb} {reply.url} failed with HTTP {reply.status}: "
        f"{_tail(text) or reply.reason}{hint}"
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
            leaf, label = split_target(target)
            queue = escape(queue_path(leaf))
            key = escape(f"accessible-node-labels.{label}." if label else "")
            parts.append(
                f"  <update-queue>\n    <queue-name>{queue}</queue-name>\n    <params>\n"
                f"      <entry>\n        <key>{key}maximum-am-resource-percent</key>\n"
                f"        <value>{value}</value>\n      </entry>\n    </params>\n"
                "  </update-queue>\n"
            )
    parts.append("</sched-conf>\n")
    return "".join(parts).encode()


class RestRefresher:
    """The RM's scheduler-conf API: a change is PUT only where the RM still holds the value
    amtuner read (an admin's change between the read and the write is kept, as a file's is:
    `amtuner.executor.files.write_atomically`). Hadoop offers no conditional PUT, so the value
    is read again just before the PUT; the window left is that of one request."""

    def __init__(self, channel: RestChannel) -> None:
        self.channel = channel

    def describe(self) -> str:
        return redact(f"PUT {self.channel.rest_bases[0]}{CONF_PATH} (maximum-am-resource-percent)")

    def _exchange(
        self,
        error: type[ExecutorError],
        method: str,
        accept: str,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> Reply:
        """One exchange; a failure raises ``error``."""
        try:
            reply = self.channel.exchange(method, CONF_PATH, accept, body, content_type)
        except KerberosError as e:
            raise error(f"{method} scheduler-conf not sent: {e}") from None
        except OSError as e:
            raise error(f"{method} scheduler-conf: {e}") from e
        if not 200 <= reply.status < 300:
            raise error(_http_failure(method, reply, self.channel.principal))
        return reply

    def fetch(self) -> bytes:
        """The RM's current CS configuration (GET scheduler-conf, admin only). Raises
        ExecutorError (the scheduler configuration could not be read; nothing was changed).

        It has the capacity-scheduler.xml shape, so ``SchedulerFile(Path("scheduler-conf"),
        "capacity", data).edit(...)`` followed by ``refresh(edit)`` tunes an RM whose
        configuration lives only in its mutable store.
        """
        return self._exchange(ExecutorError, "GET", "application/xml").body

    def _still_held(
        self, targets: Mapping[str, tuple[float | None, float | None]]
    ) -> dict[str, tuple[float | None, float | None]]:
        """The targets whose value in the RM is still the one amtuner read; those already at
        the new value are done. Raises StoreChanged when another value is there."""
        data = self._exchange(RefreshError, "GET", "application/xml").body
        held = SchedulerFile(Path(SCHEDULER_CONF_PATH), "capacity", data)
        todo = {}
        for target, (old, new) in targets.items():
            try:
                now = held.current_value(target)
            except ExecutorError as e:  # the queue is gone from the RM's configuration
                raise StoreChanged(f"{e}; changed by someone else since; nothing PUT") from e
            if same_a(now, new):
                continue
            if not same_a(now, old):
                what = target or "the global value"
                raise StoreChanged(
                    f"the RM's scheduler-conf holds {_shown(now)} for {what}, not the "
                    f"{_shown(old)} amtuner read: changed by someone else since; kept, nothing PUT"
                )
            todo[target] = (old, new)
        return todo

    def refresh(self, edit: Edit) -> None:
        changed = self._still_held({t: v for t, v in edit.targets.items() if v[0] != v[1]})
        if not changed:
            return
        body = sched_conf_xml(changed)
        self._exchange(RefreshError, "PUT", "application/json", body, "application/xml")


def _shown(value: float | None) -> str:
    return "no value" if value is None else format_value(value)


class NoRefresh:
    def describe(self) -> str:
        return "none (FairScheduler reloads the allocation file by itself 5-15 s after the write)"

    def refresh(self, edit: Edit) -> None:
        return None


def make_refresher(
    settings: RefreshSettings,
    channel: RestChannel | None = None,
    environment: Callable[[], Mapping[str, str]] | None = None,
) -> Refresher:
    """The refresher ``settings`` name; ``rest`` needs the channel to the RMs; ``environment``:
    what a refresh command needs beyond amtuner's own (`CommandRefresher`)."""
    if settings.method == "command":
        return CommandRefresher(settings.command, settings.timeout_seconds, environment)
    if settings.method == "rest":
        if channel is None:
            raise ExecutorError("refresh.method rest needs a channel to the RMs")
        return RestRefresher(channel)
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
            raise Disagree(
                f"{e}; could NOT restore the previous file {edit.path}: {restore_error}{where}; "
                f"{MAY_DISAGREE}"
            ) from e
        if isinstance(e, StoreChanged):  # nothing was PUT: the RM holds what it held
            raise StoreChanged(f"{e}; restored the previous file {edit.path}") from e
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
        return Disagree(f"{said}; refreshing again failed too ({again}); {MAY_DISAGREE}")
    return RefreshError(f"{said}; refreshed again with the previous configuration")
