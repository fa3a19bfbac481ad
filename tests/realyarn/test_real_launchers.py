"""The launcher deadlock on Hadoop's own RM (issue 36): launchers whose AMs (the AM host's, as
Oozie's ``LauncherAM``) submit a child app through the RM's REST API and wait for it fill a
CapacityScheduler queue's AM limit at its default share, so their children wait behind it for
good. amtuner names the queue's AM limit, which A cures, raises A, and the batch ends; the
simulator holds the same AMs back and runs the batch as the real RM does."""

from __future__ import annotations

import time
from pathlib import Path

import requests

from amtuner.bench import real
from amtuner.realyarn import RealRM, apps
from amtuner.realyarn.admission import SETTLE_S, holding_am
from amtuner.sim.workload.launchers import launchers
from tests.e2e.conftest import amtuner
from tests.e2e.test_once import WAITING
from tests.realyarn.conftest import (
    against_sim,
    ours,
    run_until_finished,
    simulation_of,
    wait_for,
)
from tests.realyarn.test_real_once import DECISION, once_config

DEADLOCKED = {
    "launcher-00": True, "launcher-01": True, "launcher-02": False,
    "child-00": False, "child-01": False,
}  # fmt: skip
"""Which apps hold an AM in the deadlock (the RM knows the other two children's launchers'
only): the AM limit of 0.1 x 16 GB, normalised up to 2 GB, holds two 1 GB AMs."""
STILL_S = 20.0
"""How long the deadlock is watched: twice what a child needs from submission to its end."""


def _held(records: list[dict[str, object]], before: set[str]) -> dict[str, bool]:
    """Each app of the batch by name: whether it holds its AM (RUNNING, or ACCEPTED with its
    container)."""
    batch = ours(records, before)
    return {str(a["name"]): a["state"] == "RUNNING" or apps.am_allocated(a) for a in batch}


def test_launchers_deadlock_the_default_share_and_amtuner_ends_it(
    capacity_rm: RealRM, tmp_path: Path
) -> None:
    """Three launchers at once on two 8 GB nodes at A = 0.1: two launchers' AMs fill the queue's
    AM limit, their children and the third launcher wait, and nothing changes for `STILL_S`
    (no app ends, no container moves); the simulator, given the RM's own file, holds back the
    same apps. `amtuner once` (the default policy) names the queue's AM limit and its knob
    and raises A; `amtuner run` goes on from there and every app ends, launchers after their
    children."""
    batch = launchers(3)
    session = requests.Session()
    before = {str(a["id"]) for a in apps.listed(session, capacity_rm.url)}
    for job in apps.real_jobs(batch):
        apps.submit(session, capacity_rm.url, job, str(capacity_rm.markers))

    def settled() -> list[dict[str, object]] | None:
        records = apps.listed(session, capacity_rm.url)
        return records if _held(records, before) == DEADLOCKED else None

    wait_for(settled, 60, f"the deadlock: {DEADLOCKED}")
    held_since = sorted(holding_am(ours(apps.listed(session, capacity_rm.url), before)))
    time.sleep(STILL_S)
    still = ours(apps.listed(session, capacity_rm.url), before)
    assert _held(still, before) == DEADLOCKED and sorted(holding_am(still)) == held_since
    assert not [a["name"] for a in still if a["state"] == "FINISHED"]

    sim = simulation_of(capacity_rm, batch)
    sim.run_until(60.0 + SETTLE_S)
    assert {v.name: v.started_s is not None for v in sim.app_views()} == DEADLOCKED

    config = once_config(
        tmp_path, capacity_rm, controller={"policy": "adaptive", "period_seconds": 5}
    )
    raised_at = time.time()
    run = amtuner("once", "--config", str(config))
    assert run.returncode == 0, run.stdout + run.stderr
    assert dict(WAITING.findall(run.stdout))["global"] == (
        "3 queue-am-limit in root.default "
        "(cure: yarn.scheduler.capacity.root.default.maximum-am-resource-percent)"
    ), run.stdout
    ((target, old, new, _rule),) = DECISION.findall(run.stdout)
    assert target == "global" and float(new) > float(old) == 0.1, run.stdout

    records = run_until_finished(capacity_rm, config, before, 6, 180)
    ended_s = (max(int(str(a["finishedTime"])) for a in records) / 1000) - raised_at
    print(f"launcher deadlock: once {old} -> {new}, every app ended {ended_s:.1f} s later")
    finished = {str(a["name"]): int(str(a["finishedTime"])) for a in records}
    for i in range(3):
        assert finished[f"launcher-{i:02d}"] > finished[f"child-{i:02d}"]


def test_launchers_run_on_the_real_rm_as_in_the_simulator(
    capacity_rm: RealRM, tmp_path: Path
) -> None:
    """Three launchers on two 8 GB nodes at A = 0.25: the AM limit holds four 1 GB AMs, the
    three launchers' and one child's, so the children run one after another as each one's end
    frees its AM's share. The real RM and the simulator both hold four AMs at most (exact), and
    finish within 10 % of each other. One app is run to its AM's registration first: the first
    launch on a fresh cluster (JIT, first localisation) takes seconds that no YARN setting
    makes, and the chain would add them up (docs/fidelity.md)."""
    batch = launchers(
        3, map_s=15.0, reduce_s=8.0, am_startup_s=real.AM_STARTUP_S,
        am_teardown_s=real.AM_TEARDOWN_S, nodes=capacity_rm.spec.nodes,
        node_memory_mb=capacity_rm.spec.node_memory_mb,
    )  # fmt: skip
    got, _ = against_sim(capacity_rm, batch, 0.25, "launchers")
    assert got.ams_at_once == 4, got


def test_launchers_fill_a_fair_scheduler_s_max_am_share_and_amtuner_ends_it(
    fair_rm: RealRM, tmp_path: Path
) -> None:
    """Six launchers at once at the FairScheduler's default 0.5 on two 8 GB / 8-vcore nodes:
    the leaf's fair share counts memory alone, so its AM limit's vcores are half of those free
    (``FSLeafQueue.computeMaxAMResource``) and the launchers' 1-vcore AMs fill it with memory
    to spare; every child waits and nothing changes for `STILL_S`, and the simulator, given
    the RM's own file, holds back the same apps. `amtuner once` names the queue's AM limit
    (in vcores: memory alone would say the cluster is full) and raises A; `amtuner run` goes
    on, and every app ends."""
    batch = launchers(6)
    session = requests.Session()
    before = {str(a["id"]) for a in apps.listed(session, fair_rm.url)}
    for job in apps.real_jobs(batch):
        apps.submit(session, fair_rm.url, job, str(fair_rm.markers))

    def settled() -> dict[str, bool] | None:
        held = _held(apps.listed(session, fair_rm.url), before)
        children = [held.get(f"child-{i:02d}") for i in range(6)]
        launched = sum(held.get(f"launcher-{i:02d}", False) for i in range(6))
        return held if launched >= 4 and children.count(False) == launched else None

    deadlocked = wait_for(settled, 60, "the launchers to hold the AM share")
    time.sleep(STILL_S)
    still = ours(apps.listed(session, fair_rm.url), before)
    assert _held(still, before) == deadlocked
    assert not [a["name"] for a in still if a["state"] == "FINISHED"]

    sim = simulation_of(fair_rm, batch)
    sim.run_until(60.0 + SETTLE_S)
    simulated = {v.name: v.started_s is not None for v in sim.app_views()}
    assert simulated == deadlocked

    config = once_config(tmp_path, fair_rm, controller={"policy": "adaptive", "period_seconds": 5})
    raised_at = time.time()
    run = amtuner("once", "--config", str(config))
    assert run.returncode == 0, run.stdout + run.stderr
    waiting = sum(1 for held in deadlocked.values() if not held)
    assert dict(WAITING.findall(run.stdout))["global"] == (
        f"{waiting} queue-am-limit in root.default (cure: maxAMShare of queue root.default)"
    ), run.stdout
    ((target, old, new, _rule),) = DECISION.findall(run.stdout)
    assert target == "global" and float(new) > float(old) == 0.5, run.stdout

    records = run_until_finished(fair_rm, config, before, 12, 240)
    ended_s = (max(int(str(a["finishedTime"])) for a in records) / 1000) - raised_at
    print(f"FairScheduler launchers: once {old} -> {new}, every app ended {ended_s:.1f} s later")
