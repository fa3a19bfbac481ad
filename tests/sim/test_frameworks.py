"""Framework AMs in the simulator that hold AM share beyond their tasks: Tez sessions
(``org.apache.tez.dag.app.DAGAppMaster`` in session mode), Spark drivers in cluster mode
(``org.apache.spark.deploy.yarn.ApplicationMaster``) and long-lived services
(``org.apache.hadoop.yarn.service.ServiceMaster``), with what the monitor makes of a queue whose
AM limit they fill."""

from __future__ import annotations

import pytest

from amtuner.model import Wait, WaitCause
from amtuner.monitor.rest import build_observation
from amtuner.sim import rmapi
from amtuner.sim.simulation import Simulation, build_simulation, default_scheduler_config
from amtuner.sim.spec import IMMEDIATE, Workload
from amtuner.sim.workload import WorkloadError, load_workload
from amtuner.sim.workload.frameworks import (
    DRIVER_WORK_S,
    SERVICE_LIFE_S,
    SESSION_GAP_S,
    SESSION_TIMEOUT_S,
    drivers,
    services,
    sessions,
)


def _sim(workload: Workload, a: float, **kwargs: object) -> Simulation:
    config = default_scheduler_config("capacity", workload.queues, a)
    return build_simulation("capacity", workload, config, **kwargs)  # type: ignore[arg-type]


def _containers(sim: Simulation, name: str, until: float, step: float = 0.25) -> list[int]:
    """How many containers ``name`` holds every ``step`` seconds up to ``until`` (0 once it
    ended, or before it started)."""
    (app,) = [a for a in sim.apps if a.spec.job_id == name]
    out: list[int] = []
    t = step
    while t <= until:
        sim.run_until(t)
        out.append(app.running_containers)
        t += step
    return out


def _stretches(held: list[int]) -> list[tuple[bool, int]]:
    """(tasks running, samples) of each stretch of ``held`` between the AM's start and end."""
    out: list[tuple[bool, int]] = []
    for n in held:
        if n == 0:
            continue
        busy = n > 1
        if out and out[-1][0] == busy:
            out[-1] = (busy, out[-1][1] + 1)
        else:
            out.append((busy, 1))
    return out


@pytest.mark.parametrize("immediate", [False, True])
def test_a_tez_session_runs_its_dags_apart_holding_only_its_am_between_them(
    immediate: bool,
) -> None:
    """``DAGAppMaster`` in session mode: one AM, three DAGs (one per query), its task containers
    all given back while it waits for the next query and its AM container held; after its last
    DAG it waits ``tez.session.am.dag.submit.timeout.secs`` before it ends."""
    sim = _sim(sessions(1), 1.0, **({"heartbeats": IMMEDIATE} if immediate else {}))
    stretches = _stretches(_containers(sim, "session-00", 80.0))
    result = sim.run()
    assert result.finished and result.jobs_completed == 1
    assert [busy for busy, _ in stretches] == [False, True, False, True, False, True, False]
    gaps = [n * 0.25 for busy, n in stretches[2:-1] if not busy]
    assert gaps == [pytest.approx(SESSION_GAP_S, abs=1.5)] * 2
    assert stretches[-1][1] * 0.25 >= SESSION_TIMEOUT_S  # the timeout, then its tear-down
    (view,) = sim.app_views()
    assert view.started_s is not None and view.finished_s is not None
    # Three DAGs of 4 s maps and a 2 s reduce, two gaps, the timeout: more than one run's life.
    assert view.finished_s - view.started_s >= 3 * 6.0 + 2 * SESSION_GAP_S + SESSION_TIMEOUT_S


def test_sessions_hold_the_am_limit_through_their_idle_gaps() -> None:
    """Three sessions at A = 0.1 (two 1 GB AMs): the third starts only when a first one has
    ended, its timeout past, though both were idle most of that time; at A = 0.2 all three run
    at once and the batch takes half as long."""
    low, high = _sim(sessions(3), 0.1), _sim(sessions(3), 0.2)
    slow, fast = low.run(), high.run()
    assert (slow.ams_at_once, fast.ams_at_once) == (2, 3)
    views = {v.name: v for v in low.app_views()}
    first_end = min(views[f"session-0{i}"].finished_s or 0.0 for i in range(2))
    assert (views["session-02"].started_s or 0.0) >= first_end
    assert fast.makespan_s is not None and slow.makespan_s is not None
    assert fast.makespan_s < 0.6 * slow.makespan_s


def test_a_spark_driver_computes_in_its_am_before_each_job_asks_for_executors() -> None:
    """``ApplicationMaster`` in cluster mode runs the driver in the AM container: the driver
    works ``DRIVER_WORK_S`` on its own before its first job asks for executors and again
    between jobs, its AM held throughout; a driver that never asks for an executor lives its
    own work's length all the same."""
    sim = _sim(drivers(1), 1.0)
    stretches = _stretches(_containers(sim, "driver-00", 40.0))
    assert [busy for busy, _ in stretches] == [False, True, False, True, False]
    assert stretches[0][1] * 0.25 >= DRIVER_WORK_S + 1.0  # start-up, then its own work
    # its work starts as it hears its executors end; their containers go back a heartbeat later
    assert stretches[2][1] * 0.25 >= DRIVER_WORK_S - 1.0
    alone = drivers(1, executors=0)
    sim = _sim(alone, 1.0)
    result = sim.run()
    assert result.finished and result.jobs_completed == 1
    (view,) = sim.app_views()
    assert view.started_s is not None and view.finished_s is not None
    assert view.finished_s - view.started_s >= 1.0 + 2 * DRIVER_WORK_S + 1.0


def test_services_fill_the_am_limit_and_jobs_wait_behind_them_until_they_end() -> None:
    """Two ``ServiceMaster``-like AMs with no tasks at A = 0.1 fill the queue's AM limit: the
    two MapReduce jobs submitted after them start only once the services' life is over. The
    monitor, reading the simulated RM, names the queue's AM limit, which A cures; at A = 0.2
    the jobs run beside the services."""
    sim = _sim(services(2), 0.1)
    sim.run_until(30.0)
    obs = build_observation(
        rmapi.cluster_metrics(sim.view()), rmapi.scheduler_info(sim.view()), time=0.0,
        source="rest",
    )  # fmt: skip
    assert obs.waits == (Wait("root.default", WaitCause.QUEUE_AM_LIMIT, 2),)
    assert WaitCause.QUEUE_AM_LIMIT.a_cures
    result = sim.run()
    assert result.finished and result.jobs_completed == 4
    views = {v.name: v for v in sim.app_views()}
    for job in ("job-00", "job-01"):
        assert (views[job].started_s or 0.0) >= SERVICE_LIFE_S
    raised = _sim(services(2), 0.2)
    raised.run()
    assert all((v.finished_s or 99.0) < SERVICE_LIFE_S for v in raised.app_views()
               if v.name.startswith("job"))  # fmt: skip


def test_more_services_than_the_limit_takes_are_admitted_before_any_job() -> None:
    """Six services and six jobs: a queue admits apps in the order they came
    (``LeafQueue.activateApplications``), so a share that admits four AMs admits four services
    and no job; the jobs start only at a share that takes every service's AM and theirs."""
    at = {}
    for a in (0.2, 0.5):
        sim = _sim(services(6), a)
        sim.run_until(30.0)
        at[a] = sorted(v.name for v in sim.app_views() if v.started_s is not None)
    assert at[0.2] == [f"service-0{i}" for i in range(4)]
    assert [n for n in at[0.5] if n.startswith("job")]


def test_the_framework_workloads_by_name() -> None:
    wl = load_workload("sessions:4")
    assert len(wl.jobs) == 4 and {j.runs for j in wl.jobs} == {3}
    assert {j.runs for j in load_workload("drivers:2").jobs} == {2}
    wl = load_workload("services:3")
    assert [j.profile for j in wl.jobs] == ["service"] * 3 + ["job"] * 3
    assert wl.jobs[0].linger_s == SERVICE_LIFE_S and not wl.jobs[0].maps
    for bad in ("sessions:x", "drivers:0", "services:"):
        with pytest.raises(WorkloadError):
            load_workload(bad)
