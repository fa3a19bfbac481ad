"""The monitor's own transport into an in-process simulation (`SimTransport`): the same bytes
as the HTTP face and the requests adapter, without requests around them."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
import requests

from amtuner.model import SchedulerKind
from amtuner.monitor import ObservationError
from amtuner.monitor.client import RMClient
from amtuner.monitor.transport import Answer, Budget, Unreachable
from amtuner.sim.adapter import SimAdapter
from amtuner.sim.control import OneInstantMonitor, SimTransport
from amtuner.sim.rmapi import FaceOptions
from amtuner.sim.server import SimServer
from amtuner.sim.simulation import Simulation, build_simulation
from amtuner.sim.view import ClusterView
from amtuner.sim.workload import load_workload


def simulation(kind: SchedulerKind) -> Simulation:
    sim = build_simulation(kind, load_workload("paper:grep", seed=1), seed=1)
    sim.run_until(20.0)
    return sim


class ByHost:
    """One simulated RM per host, as an HA pair's two processes would be."""

    def __init__(self, hosts: Mapping[str, SimTransport], down: set[str] | None = None) -> None:
        self.hosts = hosts
        self.down = down or set()
        self.asked: list[str] = []

    def get(
        self, url: str, accept: str, params: Mapping[str, str] | None, budget: Budget
    ) -> Answer:
        self.asked.append(url)
        if url in self.down:
            raise Unreachable("timeout", f"{url}: timed out")
        return self.hosts[url.split("/")[2]].get(url, accept, params, budget)


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_the_same_observation_as_over_http(kind: SchedulerKind) -> None:
    sim = simulation(kind)
    direct = RMClient(["http://sim"], transport=SimTransport(sim), clock=lambda: sim.now)
    with SimServer(sim, run_clock=False) as server:
        http = RMClient([server.url], requests.Session(), clock=lambda: sim.now)
        over_http = http.observe(["root.default"])
    session = requests.Session()
    session.mount("http://sim", SimAdapter(sim))
    adapted = RMClient(["http://sim"], session, clock=lambda: sim.now).observe(["root.default"])
    in_process = direct.observe(["root.default"])
    assert in_process.running_apps > 0
    assert in_process == adapted
    assert in_process.queues == over_http.queues
    assert (in_process.pending_apps, in_process.memory_used_mb, in_process.scheduler) == (
        over_http.pending_apps,
        over_http.memory_used_mb,
        over_http.scheduler,
    )
    assert direct.scheduler_kind() is kind


def test_a_standby_is_probed_and_its_redirect_followed_to_the_active_rm() -> None:
    sim = simulation(SchedulerKind.CAPACITY)
    transport = ByHost(
        {
            "standby": SimTransport(sim, FaceOptions(standby_of="http://active")),
            "active": SimTransport(sim),
        }
    )
    client = RMClient(["http://standby", "http://active"], transport=transport, user_name="yarn")
    client.observe()
    assert client.active_url == "http://active"
    assert transport.asked[:2] == [
        "http://standby/ws/v1/cluster/info",
        "http://active/ws/v1/cluster/info",
    ]
    # The active RM's probe times out: the standby is asked, and its 307 is followed.
    transport.down.add("http://active/ws/v1/cluster/info")
    transport.asked.clear()
    obs = client.observe()
    assert transport.asked == [
        "http://active/ws/v1/cluster/info",
        "http://standby/ws/v1/cluster/info",
        "http://standby/ws/v1/cluster/metrics",
        "http://active/ws/v1/cluster/metrics",
        "http://active/ws/v1/cluster/scheduler",
    ]
    assert obs.source == "rest http://active" and client.active_url == "http://active"


def test_the_answer_names_the_url_with_its_query_as_requests_would() -> None:
    sim = simulation(SchedulerKind.FAIR)
    budget = Budget(float("inf"), 1.0, (1.0, 1.0), 1 << 20)
    answer = SimTransport(sim).get(
        "http://sim/ws/v1/cluster/nothing", "application/json", {"user.name": "yarn"}, budget
    )
    assert answer.url == "http://sim/ws/v1/cluster/nothing?user.name=yarn"
    assert (answer.status, answer.reason) == (404, "Not Found")
    assert b"NotFoundException" in answer.body


def test_an_answer_over_the_cap_is_refused_whatever_brought_it() -> None:
    sim = simulation(SchedulerKind.CAPACITY)
    client = RMClient(["http://sim"], transport=SimTransport(sim), max_body_bytes=600)
    with pytest.raises(ObservationError, match="600 byte cap") as caught:
        client.observe()
    assert caught.value.reason == "bad-response"


def test_a_client_needs_a_session_or_a_transport() -> None:
    with pytest.raises(ValueError, match="session or a transport"):
        RMClient(["http://sim"])


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_one_observation_renders_the_simulation_once(
    kind: SchedulerKind, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = simulation(kind)
    transport = SimTransport(sim)
    client = RMClient(["http://sim"], transport=transport, clock=lambda: sim.now)
    views: list[float] = []
    real_view = Simulation.view

    def view(self: Simulation) -> ClusterView:
        views.append(self.now)
        return real_view(self)

    monkeypatch.setattr(Simulation, "view", view)
    each = client.observe(["root.default"])
    assert len(views) == 3  # info, metrics, scheduler
    views.clear()
    with transport.instant():
        once = client.observe(["root.default"])
    assert len(views) == 1 and once == each
    sim.run_until(40.0)
    again = OneInstantMonitor(client, transport).observe(["root.default"])
    assert len(views) == 2 and again.time == 40.0 and again != once  # a new instant, a new view
