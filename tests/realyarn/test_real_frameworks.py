"""Framework AMs that hold AM share beyond their tasks, on Hadoop's own RM against the simulator:
Tez sessions (``org.apache.tez.dag.app.DAGAppMaster`` in session mode), Spark drivers in cluster
mode (``org.apache.spark.deploy.yarn.ApplicationMaster``) and long-lived services
(``org.apache.hadoop.yarn.service.ServiceMaster``), played by the AM host (its ``runs`` tag).
Each batch on each scheduler at a share that holds two 1 GB AMs of two 8 GB nodes (`TWO_AMS`):
the same AMs at once (exact) and makespans within 10 %; and what `amtuner once` says of a queue
whose AM limit idle services fill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests

from amtuner.bench import real
from amtuner.model import SchedulerKind
from amtuner.realyarn import RealRM, apps
from amtuner.sim.workload.frameworks import drivers, services, sessions
from tests.e2e.conftest import amtuner
from tests.e2e.test_once import WAITING
from tests.realyarn.conftest import against_sim, ours, set_am_share, simulation_of, wait_for
from tests.realyarn.test_real_once import DECISION, once_config

TWO_AMS = {SchedulerKind.CAPACITY: 0.1, SchedulerKind.FAIR: 0.125}
"""The CapacityScheduler's default, its 1.6 GB normalised up to 2 GB
(``LeafQueue.getAMResourceLimitPerPartition``); a FairScheduler's 2 GB exactly
(``FSLeafQueue.computeMaxAMResource``: 0.1 would hold one)."""
CURE = {
    SchedulerKind.CAPACITY: "yarn.scheduler.capacity.root.default.maximum-am-resource-percent",
    SchedulerKind.FAIR: "maxAMShare of queue root.default",
}


def _shape(rm: RealRM) -> dict[str, Any]:
    """The real cluster's size and the AM host's start-up and tear-down, for a batch."""
    spec = rm.spec
    return {"am_startup_s": real.AM_STARTUP_S, "am_teardown_s": real.AM_TEARDOWN_S,
            "nodes": spec.nodes, "node_memory_mb": spec.node_memory_mb}  # fmt: skip


IDLE_S = 4.0
"""How long an AM holds its container alone before it counts as idle between runs (5 s here):
within a run it may hold it alone for up to two heartbeats too, when its maps end on the
same heartbeat and it asks for its reduce on the next (`AmHost`'s slow start)."""


def _idle_between_busy(looks: list[tuple[float, int]]) -> int:
    """How often an app's containers (``looks``: seconds, count) went from tasks running to its
    AM's alone for longer than `IDLE_S` and back: the idle gaps between its runs."""
    gaps, busy_at = 0, None
    for at, n in looks:
        if n > 1:
            gaps += busy_at is not None and at - busy_at > IDLE_S
            busy_at = at
    return gaps


def test_tez_sessions_on_the_real_rm_as_in_the_simulator(real_rm: RealRM) -> None:
    """Three sessions of two DAGs at `TWO_AMS`: each AM holds its container alone between its
    DAGs and for its timeout after the last, and the third session starts only when one of the
    first two has ended."""
    batch = sessions(3, dags=2, gap_s=5.0, timeout_s=8.0, map_s=6.0, reduce_s=3.0,
                     **_shape(real_rm))  # fmt: skip
    watch: dict[str, list[tuple[float, int]]] = {}
    against_sim(real_rm, batch, TWO_AMS[real_rm.spec.scheduler], "sessions", watch=watch)
    assert {name: _idle_between_busy(held) for name, held in watch.items()} == {
        f"session-0{i}": 1 for i in range(3)
    }, watch


def test_spark_drivers_on_the_real_rm_as_in_the_simulator(real_rm: RealRM) -> None:
    """Three drivers at `TWO_AMS`, each computing in its AM before each of its two jobs asks
    for two 2 GB executors: two drivers at once, the third after."""
    batch = drivers(3, executor_s=6.0, **_shape(real_rm))
    watch: dict[str, list[tuple[float, int]]] = {}
    against_sim(real_rm, batch, TWO_AMS[real_rm.spec.scheduler], "drivers", watch=watch)
    assert {name: _idle_between_busy(held) for name, held in watch.items()} == {
        f"driver-0{i}": 1 for i in range(3)
    }, watch


def test_services_fill_the_am_limit_and_amtuner_names_it(real_rm: RealRM, tmp_path: Path) -> None:
    """Four services (AMs alone for 20 s) and two MapReduce jobs behind them at `TWO_AMS`: two
    services hold the AM limit, and `amtuner once` names the queue's AM limit with the four
    apps it holds back, A its cure, and raises A. On the real RM the raise admits the apps the
    simulator starts given the RM's new file, and no other: on a CapacityScheduler (0.1 to
    0.2499) the two services still waiting and no job (a queue admits apps in the order they
    came: ``LeafQueue.activateApplications``). The batch at the fixed share then runs on the
    real RM as in the simulator."""
    kind, url = real_rm.spec.scheduler, real_rm.url
    set_am_share(real_rm, TWO_AMS[kind])
    batch = services(4, life_s=20.0, jobs=2, map_s=6.0, reduce_s=3.0, **_shape(real_rm))
    session = requests.Session()
    before = {str(r["id"]) for r in apps.listed(session, url)}
    for job in apps.real_jobs(batch):
        apps.submit(session, url, job, str(real_rm.markers))

    def running(names: list[str]) -> bool:
        records = ours(apps.listed(session, url), before)
        return sorted(str(r["name"]) for r in records if r["state"] == "RUNNING") == names

    wait_for(lambda: running(["service-00", "service-01"]), 60, "two services to hold it")
    config = once_config(tmp_path, real_rm, controller={"policy": "adaptive", "period_seconds": 5})
    run = amtuner("once", "--config", str(config))
    assert run.returncode == 0, run.stdout + run.stderr
    assert dict(WAITING.findall(run.stdout))["global"] == (
        f"4 queue-am-limit in root.default (cure: {CURE[kind]})"
    ), run.stdout
    ((target, old, new, _rule),) = DECISION.findall(run.stdout)
    assert target == "global" and float(new) > float(old) == TWO_AMS[kind], run.stdout
    print(f"services ({kind}): once {old} -> {new}")
    raised = simulation_of(real_rm, batch)
    raised.run_until(10.0)
    admitted = sorted(v.name for v in raised.app_views() if v.started_s is not None)
    if kind is SchedulerKind.CAPACITY:
        assert admitted == [f"service-0{i}" for i in range(4)]
    wait_for(lambda: running(admitted), 15, f"the raise to {new} to admit {admitted}")
    records = ours(apps.listed(session, url), before)
    assert {str(r["name"]): r["state"] for r in records if r["name"] not in admitted} == {
        j.job_id: "ACCEPTED" for j in batch.jobs if j.job_id not in admitted
    }
    apps.kill_all(session, url)
    wait_for(lambda: not apps.listed(session, url, "ACCEPTED,RUNNING"), 30, "no app")

    against_sim(real_rm, batch, TWO_AMS[kind], "services")

