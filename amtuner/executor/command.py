"""Run a refresh command so that nothing of it outlives its timeout and its output stays small.

``subprocess.run(timeout=...)`` kills only the direct child: ``yarn`` is a shell script that
starts a JVM, and a wrapper (``sudo -u yarn``, ``ssh``, a site script) adds more levels, so a
killed ``yarn`` leaves its JVM running on, still able to reload the RM after amtuner has restored
the file, and still holding the output pipe open. ``capture_output`` also keeps every byte the
command writes, so a chatty or hostile command could fill the daemon's memory.

So the command starts in a session (and process group) of its own, its stdout and stderr share
one pipe of which only the last `KEEP_BYTES` are kept, and the whole group is killed when the
deadline passes or once the command has exited (a helper it left behind is part of the refresh,
and nothing of a refresh should run on after it). The group is killed while its leader is still
an unreaped zombie, so its id cannot have been reused by an unrelated process.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

KEEP_BYTES = 8 * 1024
"""Output kept from a command: its last bytes, which is where a Java stack trace's cause and
RMAdminCLI's error line are."""
_CHUNK = 64 * 1024
_POLL_S = 0.05
"""How often the loop looks whether the command has exited while its output pipe stays open
(a helper it started still holds it)."""


@dataclass(frozen=True, slots=True)
class Finished:
    returncode: int | None
    """The command's exit status; None when it was killed at the deadline."""
    output: bytes
    """The last `KEEP_BYTES` of stdout and stderr together."""
    dropped: int
    """Bytes of output not kept."""


def _exited(pid: int) -> bool:
    """Whether ``pid`` has exited, without reaping it (its group id stays reserved)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def run_bounded(
    argv: Sequence[str],
    timeout_s: float,
    keep: int = KEEP_BYTES,
    environment: Mapping[str, str] | None = None,
) -> Finished:
    """Run ``argv`` (no shell, stdin from /dev/null) for at most ``timeout_s`` seconds, with
    ``environment`` over this process's own.

    Raises FileNotFoundError or PermissionError when the command cannot be started."""
    deadline = time.monotonic() + timeout_s
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, **environment} if environment else None,
    )
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    kept = bytearray()
    dropped = 0
    open_pipe = True
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        try:
            while open_pipe:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                exited = _exited(proc.pid)
                selector.select(0 if exited else min(_POLL_S, left))
                for _ in range(16):  # what is there now, bounded: a helper may write on
                    try:
                        chunk = os.read(fd, _CHUNK)
                    except BlockingIOError:
                        break
                    if not chunk:
                        open_pipe = False
                        break
                    kept += chunk
                    if len(kept) > keep:
                        dropped += len(kept) - keep
                        del kept[:-keep]
                if exited:
                    break
            while not _exited(proc.pid) and time.monotonic() < deadline:
                time.sleep(_POLL_S)
            timed_out = not _exited(proc.pid)
        finally:
            _kill_group(proc.pid)
            proc.stdout.close()
            proc.wait()
    return Finished(None if timed_out else proc.returncode, bytes(kept), dropped)
