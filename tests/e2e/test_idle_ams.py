"""`amtuner once` and `amtuner check` name the idle AMs beside the waits, read over HTTP from
the simulated RM: two services (an AM alone, ``ServiceMaster``- or Livy-like) and two jobs hold
a CapacityScheduler's AM limit at 0.25, two more jobs wait behind it; and from what Hadoop
3.5.0's RM answered, served as it was recorded."""

from __future__ import annotations

import re
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import requests

from amtuner.model import IdleAMs
from amtuner.monitor.idle import IDLE_AFTER_S, IDLE_CURE, idle_ams
from amtuner.monitor.waits import parse_unfinished_apps
from amtuner.realyarn.capture import SCENES
from amtuner.sim.server import SimServer
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.spec import Workload
from amtuner.sim.workload.frameworks import services
from tests.conftest import HADOOP_350
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
def test_once_and_check_name_the_running_apps_that_hold_their_am_alone(
    tmp_path: Path, at_s: float
) -> None:
    """The jobs run their maps for ten minutes; the services ask for nothing. Half the idle
    time in, none is idle yet (an AM that has just registered asks for nothing until its first
    heartbeats) and neither command prints the line; past it, the two services are, both say
    so, and nothing moves by it."""
    server, config, sched = _served(services(2, life_s=900, jobs=4, map_s=600), at_s, tmp_path)
    with server:
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [server.url]},
            scheduler={"kind": "capacity", "config_file": str(sched)},
            refresh={"method": "command", "command": [
                sys.executable, "-m", "amtuner", "sim-admin", "refresh-queues", "--url",
                server.url]},
            controller={"a_min": 0.15},  # room for one AM: no risk, check exits 0
        )  # fmt: skip
        once = amtuner("once", "--dry-run", "--config", str(cfg))
        check = amtuner("check", "--config", str(cfg))
    for run in (once, check):
        assert "waiting   global: 2 queue-am-limit in root.default" in run.stdout, run.stdout
        said = dict(IDLE.findall(run.stdout))
        if at_s < IDLE_AFTER_S:
            assert said == {}, run.stdout
        else:
            assert said == {
                "global": "2 of 4 running apps hold their AM alone (2048 MB) and ask for "
                f"nothing (cure: {IDLE_CURE})"
            }, run.stdout
    assert once.returncode == 0, once.stdout + once.stderr
    assert check.returncode == 0, check.stdout + check.stderr
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


RECORDED = HADOOP_350


@pytest.mark.parametrize(
    ("scene", "said"),
    [
        (
            "capacity-idle-ams",
            {"global": "3 of 3 running apps hold their AM alone (3072 MB) and ask for nothing "
             f"(cure: {IDLE_CURE})"},
        ),
        ("capacity-max-parallel-apps", {}),
    ],
)  # fmt: skip
def test_check_lists_the_apps_once_and_only_while_an_am_limit_holds_apps(
    tmp_path: Path, canned_rm, scene: str, said: dict[str, str]
) -> None:
    """Hadoop 3.5.0's own answers, served as recorded: three AMs that ask for nothing hold
    root.default's AM limit 70 s after their launch (`check` names them from one request for
    the apps); or its max-parallel-apps holds the apps, which A does not cure, and the apps
    are never asked for (that recording has no apps document: a request would fail)."""
    asked: list[str] = []

    def recorded(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        path = h.path.split("?")[0]
        if path == "/ws/v1/cluster/apps":
            asked.append(h.path)
        doc = RECORDED / scene / f"{path.removeprefix('/ws/v1/cluster/')}.json"
        if path.startswith("/ws/v1/cluster/") and doc.is_file():
            return 200, {"Content-Type": "application/json"}, doc.read_bytes()
        return 404, {}, b"not found"

    sched = tmp_path / "capacity-scheduler.xml"
    data = SCENES[scene].scheduler_file()
    sched.write_bytes(data)
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [canned_rm(recorded)]},
        scheduler={"kind": "capacity", "config_file": str(sched)},
        refresh={"method": "command", "command": ["true"]}, controller={"a_min": 0.15},
    )  # fmt: skip
    run = amtuner("check", "--config", str(cfg))
    assert run.returncode == 0, run.stdout + run.stderr
    assert dict(IDLE.findall(run.stdout)) == said, run.stdout
    assert len(asked) == (1 if said else 0), asked
    assert sched.read_bytes() == data, "check must never write"
