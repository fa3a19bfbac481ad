"""Write a scheduler file so that a crash, a full disk or a concurrent editor never corrupts it.

The RM (and FairScheduler's reload thread) may read the file at any instant, and amtuner may be
killed at any instant; so the new content goes to a temp file in the same directory, is fsynced,
and replaces the file with one rename, after which the directory is fsynced. Readers see the
old file or the new one, never a mix.

A temp file left by a killed writer is named ``.<name>.amtuner-<pid>-<random>.tmp`` (hidden, and
not ending in ``.xml``, so neither Hadoop nor an operator takes it for the real file); the next
write removes those whose process is gone.

A symlinked file is written where the link points; the link stays.

Backups are ``<name>.<UTC timestamp>.bak``; with ``backup_dir=None`` they go beside the file,
because a change with no way back is worse than one extra file in the config directory.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path

from amtuner.executor.errors import ConcurrentEditError, WriteError
from amtuner.executor.xmledit import Edit

_TEMP = re.compile(r"^\.(?P<name>.+)\.amtuner-(?P<pid>\d+)-[0-9a-f]+\.tmp$")


def _temp_name(path: Path) -> str:
    return f".{path.name}.amtuner-{os.getpid()}-{secrets.token_hex(4)}.tmp"


def _remove_stale_temps(directory: Path, name: str) -> None:
    """Remove temp files (of ``name`` or its backups) whose writer was killed (pid is gone)."""
    try:
        entries = list(directory.iterdir())
    except OSError:
        return
    for entry in entries:
        match = _TEMP.match(entry.name)
        if match is None or not (match["name"] == name or match["name"].startswith(name + ".")):
            continue
        pid = int(match["pid"])
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                entry.unlink()
        except PermissionError:
            pass  # alive, owned by someone else


def _real(path: Path) -> Path:
    """Write through symlinks (/etc/hadoop/conf is often one) instead of replacing the link."""
    return Path(os.path.realpath(path))


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_selinux_label(path: Path, fd: int) -> None:
    """Best effort: without the label, an enforcing host may deny the RM the new file."""
    with contextlib.suppress(OSError, AttributeError):
        os.setxattr(fd, "security.selinux", os.getxattr(path, "security.selinux"))


def _read_current(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise WriteError(f"cannot read {path} before writing it: {e.strerror or e}") from None


def replace_file(path: Path, data: bytes, expected: bytes | None = None) -> None:
    """Atomically make ``path`` hold ``data``; with ``expected``, only if it still holds that.

    Mode, owner (as root) and SELinux label of the existing file are kept so the RM can
    still read it.
    """
    directory = path.parent
    try:
        st: os.stat_result | None = path.stat()
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise WriteError(f"cannot write {path}: {e.strerror or e}") from None
    tmp = directory / _temp_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        raise WriteError(
            f"cannot write {path}: cannot create a temp file in {directory}: {e.strerror or e}; "
            "the file is unchanged"
        ) from None
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if st is not None:
                os.fchmod(fd, st.st_mode & 0o7777)
                if os.geteuid() == 0:
                    with contextlib.suppress(OSError):
                        os.fchown(fd, st.st_uid, st.st_gid)
                _copy_selinux_label(path, fd)
            os.fsync(fd)
        finally:
            os.close(fd)
        if expected is not None and _read_current(path) != expected:
            raise ConcurrentEditError(
                f"{path} was changed on disk since it was read; not overwriting"
            )
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise WriteError(f"cannot write {path}: {e.strerror or e}; the file is unchanged") from None
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    # The rename is done; some filesystems cannot fsync a directory, and failing here would
    # report an unchanged file that has in fact changed.
    with contextlib.suppress(OSError):
        _fsync_dir(directory)


def _backup(edit: Edit, backup_dir: Path | None, keep: int) -> Path | None:
    if keep <= 0:
        return None
    directory = backup_dir if backup_dir is not None else edit.path.parent
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    target = directory / f"{edit.path.name}.{stamp}.bak"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise WriteError(
            f"cannot create backup directory {directory}: {e.strerror or e}; {edit.path} unchanged"
        ) from None
    try:
        replace_file(target, edit.old_data)
    except WriteError as e:
        raise WriteError(f"backup failed, {edit.path} not written: {e}") from None
    _remove_stale_temps(directory, edit.path.name)
    pattern = re.compile(re.escape(edit.path.name) + r"\.\d{8}T\d{6}\.\d{6}Z\.bak$")
    backups = sorted(p for p in directory.iterdir() if pattern.match(p.name))
    for old in backups[:-keep]:
        with contextlib.suppress(OSError):
            old.unlink()
    return target


def write_atomically(edit: Edit, *, backup_dir: Path | None, keep_backups: int = 10) -> Path | None:
    """Write ``edit.new_data`` over ``edit.path`` if the file still holds ``edit.old_data``.

    Returns the backup written (None when the edit changes nothing or ``keep_backups`` is 0).
    Raises ConcurrentEditError when someone else changed the file, WriteError when the disk
    refuses; in both cases the file is left exactly as it was.
    """
    if not edit.changed:
        return None
    path = _real(edit.path)
    _remove_stale_temps(path.parent, path.name)
    if _read_current(path) != edit.old_data:
        raise ConcurrentEditError(f"{path} was changed on disk since it was read; not overwriting")
    backup = _backup(edit, backup_dir, keep_backups)
    replace_file(path, edit.new_data, edit.old_data)
    return backup


def restore(edit: Edit) -> None:
    """Put ``edit.old_data`` back, unless someone changed the file after our write."""
    replace_file(_real(edit.path), edit.old_data, edit.new_data)
