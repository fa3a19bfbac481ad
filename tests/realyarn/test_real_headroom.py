"""The headroom each scheduler gives an AM is the real RM's.

A MapReduce AM ramps its reduces within the headroom the RM sends on every heartbeat
(``AllocateResponse.getAvailableResources``), and the simulator's MapReduce model reads it from
``headroom(app)`` (``FSAppAttempt.getHeadroom``, ``LeafQueue.getHeadroom``). Here the same apps
settle on a real cluster and in the simulator, each holding what it asked for (a worker with
long maps beside two apps that hold only their AM), and every app's headroom, as the launcher's
AM host last heard it, equals the simulator's for that app: on both schedulers, 9 GB and 9
vcores of the 16 left free. Only what the cluster has free binds here (one queue, one user);
fair shares, user limits and queue maximums below it are not exercised.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import requests

from amtuner.realyarn import RealRM, apps
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.spec import HADOOP_3, JobSpec, TaskGroup, Workload
from tests.realyarn.conftest import metrics, set_am_share, wait_for

AM_SHARE = 0.5
MAPS = 4
HOLD_S = 1e9
"""A holder's AM start-up in the simulator: it never asks for a task."""
SETTLED_S = 30.0
"""Simulated seconds: every container of the batch placed many heartbeats before."""

JOBS = (
    JobSpec(job_id="worker", submit_s=0.0, queue="default",
            maps=(TaskGroup("map", MAPS, 1024, 1, 3600.0, 0.0, 0.0),), am_memory_mb=1024),
    *(JobSpec(job_id=f"holder-{i}", submit_s=0.0, queue="default", maps=(),
              am_memory_mb=1024, am_startup_s=HOLD_S) for i in range(2)),
)  # fmt: skip
CONTAINERS = 1 + MAPS + 2


def simulated(rm: RealRM) -> dict[str, tuple[int, int]]:
    """Each app's headroom once the batch has settled on ``rm``'s cluster shape."""
    spec = rm.spec
    workload = Workload("headroom", JOBS, nodes=1, queues=("root.default",))
    config = default_scheduler_config(spec.scheduler, workload.queues, AM_SHARE)
    sim = build_simulation(
        spec.scheduler, workload, config, nodes=spec.nodes, node_memory_mb=spec.node_memory_mb,
        node_vcores=spec.node_vcores, heartbeats=HADOOP_3, site=spec.scheduler_site(),
    )  # fmt: skip
    sim.run_until(SETTLED_S)
    assert sim.cluster.containers == CONTAINERS
    out = {}
    for app in sim.apps:
        mb, vcores = sim.scheduler.headroom(app)
        out[app.spec.job_id] = (mb, vcores)
    return out


def real(rm: RealRM) -> dict[str, tuple[int, int]]:
    """Each app's headroom on the real RM, once every container is placed and every AM has
    heartbeat since."""
    session = requests.Session()
    ids = {
        apps.submit(session, rm.url, apps.RealJob(
            name=job.job_id, am_memory_mb=job.am_memory_mb,
            maps=apps.Tasks(MAPS, 1024, 1, 3600.0) if job.maps else None,
        ), str(rm.markers)): job.job_id
        for job in JOBS
    }  # fmt: skip
    files = {app_id: Path(rm.markers) / f"headroom-{app_id}" for app_id in ids}

    def heard() -> dict[str, tuple[int, int]]:
        """Every AM's headroom from a heartbeat at least a second after now."""
        since = time.time() + 1
        wait_for(
            lambda: all(f.exists() and f.stat().st_mtime > since for f in files.values()),
            30, "every AM to heartbeat",
        )  # fmt: skip
        return {
            ids[app_id]: (int(f.read_text().split()[0]), int(f.read_text().split()[1]))
            for app_id, f in files.items()
        }

    def placed() -> bool:
        return bool(metrics(rm)["containersAllocated"] == CONTAINERS)

    # An AM may be handed a container more than it asked for, which it gives back at its next
    # heartbeat: the headrooms count once two heartbeats agree with every container placed.
    deadline = time.monotonic() + 120
    while True:
        wait_for(placed, 60, "every container")
        first = heard()
        second = heard()
        if first == second and placed():
            return second
        assert time.monotonic() < deadline, f"headrooms never settled: {first} then {second}"


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_every_app_is_given_the_headroom_the_simulator_computes(
    request: pytest.FixtureRequest, kind: str
) -> None:
    rm: RealRM = request.getfixturevalue(f"{kind}_rm")
    set_am_share(rm, AM_SHARE)
    assert real(rm) == simulated(rm)
