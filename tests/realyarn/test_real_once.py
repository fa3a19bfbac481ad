"""`amtuner once` against Hadoop's own RM: it raises A, the RM reloads it, waiting apps start."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from amtuner.model import SchedulerKind
from amtuner.realyarn import RealRM
from amtuner.sim import capacity
from amtuner.sim.fairshare import max_am_resource
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_once import am_limit_mb, leaf_record
from tests.realyarn.conftest import metrics, set_am_share, share_for, submit_holders, wait_for

DECISION = re.compile(r"^decision  (\S+): (\S+) -> (\S+) \[(\S+)\]", re.M)


def rm_am_limit_mb(rm: RealRM) -> int:
    return am_limit_mb(rm.url, "root.default")


def expected_am_limit_mb(rm: RealRM, a: float) -> int:
    """The AM limit amtuner's model of Hadoop gives for A on this cluster (one leaf, so its
    guarantee and its fair share are the whole cluster)."""
    total = rm.spec.nodes * rm.spec.node_memory_mb
    if rm.spec.scheduler is SchedulerKind.CAPACITY:
        return capacity.am_limit_mb(total, total, a, rm.spec.min_alloc_mb)
    q = leaf_record(rm.url, "root.default")
    fair = (int(q["fairResources"]["memory"]), int(q["fairResources"]["vCores"]))
    cap = (int(q["maxResources"]["memory"]), int(q["maxResources"]["vCores"]))
    return max_am_resource(fair, cap, cap, a)[0]


def once_config(tmp_path: Path, cluster: RealRM, **sections: Any) -> Path:
    """A config for ``cluster``: its file, refreshed by its ``yarn`` shim, unless ``sections``
    say otherwise."""
    defaults: dict[str, Any] = {
        "rm": {"urls": [cluster.url]},
        "scheduler": {
            "kind": str(cluster.spec.scheduler), "config_file": str(cluster.scheduler_file)},
        "refresh": {"method": "command", "timeout_seconds": 60,
                    "command": [str(cluster.yarn), "rmadmin", "-refreshQueues"]},
    }  # fmt: skip
    return write_config(tmp_path / "amtuner.yaml", **(defaults | sections))


def test_once_raises_a_and_the_waiting_apps_start(real_rm: RealRM, tmp_path: Path) -> None:
    """A admits exactly k = 3 AMs and 5 apps wait for one: the RM runs 3. `amtuner once`
    (refresh: Hadoop's RMAdminCLI) raises A; the RM's AM limit becomes the one amtuner's model
    computes for the new A, and the waiting apps start."""
    k = 3
    set_am_share(real_rm, share_for(real_rm, k))
    submit_holders(real_rm, k + 2)
    # Both at once: an app whose attempt the scheduler has not added yet is not pending yet.
    wait_for(
        lambda: (m := metrics(real_rm))["appsRunning"] == k and m["appsPending"] == 2,
        60,
        f"{k} AMs to register and 2 apps to wait",
    )
    assert rm_am_limit_mb(real_rm) == k * 1024

    run = amtuner("once", "--config", str(once_config(tmp_path, real_rm)))
    assert run.returncode == 0, run.stdout + run.stderr
    ((target, old, new, rule),) = DECISION.findall(run.stdout)
    assert (target, rule) == ("global", "under-allocation"), run.stdout
    assert math.isclose(float(old), share_for(real_rm, k)) and float(new) > float(old)
    assert "refreshQueues" in run.stdout or "refresh" in run.stdout, run.stdout

    expected = expected_am_limit_mb(real_rm, float(new))
    wait_for(lambda: rm_am_limit_mb(real_rm) == expected, 30, f"AM limit {expected} MB")
    admitted = min(k + 2, expected // 1024)
    assert admitted > k, f"the new A {new} admits no more AMs; the test no longer tests raise"
    wait_for(
        lambda: metrics(real_rm)["appsRunning"] == admitted, 60, f"{admitted} apps running"
    )


def hold_k_of(rm: RealRM, k: int, waiting: int) -> None:
    """A set so k AMs fit, k + waiting apps submitted, k running."""
    set_am_share(rm, share_for(rm, k))
    submit_holders(rm, k + waiting)
    wait_for(lambda: metrics(rm)["appsRunning"] == k, 60, f"{k} AMs to register")


def test_fair_scheduler_reloads_the_file_by_itself(fair_rm: RealRM, tmp_path: Path) -> None:
    """refresh.method none: the FairScheduler polls its allocation file (every 10 s, once it
    is 5 s old; AllocationFileLoaderService) and admits the waiting apps with no rmadmin."""
    hold_k_of(fair_rm, 3, 2)
    cfg = once_config(tmp_path, fair_rm, refresh={"method": "none"})
    run = amtuner("once", "--config", str(cfg))
    assert run.returncode == 0, run.stdout + run.stderr
    ((_, old, new, _),) = DECISION.findall(run.stdout)
    assert float(new) > float(old)
    expected = expected_am_limit_mb(fair_rm, float(new))
    wait_for(lambda: rm_am_limit_mb(fair_rm) == expected, 40, f"AM limit {expected} MB")
    wait_for(lambda: metrics(fair_rm)["appsRunning"] > 3, 30, "a waiting app to start")


def test_a_file_the_rm_rejects_is_restored_and_the_rm_keeps_its_limit(
    capacity_rm: RealRM, tmp_path: Path
) -> None:
    """An operator's unfinished edit (children of root summing to 50 %) is in the file when
    amtuner writes A: -refreshQueues fails, amtuner puts back the file as it found it (exit
    5), and the RM goes on with the limit it had."""
    hold_k_of(capacity_rm, 3, 2)
    broken = capacity_rm.scheduler_file.read_bytes().replace(
        b"<name>yarn.scheduler.capacity.root.default.capacity</name>\n    <value>100</value>",
        b"<name>yarn.scheduler.capacity.root.default.capacity</name>\n    <value>50</value>",
    )
    assert b"<value>50</value>" in broken
    capacity_rm.scheduler_file.write_bytes(broken)
    run = amtuner("once", "--config", str(once_config(tmp_path, capacity_rm)))
    assert run.returncode == 5, run.stdout + run.stderr
    assert "refresh-failed" in run.stdout, run.stdout
    assert capacity_rm.scheduler_file.read_bytes() == broken
    assert rm_am_limit_mb(capacity_rm) == 3 * 1024
    assert metrics(capacity_rm)["appsRunning"] == 3
