"""Read a scheduler file only when it is a regular file.

Opening a FIFO for reading blocks until a writer appears (the daemon would hang), and opening a
device can act on it (a tape rewinds); so the type is checked with ``stat`` before the file is
opened, and again on the open descriptor, opened non-blocking, in case the path was swapped in
between.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from amtuner.executor.errors import NotRegularFileError

_KINDS = (
    (stat.S_ISDIR, "directory"),
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def refuse_irregular(path: Path, mode: int) -> None:
    """Raise NotRegularFileError unless ``mode`` (an ``st_mode``) is a regular file's."""
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "special file")
    raise NotRegularFileError(f"{path} is a {kind}, not a regular file; amtuner does not open it")


def read_regular(path: Path, limit: int | None = None) -> bytes:
    """The bytes of ``path`` (at most ``limit`` + 1 of them); OSError when it cannot be read."""
    refuse_irregular(path, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        refuse_irregular(path, os.fstat(fd).st_mode)
        return f.read() if limit is None else f.read(limit + 1)
