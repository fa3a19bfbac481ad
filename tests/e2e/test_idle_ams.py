"""`amtuner once` names the idle AMs beside the waits, read over HTTP from the simulated RM:
two services (an AM alone, ``ServiceMaster``- or Livy-like) and two jobs hold a
CapacityScheduler's AM limit at 0.25, two more jobs wait behind it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import requests

from amtuner.model import IdleAMs
from amtuner.monitor.idle import IDLE_AFTER_S, IDLE_CURE, idle_ams
from amtuner.monitor.waits import parse_unfinished_apps
from amtuner.sim.server import SimServer
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.spec import Workload
from amtuner.sim.workload.frameworks import services
from tests.e2e.conftest import amtuner, write_config

pytestmark = pytest.mark.slow

IDLE = re.compile(r"^idle AMs  (\S+): (.*)$", re.M)


def _served(workload: Workload, at_s: float, tmp_path: Path) -> tuple[SimServer, bytes, Path]:
    config = default_scheduler_config("capacity", workload.queues, 0.25)
    sched = tmp_path / "capacity-scheduler.xml"
    sched.write_bytes(config)
    sim = build_simulation("capacity", workload, config)
    sim.run_until(at_s)
    return SimServer(sim, run_clock=False), config, sched


@pytest.mark.parametrize("at_s", [IDLE_AFTER_S / 2, IDLE_AFTER_S + 30])
def test_once_names_the_running_apps_that_hold_their_am_alone(tmp_path: Path, at_s: float) -> None:
    """The jobs run their maps for ten minutes; the services ask for nothing. Half the idle
    time in, none is idle yet (an AM that has just registered asks for nothing until its first
    heartbeats); past it, the two services are, and nothing moves by it."""
    server, config, sched = _served(services(2, life_s=900, jobs=4, map_s=600), at_s, tmp_path)
    with server:
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [server.url]},
            scheduler={"kind": "capacity", "config_file": str(sched)},
            refresh={"method": "command", "command": [
                sys.executable, "-m", "amtuner", "sim-admin", "refresh-queues", "--url",
                server.url]},
        )  # fmt: skip
        run = amtuner("once", "--dry-run", "--config", str(cfg))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "waiting   global: 2 queue-am-limit in root.default" in run.stdout, run.stdout
    said = dict(IDLE.findall(run.stdout))
    if at_s < IDLE_AFTER_S:
        assert said == {}, run.stdout
    else:
        assert said == {
            "global": "2 of 4 running apps hold their AM alone (2048 MB) and ask for nothing "
            f"(cure: {IDLE_CURE})"
        }, run.stdout
    assert sched.read_bytes() == config


def test_the_simulated_rm_lists_each_app_s_asks_as_hadoop_does(tmp_path: Path) -> None:
    """``resourceRequests``: a waiting app's AM ask (priority 0), a running job's map asks
    (priority 20) while its 40 maps do not fit, none for an app that asks for nothing (the
    list left out, as Hadoop 3.5.0 does)."""
    server, _, _ = _served(services(2, life_s=900, jobs=4, maps=40, map_s=600), 90.0, tmp_path)
    with server:
        doc = requests.get(f"{server.url}/ws/v1/cluster/apps", timeout=10).json()
    listed = {a["name"]: a for a in doc["apps"]["app"]}
    asks = {
        name: [
            (r["priority"], r["resourceName"], r["numContainers"]) for r in a["resourceRequests"]
        ]
        for name, a in listed.items()
        if "resourceRequests" in a
    }
    assert asks["job-03"] == [(0, "*", 1)] and listed["job-03"]["state"] == "ACCEPTED"
    [(priority, where, maps)] = asks["job-00"]
    assert (priority, where) == (20, "*") and 0 < maps < 40
    assert "service-00" not in asks
    assert idle_ams(parse_unfinished_apps(doc)) == (IdleAMs("root.default", 2, 2048, 4),)
