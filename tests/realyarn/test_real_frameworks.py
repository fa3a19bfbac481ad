"""Framework AMs that hold AM share beyond their tasks, on Hadoop's own RM against the simulator:
Tez sessions (``org.apache.tez.dag.app.DAGAppMaster`` in session mode), Spark drivers in cluster
mode (``org.apache.spark.deploy.yarn.ApplicationMaster``) and long-lived services
(``org.apache.hadoop.yarn.service.ServiceMaster``), played by the AM host (its ``runs`` tag).
Each batch at a fixed share on two 8 GB nodes: the same AMs at once (exact) and makespans
within 10 %; and what `amtuner once` says of a queue whose AM limit idle services fill."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests

from amtuner.bench import real
from amtuner.realyarn import RealRM, apps
from amtuner.sim.simulation import Simulation, build_simulation
from amtuner.sim.spec import Workload
from amtuner.sim.workload.frameworks import drivers, services, sessions
from tests.e2e.conftest import amtuner
from tests.e2e.test_once import WAITING
from tests.realyarn.conftest import against_sim, ours, wait_for
from tests.realyarn.test_real_once import DECISION, once_config


def _shape(rm: RealRM) -> dict[str, Any]:
    """The real cluster's size and the AM host's start-up and tear-down, for a batch."""
    spec = rm.spec
    return {"am_startup_s": real.AM_STARTUP_S, "am_teardown_s": real.AM_TEARDOWN_S,
            "nodes": spec.nodes, "node_memory_mb": spec.node_memory_mb}  # fmt: skip


def _idle_between_busy(held: list[int]) -> int:
    """How often ``held`` (one app's containers, look by look) went from tasks running to its
    AM's alone and back: the idle gaps between its runs."""
    gaps, busy, idle_after_busy = 0, False, False
    for n in held:
        if n > 1:
            gaps += idle_after_busy
            busy, idle_after_busy = True, False
        elif busy:
            idle_after_busy = True
    return gaps


def test_tez_sessions_on_the_real_rm_as_in_the_simulator(capacity_rm: RealRM) -> None:
    """Three sessions of two DAGs at A = 0.1 (two 1 GB AMs): each AM holds its container alone
    between its DAGs and for its timeout after the last, and the third session starts only
    when one of the first two has ended."""
    batch = sessions(3, dags=2, gap_s=5.0, timeout_s=8.0, map_s=6.0, reduce_s=3.0,
                     **_shape(capacity_rm))  # fmt: skip
    watch: dict[str, list[int]] = {}
    against_sim(capacity_rm, batch, 0.1, "sessions", watch=watch)
    assert {name: _idle_between_busy(held) for name, held in watch.items()} == {
        f"session-0{i}": 1 for i in range(3)
    }, watch


def test_spark_drivers_on_the_real_rm_as_in_the_simulator(capacity_rm: RealRM) -> None:
    """Three drivers at A = 0.1, each computing in its AM before each of its two jobs asks for
    two 2 GB executors: two drivers at once, the third after."""
    batch = drivers(3, executor_s=6.0, **_shape(capacity_rm))
    watch: dict[str, list[int]] = {}
    against_sim(capacity_rm, batch, 0.1, "drivers", watch=watch)
    assert {name: _idle_between_busy(held) for name, held in watch.items()} == {
        f"driver-0{i}": 1 for i in range(3)
    }, watch


def test_services_fill_the_am_limit_and_amtuner_names_it(
    capacity_rm: RealRM, tmp_path: Path
) -> None:
    """Four services (AMs alone for 20 s) and two MapReduce jobs behind them at A = 0.1: two
    services hold the AM limit, and `amtuner once` names the queue's AM limit with the four
    apps it holds back, A its cure, and raises A. On the real RM the raise admits the two
    services still waiting and no job (a queue admits apps in the order they came:
    ``LeafQueue.activateApplications``), as the simulator does given the RM's new file. The
    batch at the fixed default then runs on the real RM as in the simulator."""
    batch = services(4, life_s=20.0, jobs=2, map_s=6.0, reduce_s=3.0, **_shape(capacity_rm))
    session = requests.Session()
    before = {str(r["id"]) for r in apps.listed(session, capacity_rm.url)}
    for job in apps.real_jobs(batch):
        apps.submit(session, capacity_rm.url, job, str(capacity_rm.markers))

    def running(names: list[str]) -> bool:
        records = ours(apps.listed(session, capacity_rm.url), before)
        return sorted(str(r["name"]) for r in records if r["state"] == "RUNNING") == names

    wait_for(lambda: running(["service-00", "service-01"]), 60, "two services to hold it")
    config = once_config(
        tmp_path, capacity_rm, controller={"policy": "adaptive", "period_seconds": 5}
    )
    run = amtuner("once", "--config", str(config))
    assert run.returncode == 0, run.stdout + run.stderr
    assert dict(WAITING.findall(run.stdout))["global"] == (
        "4 queue-am-limit in root.default "
        "(cure: yarn.scheduler.capacity.root.default.maximum-am-resource-percent)"
    ), run.stdout
    ((target, old, new, _rule),) = DECISION.findall(run.stdout)
    assert target == "global" and float(new) > float(old) == 0.1, run.stdout
    print(f"services: once {old} -> {new}")
    four = [f"service-0{i}" for i in range(4)]
    wait_for(lambda: running(four), 15, f"the raise to {new} to admit {four}")
    records = ours(apps.listed(session, capacity_rm.url), before)
    assert {str(r["name"]): r["state"] for r in records if r["name"] not in four} == {
        "job-00": "ACCEPTED", "job-01": "ACCEPTED"
    }
    raised = _simulated(capacity_rm, batch)
    raised.run_until(10.0)
    assert sorted(v.name for v in raised.app_views() if v.started_s is not None) == four
    apps.kill_all(session, capacity_rm.url)
    wait_for(lambda: not apps.listed(session, capacity_rm.url, "ACCEPTED,RUNNING"), 30, "no app")

    against_sim(capacity_rm, batch, 0.1, "services")


def _simulated(rm: RealRM, batch: Workload) -> Simulation:
    spec = rm.spec
    return build_simulation(
        spec.scheduler, batch, rm.scheduler_file.read_bytes(), nodes=spec.nodes,
        node_memory_mb=spec.node_memory_mb, node_vcores=spec.node_vcores,
        site=spec.scheduler_site(),
    )  # fmt: skip
