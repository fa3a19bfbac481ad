"""Write a scheduler file so that a crash, a full disk or a concurrent editor never corrupts it.

The RM (and FairScheduler's reload thread) may read the file at any instant, and amtuner may be
killed at any instant; so the new content goes to a temp file in the same directory, is fsynced,
and replaces the file with one rename, after which the directory is fsynced. Readers see the
old file or the new one, never a mix.

``durable=False`` skips both fsyncs and keeps the atomic replace: for a file in a simulation's
scratch directory, whose content need not survive a power cut but must never be seen half
written (the simulated FairScheduler's poll reads it). Everything else stays durable.

A temp file left by a killed writer is named ``.<name>.amtuner-<pid>-<random>.tmp`` (hidden, and
not ending in ``.xml``, so neither Hadoop nor an operator takes it for the real file); the next
write removes those whose process is gone.

A symlinked file is written where the link points; the link stays.

Backups are ``<name>.<UTC timestamp>.bak``; with ``backup_dir=None`` they go beside the file,
because a change with no way back is worse than one extra file in the config directory. One is
kept only for a write that happened, and older ones are rotated away only then: a disk that
keeps refusing the write must not push the good backups out one failed cycle at a time.

The new file gets the old one's owner, group, mode and extended attributes (POSIX ACLs are the
``system.posix_acl_access`` attribute, the SELinux label ``security.selinux``): the RM reads the
file as another user. When any of them cannot be carried over, the write is refused and the old
file stays, rather than leave a file the RM may no longer be allowed to read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
from datetime import UTC, datetime
from pathlib import Path

from amtuner.executor.errors import ConcurrentEditError, WriteError
from amtuner.executor.reading import read_regular, refuse_irregular
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


def _xattrs(target: Path | int) -> dict[str, bytes]:
    """Extended attributes by name; none on a filesystem without them."""
    try:
        names = os.listxattr(target)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return {}
        raise
    found: dict[str, bytes] = {}
    for name in names:
        try:
            found[name] = os.getxattr(target, name)
        except OSError as e:
            if e.errno != errno.ENODATA:  # removed since it was listed
                raise
    return found


def _keep_metadata(path: Path, st: os.stat_result, fd: int) -> None:
    """Give the temp file (``fd``) the metadata of the file it replaces, or refuse.

    Owner first: ``chown`` clears set-id bits, which the mode then restores. An attribute the
    new file already holds with the same value is not set again (the kernel labels a new file
    from its directory, and an unprivileged writer may not relabel, even to the same label).
    An attribute the old file lacks is removed (an ACL inherited from the directory's default
    ACL), except ``security.*`` ones, which the security module manages.
    """
    new = os.fstat(fd)
    try:
        if (new.st_uid, new.st_gid) != (st.st_uid, st.st_gid):
            os.fchown(fd, st.st_uid, st.st_gid)
    except OSError as e:
        raise WriteError(
            f"cannot write {path}: cannot give the new file its owner {st.st_uid}:{st.st_gid} "
            f"({e.strerror or e}); the file is unchanged"
        ) from None
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    name = ""
    try:
        old, current = _xattrs(path), _xattrs(fd)
        for name, value in old.items():
            if current.get(name) != value:
                os.setxattr(fd, name, value)
        for name in current.keys() - old.keys():
            if not name.startswith("security."):
                os.removexattr(fd, name)
    except OSError as e:
        what = f"extended attribute {name}" if name else "extended attributes"
        raise WriteError(
            f"cannot write {path}: cannot carry its {what} over to the new file "
            f"({e.strerror or e}); the file is unchanged"
        ) from None


def _read_current(path: Path) -> bytes:
    try:
        return read_regular(path)
    except OSError as e:
        raise WriteError(f"cannot read {path} before writing it: {e.strerror or e}") from None


def replace_file(
    path: Path, data: bytes, expected: bytes | None = None, *, durable: bool = True
) -> None:
    """Atomically make ``path`` hold ``data``; with ``expected``, only if it still holds that.

    Owner, group, mode and extended attributes of the existing file are kept so the RM can
    still read it; a FIFO, device or directory at ``path`` is refused, never replaced.
    """
    directory = path.parent
    try:
        st: os.stat_result | None = path.stat()
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise WriteError(f"cannot write {path}: {e.strerror or e}") from None
    if st is not None:
        refuse_irregular(path, st.st_mode)
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
                _keep_metadata(path, st, fd)
            if durable:
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
    if durable:
        with contextlib.suppress(OSError):
            _fsync_dir(directory)


def _backup(edit: Edit, directory: Path, durable: bool) -> Path:
    """Write the file's current content as a new backup (nothing rotated yet)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    target = directory / f"{edit.path.name}.{stamp}.bak"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise WriteError(
            f"cannot create backup directory {directory}: {e.strerror or e}; {edit.path} unchanged"
        ) from None
    try:
        replace_file(target, edit.old_data, durable=durable)
    except WriteError as e:
        raise WriteError(f"backup failed, {edit.path} not written: {e}") from None
    return target


def _rotate(directory: Path, name: str, keep: int) -> None:
    """Keep the newest ``keep`` backups of ``name``; run only after a write that happened."""
    _remove_stale_temps(directory, name)
    pattern = re.compile(re.escape(name) + r"\.\d{8}T\d{6}\.\d{6}Z\.bak$")
    with contextlib.suppress(OSError):
        backups = sorted(p for p in directory.iterdir() if pattern.match(p.name))
        for old in backups[:-keep]:
            with contextlib.suppress(OSError):
                old.unlink()


def write_atomically(
    edit: Edit, *, backup_dir: Path | None, keep_backups: int = 10, durable: bool = True
) -> Path | None:
    """Write ``edit.new_data`` over ``edit.path`` if the file still holds ``edit.old_data``.

    Returns the backup written (None when the edit changes nothing or ``keep_backups`` is 0).
    Raises ConcurrentEditError when someone else changed the file, WriteError when the disk
    refuses; in both cases the file is left exactly as it was, and so are the backups.
    """
    if not edit.changed:
        return None
    path = _real(edit.path)
    _remove_stale_temps(path.parent, path.name)
    if _read_current(path) != edit.old_data:
        raise ConcurrentEditError(f"{path} was changed on disk since it was read; not overwriting")
    if keep_backups <= 0:
        replace_file(path, edit.new_data, edit.old_data, durable=durable)
        return None
    directory = backup_dir if backup_dir is not None else edit.path.parent
    backup = _backup(edit, directory, durable)
    try:
        replace_file(path, edit.new_data, edit.old_data, durable=durable)
    except BaseException:
        with contextlib.suppress(OSError):
            backup.unlink()
        raise
    _rotate(directory, edit.path.name, keep_backups)
    return backup


def restore(edit: Edit, *, durable: bool = True) -> None:
    """Put ``edit.old_data`` back, unless someone changed the file after our write."""
    replace_file(_real(edit.path), edit.old_data, edit.new_data, durable=durable)
