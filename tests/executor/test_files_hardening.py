"""Writes that cannot keep what the RM relies on are refused; failed writes keep the backups;
a FIFO or device is never opened. Real files, real processes, real credentials."""

from __future__ import annotations

import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from amtuner.executor import Edit, ExecutorError, NotRegularFileError, SchedulerFile, WriteError
from amtuner.executor.files import write_atomically

ROOT = Path(__file__).resolve().parents[2]
FAIR = (ROOT / "tests" / "data" / "executor" / "fair-scheduler.xml").read_bytes()
NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user")


def run(script: str, *args: object, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def fair_file(directory: Path) -> Path:
    path = directory / "fair-scheduler.xml"
    path.write_bytes(FAIR)
    return path


def backups_of(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.name.endswith(".bak")}


# --- backups ---------------------------------------------------------------------------------

FAILING_WRITER = """
    import resource, signal, sys
    from pathlib import Path
    from amtuner.executor import SchedulerFile, WriteError
    from amtuner.executor.files import write_atomically
    path, backups = Path(sys.argv[1]), Path(sys.argv[2])
    edit = SchedulerFile.read(path, "fair").edit({"root.default": 0.3125})
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = len(edit.old_data) + 1  # the backup (old bytes) fits, the longer new file does not
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    for _ in range(4):
        try:
            write_atomically(edit, backup_dir=backups, keep_backups=3)
        except WriteError as e:
            print(e)
"""


def test_failed_writes_do_not_rotate_good_backups_away(tmp_path: Path) -> None:
    path = fair_file(tmp_path)
    backups = tmp_path / "backups"
    for value in (0.1, 0.2, 0.5):
        edit = SchedulerFile.read(path, "fair").edit({"root.default": value})
        write_atomically(edit, backup_dir=backups, keep_backups=3)
    kept = backups_of(backups)
    assert len(kept) == 3 and len(set(kept.values())) == 3
    before = path.read_bytes()

    proc = run(FAILING_WRITER, path, backups)

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("File too large") == 4 and "unchanged" in proc.stdout
    assert path.read_bytes() == before
    assert backups_of(backups) == kept
    assert sorted(os.listdir(backups)) == sorted(kept)


# --- metadata --------------------------------------------------------------------------------


def _posix_acl(*entries: tuple[int, int, int]) -> bytes:
    """The kernel's ``system.posix_acl_access`` value (``posix_acl_xattr_header``, version 2):
    (tag, permissions, id) entries sorted by tag, then id."""
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


UNDEFINED = 0xFFFFFFFF
USER_OBJ, USER, GROUP_OBJ, MASK, OTHER = 0x01, 0x02, 0x04, 0x10, 0x20


def test_acl_and_user_xattrs_survive_the_replace(tmp_path: Path) -> None:
    path = fair_file(tmp_path)
    acl = _posix_acl(
        (USER_OBJ, 6, UNDEFINED),
        (USER, 4, 4242),  # the RM's user may read it through the ACL alone
        (GROUP_OBJ, 4, UNDEFINED),
        (MASK, 4, UNDEFINED),
        (OTHER, 0, UNDEFINED),
    )
    try:
        os.setxattr(path, "system.posix_acl_access", acl)
        os.setxattr(path, "user.managed-by", b"puppet")
    except OSError as e:
        pytest.skip(f"this filesystem keeps no ACLs or user xattrs: {e.strerror}")
    mode = stat.S_IMODE(path.stat().st_mode)
    edit = SchedulerFile.read(path, "fair").edit({"root.default": 0.3})
    write_atomically(edit, backup_dir=tmp_path / "b")
    assert path.read_bytes() == edit.new_data
    assert os.getxattr(path, "system.posix_acl_access") == acl
    assert os.getxattr(path, "user.managed-by") == b"puppet"
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_acl_inherited_from_the_directory_is_not_added(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    path = fair_file(conf)
    default = _posix_acl(
        (USER_OBJ, 7, UNDEFINED),
        (USER, 7, 4242),
        (GROUP_OBJ, 5, UNDEFINED),
        (MASK, 7, UNDEFINED),
        (OTHER, 5, UNDEFINED),
    )
    try:
        os.setxattr(conf, "system.posix_acl_default", default)
    except OSError as e:
        pytest.skip(f"this filesystem keeps no ACLs: {e.strerror}")
    edit = SchedulerFile.read(path, "fair").edit({"root.default": 0.3})
    write_atomically(edit, backup_dir=tmp_path / "b")
    assert "system.posix_acl_access" not in os.listxattr(path)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory another user can reach (pytest's tmp_path is private to its owner)."""
    directory = Path(tempfile.mkdtemp(prefix="amtuner-test-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        shutil.rmtree(directory)


AS_NOBODY = f"""
    import os, sys
    from pathlib import Path
    from amtuner.executor import SchedulerFile, WriteError
    from amtuner.executor.files import write_atomically
    path = Path(sys.argv[1])
    os.setgroups([])
    os.setgid({NOBODY})
    os.setuid({NOBODY})
    edit = SchedulerFile.read(path, "fair").edit({{"root.default": 0.3}})
    try:
        write_atomically(edit, backup_dir=None)
    except WriteError as e:
        print(e)
        sys.exit(3)
"""


@as_root
def test_group_that_cannot_be_kept_is_refused(shared_dir: Path) -> None:
    """The writer owns the file but is not in its group (the RM's): the new file would lose it."""
    conf = shared_dir / "conf"
    conf.mkdir()
    os.chown(conf, NOBODY, NOBODY)
    path = fair_file(conf)
    os.chown(path, NOBODY, 0)
    path.chmod(0o640)

    proc = run(AS_NOBODY, path)

    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"cannot give the new file its owner {NOBODY}:0" in proc.stdout
    assert "the file is unchanged" in proc.stdout
    assert path.read_bytes() == FAIR
    assert (path.stat().st_uid, path.stat().st_gid) == (NOBODY, 0)
    assert os.listdir(conf) == ["fair-scheduler.xml"]


@as_root
def test_xattr_that_cannot_be_carried_is_refused(shared_dir: Path) -> None:
    """A ``security.*`` attribute (set by root) may not be set by an unprivileged writer."""
    conf = shared_dir / "conf"
    conf.mkdir()
    os.chown(conf, NOBODY, NOBODY)
    path = fair_file(conf)
    os.chown(path, NOBODY, NOBODY)
    try:
        os.setxattr(path, "security.amtuner-test", b"label")
    except OSError as e:
        pytest.skip(f"this filesystem keeps no security xattrs: {e.strerror}")

    proc = run(AS_NOBODY, path)

    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "cannot carry its extended attribute security.amtuner-test" in proc.stdout
    assert path.read_bytes() == FAIR
    assert os.getxattr(path, "security.amtuner-test") == b"label"
    assert os.listdir(conf) == ["fair-scheduler.xml"]


@as_root
def test_owner_is_kept_when_root_writes(tmp_path: Path) -> None:
    path = fair_file(tmp_path)
    os.chown(path, NOBODY, 4242)
    path.chmod(0o2750)  # chown clears set-id bits: the mode must be set after it
    edit = SchedulerFile.read(path, "fair").edit({"root.default": 0.3})
    write_atomically(edit, backup_dir=tmp_path / "b")
    st = path.stat()
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (NOBODY, 4242, 0o2750)


# --- special files ---------------------------------------------------------------------------

READ_FIFO = """
    import sys
    from amtuner.executor import ExecutorError, SchedulerFile
    try:
        SchedulerFile.read(sys.argv[1], "fair")
    except ExecutorError as e:
        print(type(e).__name__, e)
"""

WRITE_OVER_FIFO = """
    import sys
    from pathlib import Path
    from amtuner.executor import Edit, ExecutorError
    from amtuner.executor.files import write_atomically
    path = Path(sys.argv[1])
    try:
        write_atomically(Edit(path, b"old", b"new", "", True, {}), backup_dir=None)
    except ExecutorError as e:
        print(type(e).__name__, e)
"""


@pytest.mark.parametrize("script", [READ_FIFO, WRITE_OVER_FIFO], ids=["read", "write"])
def test_fifo_is_refused_without_blocking(tmp_path: Path, script: str) -> None:
    """Opening a FIFO for reading waits for a writer: done before the check, this would hang
    (the timeout turns that into a failure)."""
    fifo = tmp_path / "fair-scheduler.xml"
    os.mkfifo(fifo)
    proc = run(script, fifo, timeout=20)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("NotRegularFileError")
    assert "is a FIFO, not a regular file" in proc.stdout
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_device_and_directory_are_refused(tmp_path: Path) -> None:
    link = tmp_path / "capacity-scheduler.xml"
    link.symlink_to("/dev/null")
    with pytest.raises(NotRegularFileError, match="is a character device"):
        SchedulerFile.read(link, "capacity")
    with pytest.raises(NotRegularFileError, match="is a directory"):
        SchedulerFile.read(tmp_path, "capacity")
    with pytest.raises(NotRegularFileError, match="is a character device"):
        write_atomically(Edit(link, b"", b"x", "", True, {}), backup_dir=tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_not_a_regular_file_is_a_scheduler_file_error() -> None:
    assert issubclass(NotRegularFileError, ExecutorError)
    assert NotRegularFileError.label == "scheduler-file"
    assert not issubclass(NotRegularFileError, WriteError)
