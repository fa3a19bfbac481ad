"""The simulated RM over real HTTP on loopback: clock, locking, allocation-file reloads, and the
`amtuner sim` command end to end (a subprocess on an ephemeral port)."""

from __future__ import annotations

import logging
import os
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Collection
from pathlib import Path

import pytest
import requests

from amtuner.model import SchedulerKind
from amtuner.sim.rmapi import FaceOptions
from amtuner.sim.server import AllocationFileWatcher, SimServer
from amtuner.sim.view import AppView, ClusterView, QueueView, Res

ALLOC = b"<allocations><queueMaxAMShareDefault>0.5</queueMaxAMShareDefault></allocations>"


class ClockSim:
    """A stand-in that only keeps time and a config: enough to test the server around it."""

    def __init__(self, kind: SchedulerKind, config: bytes = ALLOC) -> None:
        self.scheduler_kind = kind
        self.now = 0.0
        self.config = config
        self.steps: list[float] = []

    def run_until(self, t: float) -> None:
        assert t >= self.now, "time never runs backwards"
        self.now = t
        self.steps.append(t)

    def view(self) -> ClusterView:
        root = QueueView("root", False, ("root.default",), Res(), Res(), Res(), 0, 0, 0, 0, 0)
        leaf = QueueView("root.default", True, (), Res(), Res(), Res(1024, 1), 0, 0, 10, 0, 0)
        return ClusterView(
            self.now,
            self.scheduler_kind.value,
            Res(8192, 8),
            Res(),
            Res(),
            1,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            (root, leaf),
        )

    def app_views(
        self, states: Collection[str] | None = None, limit: int | None = None
    ) -> list[AppView]:
        return []

    def scheduler_config(self) -> bytes:
        return self.config

    def reload_scheduler_config(self, data: bytes) -> None:
        try:
            ET.fromstring(data)
        except ET.ParseError as e:
            raise ValueError(f"bad allocation file: {e}") from e
        self.config = data


def wait_for(cond: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail("condition not reached before the deadline")
        time.sleep(0.01)


def touch(path: Path, data: bytes, mtime: float) -> None:
    path.write_bytes(data)
    os.utime(path, (mtime, mtime))


# ------------------------------------------------------------------- the allocation-file rule


def test_watcher_waits_until_the_change_is_5s_old(tmp_path: Path) -> None:
    path = tmp_path / "fair-scheduler.xml"
    touch(path, ALLOC, 100.0)
    sim = ClockSim(SchedulerKind.FAIR)
    watcher = AllocationFileWatcher(path, sim_time_of=lambda epoch: epoch)
    new = ALLOC.replace(b"0.5", b"0.7")
    touch(path, new, 1000.0)
    watcher.poll(sim, 1004.0)
    assert sim.config == ALLOC  # modified 4 s ago: not yet
    watcher.poll(sim, 1005.5)
    assert sim.config == new
    watcher.poll(sim, 1020.0)
    assert watcher.reloads == 1  # unchanged since: not reloaded again


def test_watcher_keeps_the_old_allocations_on_a_bad_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "fair-scheduler.xml"
    touch(path, ALLOC, 100.0)
    sim = ClockSim(SchedulerKind.FAIR)
    watcher = AllocationFileWatcher(path, sim_time_of=lambda epoch: epoch)
    touch(path, b"<allocations><oops", 200.0)
    with caplog.at_level(logging.WARNING):
        watcher.poll(sim, 300.0)
        watcher.poll(sim, 310.0)
    assert sim.config == ALLOC
    assert caplog.text.count("will use existing allocations") == 1
    fixed = ALLOC.replace(b"0.5", b"0.25")
    touch(path, fixed, 400.0)
    watcher.poll(sim, 410.0)
    assert sim.config == fixed


# ------------------------------------------------------------------- the server, in-process


def test_server_answers_over_http_and_advances_time() -> None:
    sim = ClockSim(SchedulerKind.CAPACITY)
    with SimServer(sim, speed=1000.0) as server:
        assert server.url.startswith("http://127.0.0.1:")
        r = requests.get(f"{server.url}/ws/v1/cluster/metrics", timeout=5)
        assert r.status_code == 200
        assert r.json()["clusterMetrics"]["totalMB"] == 8192
        wait_for(lambda: sim.now > 50.0)
        r = requests.get(f"{server.url}/ws/v1/cluster/nope", timeout=5)
        assert r.status_code == 404
        assert r.json()["RemoteException"]["exception"] == "NotFoundException"
    assert sim.steps == sorted(sim.steps)


def test_server_steps_stop_on_the_10s_poll_grid(tmp_path: Path) -> None:
    path = tmp_path / "fair-scheduler.xml"
    path.write_bytes(ALLOC)
    sim = ClockSim(SchedulerKind.FAIR)
    server = SimServer(sim, options=FaceOptions(scheduler_config_path=path), speed=1.0)
    server.advance_to(35.0)
    assert {10.0, 20.0, 30.0} <= set(sim.steps)
    assert sim.now == 35.0
    server.stop()


def test_fair_server_picks_up_an_edited_file(tmp_path: Path) -> None:
    path = tmp_path / "fair-scheduler.xml"
    path.write_bytes(ALLOC)
    sim = ClockSim(SchedulerKind.FAIR)
    options = FaceOptions(scheduler_config_path=path)
    with SimServer(sim, options=options, speed=2000.0) as server:
        new = ALLOC.replace(b"0.5", b"0.9")
        path.write_bytes(new)
        wait_for(lambda: sim.config == new)
        assert server.watcher is not None and server.watcher.reloads == 1


def test_capacity_server_reloads_only_on_refresh(tmp_path: Path) -> None:
    path = tmp_path / "capacity-scheduler.xml"
    old = b"<configuration/>"
    path.write_bytes(old)
    sim = ClockSim(SchedulerKind.CAPACITY, old)
    with SimServer(sim, options=FaceOptions(scheduler_config_path=path), speed=2000.0) as server:
        assert server.watcher is None
        new = b"<configuration><property/></configuration>"
        path.write_bytes(new)
        wait_for(lambda: sim.now > 100.0)
        assert sim.config == old
        r = requests.post(f"{server.url}/ws/v1/cluster/sim/refresh-queues", timeout=5)
        assert r.status_code == 200
        assert sim.config == new
        path.write_bytes(b"<configuration>")
        r = requests.post(f"{server.url}/ws/v1/cluster/sim/refresh-queues", timeout=5)
        assert r.status_code == 400 and "bad allocation file" in r.text
        assert sim.config == new
