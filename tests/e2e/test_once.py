"""`amtuner once` against a running simulated RM, over HTTP, as an operator would run it."""

from __future__ import annotations

import difflib
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from amtuner.model import WaitCause
from amtuner.sim.simulation import default_scheduler_config
from tests.e2e.conftest import amtuner, write_config

pytestmark = pytest.mark.slow

DECISION = re.compile(r"^decision  (\S+): (\S+) -> (\S+) \[(\S+)\]", re.M)
WAITING = re.compile(r"^waiting   (\S+): (.*)$", re.M)
CAUSE = re.compile(r"(\d+) (\S+) in \S+ .*?\(cure: [^)]+\)")


def changed_lines(before: bytes, after: bytes) -> list[str]:
    diff = difflib.ndiff(before.decode().splitlines(), after.decode().splitlines())
    return [line for line in diff if line[:1] in "+-"]


def leaf_record(url: str, queue: str, session: Any = requests) -> dict[str, Any]:
    """The RM's own record of one leaf queue, from /ws/v1/cluster/scheduler (either scheduler,
    simulated or real), read with ``session`` (a Kerberised RM's needs SPNEGO)."""
    info = session.get(f"{url}/ws/v1/cluster/scheduler", timeout=10).json()["scheduler"]
    info = info["schedulerInfo"]
    stack = [info.get("rootQueue", info)]
    while stack:
        q = stack.pop()
        name = q.get("queuePath") or q.get("queueName")
        if name in (queue, queue.removeprefix("root.")) and "childQueues" not in q:
            return dict(q)
        children = q.get("childQueues") or q.get("queues") or {}
        stack.extend(children.get("queue", []) if isinstance(children, dict) else children)
    raise AssertionError(f"queue {queue} not in the scheduler response")


def am_limit_mb(url: str, queue: str) -> int:
    return limit_of(leaf_record(url, queue))


def limit_of(leaf: dict[str, Any]) -> int:
    """CS ``AMResourceLimit`` or FS ``amMaxResources``, in MB."""
    return int((leaf.get("amMaxResources") or leaf["AMResourceLimit"])["memory"])


def seed_file(path: Path, scheduler: str) -> bytes:
    data = default_scheduler_config(scheduler, ["root.default"], am_share=0.1)
    path.write_bytes(data)
    return data


@pytest.mark.parametrize(
    ("scheduler", "targets"), [("fair", ["root.default"]), ("capacity", [])]
)
def test_once_live_changes_one_line_per_target_and_the_rm_follows(
    tmp_path: Path, scheduler: str, targets: list[str]
) -> None:
    from amtuner.demo import running_sim

    sched = tmp_path / "conf" / f"{scheduler}-scheduler.xml"
    sched.parent.mkdir()
    seed_file(sched, scheduler)
    argv = ["--scheduler", scheduler, "--workload", "paper:mixed", "--port", "0",
            "--speed", "20", "--scheduler-config", str(sched)]
    with running_sim(argv) as (url, _):
        refresh = (
            {"method": "none"} if scheduler == "fair" else
            {"method": "command", "command": [
                sys.executable, "-m", "amtuner", "sim-admin", "refresh-queues", "--url", url]}
        )
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [url]},
            scheduler={"kind": scheduler, "config_file": str(sched), "targets": targets},
            refresh=refresh,
        )
        changes = followed = 0
        for _ in range(4):
            before = sched.read_bytes()
            limit_before = am_limit_mb(url, "root.default")
            run = amtuner("once", "--config", str(cfg))
            assert run.returncode == 0, run.stdout + run.stderr
            decisions = DECISION.findall(run.stdout)
            assert len(decisions) == max(1, len(targets)), run.stdout
            pending = int(re.search(r" P=(\d+) ", run.stdout)[1])  # type: ignore[index]
            waiting = dict(WAITING.findall(run.stdout))
            # Each waiting app is accounted to a cause, with its cure (the two documents are
            # read one after the other, so a queue's count may be a moment newer than P).
            assert set(waiting) <= {d[0] for d in decisions}, run.stdout
            for line in waiting.values():
                causes = CAUSE.findall(line)
                assert causes and {c for _, c in causes} <= {str(c) for c in WaitCause}, line
            if pending and not targets:  # global: every waiting app of the cluster
                assert sum(int(n) for n, _ in CAUSE.findall(waiting["global"])) >= pending
            after = sched.read_bytes()
            moved = [d for d in decisions if d[1] != d[2]]
            if not moved:
                assert after == before
                continue
            changes += 1
            changed = changed_lines(before, after)
            added = [line for line in changed if line.startswith("+")]
            # One line per target: the value's line replaced, or (first time) one line added.
            assert len(added) == len(moved), run.stdout
            assert len(changed) - len(added) <= len(moved), run.stdout
            up = float(moved[0][2]) > float(moved[0][1])
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                leaf = leaf_record(url, "root.default")
                limit = limit_of(leaf)
                if (limit > limit_before) if up else (limit < limit_before):
                    followed += 1
                    break
                if scheduler == "fair" and not leaf["numPendingApps"]:
                    # A FairScheduler records the limit only as it checks an app's AM
                    # (FSLeafQueue.canRunAppAM): with none waiting it shows the last one.
                    break
                time.sleep(0.2)
            else:
                pytest.fail(f"the RM's AM limit stayed {limit_before} MB after {moved[0]}")
            time.sleep(1.5)
        assert changes >= 1, "the controller never moved A; the scenario no longer tests apply"
        assert followed >= 1, "no change was made while an app waited for its AM"
        assert (tmp_path / "state.json").exists()


def dry_run_refresh(scheduler: str) -> dict[str, str]:
    """A refresh the scheduler can use (a CapacityScheduler refuses `none`: it never reloads by
    itself); a dry run only names it."""
    return {"method": "none"} if scheduler == "fair" else {"method": "command"}


@pytest.mark.parametrize("scheduler", ["fair", "capacity"])
def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path: Path, scheduler: str) -> None:
    from amtuner.demo import running_sim

    sched = tmp_path / f"{scheduler}-scheduler.xml"
    original = seed_file(sched, scheduler)
    argv = ["--scheduler", scheduler, "--workload", "paper:mixed", "--port", "0",
            "--speed", "20", "--scheduler-config", str(sched)]
    with running_sim(argv) as (url, _):
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [url]},
            scheduler={"kind": scheduler, "config_file": str(sched)},
            refresh=dry_run_refresh(scheduler),
        )
        for _ in range(3):
            run = amtuner("once", "--config", str(cfg), "--dry-run")
            assert run.returncode == 0, run.stdout + run.stderr
            assert sched.read_bytes() == original
            if "would write" in run.stdout:
                assert "@@" in run.stdout
                break
            time.sleep(1.5)
        assert not (tmp_path / "state.json").exists()
        assert not (tmp_path / "backups").exists() or not any((tmp_path / "backups").iterdir())


def adaptive_once_when(
    tmp_path: Path,
    scheduler: str,
    sim_args: list[str],
    ready: Callable[[dict[str, Any]], bool],
    edit: Callable[[bytes], bytes] = lambda data: data,
    tries: int = 1,
) -> tuple[str, tuple[str, ...]]:
    """Start the simulated RM on the paper's mixed group from the scheduler's default share
    (its file passed through ``edit``), wait until ``ready(clusterMetrics)``, run ``amtuner
    once --dry-run`` with the adaptive policy, again (up to ``tries`` runs, each when ``ready``
    holds again) while it holds A: the simulated RM runs on while ``once`` starts, and may read
    a moment between a container's end and the next, which a busy machine makes longer; (output,
    decision of the global target as old, new, rule)."""
    from amtuner.demo import running_sim

    sched = tmp_path / f"{scheduler}-scheduler.xml"
    default = 0.1 if scheduler == "capacity" else 0.5
    sched.write_bytes(
        edit(default_scheduler_config(scheduler, ["root.default"], am_share=default))
    )
    argv = ["--scheduler", scheduler, "--workload", "paper:mixed", "--port", "0",
            "--speed", "5", "--scheduler-config", str(sched), *sim_args]  # fmt: skip
    with running_sim(argv) as (url, _):
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [url]},
            scheduler={"kind": scheduler, "config_file": str(sched)},
            refresh=dry_run_refresh(scheduler), controller={"policy": "adaptive"},
        )  # fmt: skip
        for _ in range(tries):
            deadline = time.monotonic() + 10
            while not ready(
                m := requests.get(f"{url}/ws/v1/cluster/metrics", timeout=5).json()[
                    "clusterMetrics"
                ]
            ):
                assert time.monotonic() < deadline, m
                time.sleep(0.2)
            run = amtuner("once", "--config", str(cfg), "--dry-run")
            if all(rule != "hold" for *_, rule in DECISION.findall(run.stdout)):
                break
    assert run.returncode == 0, run.stdout + run.stderr
    ((target, *decision),) = DECISION.findall(run.stdout)
    assert target == "global", run.stdout
    return run.stdout, tuple(decision)


def test_vcores_the_capacity_scheduler_does_not_count_do_not_make_it_look_full(
    tmp_path: Path,
) -> None:
    """Default resource calculator: the RM places by memory and counts one vcore per container,
    so 64 GB nodes with one vcore each report many times more vcores allocated than exist. The
    adaptive policy must judge memory (a quarter used, apps waiting: raise), not call it full."""
    out, (_old, _new, rule) = adaptive_once_when(
        tmp_path, "capacity", ["--node-memory-mb", "65536", "--node-vcores", "1"],
        lambda m: m["allocatedVirtualCores"] > m["totalVirtualCores"],
    )  # fmt: skip
    assert rule == "under-allocation", out


def drf(data: bytes) -> bytes:
    """An allocation file whose queues share vcores too (DominantResourceFairnessPolicy)."""
    return data.replace(
        b"<allocations>",
        b"<allocations>\n  <defaultQueueSchedulingPolicy>drf</defaultQueueSchedulingPolicy>",
    )


def test_ams_the_size_of_a_task_leave_tasks_more_than_t2(tmp_path: Path) -> None:
    """DRF FairScheduler on 8 GB nodes with 3 vcores: vcores bind, and an AM takes one, as a
    task does. At the default 0.5 AMs and tasks hold half the vcores each (under drf the leaf's
    fair share has vcores, so the AM limit is half of them), which is T2 for the paper's AMs of
    two task units; the container count the RM serves shows one-unit AMs, so adaptive aims
    higher for tasks and lowers A."""
    out, (old, new, rule) = adaptive_once_when(
        tmp_path, "fair", ["--node-vcores", "3"],
        lambda m: m["allocatedVirtualCores"] == m["totalVirtualCores"] and m["appsPending"] > 0,
        edit=drf, tries=5,
    )  # fmt: skip
    assert rule == "over-allocation-3", out
    assert float(new) < float(old) == 0.5 and "(T2 for AMs 1x a task)" in out


@pytest.mark.parametrize(("edit", "leaf_vcores"), [(lambda d: d, 0), (drf, 32)])
def test_the_simulated_fair_scheduler_reports_vcore_shares_as_hadoop_does(
    tmp_path: Path, edit: Callable[[bytes], bytes], leaf_vcores: int
) -> None:
    """`amtuner sim --scheduler fair` while apps run: under the default fair policy a leaf's
    fairResources has 0 vcores (FairSharePolicy shares memory only), under drf the leaf's
    share of them; root holds the whole cluster either way."""
    from amtuner.demo import running_sim

    sched = tmp_path / "fair-scheduler.xml"
    sched.write_bytes(edit(default_scheduler_config("fair", ["root.default"], am_share=0.5)))
    argv = ["--scheduler", "fair", "--workload", "paper:mixed", "--port", "0",
            "--speed", "5", "--scheduler-config", str(sched)]  # fmt: skip
    with running_sim(argv) as (url, _):
        deadline = time.monotonic() + 10
        while requests.get(f"{url}/ws/v1/cluster/metrics", timeout=5).json()[
            "clusterMetrics"
        ]["appsRunning"] == 0:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        info = requests.get(f"{url}/ws/v1/cluster/scheduler", timeout=5).json()
    root = info["scheduler"]["schedulerInfo"]["rootQueue"]
    (leaf,) = root["childQueues"]["queue"]
    assert root["fairResources"]["vCores"] == 32
    assert leaf["fairResources"]["vCores"] == leaf_vcores and leaf["numActiveApps"] > 0
