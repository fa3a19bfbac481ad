"""A CapacityScheduler with a mutable configuration store, tuned over REST with no local file."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import requests

from amtuner.demo import running_sim
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_once import DECISION, am_limit_mb

pytestmark = pytest.mark.slow

KEY = "yarn.scheduler.capacity.maximum-am-resource-percent"


def store_value(url: str) -> float:
    conf = requests.get(f"{url}/ws/v1/cluster/scheduler-conf", timeout=5).json()
    props = conf["property"] if "property" in conf else conf["configuration"]["property"]
    # Absent, the CapacityScheduler's default applies.
    return float(next((p["value"] for p in props if p["name"] == KEY), 0.1))


def test_once_puts_the_change_into_the_store(tmp_path: Path) -> None:
    argv = ["--scheduler", "capacity", "--workload", "paper:mixed", "--port", "0",
            "--speed", "5", "--mutable-conf"]
    with running_sim(argv) as (url, sched_path):
        on_disk = sched_path.read_bytes()
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [url]},
            scheduler={"kind": "capacity"}, refresh={"method": "rest"},
        )
        before, limit_before = store_value(url), am_limit_mb(url, "root.default")

        dry = amtuner("once", "--config", str(cfg), "--dry-run")
        assert dry.returncode == 0, dry.stdout + dry.stderr
        assert "would refresh with PUT" in dry.stdout
        assert store_value(url) == before

        run = amtuner("once", "--config", str(cfg))
        assert run.returncode == 0, run.stdout + run.stderr
        (target, old, new, rule), = DECISION.findall(run.stdout)
        assert (target, float(old), rule) == ("global", before, "under-allocation")
        assert store_value(url) == float(new) > before
        assert am_limit_mb(url, "root.default") > limit_before
        assert sched_path.read_bytes() == on_disk, "no local file is written"

        checked = amtuner("check", "--config", str(cfg))
        assert f"file      /ws/v1/cluster/scheduler-conf: global A = {new}" in checked.stdout


def test_without_a_file_only_rest_will_do(tmp_path: Path) -> None:
    cfg = tmp_path / "amtuner.yaml"
    cfg.write_text("scheduler: {kind: capacity}\nrefresh: {method: command}\n")
    run = amtuner("once", "--config", str(cfg))
    assert run.returncode == 2
    assert "scheduler.config_file: required key is missing" in run.stderr


def test_a_standby_that_names_an_unknown_host_is_not_followed_and_the_active_is_asked(
    tmp_path: Path, canned_rm
) -> None:
    """HA with a standby first in rm.urls whose 307 names the active by an address amtuner was
    not given (here a third server, which must see nothing): the refresh asks the active by its
    configured URL instead, and the change lands in its store."""
    seen: list[str] = []

    def elsewhere(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        seen.append(h.path)
        return 200, {}, b"{}"

    foreign = canned_rm(elsewhere)

    def standby(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if h.path.startswith("/ws/v1/cluster/info"):
            return 200, {"Content-Type": "application/json"}, json.dumps(
                {"clusterInfo": {"haState": "STANDBY"}}).encode()  # fmt: skip
        return 307, {"Location": foreign + h.path}, b"This is standby RM."

    standby_url = canned_rm(standby, methods=("GET", "PUT"))
    argv = ["--scheduler", "capacity", "--workload", "paper:mixed", "--port", "0",
            "--speed", "5", "--mutable-conf"]  # fmt: skip
    with running_sim(argv) as (url, _):
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [standby_url, url], "user_name": "yarn"},
            scheduler={"kind": "capacity"}, refresh={"method": "rest"},
        )  # fmt: skip
        before = store_value(url)
        for _ in range(4):
            run = amtuner("once", "--config", str(cfg))
            assert run.returncode == 0, run.stdout + run.stderr
            if "refreshed with PUT" in run.stdout:
                break
        else:
            pytest.fail("the controller never moved A; the scenario no longer PUTs")
        assert store_value(url) != before
    assert seen == [], "a request (with user.name) reached a host that is not a configured RM"
