"""The simulated RM over real HTTP on loopback: clock, locking, allocation-file reloads, and the
`amtuner sim` command end to end (a subprocess on an ephemeral port)."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from amtuner.model import SchedulerKind
from amtuner.sim.rmapi import NOT_MUTABLE, FaceOptions
from amtuner.sim.server import SIM_TIME_HEADER, AllocationFileWatcher, SimServer
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
    watcher.poll(sim, 1005.0)
    assert sim.config == ALLOC  # exactly 5 s: AllocationFileLoaderService wants more (strict >)
    watcher.poll(sim, 1005.5)
    assert sim.config == new
    watcher.poll(sim, 1020.0)
    assert watcher.reloads == 1  # unchanged since: not reloaded again


def test_watcher_sees_a_rewrite_within_one_timestamp_tick(tmp_path: Path) -> None:
    # In virtual time two writes can be wall-milliseconds apart: same mtime, same size.
    path = tmp_path / "fair-scheduler.xml"
    touch(path, ALLOC, 1000.0)
    sim = ClockSim(SchedulerKind.FAIR)
    watcher = AllocationFileWatcher(path, sim_time_of=lambda epoch: epoch)
    same_size = ALLOC.replace(b"0.5", b"0.4")
    touch(path, same_size, 1000.0)
    watcher.poll(sim, 1010.0)
    assert sim.config == same_size and watcher.reloads == 1


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


# ------------------------------------------------------------------- `amtuner sim`, end to end

REPO = Path(__file__).resolve().parents[2]
AM_PERCENT = "yarn.scheduler.capacity.maximum-am-resource-percent"


class RunningSim:
    def __init__(self, proc: subprocess.Popen[str], url: str, config: Path, stderr: Path) -> None:
        self.proc, self.url, self.config, self.stderr = proc, url, config, stderr

    def get(self, path: str, **kw: Any) -> requests.Response:
        return requests.get(self.url + path, timeout=10, **kw)

    def clock(self) -> float:
        return float(self.get("/ws/v1/cluster/info").headers[SIM_TIME_HEADER])

    def wait_sim_seconds(self, seconds: float) -> None:
        target = self.clock() + seconds
        wait_for(lambda: self.clock() >= target)


@pytest.fixture
def start_sim(tmp_path: Path) -> Iterator[Callable[..., RunningSim]]:
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str, temp_config: bool = False) -> RunningSim:
        n = len(procs)
        stderr = tmp_path / f"sim{n}.err"
        cmd = [sys.executable, "-m", "amtuner", "sim", "--port", "0", *args]
        if not temp_config:
            cmd += ["--state-dir", str(tmp_path / f"state{n}")]
        with stderr.open("w") as err:
            proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True)
        procs.append(proc)
        assert proc.stdout is not None
        config_line = proc.stdout.readline()
        listening = proc.stdout.readline()
        assert config_line.startswith("scheduler config: "), (config_line, stderr.read_text())
        assert listening.startswith("listening on http://127.0.0.1:"), stderr.read_text()
        config = Path(config_line.removeprefix("scheduler config: ").strip())
        return RunningSim(proc, listening.split()[-1], config, stderr)

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


def stop(sim: RunningSim) -> int:
    sim.proc.send_signal(signal.SIGTERM)
    return sim.proc.wait(timeout=20)


def leaf(sim: RunningSim, name: str = "root.default") -> dict[str, Any]:
    info = sim.get("/ws/v1/cluster/scheduler").json()["scheduler"]["schedulerInfo"]
    queues = (
        info["rootQueue"]["childQueues"]["queue"]
        if "rootQueue" in info
        else info["queues"]["queue"]
    )
    return next(q for q in queues if q.get("queuePath", q["queueName"]) == name)


def refresh(*urls: str) -> subprocess.CompletedProcess[str]:
    args = [a for u in urls for a in ("--url", u)]
    cmd = [sys.executable, "-m", "amtuner", "sim-admin", "refresh-queues", *args]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_fair_sim_serves_the_rm_api_and_reloads_its_allocation_file(
    start_sim: Callable[..., RunningSim],
) -> None:
    sim = start_sim("--scheduler", "fair", "--workload", "paper:grep", "--speed", "500")
    assert sim.config.name == "fair-scheduler.xml" and sim.config.is_file()
    info = sim.get("/ws/v1/cluster/info").json()["clusterInfo"]
    assert info["haState"] == "ACTIVE"

    def metrics() -> dict[str, Any]:
        return sim.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]

    wait_for(lambda: metrics()["appsSubmitted"] == 30)  # all submitted at t=0
    assert metrics()["totalMB"] == 4 * 8192
    apps = sim.get("/ws/v1/cluster/apps", params={"limit": "5"}).json()["apps"]["app"]
    assert len(apps) == 5 and apps[0]["id"].startswith("application_")
    assert "Cluster Metrics" in sim.get("/cluster").text
    assert leaf(sim)["maxApps"] == 2147483647

    new = sim.config.read_text().replace("<weight>", "<maxRunningApps>7</maxRunningApps><weight>")
    sim.config.write_text(new)
    wait_for(lambda: leaf(sim)["maxApps"] == 7)

    sim.config.write_text("<allocations><queue name='default'><weight>x</weight>")
    sim.wait_sim_seconds(30)
    assert leaf(sim)["maxApps"] == 7
    assert "will use existing allocations" in sim.stderr.read_text()
    assert stop(sim) == 0


@pytest.mark.slow
def test_capacity_sim_reloads_only_on_refresh_queues(start_sim: Callable[..., RunningSim]) -> None:
    sim = start_sim("--scheduler", "capacity", "--workload", "paper:terasort", "--speed", "500")
    assert leaf(sim)["configuredMaxAMResourceLimit"] == 0.1
    text = sim.config.read_text()
    sim.config.write_text(
        text.replace(
            "</configuration>",
            f"<property><name>{AM_PERCENT}</name><value>0.5</value></property></configuration>",
        )
    )
    sim.wait_sim_seconds(30)
    assert leaf(sim)["configuredMaxAMResourceLimit"] == 0.1  # no watching: CS waits for a refresh
    done = refresh(sim.url)
    assert done.returncode == 0, done.stderr
    assert leaf(sim)["configuredMaxAMResourceLimit"] == 0.5

    sim.config.write_text(text.replace("<value>100</value>", "<value>lots</value>", 1))
    failed = refresh(sim.url)
    assert failed.returncode != 0
    assert "refreshQueues" in failed.stderr and len(failed.stderr.strip()) > len("refreshQueues")
    assert leaf(sim)["configuredMaxAMResourceLimit"] == 0.5  # the old config is kept

    r = sim.get("/ws/v1/cluster/scheduler-conf")
    assert (r.status_code, r.text) == (400, NOT_MUTABLE)
    assert stop(sim) == 0


@pytest.mark.slow
def test_mutable_conf_takes_puts_and_refuses_refresh(start_sim: Callable[..., RunningSim]) -> None:
    sim = start_sim("--scheduler", "capacity", "--workload", "paper:grep", "--mutable-conf")
    props = sim.get("/ws/v1/cluster/scheduler-conf").json()["property"]
    assert {"name": "yarn.scheduler.capacity.root.queues", "value": "default"} in props
    body = (
        "<sched-conf><global-updates><entry><key>" + AM_PERCENT + "</key><value>0.3</value>"
        "</entry></global-updates></sched-conf>"
    )
    r = requests.put(
        sim.url + "/ws/v1/cluster/scheduler-conf",
        data=body,
        timeout=10,
        headers={"Content-Type": "application/xml"},
    )
    assert r.status_code == 200, r.text
    assert leaf(sim)["configuredMaxAMResourceLimit"] == 0.3
    failed = refresh(sim.url)
    assert failed.returncode != 0 and "mutable" in failed.stderr
    assert stop(sim) == 0


@pytest.mark.slow
def test_standby_redirects_to_the_active_rm(start_sim: Callable[..., RunningSim]) -> None:
    active = start_sim("--scheduler", "capacity", "--workload", "paper:grep", temp_config=True)
    standby = start_sim(
        "--scheduler",
        "capacity",
        "--workload",
        "paper:grep",
        "--standby-of",
        active.url,
        "--web-ui-layout",
        "2",
    )
    r = standby.get("/ws/v1/cluster/metrics?x=1", allow_redirects=False)
    assert r.status_code == 307
    assert r.headers["Location"] == active.url + "/ws/v1/cluster/metrics?x=1"
    assert standby.get("/ws/v1/cluster/metrics").json()["clusterMetrics"]["totalMB"] > 0
    assert standby.get("/cluster", allow_redirects=False).status_code == 307
    assert standby.get("/ws/v1/cluster/info").json()["clusterInfo"]["haState"] == "STANDBY"
    assert "Memory Total" in standby.get("/cluster/cluster").text  # About page: not redirected

    active.config.write_text(
        active.config.read_text().replace(
            "</configuration>",
            f"<property><name>{AM_PERCENT}</name><value>0.4</value></property></configuration>",
        )
    )
    done = refresh(standby.url)  # follows the 307 to the active RM, as rmadmin fails over
    assert done.returncode == 0, done.stderr
    assert leaf(active)["configuredMaxAMResourceLimit"] == 0.4
    assert stop(standby) == 0 and stop(active) == 0
    assert not active.config.exists()  # its own temporary directory is gone


@pytest.mark.slow
def test_sim_refuses_to_start_on_a_bad_file_and_sim_admin_needs_an_rm(tmp_path: Path) -> None:
    bad = tmp_path / "fair-scheduler.xml"
    bad.write_text("<allocations><queue name='default'><weight>x</weight></queue></allocations>")
    base = [sys.executable, "-m", "amtuner", "sim", "--port", "0", "--workload", "paper:grep"]
    run = subprocess.run(
        [*base, "--scheduler", "fair", "--scheduler-config", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1 and "amtuner sim:" in run.stderr
    assert "listening" not in run.stdout
    run = subprocess.run(
        [*base, "--scheduler", "fair", "--mutable-conf"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "--mutable-conf" in run.stderr
    run = subprocess.run(  # a usage error, as `amtuner simulate` says it
        [*base[:-2], "--workload", "paper:nosuch", "--scheduler", "fair"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "amtuner sim: " in run.stderr and "nosuch" in run.stderr
    with socket.socket() as s:  # a port nobody listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    failed = refresh(f"http://127.0.0.1:{port}")
    assert failed.returncode != 0 and "no RM answered" in failed.stderr
