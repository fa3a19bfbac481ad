"""A CapacityScheduler with a mutable configuration store, tuned over REST with no local file."""

from __future__ import annotations

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
