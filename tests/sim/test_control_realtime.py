"""A controlled run keeps the daemon's code but not the costs of real time: no fsync of its
scratch file, no requests machinery, and no re-parse of a file that has not changed."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import requests

from amtuner.config import ControllerSettings
from amtuner.executor.files import replace_file
from amtuner.model import SchedulerKind
from amtuner.sim.control import ControlledRun, UnchangedFileCache, allocation_poll_phase
from amtuner.sim.server import AllocationFileWatcher
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.workload import load_workload
from tests.sim.conftest import fair_reloads


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_a_controlled_run_writes_without_fsync_or_http_machinery(
    tmp_path: Path, kind: SchedulerKind, monkeypatch: pytest.MonkeyPatch
) -> None:
    fsyncs: list[int] = []
    sends: list[str] = []
    real_fsync, real_send = os.fsync, requests.Session.send

    def fsync(fd: int) -> None:
        fsyncs.append(fd)
        real_fsync(fd)

    def send(
        self: requests.Session, request: requests.PreparedRequest, **kw: Any
    ) -> requests.Response:
        sends.append(str(request.url))
        return real_send(self, request, **kw)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(requests.Session, "send", send)
    workload = load_workload("paper:mixed")
    sim = build_simulation(kind, workload, default_scheduler_config(kind, workload.queues, 0.1))
    run = ControlledRun(sim, tmp_path, controller=ControllerSettings(period_seconds=15.0))
    result = sim.run(20_000)
    assert result.finished and not run.errors
    assert len(run.applied_at) >= 2 and len(result.a_trace) >= 2
    assert fsyncs == [] and sends == []


def test_the_cache_parses_again_only_when_the_file_changed(tmp_path: Path) -> None:
    path = tmp_path / "capacity-scheduler.xml"
    path.write_bytes(default_scheduler_config(SchedulerKind.CAPACITY, ["root.default"], 0.1))
    read = UnchangedFileCache()
    first = read(path, SchedulerKind.CAPACITY)
    assert read(path, SchedulerKind.CAPACITY) is first
    edit = first.edit({"": 0.25})
    replace_file(path, edit.new_data, durable=False)  # a new inode, as every write makes
    second = read(path, SchedulerKind.CAPACITY)
    assert second is not first and second.effective_value("") == 0.25
    assert read(path, SchedulerKind.CAPACITY) is second
    data = path.read_bytes().replace(b"0.25", b"0.35")
    path.write_bytes(data)  # in place, as many bytes: the ctime still moves
    assert read(path, SchedulerKind.CAPACITY).effective_value("") == 0.35


def test_the_fair_poll_reads_the_file_only_when_a_write_can_be_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every 10 s poll reloads as before (yarn-facts §2.3: the first one at least 5 s after the
    write), but only those polls read the file."""
    reads: list[float] = []
    real_version = AllocationFileWatcher._version

    def version(self: AllocationFileWatcher) -> tuple[int, bytes] | None:
        reads.append(sim.now)
        return real_version(self)

    monkeypatch.setattr(AllocationFileWatcher, "_version", version)
    kind = SchedulerKind.FAIR
    workload = load_workload("paper:mixed")
    sim = build_simulation(kind, workload, default_scheduler_config(kind, workload.queues, 0.1))
    run = ControlledRun(sim, tmp_path, controller=ControllerSettings(period_seconds=15.0))
    result = sim.run(20_000)
    assert result.finished and len(run.applied_at) >= 2
    reloads = [t for t, _a in result.a_trace[1:]]
    expected = fair_reloads(run.applied_at, allocation_poll_phase(0))
    assert reloads == [t for t in expected if t <= result.sim_seconds]
    assert [round(t, 3) for t in reads] == [0.0, *reloads]  # the first look, a read a reload
    assert result.sim_seconds / 10 > 2 * len(reads)  # most polls read nothing
