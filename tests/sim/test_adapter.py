"""The real monitor and executor talking to an in-process simulation through SimAdapter."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from amtuner.executor import RestRefresher, SchedulerFile
from amtuner.model import GLOBAL_TARGET, SchedulerKind
from amtuner.monitor.client import RMClient
from amtuner.monitor.transport import RequestsTransport
from amtuner.rmchannel import RMChannel
from amtuner.sim.adapter import SimAdapter, watch_allocation_file
from amtuner.sim.rmapi import FaceOptions
from amtuner.sim.simulation import Simulation, build_simulation, default_scheduler_config
from amtuner.sim.workload import load_workload


def simulation(kind: SchedulerKind, workload: str = "paper:grep") -> Simulation:
    return build_simulation(kind, load_workload(workload, seed=1), seed=1)


def session_for(sim: Simulation, options: FaceOptions | None = None) -> requests.Session:
    s = requests.Session()
    s.mount("http://sim", SimAdapter(sim, options=options))
    return s


@pytest.mark.parametrize("kind", [SchedulerKind.CAPACITY, SchedulerKind.FAIR])
def test_the_monitor_observes_an_in_process_simulation(kind: SchedulerKind) -> None:
    sim = simulation(kind)
    sim.run_until(20.0)
    client = RMClient(["http://sim"], session_for(sim), clock=lambda: sim.now)
    obs = client.observe(["root.default"])
    view = sim.view()
    assert obs.scheduler is kind
    assert (obs.pending_apps, obs.running_apps) == (view.apps_pending, view.apps_running)
    assert obs.running_apps > 0  # the figures are live, not a default
    assert (obs.memory_used_mb, obs.memory_total_mb) == (
        view.allocated.memory_mb,
        view.total.memory_mb,
    )
    leaf = next(q for q in view.queues if q.path == "root.default")
    stats = obs.queue("root.default")
    assert stats is not None
    assert stats.am_memory_used_mb == leaf.am_used.memory_mb > 0
    assert client.scheduler_kind() is kind
    assert client.active_url == "http://sim"


def test_a_standby_adapter_redirects_to_the_active_one() -> None:
    sim = simulation(SchedulerKind.CAPACITY)
    s = requests.Session()
    s.mount("http://active", SimAdapter(sim))
    s.mount("http://standby", SimAdapter(sim, options=FaceOptions(standby_of="http://active")))
    r = s.get("http://standby/ws/v1/cluster/metrics?x=1", timeout=5)
    assert r.status_code == 200 and r.url == "http://active/ws/v1/cluster/metrics?x=1"
    assert [h.status_code for h in r.history] == [307]
    assert r.json()["clusterMetrics"]["totalMB"] == sim.view().total.memory_mb
    client = RMClient(["http://standby", "http://active"], s)
    client.observe()
    assert client.active_url == "http://active"


def test_the_rest_refresher_tunes_a_mutable_store() -> None:
    sim = simulation(SchedulerKind.CAPACITY)
    s = session_for(sim, FaceOptions(mutable_conf=True))
    channel = RMChannel(["http://sim"], RequestsTransport(s), deadline_s=5, timeout=(5, 5))
    refresher = RestRefresher(channel)
    current = SchedulerFile(Path("scheduler-conf"), SchedulerKind.CAPACITY, refresher.fetch())
    refresher.refresh(current.edit({GLOBAL_TARGET: 0.35}))
    leaf = next(q for q in sim.view().queues if q.path == "root.default")
    assert leaf.max_am_percent == pytest.approx(0.35)
    r = s.get("http://sim/ws/v1/cluster/scheduler", timeout=5)
    queues = r.json()["scheduler"]["schedulerInfo"]["queues"]["queue"]
    assert queues[0]["configuredMaxAMResourceLimit"] == pytest.approx(0.35)


def test_requests_see_a_consistent_response() -> None:
    sim = simulation(SchedulerKind.FAIR)
    s = session_for(sim)
    r = s.get("http://sim/nothing-here", timeout=5)
    assert (r.status_code, r.reason) == (404, "Not Found")
    r = s.put("http://sim/ws/v1/cluster/scheduler-conf", data="<sched-conf/>", timeout=5)
    assert r.status_code == 400 and "MutableConfScheduler" in r.text
    assert r.encoding == "utf-8"


def test_an_in_process_fair_scheduler_reloads_its_file_in_virtual_time(tmp_path: Path) -> None:
    path = tmp_path / "fair-scheduler.xml"
    path.write_bytes(default_scheduler_config(SchedulerKind.FAIR, ["root.default"]))
    sim = build_simulation(
        SchedulerKind.FAIR, load_workload("paper:grep", seed=1), path.read_bytes(), seed=1
    )
    watcher = watch_allocation_file(sim, path)
    s = session_for(sim)

    def max_apps() -> int:
        info = s.get("http://sim/ws/v1/cluster/scheduler", timeout=5).json()
        leaf = info["scheduler"]["schedulerInfo"]["rootQueue"]["childQueues"]["queue"][0]
        return int(leaf["maxApps"])

    sim.run_until(5.0)
    unlimited = max_apps()
    path.write_text(
        path.read_text().replace("<weight>", "<maxRunningApps>3</maxRunningApps><weight>")
    )
    sim.run_until(15.0)  # the poll at 10 s sees the change; it must settle for 5 s
    assert max_apps() == unlimited and watcher.reloads == 0
    sim.run_until(21.0)  # the poll at 20 s reloads
    assert max_apps() == 3 and watcher.reloads == 1


def test_app_ids_carry_the_cluster_id() -> None:
    sim = simulation(SchedulerKind.CAPACITY)
    sim.run_until(1.0)
    s = session_for(sim)
    cluster_id = s.get("http://sim/ws/v1/cluster/info", timeout=5).json()["clusterInfo"]["id"]
    apps = s.get("http://sim/ws/v1/cluster/apps", timeout=5).json()["apps"]["app"]
    assert len(apps) == 30
    assert all(a["id"].startswith(f"application_{cluster_id}_") for a in apps)
    assert all(a["clusterId"] == cluster_id for a in apps)
