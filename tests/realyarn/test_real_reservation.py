"""Hadoop's own FairScheduler reserves a node for an AM that fits nowhere, as the simulator does
(`tests/sim/test_fsreserve.py` holds the same load and the rules)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import requests

from amtuner.model import SchedulerKind
from amtuner.realyarn import ClusterSpec, RealRM, apps
from amtuner.realyarn.build import Build
from amtuner.sim.spec import HADOOP_3_NO_RESERVE
from tests.realyarn.conftest import metrics, wait_for
from tests.sim.test_fsreserve import LATE_S, full_then_late, late_start

SLACK_S = 6.0
"""How far the real AM's start may be from the simulated one: the real cluster's first
containers come a second or two later than the simulator's (JVM start, the first heartbeats):
measured 17.7 and 18.7 s against 16.0, and 41.0 without reservations."""


def test_a_late_am_gets_a_node_reserved_on_the_real_rm_when_the_simulator_says(
    realyarn_build: Build, tmp_path: Path
) -> None:
    """Two 8 GB NodeManagers full of a job's 1 GB maps; a job with a 3 GB AM arrives. The real
    RM reports the reservation (``reservedMB``) while the AM waits, and the AM starts when the
    simulator says it does with reservations, long before it would without."""
    wl = full_then_late()
    spec = ClusterSpec(
        SchedulerKind.FAIR, nodes=wl.nodes, node_vcores=wl.node_vcores, am_share=1.0
    )
    expected, without = late_start(), late_start(HADOOP_3_NO_RESERVE)
    assert expected + 2 * SLACK_S < without
    session = requests.Session()
    with RealRM(spec, tmp_path / "rm", realyarn_build) as rm:
        big_job, late_job = (apps.real_job(j) for j in wl.jobs)
        submitted = time.monotonic()
        big = apps.submit(session, rm.url, big_job, str(rm.markers))
        time.sleep(max(0.0, submitted + LATE_S - time.monotonic()))
        late = apps.submit(session, rm.url, late_job, str(rm.markers))
        reserved_mb: list[int] = []

        def launched() -> dict[str, Any] | None:
            reserved_mb.append(metrics(rm)["reservedMB"])
            record = next(a for a in apps.listed(session, rm.url) if a["id"] == late)
            return record if int(record.get("launchTime") or 0) > 0 else None

        waited = time.monotonic() - submitted
        record = wait_for(launched, without + 30 - waited, "the late job's AM to launch")
        first = next(a for a in apps.listed(session, rm.url) if a["id"] == big)
        started = (int(record["launchTime"]) - int(first["startedTime"])) / 1000
    assert max(reserved_mb) == wl.jobs[1].am_memory_mb
    assert abs(started - expected) <= SLACK_S, (started, expected, without)
