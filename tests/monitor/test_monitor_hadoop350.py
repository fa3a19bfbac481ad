"""The monitor on what Hadoop 3.5.0's own RM answered (tests/data/monitor/hadoop-3.5.0): three
1 GB AMs running under an AM limit of 3 GB, two apps waiting, on 16 GB."""

from __future__ import annotations

import json

import pytest

from amtuner.model import SchedulerKind
from amtuner.monitor.rest import build_observation
from amtuner.monitor.webui import parse_cluster_page
from tests.conftest import HADOOP_350

DATA = HADOOP_350


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_rest_and_page_read_the_same_figures(kind: SchedulerKind) -> None:
    here = DATA / str(kind)
    obs = build_observation(
        json.loads((here / "metrics.json").read_bytes()),
        json.loads((here / "scheduler.json").read_bytes()),
        time=0.0, source="rest hadoop-3.5.0", targets=["root.default"],
    )  # fmt: skip
    page = parse_cluster_page((here / "cluster.html").read_bytes(), "cluster.html")
    assert obs.scheduler is page.scheduler is kind
    expected = (2, 3, 3072, 16384, 3, 16)
    assert (obs.pending_apps, obs.running_apps, obs.memory_used_mb, obs.memory_total_mb,
            obs.vcores_used, obs.vcores_total) == expected  # fmt: skip
    m = page.metrics
    assert (m.pending_apps, m.running_apps, m.memory_used_mb, m.memory_total_mb,
            m.vcores_used, m.vcores_total) == expected  # fmt: skip
    leaf = obs.queue("root.default")
    assert leaf is not None
    assert (leaf.pending_apps, leaf.running_apps, leaf.am_memory_used_mb) == (2, 3, 3072)
    assert leaf.am_memory_limit_mb == 3072
    # A CapacityScheduler reports what each leaf is guaranteed (its one leaf: all of it).
    assert leaf.guarantee_mb == (16384 if kind is SchedulerKind.CAPACITY else None)
    assert obs.am_memory_used_mb == 3072 and obs.containers == 3
    # pendingMB: the two waiting apps' 1 GB AM asks, on the CapacityScheduler too, where neither
    # app is activated: QueueMetrics counts an ask whether or not the app is active.
    assert obs.memory_pending_mb == 2048
    # The leaf's own asks: CS pending in the default partition, FS demand less what it holds.
    assert leaf.memory_pending_mb == 2048
    assert obs.memory_reserved_mb == 0  # reservedMB: nothing waits for a node here


def test_a_fair_leaf_has_no_vcore_fair_share_under_the_fair_policy() -> None:
    """FairSharePolicy shares memory only; the AM limit's vcores come from what is available."""
    doc = json.loads((DATA / "fair" / "scheduler.json").read_bytes())
    (leaf,) = doc["scheduler"]["schedulerInfo"]["rootQueue"]["childQueues"]["queue"]
    assert leaf["fairResources"]["vCores"] == 0
    assert leaf["amMaxResources"] == {**leaf["amMaxResources"], "memory": 3072, "vCores": 3}
