"""How many AMs an RM admits under its AM limit: the real RM's count and the simulator's.

A batch of apps that only hold their AM (no tasks, never done) is submitted at once; once the RM
has settled, the number holding an AM container is what its AM limit let in. That number is
Hadoop's own: the CapacityScheduler activates apps while their AMs fit the queue's and the
user's AM limit (``LeafQueue.activateApplications``, 3.x) and only active apps are given
containers; the FairScheduler places an AM only when ``FSLeafQueue.canRunAppAM`` says the
queue's AM usage with it stays within maxAMShare x its fair share. Held AMs never end, so the
count cannot move once every admitted AM is placed. The simulator runs the same batch on the
same cluster shape with Hadoop's heartbeats, and the two counts must be equal.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import requests

from amtuner.realyarn import apps
from amtuner.realyarn.cluster import ClusterSpec
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.spec import HADOOP_3, Heartbeats, JobSpec, Workload

HOLD_S = 1e9
"""A simulated holder's AM start-up: it never asks for a task, so it holds its AM for good."""
SETTLE_S = 6.0
"""Seconds the real count must stay the same to count as settled: six node heartbeats (each can
place an AM) and twelve FairScheduler updates (each can change a fair share)."""
SIM_SETTLE_S = 60.0
"""Simulated seconds a batch is given: far more rounds of heartbeats than a batch needs."""


@dataclass(frozen=True)
class Admitted:
    """AMs holding their container once the RM has settled, of ``submitted``."""

    submitted: int
    admitted: int


def holders(count: int, am_mb: int, queue: str = "root.default") -> Workload:
    """``count`` apps submitted at t = 0 that hold an AM of ``am_mb`` and never finish (no
    tasks: their AM's start-up never ends). The workload's cluster shape is a placeholder:
    `simulated` takes the real cluster's."""
    jobs = tuple(
        JobSpec(job_id=f"hold-{i:02d}", submit_s=0.0, queue=queue, maps=(),
                am_memory_mb=am_mb, am_startup_s=HOLD_S, am_teardown_s=0.0)
        for i in range(count)
    )  # fmt: skip
    return Workload("am-holders", jobs, nodes=1)


def simulated(
    spec: ClusterSpec, am_share: float, count: int, am_mb: int, heartbeats: Heartbeats = HADOOP_3
) -> Admitted:
    """The simulator's count for ``count`` holders of ``am_mb`` on ``spec``'s shape at A =
    ``am_share``, after `SIM_SETTLE_S`."""
    workload = holders(count, am_mb)
    config = default_scheduler_config(spec.scheduler, workload.queues, am_share)
    sim = build_simulation(
        spec.scheduler, workload, config, nodes=spec.nodes, node_memory_mb=spec.node_memory_mb,
        node_vcores=spec.node_vcores, heartbeats=heartbeats,
    )  # fmt: skip
    if spec.min_alloc_mb != sim.cluster.min_alloc_mb:
        raise ValueError(
            f"the simulator's minimum allocation is {sim.cluster.min_alloc_mb} MB, "
            f"the cluster's {spec.min_alloc_mb} MB"
        )
    sim.run_until(SIM_SETTLE_S)
    return Admitted(count, sum(1 for a in sim.apps if a.am_node is not None))


def holding_am(records: list[dict[str, object]]) -> int:
    """Apps that hold their AM container: RUNNING (registered), or ACCEPTED with a container
    (allocated, not yet registered by the AM host)."""
    return sum(
        1
        for a in records
        if a["state"] == "RUNNING"
        or (a["state"] == "ACCEPTED" and int(str(a.get("runningContainers") or 0)) > 0)
    )


def real(
    session: requests.Session,
    url: str,
    markers: str,
    count: int,
    am_mb: int,
    timeout_s: float = 120.0,
) -> Admitted:
    """Submit ``count`` holders of ``am_mb`` to the real RM at ``url`` and count those holding
    an AM once the count, and the cluster's allocated containers, have stayed the same for
    `SETTLE_S` with every app known to the scheduler. The caller's RM must have no other app."""
    ids = {
        apps.submit(session, url, apps.RealJob(name=f"hold-{i:02d}", am_memory_mb=am_mb), markers)
        for i in range(count)
    }
    began = time.monotonic()
    last: tuple[int, int] | None = None
    since = began
    while True:
        records = [a for a in apps.listed(session, url) if a["id"] in ids]
        metrics = session.get(f"{url}/ws/v1/cluster/metrics", timeout=10).json()["clusterMetrics"]
        known = len(records) == count and all(
            a["state"] in ("ACCEPTED", "RUNNING") for a in records
        )
        now = (holding_am(records), int(metrics["containersAllocated"]))
        if now != last or not known:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= SETTLE_S:
            if now[0] != now[1]:
                raise RuntimeError(
                    f"{now[0]} apps hold an AM but the RM counts {now[1]} containers"
                )
            return Admitted(count, now[0])
        if time.monotonic() - began > timeout_s:
            raise RuntimeError(f"the real RM did not settle in {timeout_s:.0f} s: {now}")
        time.sleep(0.25)
