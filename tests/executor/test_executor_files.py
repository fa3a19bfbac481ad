"""Atomic writes, backups and refusals, on real files and real (killed) processes."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from amtuner.executor import ConcurrentEditError, Edit, SchedulerFile, WriteError
from amtuner.executor.files import restore, write_atomically

ROOT = Path(__file__).resolve().parents[2]
FAIR = (ROOT / "tests" / "data" / "executor" / "fair-scheduler.xml").read_bytes()


def env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT) + (os.pathsep + path if path else ""),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def fair_edit(tmp_path: Path, value: float = 0.3) -> Edit:
    conf = tmp_path / "conf"
    conf.mkdir(exist_ok=True)
    path = conf / "fair-scheduler.xml"
    if not path.exists():
        path.write_bytes(FAIR)
    return SchedulerFile.read(path, "fair").edit({"root.default": value})


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_write_replaces_file_keeps_mode_and_backs_up(tmp_path: Path) -> None:
    edit = fair_edit(tmp_path)
    edit.path.chmod(0o640)
    owner = (65534, 65534) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    os.chown(edit.path, *owner)  # as root: a file owned by someone else (yarn) stays theirs
    backups = tmp_path / "backups"
    backup = write_atomically(edit, backup_dir=backups, keep_backups=3)
    assert edit.path.read_bytes() == edit.new_data
    assert stat.S_IMODE(edit.path.stat().st_mode) == 0o640
    assert (edit.path.stat().st_uid, edit.path.stat().st_gid) == owner
    assert backup is not None and backup.parent == backups
    assert backup.read_bytes() == FAIR
    assert backup.name.startswith("fair-scheduler.xml.") and backup.name.endswith("Z.bak")
    assert listing(edit.path.parent) == ["fair-scheduler.xml"]


def test_backups_default_beside_the_file_and_only_last_k_kept(tmp_path: Path) -> None:
    olds = []
    for i in range(5):
        edit = fair_edit(tmp_path, 0.1 + i / 10)
        olds.append(edit.old_data)
        write_atomically(edit, backup_dir=None, keep_backups=3)
    conf = tmp_path / "conf"
    baks = sorted(p for p in conf.iterdir() if p.name.endswith(".bak"))
    assert [p.read_bytes() for p in baks] == olds[-3:]


def test_unchanged_edit_writes_nothing(tmp_path: Path) -> None:
    edit = fair_edit(tmp_path, 0.5)
    assert not edit.changed
    before = edit.path.stat()
    assert write_atomically(edit, backup_dir=tmp_path / "b") is None
    assert edit.path.stat().st_mtime_ns == before.st_mtime_ns
    assert not (tmp_path / "b").exists()


def test_file_changed_since_read_is_not_overwritten(tmp_path: Path) -> None:
    edit = fair_edit(tmp_path)
    theirs = FAIR.replace(b"<weight>2.0</weight>", b"<weight>3.0</weight>")
    edit.path.write_bytes(theirs)
    with pytest.raises(ConcurrentEditError, match="changed on disk since it was read"):
        write_atomically(edit, backup_dir=tmp_path / "b")
    assert edit.path.read_bytes() == theirs
    assert listing(edit.path.parent) == ["fair-scheduler.xml"]


def test_restore_puts_old_bytes_back_but_not_over_a_third_party(tmp_path: Path) -> None:
    edit = fair_edit(tmp_path)
    write_atomically(edit, backup_dir=tmp_path / "b")
    restore(edit)
    assert edit.path.read_bytes() == FAIR
    edit2 = fair_edit(tmp_path, 0.2)
    write_atomically(edit2, backup_dir=tmp_path / "b")
    edit.path.write_bytes(b"<allocations/>")
    with pytest.raises(ConcurrentEditError):
        restore(edit2)
    assert edit.path.read_bytes() == b"<allocations/>"


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """A directory nobody can create files in; root ignores modes, so it uses chattr +i."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", directory], capture_output=True).returncode:
        pytest.skip("running as root and chattr +i is unavailable: cannot make a read-only dir")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", directory], check=True)


def test_read_only_directory_gives_write_error_and_untouched_file(tmp_path: Path) -> None:
    edit = fair_edit(tmp_path)
    conf = edit.path.parent
    with read_only(conf):
        with pytest.raises(WriteError, match=r"cannot create a temp file in .*unchanged"):
            write_atomically(edit, backup_dir=tmp_path / "backups")
        with pytest.raises(WriteError, match="backup failed"):
            write_atomically(edit, backup_dir=None)
    assert edit.path.read_bytes() == FAIR
    assert listing(conf) == ["fair-scheduler.xml"]


def test_disk_full_midway_leaves_no_partial_file(tmp_path: Path) -> None:
    """A real write failure: the process may not grow any file beyond 4 KiB (EFBIG)."""
    path = tmp_path / "fair-scheduler.xml"
    path.write_bytes(FAIR)
    script = textwrap.dedent(
        """
        import resource, signal, sys
        from pathlib import Path
        from amtuner.executor import Edit, WriteError
        from amtuner.executor.files import write_atomically
        path = Path(sys.argv[1])
        old = path.read_bytes()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        edit = Edit(path, old, old + b"<!--" + b"x" * 10000 + b"-->", "", True, {})
        try:
            write_atomically(edit, backup_dir=Path(sys.argv[2]))
        except WriteError as e:
            print(e)
            sys.exit(3)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(path), str(tmp_path / "b")],
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert proc.returncode == 3, proc.stderr
    assert "File too large" in proc.stdout and "unchanged" in proc.stdout
    assert path.read_bytes() == FAIR
    assert listing(tmp_path) == ["b", "fair-scheduler.xml"]


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from amtuner.executor import Edit
    from amtuner.executor.files import write_atomically
    path, a, b, backups = (Path(arg) for arg in sys.argv[1:])
    a, b = a.read_bytes(), b.read_bytes()
    print("ready", flush=True)
    while True:
        current = path.read_bytes()
        new = b if current == a else a
        write_atomically(Edit(path, current, new, "", True, {}), backup_dir=backups, keep_backups=2)
    """
)


def test_kill_9_at_any_moment_leaves_old_or_new_file(tmp_path: Path) -> None:
    rng = random.Random(4)
    a = tmp_path / "a"
    b = tmp_path / "b"
    a.write_bytes(b"<!-- A -->\n" * 100_000)  # 1.1 MB
    b.write_bytes(b"<!-- BB -->\n" * 120_000)  # 1.4 MB: mixes and truncations are detectable
    conf = tmp_path / "conf"
    conf.mkdir()
    target = conf / "fair-scheduler.xml"
    target.write_bytes(a.read_bytes())
    backups = tmp_path / "backups"
    contents = {a.read_bytes(), b.read_bytes()}
    seen = []
    for _ in range(30):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), str(a), str(b), str(backups)],
            stdout=subprocess.PIPE,
            env=env(),
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=rng.uniform(0.0, 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL  # it was still writing, not crashed
        data = target.read_bytes()
        assert data in contents
        seen.append(data)
    assert len(set(seen)) == 2  # the writer really did replace the file between kills
    for leftover in conf.iterdir():
        assert leftover == target or leftover.name.startswith(".fair-scheduler.xml.amtuner-")
    for bak in backups.iterdir():
        assert bak.name.startswith(".fair-scheduler.xml.") or bak.read_bytes() in contents
    # The next write clears the debris of the killed writers.
    current = target.read_bytes()
    other = (contents - {current}).pop()
    write_atomically(Edit(target, current, other, "", True, {}), backup_dir=backups)
    assert listing(conf) == ["fair-scheduler.xml"]
    assert all(p.name.endswith(".bak") for p in backups.iterdir())


def test_symlinked_file_is_written_through_the_link(tmp_path: Path) -> None:
    real_dir = tmp_path / "conf.managed"
    real_dir.mkdir()
    (real_dir / "fair-scheduler.xml").write_bytes(FAIR)
    (tmp_path / "conf").symlink_to(real_dir)
    link = tmp_path / "fair-scheduler.xml"
    link.symlink_to(tmp_path / "conf" / "fair-scheduler.xml")
    edit = SchedulerFile.read(link, "fair").edit({"root.default": 0.3})
    write_atomically(edit, backup_dir=tmp_path / "b")
    assert link.is_symlink()
    assert (real_dir / "fair-scheduler.xml").read_bytes() == edit.new_data
    restore(edit)
    assert link.is_symlink() and link.read_bytes() == FAIR
