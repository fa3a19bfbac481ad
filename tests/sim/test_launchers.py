"""Workflow launchers in the simulator: an AM that submits a child app and waits for it, as
Oozie's ``LauncherAM`` runs an action's main class (Hive, Pig, Sqoop, Java actions submit their
job and wait for it), and the launcher deadlock it makes when launchers fill a CapacityScheduler
queue's AM limit (``LeafQueue.activateApplications`` then keeps every child pending)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from amtuner.config import ControllerSettings, PolicyName
from amtuner.model import Wait, WaitCause
from amtuner.monitor.rest import build_observation
from amtuner.sim import rmapi
from amtuner.sim.control import ControlledRun
from amtuner.sim.simulation import Simulation, build_simulation, default_scheduler_config
from amtuner.sim.spec import IMMEDIATE, JobSpec, Workload
from amtuner.sim.workload import WorkloadError, load_workload
from amtuner.sim.workload.launchers import launchers


def _sim(workload: Workload, a: float, **kwargs: object) -> Simulation:
    config = default_scheduler_config("capacity", workload.queues, a)
    return build_simulation("capacity", workload, config, **kwargs)  # type: ignore[arg-type]


def _states(sim: Simulation) -> dict[str, str]:
    return {v.name: v.state for v in sim.app_views()}


@pytest.mark.parametrize("immediate", [False, True])
def test_a_launcher_submits_its_child_once_its_am_runs_and_ends_after_it(
    immediate: bool,
) -> None:
    """With room for every AM: each launcher's child is submitted once the launcher's AM is
    past its start-up (on its next heartbeat where those are modelled), numbered after every
    app submitted before it (the RM numbers apps as they come), and the launcher ends its
    tear-down after its child ended (it hears of the end on a heartbeat: ``LauncherAM`` waits
    on the action's main class, which polls its job)."""
    wl = launchers(3)
    kwargs = {"heartbeats": IMMEDIATE} if immediate else {}
    sim = _sim(wl, 1.0, **kwargs)
    result = sim.run()
    assert result.finished and result.jobs_completed == 6 and result.ams_at_once == 6
    views = {v.name: v for v in sim.app_views()}
    by_index = sorted(sim.apps, key=lambda a: a.index)
    assert [a.spec.profile for a in by_index] == ["launcher"] * 3 + ["child"] * 3
    for i in range(3):
        launcher, child = views[f"launcher-{i:02d}"], views[f"child-{i:02d}"]
        assert launcher.started_s is not None and child.started_s is not None
        assert child.finished_s is not None and launcher.finished_s is not None
        assert child.submitted_s >= launcher.started_s + 1.0  # its AM's start-up
        assert launcher.finished_s >= child.finished_s + 1.0  # its AM's tear-down
    last = max(v.finished_s or 0.0 for v in views.values())
    assert result.makespan_s == pytest.approx(last, abs=1e-3)


def test_launchers_deadlock_a_queue_at_the_capacity_scheduler_s_default() -> None:
    """Three launchers at A = 0.1 on 16 GB: the AM limit (1.6 GB, normalised up to 2 GB) holds
    two 1 GB AMs, both launchers'; their children and the third launcher wait behind it for
    good, and the simulation stops with no event left. The monitor, reading the simulated RM's
    documents, names the queue's AM limit, which A cures."""
    sim = _sim(launchers(3), 0.1)
    result = sim.run(3600.0)
    assert not result.finished and result.stopped_reason is not None
    assert "stalled" in result.stopped_reason
    assert _states(sim) == {
        "launcher-00": "RUNNING", "launcher-01": "RUNNING", "launcher-02": "ACCEPTED",
        "child-00": "ACCEPTED", "child-01": "ACCEPTED",
    }  # fmt: skip
    view = sim.view()
    obs = build_observation(
        rmapi.cluster_metrics(view), rmapi.scheduler_info(view), time=0.0, source="rest"
    )
    assert obs.waits == (Wait("root.default", WaitCause.QUEUE_AM_LIMIT, 3),)
    assert WaitCause.QUEUE_AM_LIMIT.a_cures


@pytest.mark.parametrize("policy", ["adaptive", "paper"])
def test_a_policy_ends_the_deadlock_it_finds(policy: PolicyName, tmp_path: Path) -> None:
    """The deadlock formed first (30 s at A = 0.1), then amtuner's loop from there: the policy
    raises A, the children start, and every app ends; at the fixed default nothing would."""
    sim = _sim(launchers(3), 0.1)
    sim.run_until(30.0)
    assert sim.runtime.apps_completed == 0
    ControlledRun(sim, tmp_path, controller=ControllerSettings(policy=policy, period_seconds=5.0))
    result = sim.run(600.0)
    assert result.finished and result.jobs_completed == 6, result
    assert result.a_trace[-1][1] > 0.1


def test_a_launcher_refused_never_submits_its_child() -> None:
    """A launcher whose AM is larger than any node is refused at submission: its child is
    never submitted, and the run ends with the other pairs done."""
    wl = launchers(2)
    big = dataclasses.replace(wl.jobs[0], am_memory_mb=16384)
    sim = _sim(dataclasses.replace(wl, jobs=(big, *wl.jobs[1:])), 1.0)
    result = sim.run()
    assert result.finished and (result.jobs_completed, result.jobs_failed) == (2, 1)
    assert "child-00" not in _states(sim)


def test_a_launcher_must_be_a_job_and_launchers_cannot_launch_each_other() -> None:
    child = JobSpec("child", 0.0, "root.default", maps=(), launched_by="nobody")
    with pytest.raises(ValueError, match="launched by nobody, which is no job"):
        _sim(Workload("w", (child,), nodes=1), 1.0)
    a = JobSpec("a", 0.0, "root.default", maps=(), launched_by="b")
    b = JobSpec("b", 0.0, "root.default", maps=(), launched_by="a")
    with pytest.raises(ValueError, match="launch each other"):
        _sim(Workload("w", (a, b), nodes=1), 1.0)


def test_the_launchers_workload_by_name() -> None:
    wl = load_workload("launchers:4")
    assert sum(1 for j in wl.jobs if j.launched_by) == 4 and len(wl.jobs) == 8
    for bad in ("launchers:x", "launchers:0"):
        with pytest.raises(WorkloadError):
            load_workload(bad)


def _fair(workload: Workload, a: float) -> Simulation:
    config = default_scheduler_config("fair", workload.queues, a)
    return build_simulation("fair", workload, config)


def test_launchers_deadlock_a_fair_scheduler_leaf_at_its_max_am_share() -> None:
    """Six launchers at the FairScheduler's default 0.5 on two 8 GB / 8-vcore nodes: a fair
    share counted in memory leaves the leaf's AM vcores to what is free
    (``FSLeafQueue.computeMaxAMResource``), so 1-vcore launcher AMs fill ``maxAMShare`` with
    memory to spare; ``canRunAppAM`` then holds their children for good. The monitor names the
    queue's AM limit, which A cures."""
    sim = _fair(launchers(6), 0.5)
    result = sim.run(3600.0)
    assert not result.finished and result.stopped_reason is not None
    assert "stalled" in result.stopped_reason and result.jobs_completed == 0
    running = sorted(n for n, s in _states(sim).items() if s == "RUNNING")
    assert running == [f"launcher-{i:02d}" for i in range(6)]
    view = sim.view()
    obs = build_observation(
        rmapi.cluster_metrics(view), rmapi.scheduler_info(view), time=0.0, source="rest"
    )
    (leaf,) = obs.queues
    assert leaf.am_memory_used_mb is not None and leaf.am_memory_limit_mb is not None
    assert leaf.am_memory_used_mb + 1024 <= leaf.am_memory_limit_mb  # memory has room
    assert obs.waits == (Wait("root.default", WaitCause.QUEUE_AM_LIMIT, 6),)


def test_the_default_policy_ends_the_fair_scheduler_s_deadlock(tmp_path: Path) -> None:
    """The same deadlock found after 30 s, then amtuner's loop with its defaults: the policy
    raises A, the children start, and every app ends."""
    sim = _fair(launchers(6), 0.5)
    sim.run_until(30.0)
    assert sim.runtime.apps_completed == 0
    ControlledRun(sim, tmp_path, controller=ControllerSettings(period_seconds=5.0))
    result = sim.run(900.0)
    assert result.finished and result.jobs_completed == 12, result
    assert result.a_trace[-1][1] > 0.5
