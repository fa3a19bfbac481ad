"""The monitor reads a running simulation served over HTTP, through a standby, as it would a RM."""

from __future__ import annotations

import pytest
import requests

from amtuner.config import RMEndpoint
from amtuner.model import GLOBAL_TARGET, SchedulerKind
from amtuner.monitor import RMClient
from amtuner.sim.rmapi import FaceOptions
from amtuner.sim.server import SimServer
from amtuner.sim.simulation import build_simulation
from amtuner.sim.workload import load_workload


@pytest.mark.parametrize("kind", [SchedulerKind.CAPACITY, SchedulerKind.FAIR])
def test_observation_matches_the_simulated_cluster(kind: SchedulerKind) -> None:
    sim = build_simulation(kind, load_workload("paper:grep"))
    sim.run_until(30.0)  # mid-run: apps both waiting and running
    view = sim.view()
    leaves = [q for q in view.queues if q.is_leaf]
    # A near-frozen clock keeps the served cluster where the view saw it.
    with (
        SimServer(sim, speed=1e-9) as active,
        SimServer(sim, options=FaceOptions(standby_of=active.url), speed=1e-9) as standby,
    ):
        client = RMClient([standby.url, active.url], requests.Session())
        obs = client.observe([leaves[0].path])
        assert client.scheduler_kind() is kind
    assert obs.scheduler is kind and obs.source == f"rest {active.url}"
    assert client.active_url == active.url
    assert (obs.pending_apps, obs.running_apps) == (view.apps_pending, view.apps_running)
    assert obs.pending_apps + obs.running_apps > 0 and obs.running_apps > 0
    assert (obs.memory_used_mb, obs.memory_total_mb) == (
        view.allocated.memory_mb,
        view.total.memory_mb,
    )
    assert [q.name for q in obs.queues] == [q.path for q in leaves]
    assert obs.am_memory_used_mb == sum(q.am_used.memory_mb for q in leaves)
    assert obs.containers == view.containers_allocated >= obs.running_apps
    for seen, truth in zip(obs.queues, leaves, strict=True):
        assert (seen.pending_apps, seen.running_apps) == (
            truth.num_pending_apps,
            truth.num_active_apps,
        )
        assert seen.containers == truth.allocated_containers
        assert seen.am_memory_limit_mb == truth.am_limit.memory_mb


@pytest.mark.parametrize("kind", [SchedulerKind.CAPACITY, SchedulerKind.FAIR])
def test_the_web_ui_fallback_names_the_waits_rest_names(kind: SchedulerKind) -> None:
    """Over HTTP: a gateway whose REST path answers 404 (`RMSettings.web_ui_urls` names the web
    UI) leaves the monitor the simulated RM's /cluster and /cluster/scheduler pages, from which
    it names the waits REST names."""
    sim = build_simulation(kind, load_workload("paper:grep"))
    sim.run_until(30.0)  # mid-run: apps waiting behind the AM limit
    with SimServer(sim, speed=1e-9) as rm:
        rest = RMClient([rm.url], requests.Session()).observe()
        gateway = RMEndpoint.of(f"{rm.url}/gateway/yarn")
        web = RMClient([gateway], requests.Session(), web_ui_urls=[rm.url]).observe()
    assert web.source == f"webui {rm.url}" and rest.source == f"rest {rm.url}"
    assert web.waits == rest.waits and any(w.queue != GLOBAL_TARGET for w in web.waits)
    assert [q.name for q in web.queues] == [q.name for q in rest.queues]
