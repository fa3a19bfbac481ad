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
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import requests

from amtuner.model import queue_path
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
class Holder:
    """One app of a batch: who submits it and the queue it asks for (``default``: none)."""

    user: str = apps.USER
    queue: str = "default"


@dataclass(frozen=True)
class Admitted:
    """AMs holding their container once the RM has settled, of ``submitted``, and in which
    leaf queues (full paths)."""

    submitted: int
    admitted: int
    by_queue: dict[str, int]


def batch(count: int) -> tuple[Holder, ...]:
    """``count`` apps of one user that name no queue."""
    return (Holder(),) * count


def holders(batch: Sequence[Holder], am_mb: int) -> Workload:
    """The apps of ``batch``, submitted at t = 0, that hold an AM of ``am_mb`` and never finish
    (no tasks: their AM's start-up never ends). The workload's cluster shape is a placeholder:
    `simulated` takes the real cluster's."""
    jobs = tuple(
        JobSpec(job_id=f"hold-{i:02d}", submit_s=0.0, queue=h.queue, user=h.user, maps=(),
                am_memory_mb=am_mb, am_startup_s=HOLD_S, am_teardown_s=0.0)
        for i, h in enumerate(batch)
    )  # fmt: skip
    return Workload("am-holders", jobs, nodes=1, queues=("root.default",))


def simulated(
    spec: ClusterSpec,
    am_share: float,
    batch: Sequence[Holder],
    am_mb: int,
    heartbeats: Heartbeats = HADOOP_3,
    scheduler_file: bytes | None = None,
) -> Admitted:
    """The simulator's count for ``batch`` with AMs of ``am_mb`` on ``spec``'s shape and
    placement settings at A = ``am_share`` (or under ``scheduler_file``, the real RM's), after
    `SIM_SETTLE_S`."""
    workload = holders(batch, am_mb)
    config = scheduler_file or default_scheduler_config(spec.scheduler, workload.queues, am_share)
    sim = build_simulation(
        spec.scheduler, workload, config, nodes=spec.nodes, node_memory_mb=spec.node_memory_mb,
        node_vcores=spec.node_vcores, heartbeats=heartbeats, site=spec.scheduler_site(),
        labelled=spec.labelled_nodes,
    )  # fmt: skip
    if spec.min_alloc_mb != sim.cluster.min_alloc_mb:
        raise ValueError(
            f"the simulator's minimum allocation is {sim.cluster.min_alloc_mb} MB, "
            f"the cluster's {spec.min_alloc_mb} MB"
        )
    sim.run_until(SIM_SETTLE_S)
    held = [view.queue for view in sim.app_views() if view.started_s is not None]
    return Admitted(len(batch), len(held), dict(Counter(held)))


def holding_am(records: list[dict[str, object]]) -> list[str]:
    """The queues (full paths) of the apps that hold their AM container: RUNNING
    (registered), or ACCEPTED with a container (allocated, not yet registered by the AM host)."""
    return [
        queue_path(str(a["queue"]))
        for a in records
        if a["state"] == "RUNNING" or apps.am_allocated(a)
    ]


def real(
    session: requests.Session,
    url: str,
    markers: str,
    batch: Sequence[Holder],
    am_mb: int,
    *,
    release: Callable[[], None] | None = None,
    timeout_s: float = 120.0,
) -> Admitted:
    """Submit ``batch``'s holders of ``am_mb`` to the real RM at ``url`` and count those
    holding an AM once the count, and the cluster's allocated containers, have stayed the same
    for `SETTLE_S` with every app known to the scheduler. The caller's RM must have no other
    app. ``release``: the batch goes in while the AM limit admits none, and this raises it once
    every app is known, so that no AM is placed under the fair shares of a half-submitted
    batch (a FairScheduler's shares follow the queues that have apps)."""
    with apps.Submitter(url, markers) as submitter:
        ids = {
            submitter.submit(
                apps.RealJob(name=f"hold-{i:02d}", queue=h.queue, user=h.user, am_memory_mb=am_mb)
            )
            for i, h in enumerate(batch)
        }
    began = time.monotonic()
    last: tuple[tuple[str, ...], int] | None = None
    since = began
    while True:
        records = [a for a in apps.listed(session, url) if a["id"] in ids]
        metrics = session.get(f"{url}/ws/v1/cluster/metrics", timeout=10).json()["clusterMetrics"]
        known = len(records) == len(ids) and all(
            a["state"] in ("ACCEPTED", "RUNNING") for a in records
        )
        now = (tuple(sorted(holding_am(records))), int(metrics["containersAllocated"]))
        if known and release is not None:
            if now[1]:
                raise RuntimeError(f"{now[1]} AMs were placed before the release")
            release()
            release, last = None, None
        elif now != last or not known:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= SETTLE_S:
            if len(now[0]) != now[1]:
                raise RuntimeError(
                    f"{len(now[0])} apps hold an AM but the RM counts {now[1]} containers"
                )
            return Admitted(len(ids), now[1], dict(Counter(now[0])))
        if time.monotonic() - began > timeout_s:
            raise RuntimeError(f"the real RM did not settle in {timeout_s:.0f} s: {now}")
        time.sleep(0.25)
