"""One amtuner cycle at a time per state file, across processes (`run`, `once`, a second `run`).

A cycle reads the controller state, observes, decides, writes the scheduler file, refreshes the
RM and saves the state. Two processes interleaving those steps would each decide from a state
the other is about to replace: both could step A by the guard's maximum in one period, and the
hold-off one of them just started would not stop the other. So the whole section runs under an
advisory ``fcntl.flock`` (flock(2): released by the kernel when the holder exits or is
killed, so a crash never leaves a stale lock), and the state is re-read from the file once the
lock is held.

The lock file is ``<state_file>.lock``, beside the state file rather than the scheduler file:

* the processes that must take turns are exactly those sharing a controller state; the state
  is what the guard's step limit and hold-off are computed from;
* the state directory is amtuner's own and is written in every mode (a dry-run daemon saves its
  summary there), whereas the scheduler file's directory is Hadoop's configuration directory,
  which a dry run may not be allowed to write and which config management owns.

Two processes with different state files but one scheduler file do not share this lock; the
executor's compare-before-replace (`ConcurrentEditError`) still keeps one from overwriting a
file the other changed since reading it.

The lock is tried without blocking and retried for a short, bounded time: a cycle that cannot
get it is skipped (label ``locked``) instead of queueing behind a refresh that may take minutes.
The lock file is never removed (removing it would let a third process lock a new inode while
the old one is held); if someone removes it anyway, the holder notices that the path no longer
names the inode it locked and locks the new file instead.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

WAIT_S = 5.0
"""How long a cycle waits for another process's cycle to end before it skips."""
POLL_S = 0.05

LABEL = "locked"
"""The cycle error label (and skip reason) of a cycle that could not take the lock."""


LOCK_FILE_LABEL = "lock-file"
"""The skip reason of a cycle whose lock file could not be opened (not another process's turn)."""


class LockUnavailable(Exception):
    """Another process holds the lock; nothing changed, and trying again later is safe."""

    label = LABEL


class LockFileError(OSError):
    """The lock file cannot be opened or created (a directory that is not writable, a FIFO
    there): no other process is involved, and waiting will not help."""

    label = LOCK_FILE_LABEL


def path_for(state_file: Path) -> Path:
    return state_file.with_name(state_file.name + ".lock")


def _holder(fd: int) -> str:
    """The pid the holder wrote into the lock file, for the message (best effort)."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(os.pread(fd, 32, 0).decode().strip())
        return f" (pid {pid})"
    return ""


def _open(path: Path) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        raise LockFileError(
            f"cannot open the lock file {path} (beside state_file): {exc.strerror or exc}; "
            "nothing changed"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LockFileError(f"the lock file {path} is not a regular file; nothing changed")
    return fd


def check(path: Path) -> None:
    """Raise LockFileError now if the lock file could not be opened (start-up)."""
    os.close(_open(path))


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def _acquire(path: Path, wait_s: float) -> int:
    deadline = time.monotonic() + wait_s
    while True:
        fd = _open(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            if time.monotonic() >= deadline:
                raise LockUnavailable(
                    f"another amtuner process{holder} is running a cycle on this state "
                    f"(lock {path} held for more than {wait_s:g} s); this cycle is skipped, "
                    "nothing changed"
                ) from None
            time.sleep(POLL_S)
            continue
        if _same_file(fd, path):
            with contextlib.suppress(OSError):  # the pid is only for the message
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            return fd
        os.close(fd)  # removed or replaced while we waited: lock what the path names now


@contextlib.contextmanager
def held(path: Path, wait_s: float | None = None) -> Iterator[None]:
    """Hold the cycle lock for the ``with`` body; raises LockUnavailable after ``wait_s``
    (default `WAIT_S`).

    The descriptor is close-on-exec, so a refresh command cannot keep the lock after amtuner
    exits; closing it releases the lock, as does the process dying."""
    fd = _acquire(path, WAIT_S if wait_s is None else wait_s)
    try:
        yield
    finally:
        os.close(fd)
