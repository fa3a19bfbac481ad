"""A CapacityScheduler whose configuration lives in the RM (mutable store), tuned over REST."""

from __future__ import annotations

from pathlib import Path

import requests

from amtuner.realyarn import RealRM, apps
from tests.e2e.conftest import amtuner, write_config
from tests.realyarn.conftest import metrics, submit_holders, wait_for
from tests.realyarn.test_real_once import DECISION, expected_am_limit_mb, rm_am_limit_mb

KEY = "yarn.scheduler.capacity.maximum-am-resource-percent"


def store_value(rm: RealRM) -> float:
    # Admin only: anonymous callers get 401 (RMWebServices.getSchedulerConfiguration).
    conf = requests.get(
        f"{rm.url}/ws/v1/cluster/scheduler-conf", params={"user.name": apps.USER}, timeout=10
    ).json()
    props = conf["property"] if "property" in conf else conf["configuration"]["property"]
    return float(next(p["value"] for p in props if p["name"] == KEY))


def test_once_puts_the_change_into_the_live_store(mutable_rm: RealRM, tmp_path: Path) -> None:
    """refresh.method rest with no file: PUT /ws/v1/cluster/scheduler-conf, which the RM
    applies at once; GET shows the new value and the AM limit follows."""
    submit_holders(mutable_rm, 4)
    wait_for(lambda: metrics(mutable_rm)["appsRunning"] == 2, 60, "2 AMs to register")
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [mutable_rm.url], "user_name": "amtuner"},
        scheduler={"kind": "capacity"}, refresh={"method": "rest"},
    )  # fmt: skip
    before = store_value(mutable_rm)
    run = amtuner("once", "--config", str(cfg))
    assert run.returncode == 0, run.stdout + run.stderr
    ((target, old, new, rule),) = DECISION.findall(run.stdout)
    assert (target, float(old), rule) == ("global", before, "under-allocation")
    assert store_value(mutable_rm) == float(new) > before
    assert rm_am_limit_mb(mutable_rm) == expected_am_limit_mb(mutable_rm, float(new))


def test_rmadmin_refused_on_a_mutable_store_restores_the_file(
    mutable_rm: RealRM, tmp_path: Path
) -> None:
    """With a mutable store the RM refuses -refreshQueues ("Scheduler configuration is
    mutable"): amtuner reports the refresh failed, puts its file back, and the live value stays."""
    submit_holders(mutable_rm, 4)
    wait_for(lambda: metrics(mutable_rm)["appsRunning"] == 2, 60, "2 AMs to register")
    before = store_value(mutable_rm)
    original = mutable_rm.scheduler_file.read_bytes()
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [mutable_rm.url]},
        scheduler={"kind": "capacity", "config_file": str(mutable_rm.scheduler_file)},
        refresh={"method": "command", "timeout_seconds": 60,
                 "command": [str(mutable_rm.yarn), "rmadmin", "-refreshQueues"]},
    )  # fmt: skip
    run = amtuner("once", "--config", str(cfg))
    assert run.returncode == 5, run.stdout + run.stderr
    assert "mutable" in run.stdout + run.stderr, run.stdout + run.stderr
    assert mutable_rm.scheduler_file.read_bytes() == original
    assert store_value(mutable_rm) == before


def test_an_anonymous_caller_is_told_to_name_an_admin(mutable_rm: RealRM, tmp_path: Path) -> None:
    """Hadoop 3.5's RM answers GET scheduler-conf with 401 to an anonymous caller: `check`
    says which setting is missing instead of only quoting the RM."""
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [mutable_rm.url]},
        scheduler={"kind": "capacity"}, refresh={"method": "rest"},
    )  # fmt: skip
    run = amtuner("check", "--config", str(cfg))
    assert run.returncode == 4, run.stdout + run.stderr
    assert "HTTP 401" in run.stdout and "set rm.user_name" in run.stdout, run.stdout
