"""``durable``: every write is fsynced (file and directory) unless the caller says its file
needs no durability (a simulation's scratch file); the atomic replace stays either way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from amtuner.executor import SchedulerFile
from amtuner.executor.files import replace_file, restore, write_atomically
from amtuner.model import SchedulerKind

ROOT = Path(__file__).resolve().parents[2]
FAIR = (ROOT / "tests" / "data" / "executor" / "fair-scheduler.xml").read_bytes()


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The descriptors fsynced from now on (the real fsync still runs)."""
    seen: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        seen.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return seen


def test_a_write_is_durable_by_default(tmp_path: Path, fsyncs: list[int]) -> None:
    path = tmp_path / "fair-scheduler.xml"
    path.write_bytes(FAIR)
    edit = SchedulerFile(path, SchedulerKind.FAIR, FAIR).edit({"": 0.3})
    write_atomically(edit, backup_dir=tmp_path / "backups", keep_backups=2)
    assert len(fsyncs) == 4  # the backup and the file, each with its directory
    restore(edit)
    assert len(fsyncs) == 6 and path.read_bytes() == FAIR


def test_a_scratch_write_is_atomic_without_fsync(tmp_path: Path, fsyncs: list[int]) -> None:
    path = tmp_path / "fair-scheduler.xml"
    path.write_bytes(FAIR)
    before = path.stat().st_ino
    edit = SchedulerFile(path, SchedulerKind.FAIR, FAIR).edit({"": 0.3})
    backup = write_atomically(
        edit, backup_dir=tmp_path / "backups", keep_backups=2, durable=False
    )
    assert path.read_bytes() == edit.new_data and path.stat().st_ino != before  # replaced
    assert backup is not None and backup.read_bytes() == FAIR
    restore(edit, durable=False)
    replace_file(tmp_path / "state.json", b"{}\n", durable=False)
    assert path.read_bytes() == FAIR and fsyncs == []
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "backups", "fair-scheduler.xml", "state.json",
    ]  # fmt: skip
