"""Why apps wait, on Hadoop's own RM (issue 36): with a limit other than the queue's AM share
holding apps, `amtuner once` names that limit and the setting that cures it, as the RM reports
it, and the simulator holds the same apps back."""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path

import pytest

from amtuner.bench import real
from amtuner.config import ControllerSettings, GuardSettings
from amtuner.executor import SchedulerFile
from amtuner.model import SchedulerKind
from amtuner.monitor.idle import IDLE_CURE
from amtuner.realyarn import RealRM
from amtuner.realyarn.admission import simulated
from amtuner.realyarn.build import Build
from amtuner.realyarn.capture import SCENES, label_properties, stage
from amtuner.realyarn.cluster import leftover_processes
from amtuner.sim.sched_config import CS_PREFIX
from tests.e2e.conftest import amtuner
from tests.e2e.test_idle_ams import IDLE
from tests.e2e.test_once import WAITING
from tests.e2e.test_run import cycles, scrape
from tests.e2e.test_run import wait_for as wait_while_running
from tests.realyarn.conftest import metrics, run_with_metrics, wait_for
from tests.realyarn.test_real_once import DECISION, once_config

WAITS = {
    "capacity-max-parallel-apps":
        "3 max-apps in root.default (cure: yarn.scheduler.capacity.root.default.max-parallel-apps)",
    "capacity-cluster-max-parallel-apps": "3 max-apps in root.default (cure: "
        "yarn.scheduler.capacity.root.default.max-parallel-apps and "
        "yarn.scheduler.capacity.root.max-parallel-apps)",
    "capacity-user-max-parallel-apps": "3 max-apps in root.default (cure: "
        "yarn.scheduler.capacity.user.max-parallel-apps (or user.<user>.max-parallel-apps))",
    "fair-max-running-apps":
        "3 max-apps in root.default (cure: maxRunningApps of queue root.default)",
    "fair-parent-max-running-apps":
        "3 max-apps in root.default (cure: maxRunningApps of queue root)",
    "fair-user-max-apps-default": "3 max-apps in root.default "
        '(cure: userMaxAppsDefault (or <user name="…"><maxRunningApps>))',
    "capacity-user-am-limit": "2 user-am-limit in root.default "
        "(cure: yarn.scheduler.capacity.root.default.user-limit-factor)",
    "capacity-user-am-limit-after-kills": "2 user-am-limit in root.default "
        "(cure: yarn.scheduler.capacity.root.default.user-limit-factor)",
}  # fmt: skip
"""What `amtuner once` says of each scene's waiting apps (the RM's own counts: `SCENES`)."""


@pytest.mark.parametrize("name", list(WAITS))
def test_once_names_the_limit_that_holds_the_apps(
    request: pytest.FixtureRequest, name: str, tmp_path: Path
) -> None:
    """CapacityScheduler ``max-parallel-apps`` 2 (``CSMaxRunningAppsEnforcer``: root.default's,
    or the cluster-wide value, which root inherits too, so both must be raised, or each
    user's, which the leaf's figures show as apps held with the leaf and root unlimited) and
    FairScheduler ``maxRunningApps`` 2 (``MaxRunningAppsEnforcer``: root.default's, or
    root's, a parent's, which walks from the leaf up) or ``userMaxAppsDefault`` 2 (which no
    document reports: the file says it, the apps document whose apps wait), with
    room for eight AMs: two of five apps run, three wait non-runnable. Two users under
    ``user-limit-factor`` 0.5: each may hold half the queue's 6 GB AM limit
    (``getUserAMResourceLimitPerPartition``), so alice's fourth and fifth wait while bob's two
    run, also after a batch held by max-parallel-apps was killed at once (which can leave a
    user listed below zero: its figures are left out). `amtuner once` names the limit and its
    knob, raises A only for the limit A makes (the user AM limit is A x user-limit-factor)
    and holds it, writing nothing, under the running-apps limits; the simulator, given the
    same file, admits the same AMs."""
    scene = SCENES[name]
    rm: RealRM = request.getfixturevalue(f"{scene.kind}_rm")
    data = stage(rm, scene)
    sim = simulated(rm.spec, scene.am_share, scene.batch, 1024, scheduler_file=data)
    assert (sim.admitted, sim.submitted) == (scene.running, len(scene.batch))

    run = amtuner("once", "--config", str(once_config(tmp_path, rm)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert dict(WAITING.findall(run.stdout))["global"] == WAITS[name], run.stdout
    ((target, old, new, rule),) = DECISION.findall(run.stdout)
    assert target == "global"
    if name.startswith("capacity-user-am-limit"):
        assert float(new) > float(old), run.stdout
    else:  # the guard holds the policy's raise, and nothing is written
        assert (new, rule) == (old, "hold") and "A cures none of the waits" in run.stdout
        assert rm.scheduler_file.read_bytes() == data


RUN_CYCLES = 8


@dataclasses.dataclass(frozen=True)
class DefaultRun:
    a: float
    """A as the metrics show it at the end."""
    on_disk: float
    waiting: float
    """The apps waiting for the cause asked about, as the metrics show it."""
    step: float
    log: str


def run_default_policy(rm: RealRM, tmp_path: Path, cause: str) -> DefaultRun:
    """`amtuner run` against ``rm`` with the default policy and guard, every 2 s for
    `RUN_CYCLES` cycles, stopped by SIGTERM."""
    defaults = ControllerSettings()
    config = once_config(
        tmp_path, rm,
        controller={"policy": defaults.policy, "period_seconds": 2.0},
        guard={"hold_off_seconds": GuardSettings().hold_off_seconds},
        metrics={"enabled": True, "address": "127.0.0.1", "port": 0},
    )  # fmt: skip
    with run_with_metrics(config) as (proc, log, url):
        wait_while_running(lambda: cycles(scrape(url)) >= RUN_CYCLES, "cycles", proc)
        samples = scrape(url)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, log.text()
    return DefaultRun(
        a=samples[("amtuner_am_share_ratio", (("target", "global"),))],
        on_disk=SchedulerFile.read(rm.scheduler_file, rm.spec.scheduler).effective_value(""),
        waiting=samples[("amtuner_waiting_apps", (("cause", cause), ("target", "global")))],
        step=defaults.step,
        log=log.text(),
    )


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("capacity-max-parallel-apps", 0.1),
        ("capacity-user-max-parallel-apps", 0.1),
        ("fair-max-running-apps", 0.25),
        ("fair-parent-max-running-apps", 0.25),
        ("fair-user-max-apps-default", 0.25),
    ],
)
def test_run_keeps_a_within_a_step_under_a_running_apps_limit(
    request: pytest.FixtureRequest, name: str, start: float, tmp_path: Path
) -> None:
    """Issue 36's bar on Hadoop's own RM: two apps run and three are held by
    ``max-parallel-apps`` 2 (at the CapacityScheduler's default A, whose AM limit holds just
    those two) or ``maxRunningApps`` 2 or ``userMaxAppsDefault`` 2 (at an A with room for four
    AMs, less than the five apps' AMs would take). `amtuner run`, the default policy and
    guard, every 2 s for eight cycles: the policy wants a raise, the guard holds it (A cures
    none of the waits), and A, in the metrics and in the file, ends within one step of where
    it started."""
    scene = dataclasses.replace(SCENES[name], am_share=start)
    rm: RealRM = request.getfixturevalue(f"{scene.kind}_rm")
    stage(rm, scene)
    run = run_default_policy(rm, tmp_path, "max-apps")
    print(f"{name}: A {start} -> {run.a} (file {run.on_disk})")
    assert run.waiting == scene.waiting, run.log
    assert abs(run.a - start) <= run.step + 1e-9, run.log
    assert abs(run.on_disk - start) <= run.step + 1e-9, run.log
    assert "A cures none of the waits" in run.log


def test_max_parallel_apps_runs_a_batch_on_the_real_rm_as_in_the_simulator(
    realyarn_build: Build, tmp_path: Path
) -> None:
    """Five small jobs under ``max-parallel-apps`` 2 on root.default, at an A that has room for
    eight 2 GB AMs: the real RM and the simulator both run two at a time (AMs at once, exact),
    each next job made runnable as one ends, and finish the batch within 10 % of each other."""
    props = {f"{CS_PREFIX}root.default.max-parallel-apps": "2"}
    batch = dataclasses.replace(real.workload(), jobs=real.workload().jobs[::3][:5])
    assert {j.profile for j in batch.jobs} == {"small"}
    kind = SchedulerKind.CAPACITY
    run = real.run_real(kind, 0.5, "paper", tmp_path, realyarn_build, batch, props)
    sim = real.run_sim(kind, 0.5, "paper", real.HADOOP_HEARTBEATS, batch, props)
    assert run.figures.ams_at_once == sim.ams_at_once == 2, (run.figures, sim)
    diff = (sim.makespan_s - run.figures.makespan_s) / run.figures.makespan_s
    print(f"max-parallel-apps 2: real {run.figures} sim {sim} makespan diff {diff:+.1%}")
    assert abs(diff) <= 0.10, (run.figures, sim)
    assert not leftover_processes(tmp_path)


def test_once_names_the_partition_am_limit_and_tunes_it_as_a_partition_target(
    labels_rm: RealRM, tmp_path: Path
) -> None:
    """Every AM goes to the node label core (``yarn.resourcemanager.node-labels.am.
    default-node-label-expression``, as on EMR), one 8 GB node where root.default's AM share
    is its own 0.25: two AMs run, three wait, though the leaf's 0.5 leaves the default
    partition's AM limit empty (``getAMResourceLimitPerPartition``). `amtuner once` names the
    partition's limit and its key; tuning the global value it holds (that value does not reach
    the partition), writing nothing; tuning ``root.default@core`` it raises the partition's
    own key, and the RM, reloaded, lets a waiting app start."""
    rm, scene = labels_rm, SCENES["capacity-partition-am-limit"]
    data = stage(rm, scene)
    sim = simulated(rm.spec, scene.am_share, scene.batch, 1024, scheduler_file=data)
    assert (sim.admitted, sim.submitted) == (scene.running, len(scene.batch))
    run = amtuner("once", "--config", str(once_config(tmp_path, rm)))
    assert run.returncode == 0, run.stdout + run.stderr
    key = "yarn.scheduler.capacity.root.default.accessible-node-labels.core."
    held = f"3 partition-am-limit in root.default (cure: {key}maximum-am-resource-percent)"
    assert dict(WAITING.findall(run.stdout))["global"] == held, run.stdout
    ((_, old, new, rule),) = DECISION.findall(run.stdout)
    assert (new, rule) == (old, "hold") and "A cures none of the waits" in run.stdout
    assert rm.scheduler_file.read_bytes() == data

    config = once_config(
        tmp_path, rm, scheduler={
            "kind": "capacity", "config_file": str(rm.scheduler_file),
            "targets": ["root.default@core"]},
    )  # fmt: skip
    run = amtuner("once", "--config", str(config))
    assert run.returncode == 0, run.stdout + run.stderr
    ((target, old, new, _),) = DECISION.findall(run.stdout)
    assert (target, float(old)) == ("root.default@core", 0.25) and float(new) > 0.25, run.stdout
    written = SchedulerFile(rm.scheduler_file, "capacity", rm.scheduler_file.read_bytes())
    assert written.current_value("root.default@core") == float(new)
    assert written.current_value("root.default") is None  # the leaf's own is left unset
    wait_for(lambda: metrics(rm)["appsRunning"] > scene.running, 30, "a waiting app to start")


def test_a_partition_limit_made_of_the_global_value_is_cured_by_it(
    labels_rm: RealRM, tmp_path: Path
) -> None:
    """The same partition with no AM share of its own: the global 0.25 is its value
    (``getMaximumAMResourcePercentPerPartition`` falls back to the queue's, and that to the
    global one), so `amtuner once` on the global value raises it."""
    scene = SCENES["capacity-partition-inherits"]
    data = stage(labels_rm, scene)
    sim = simulated(labels_rm.spec, scene.am_share, scene.batch, 1024, scheduler_file=data)
    assert sim.admitted == scene.running
    run = amtuner("once", "--config", str(once_config(tmp_path, labels_rm)))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 partition-am-limit in root.default" in dict(WAITING.findall(run.stdout))["global"]
    ((target, old, new, _),) = DECISION.findall(run.stdout)
    assert target == "global" and float(new) > float(old), run.stdout


def test_ams_pinned_to_a_label_run_a_batch_on_the_real_rm_as_in_the_simulator(
    realyarn_build: Build, tmp_path: Path
) -> None:
    """Five small jobs, every AM sent to the label core on the first of four 8 GB nodes, where
    root.default's AM share is 0.5 (4 GB: two 2 GB AMs), their tasks on the other three: the
    real RM and the simulator (``calculateAndGetAMResourceLimitPerPartition``, AMs placed on the
    label's node only) both run two at a time, and finish the batch within 10 % of each
    other."""
    key = f"{CS_PREFIX}root.default.accessible-node-labels.core.maximum-am-resource-percent"
    props = {**label_properties("core"), key: "0.5"}
    batch = dataclasses.replace(real.workload(), jobs=real.workload().jobs[::3][:5])
    kind = SchedulerKind.CAPACITY
    run = real.run_real(
        kind, 0.5, "paper", tmp_path, realyarn_build, batch, props, node_label="core"
    )
    sim = real.run_sim(kind, 0.5, "paper", real.HADOOP_HEARTBEATS, batch, props, node_label="core")
    assert run.figures.ams_at_once == sim.ams_at_once == 2, (run.figures, sim)
    diff = (sim.makespan_s - run.figures.makespan_s) / run.figures.makespan_s
    print(f"AMs on a label: real {run.figures} sim {sim} makespan diff {diff:+.1%}")
    assert abs(diff) <= 0.10, (run.figures, sim)
    assert not leftover_processes(tmp_path)


def test_once_and_check_name_the_idle_ams_that_hold_the_am_limit(
    capacity_rm: RealRM, tmp_path: Path
) -> None:
    """Three AMs that ask for nothing hold root.default's AM limit (3 GB at 0.1875), two apps
    wait behind it; past `IDLE_AFTER_S` after their launch, `amtuner once` names the three
    beside the wait, from the RM's own apps document, and `amtuner check` names them alike."""
    scene = SCENES["capacity-idle-ams"]
    stage(capacity_rm, scene)
    config = str(once_config(tmp_path, capacity_rm))
    run = amtuner("once", "--dry-run", "--config", config)
    assert run.returncode == 0, run.stdout + run.stderr
    check = amtuner("check", "--config", config)
    assert "rm        ok: capacity scheduler" in check.stdout, check.stdout + check.stderr
    for said in (WAITING, IDLE):
        assert dict(said.findall(check.stdout)) == dict(said.findall(run.stdout)), check.stdout
    assert dict(WAITING.findall(run.stdout))["global"] == (
        "2 queue-am-limit in root.default "
        "(cure: yarn.scheduler.capacity.root.default.maximum-am-resource-percent)"
    ), run.stdout
    assert dict(IDLE.findall(run.stdout)) == {
        "global": "3 of 3 running apps hold their AM alone (3072 MB) and ask for nothing "
        f"(cure: {IDLE_CURE})"
    }, run.stdout
