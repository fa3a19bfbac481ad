"""The headroom each scheduler gives an AM is the real RM's.

A MapReduce AM ramps its reduces within the headroom the RM sends on every heartbeat
(``AllocateResponse.getAvailableResources``), and the simulator's MapReduce model reads it from
``headroom(app)`` (``FSAppAttempt.getHeadroom``, ``LeafQueue.getHeadroom``). Here the same apps
settle on a real cluster and in the simulator, each holding what it asked for, and every app's
headroom, as the launcher's AM host last heard it, equals the simulator's for that app: where
what is free binds, where a FairScheduler leaf's fair share does and where a CapacityScheduler
user's limit does. Queue maximums below what is free are not exercised.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from amtuner.realyarn import RealRM, apps
from amtuner.realyarn.admission import HOLD_S
from amtuner.realyarn.apps import real_job
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.spec import HADOOP_3, JobSpec, TaskGroup, Workload
from tests.realyarn.conftest import metrics, wait_for

AM_SHARE = 0.5
SETTLED_S = 30.0
"""Simulated seconds: every container of the batch placed many heartbeats before."""


def worker(name: str, maps: int, user: str = apps.USER) -> JobSpec:
    """An app with ``maps`` maps of 1 GB that outlive the test."""
    return JobSpec(
        job_id=name, submit_s=0.0, queue="default", user=user, am_memory_mb=1024,
        maps=(TaskGroup("map", maps, 1024, 1, 3600.0, 0.0, 0.0),),
    )  # fmt: skip


def holder(name: str, user: str = apps.USER) -> JobSpec:
    """An app that holds only its 1 GB AM."""
    return JobSpec(job_id=name, submit_s=0.0, queue="default", user=user, maps=(),
                   am_memory_mb=1024, am_startup_s=HOLD_S)  # fmt: skip


ONE_USER = (worker("worker", 4), holder("holder-0"), holder("holder-1"))
"""One queue, one user: only what the cluster has free binds (9 GB and 9 vcores of 16)."""
TWO_USERS = (worker("alice-worker", 4, "alice"), holder("alice-holder", "alice"),
             holder("alice-holder-2", "alice"), worker("bob-worker", 6, "bob"))  # fmt: skip
"""Each user's apps in root.<user> (Hadoop's default placement), 7 GB each on a 16 GB cluster:
each leaf's fair share is half the cluster, so the memory headroom is 1 GB (the fair share less
the leaf's usage) though 2 GB are free, and the vcore headroom the 2 free
(``FairSharePolicy.getHeadroom``)."""

SHARED_BY_TWO = {"yarn.scheduler.capacity.root.default.minimum-user-limit-percent": "50"}
"""Each of two active users may hold half the queue (``UsersManager.computeUserLimit``)."""
TWO_USERS_ONE_QUEUE = (worker("alice-worker", 4, "alice"), holder("alice-holder", "alice"),
                       worker("bob-worker", 2, "bob"))  # fmt: skip
"""Alice holds 6 GB of her 8 GB limit, Bob 3 GB, 7 GB free: the memory headroom is each user's
limit less what they hold (2 GB, 5 GB), and, the rounding to the minimum allocation having made
it a resource of memory alone, 1 vcore (``AbstractLeafQueue.getHeadroom``)."""

SCENARIOS = [
    ("capacity", ONE_USER, {}),
    ("capacity", TWO_USERS_ONE_QUEUE, SHARED_BY_TWO),
    ("fair", ONE_USER, {}),
    ("fair-users", TWO_USERS, {}),
]


def scheduler_file(rm: RealRM, properties: dict[str, str]) -> bytes:
    """The cluster's scheduler file at `AM_SHARE`, with ``properties`` (CapacityScheduler)."""
    data = default_scheduler_config(rm.spec.scheduler, ("root.default",), AM_SHARE).decode()
    extra = "".join(
        f"  <property>\n    <name>{k}</name>\n    <value>{v}</value>\n  </property>\n"
        for k, v in properties.items()
    )
    return data.replace("</configuration>", extra + "</configuration>").encode()


def containers(jobs: Sequence[JobSpec]) -> int:
    return sum(1 + sum(g.count for g in job.maps) for job in jobs)


def simulated(rm: RealRM, jobs: Sequence[JobSpec], config: bytes) -> dict[str, tuple[int, int]]:
    """Each app's headroom once ``jobs`` have settled on ``rm``'s cluster shape."""
    spec = rm.spec
    workload = Workload("headroom", tuple(jobs), nodes=1, queues=("root.default",))
    sim = build_simulation(
        spec.scheduler, workload, config, nodes=spec.nodes, node_memory_mb=spec.node_memory_mb,
        node_vcores=spec.node_vcores, heartbeats=HADOOP_3, site=spec.scheduler_site(),
    )  # fmt: skip
    sim.run_until(SETTLED_S)
    assert sim.cluster.containers == containers(jobs)
    out = {}
    for app in sim.apps:
        mb, vcores = sim.scheduler.headroom(app)
        out[app.spec.job_id] = (mb, vcores)
    return out


def real(rm: RealRM, jobs: Sequence[JobSpec]) -> dict[str, tuple[int, int]]:
    """Each app's headroom on the real RM, from two heartbeats that agree with every container
    placed."""
    with apps.Submitter(rm.url, str(rm.markers)) as submitter:
        ids = {submitter.submit(j): j.name for j in map(real_job, jobs)}
    files = {app_id: Path(rm.markers) / f"headroom-{app_id}" for app_id in ids}

    def heard() -> dict[str, tuple[int, int]]:
        """Every AM's headroom from a heartbeat at least a second after now."""
        since = time.time() + 1
        wait_for(
            lambda: all(f.exists() and f.stat().st_mtime > since for f in files.values()),
            30, "every AM to heartbeat",
        )  # fmt: skip
        out = {}
        for app_id, f in files.items():
            mb, vcores = f.read_text().split()
            out[ids[app_id]] = (int(mb), int(vcores))
        return out

    def placed() -> bool:
        return bool(metrics(rm)["containersAllocated"] == containers(jobs))

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


@pytest.mark.parametrize(
    "kind, jobs, properties", SCENARIOS,
    ids=["capacity", "capacity-user-limit", "fair", "fair-two-leaves"],
)  # fmt: skip
def test_every_app_is_given_the_headroom_the_simulator_computes(
    request: pytest.FixtureRequest, kind: str, jobs: Sequence[JobSpec], properties: dict[str, str]
) -> None:
    rm: RealRM = request.getfixturevalue(f"{kind.replace('-', '_')}_rm")
    config = scheduler_file(rm, properties)
    rm.scheduler_file.write_bytes(config)
    rm.refresh_queues()
    assert real(rm, jobs) == simulated(rm, jobs, config)
