"""Record what a real RM answers, as test data: ``python -m amtuner.realyarn.capture DIR [SCENE…]``.

Each scene (`SCENES`) is a cluster of two 8 GB / 8-vcore NodeManagers, a scheduler file, and
apps with 1 GB AMs submitted until some run and the rest wait for a known reason; the REST
responses and the web UI pages the monitor reads (``/cluster``, ``/cluster/scheduler``) are then
saved byte for byte in ``DIR/<scene>``, so the monitor's tests meet what Hadoop really emits
even where no Java runs.
The tests on a real RM (tests/realyarn) stage the same scenes on their shared clusters (`stage`).
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import requests

from amtuner.model import SchedulerKind
from amtuner.monitor.idle import IDLE_AFTER_S
from amtuner.realyarn import apps
from amtuner.realyarn.admission import Holder
from amtuner.realyarn.cluster import ClusterSpec, RealRM
from amtuner.sim.sched_config import (
    CS_PREFIX,
    default_scheduler_config,
    parse_xml,
    with_capacity_properties,
)

PAGES = {
    "info.json": "/ws/v1/cluster/info",
    "metrics.json": "/ws/v1/cluster/metrics",
    "scheduler.json": "/ws/v1/cluster/scheduler",
    "cluster.html": "/cluster",
    "scheduler.html": "/cluster/scheduler",
    "apps.json": "/ws/v1/cluster/apps?states=ACCEPTED,RUNNING",
}
LEAF = "root.default"
AM_LABEL = "core"
"""The label EMR gives the nodes its AMs go to."""


@dataclass(frozen=True)
class Scene:
    """A scheduler file and a batch of apps that hold their 1 GB AM, of which ``running`` run
    and the rest wait."""

    kind: SchedulerKind
    am_share: float
    batch: tuple[Holder, ...]
    running: int
    settings: Mapping[str, str] = field(default_factory=dict)
    """CapacityScheduler: properties of its file; FairScheduler: elements of root.default's
    ``<queue>``."""
    after: str = ""
    """A scene staged first, its apps then killed all at once and the cluster's own file put
    back: what the RM keeps of them."""
    label: str = ""
    """A node label on the first NodeManager, where every AM goes (`ClusterSpec.node_label`);
    the leaf may use all of that partition (`label_properties`)."""
    allocations: str = ""
    """FairScheduler: elements of ``<allocations>`` itself (``userMaxAppsDefault``)."""
    root: Mapping[str, str] = field(default_factory=dict)
    """FairScheduler: elements of root's ``<queue>``, a parent's (``maxRunningApps``)."""
    settle_s: float = 0.0
    """How long the apps are left as they are once staged: the AMs that run have then run that
    long (`amtuner.monitor.idle.IDLE_AFTER_S`)."""

    def spec(self) -> ClusterSpec:
        """The cluster the scene is staged on."""
        return ClusterSpec(self.kind, am_share=self.am_share, node_label=self.label)

    @property
    def waiting(self) -> int:
        return len(self.batch) - self.running

    def scheduler_file(self, queues: tuple[str, ...] = (LEAF,)) -> bytes:
        data = default_scheduler_config(self.kind, queues, am_share=self.am_share)
        settings = {**(label_properties(self.label) if self.label else {}), **self.settings}
        if self.allocations:
            data = data.replace(b"<allocations>", b"<allocations>" + self.allocations.encode(), 1)
        if self.root:
            data = _with_fair_root_settings(data, self.root)
        if not settings:
            return data
        if self.kind is SchedulerKind.CAPACITY:
            return with_capacity_properties(data, settings)
        return _with_fair_leaf_settings(data, LEAF, self.settings)


def label_properties(label: str, leaf: str = LEAF) -> dict[str, str]:
    """CapacityScheduler properties by which ``leaf`` may use all of the partition ``label``
    (and root too): its AM limit there is that partition's memory times its AM share."""
    return {
        f"{CS_PREFIX}root.accessible-node-labels.{label}.capacity": "100",
        f"{CS_PREFIX}{leaf}.accessible-node-labels": label,
        f"{CS_PREFIX}{leaf}.accessible-node-labels.{label}.capacity": "100",
    }


def _with_fair_leaf_settings(data: bytes, leaf: str, settings: Mapping[str, str]) -> bytes:
    """An allocation file with ``settings`` as elements of ``leaf``'s ``<queue>``."""
    root = parse_xml(data, "allocation file")
    element = root
    for name in leaf.split(".")[1:]:
        element = next(q for q in element.iter("queue") if q.get("name") == name)
    for tag, value in settings.items():
        ET.SubElement(element, tag).text = value
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _with_fair_root_settings(data: bytes, settings: Mapping[str, str]) -> bytes:
    """An allocation file whose top-level queues are declared under root's ``<queue>``, with
    ``settings`` as its elements (root is implied unless it is the one top-level queue)."""
    top = parse_xml(data, "allocation file")
    queues = [el for el in top if el.tag == "queue"]
    root = ET.Element("queue", {"name": "root"})
    for tag, value in settings.items():
        ET.SubElement(root, tag).text = value
    for el in queues:
        top.remove(el)
        root.append(el)
    top.append(root)
    return ET.tostring(top, encoding="utf-8", xml_declaration=True)


SCENES = {
    # Five apps, A so that exactly three AMs fit: two wait behind the queue's AM limit.
    "capacity": Scene(SchedulerKind.CAPACITY, 3 / 16, (Holder(),) * 5, 3),
    "fair": Scene(SchedulerKind.FAIR, 3 / 16, (Holder(),) * 5, 3),
    # Room for eight AMs, but two apps may run at once: three wait, non-runnable.
    "capacity-max-parallel-apps": Scene(
        SchedulerKind.CAPACITY, 0.5, (Holder(),) * 5, 2,
        {f"{CS_PREFIX}{LEAF}.max-parallel-apps": "2"},
    ),
    # The cluster-wide value: every queue's default, root's too.
    "capacity-cluster-max-parallel-apps": Scene(
        SchedulerKind.CAPACITY, 0.5, (Holder(),) * 5, 2, {f"{CS_PREFIX}max-parallel-apps": "2"}
    ),
    # Each user's value (`CSMaxRunningAppsEnforcer` checks the user's apps in every queue).
    "capacity-user-max-parallel-apps": Scene(
        SchedulerKind.CAPACITY, 0.5, (Holder(),) * 5, 2, {f"{CS_PREFIX}user.max-parallel-apps": "2"}
    ),
    "fair-max-running-apps": Scene(
        SchedulerKind.FAIR, 0.5, (Holder(),) * 5, 2, {"maxRunningApps": "2"}
    ),
    # The same five apps held by root's limit: a parent's, which binds every leaf below it.
    "fair-parent-max-running-apps": Scene(
        SchedulerKind.FAIR, 0.5, (Holder(),) * 5, 2, root={"maxRunningApps": "2"}
    ),
    # The same five apps of one user, held by its users' limit, which no document reports.
    "fair-user-max-apps-default": Scene(
        SchedulerKind.FAIR, 0.5, (Holder(),) * 5, 2,
        allocations="<userMaxAppsDefault>2</userMaxAppsDefault>",
    ),
    # A queue AM limit of 6 GB, a user AM limit of half that (user-limit-factor 0.5): alice's
    # fourth and fifth wait while bob's two run beside her three.
    "capacity-user-am-limit": Scene(
        SchedulerKind.CAPACITY, 0.375,
        (*(Holder("alice") for _ in range(5)), *(Holder("bob") for _ in range(2))), 5,
        {f"{CS_PREFIX}{LEAF}.user-limit-factor": "0.5"},
    ),
    # Every AM goes to the label core, on one 8 GB node, where root.default's AM share is its
    # own 0.25 (2 GB) while the leaf's is 0.5: two AMs run, three wait.
    "capacity-partition-am-limit": Scene(
        SchedulerKind.CAPACITY, 0.5, (Holder(),) * 5, 2,
        {f"{CS_PREFIX}{LEAF}.accessible-node-labels.{AM_LABEL}.maximum-am-resource-percent":
            "0.25"},
        label=AM_LABEL,
    ),
    # The same limit, made of the global value: the partition sets none of its own.
    "capacity-partition-inherits": Scene(
        SchedulerKind.CAPACITY, 0.25, (Holder(),) * 5, 2, label=AM_LABEL
    ),
}  # fmt: skip
SCENES["capacity-idle-ams"] = dataclasses.replace(SCENES["capacity"], settle_s=IDLE_AFTER_S + 10)
"""The same, its three AMs left alone past the time after which an AM asking for nothing is
idle: each holds its AM container and asks for no other."""
SCENES["capacity-user-am-limit-after-kills"] = dataclasses.replace(
    SCENES["capacity-user-am-limit"], after="capacity-max-parallel-apps"
)
"""The same, on an RM whose apps were killed while max-parallel-apps held some."""


def stage(rm: RealRM, scene: Scene, timeout_s: float = 60.0) -> bytes:
    """Give ``rm`` (no app running) the scene's scheduler file, reload it, submit the batch in
    order, and wait until the scene's apps run and the rest wait; returns the file."""
    if scene.after:
        stage(rm, SCENES[scene.after], timeout_s)
        with requests.Session() as session:
            apps.kill_all(session, rm.url)
            deadline = time.monotonic() + timeout_s
            while apps.listed(session, rm.url, "ACCEPTED,RUNNING"):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"apps still running {timeout_s:.0f} s after the kills")
                time.sleep(0.5)
        rm.write_scheduler_file()
        rm.refresh_queues()
    data = scene.scheduler_file(rm.spec.queues)
    rm.scheduler_file.write_bytes(data)
    rm.refresh_queues()
    with apps.Submitter(rm.url, str(rm.markers)) as submitter:
        for i, h in enumerate(scene.batch):
            submitter.submit(apps.RealJob(name=f"hold-{i:02d}", queue=h.queue, user=h.user))
    wanted = (scene.running, scene.waiting)
    deadline = time.monotonic() + timeout_s
    while True:
        m = requests.get(f"{rm.url}/ws/v1/cluster/metrics", timeout=10).json()["clusterMetrics"]
        counts = (m["appsRunning"], m["appsPending"])
        if counts == wanted:
            time.sleep(scene.settle_s)
            return data
        if time.monotonic() > deadline:
            raise RuntimeError(f"not {wanted} (running, waiting) in {timeout_s:.0f} s: {m}")
        time.sleep(0.5)


def capture(scene: Scene, out: Path) -> None:
    with tempfile.TemporaryDirectory() as work, RealRM(scene.spec(), Path(work)) as rm:
        stage(rm, scene)
        out.mkdir(parents=True, exist_ok=True)
        for name, path in PAGES.items():
            r = requests.get(f"{rm.url}{path}", timeout=10)
            r.raise_for_status()
            (out / name).write_bytes(r.content)


def main(argv: list[str]) -> int:
    if not argv or any(name not in SCENES for name in argv[1:]):
        print(
            f"usage: python -m amtuner.realyarn.capture DIR [SCENE…] (scenes: {', '.join(SCENES)})",
            file=sys.stderr,
        )
        return 2
    for name in argv[1:] or SCENES:
        capture(SCENES[name], Path(argv[0]) / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
