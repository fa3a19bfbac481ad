"""`amtuner advise --rm URL`: the queues and the cluster's shape read over HTTP from the simulated
RM running a scheduler file give the advice that file gives (its queue tree written back as the
file it stands for); and an RM whose answer cannot be read is refused, saying why."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from amtuner.demo import running_sim
from amtuner.exitcodes import ExitCode
from amtuner.sim.sched_config.capacity import parse_capacity_config
from amtuner.sim.sched_config.fair import parse_allocation_file
from tests.conftest import HADOOP_350
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_advise import recorded_trace

pytestmark = pytest.mark.slow

CAPACITY = """<configuration>
<property><name>yarn.scheduler.capacity.root.queues</name><value>a,b</value></property>
<property><name>yarn.scheduler.capacity.root.a.capacity</name><value>70</value></property>
<property><name>yarn.scheduler.capacity.root.a.max-parallel-apps</name><value>4</value></property>
<property><name>yarn.scheduler.capacity.root.b.capacity</name><value>30</value></property>
<property><name>yarn.scheduler.capacity.root.b.maximum-capacity</name><value>60</value></property>
<property><name>yarn.scheduler.capacity.root.b.maximum-am-resource-percent</name>
  <value>0.3</value></property>
<property><name>yarn.scheduler.capacity.root.b.user-limit-factor</name><value>2</value></property>
</configuration>
"""
FAIR = """<?xml version="1.0"?>
<allocations>
  <queueMaxAMShareDefault>0.4</queueMaxAMShareDefault>
  <queue name="a"><weight>2</weight></queue>
  <queue name="b"><weight>1</weight><maxAMShare>0.3</maxAMShare>
    <maxRunningApps>6</maxRunningApps></queue>
</allocations>
"""
FILES = {"capacity": CAPACITY, "fair": FAIR}
SIM_NODES = 6
"""Not the trace header's 4: the replay's cluster is the RM's."""


@contextmanager
def sim_with(kind: str, sched: Path) -> Iterator[str]:
    """The simulated RM on the scheduler file, once each leaf's AM limit is reported: a
    FairScheduler tells a leaf's maxAMShare only by the limit it made of it for an AM."""
    argv = ["--scheduler", kind, "--workload", "twoqueue:small,large", "--port", "0", "--speed",
            "1", "--nodes", str(SIM_NODES), "--scheduler-config", str(sched)]  # fmt: skip
    with running_sim(argv) as (url, _):
        deadline = time.monotonic() + 60
        while kind == "fair" and time.monotonic() < deadline:
            doc = requests.get(url + "/ws/v1/cluster/scheduler", timeout=10).json()
            leaves = doc["scheduler"]["schedulerInfo"]["rootQueue"]["childQueues"]["queue"]
            if all(q["amMaxResources"]["memory"] > 0 for q in leaves):
                break
            time.sleep(0.2)
        yield url


def advise(*argv: str) -> dict[str, Any]:
    run = amtuner("advise", *argv, "--seeds", "2", "--workers", "2", "--json")
    assert run.returncode == 0, run.stderr
    report: dict[str, Any] = json.loads(run.stdout)
    return report


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_the_rms_queues_give_the_advice_of_the_file_they_came_from(
    tmp_path: Path, kind: str
) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "twoqueue:small,large", 0.3)
    sched = tmp_path / f"{kind}-scheduler.xml"
    sched.write_text(FILES[kind])
    targets = ["--target", "root.a", "--target", "root.b"]
    with sim_with(kind, sched) as url:
        from_rm = advise("--trace", str(trace), "--rm", url, *targets)
        people = amtuner("advise", "--trace", str(trace), "--rm", url, "--target", "root.b",
                         "--seeds", "2", "--workers", "2")  # fmt: skip
    assert (from_rm["scheduler"], from_rm["queues_from"], from_rm["shape_from"]) == (
        kind, "rm", "rm"
    )  # fmt: skip
    assert from_rm["scheduler_file"] == f"{url}/ws/v1/cluster/scheduler"
    assert from_rm["workload"]["nodes"] == SIM_NODES
    weights = "the RM reports no FairScheduler weight: each is read from the queues' steady fair "
    assert [n[: len(weights)] for n in from_rm["notes"]] == ([weights] if kind == "fair" else [])
    from_file = advise("--trace", str(trace), "--scheduler", kind, "--scheduler-file",
                       str(sched), "--nodes", str(SIM_NODES), *targets)  # fmt: skip
    assert from_file["queues_from"] == "file" and from_file["shape_from"] == "flags"
    currents = {"capacity": ("0.1", "0.3"), "fair": ("0.4", "0.3")}[kind]
    assert tuple(t["current"] for t in from_rm["targets"]) == currents
    # The same queues, the same values, the same cluster: the same replays, figure for figure.
    assert from_rm["targets"] == from_file["targets"]

    assert people.returncode == 0, people.stderr
    assert f"the queues the RM reports ({url}/ws/v1/cluster/scheduler)" in people.stdout
    assert f"{SIM_NODES} nodes x 8192 MB (the RM's)" in people.stdout
    assert "root.b: current value 0.3" in people.stdout


def test_the_sims_scheduler_document_stands_for_its_file(tmp_path: Path) -> None:
    """Without the replays: the file written from the RM's tree reads as the one it ran."""
    from amtuner.advicecluster import allocation_file_of, capacity_file_of
    from amtuner.monitor.queuetree import parse_queue_tree

    for kind, parse in (("capacity", parse_capacity_config), ("fair", parse_allocation_file)):
        sched = tmp_path / f"{kind}.xml"
        sched.write_text(FILES[kind])
        with sim_with(kind, sched) as url:
            doc = requests.get(url + "/ws/v1/cluster/scheduler", timeout=10).json()
        tree = parse_queue_tree(doc)
        notes: list[str] = []
        data = (
            capacity_file_of(tree, notes)
            if kind == "capacity"
            else allocation_file_of(tree, (SIM_NODES * 8192, SIM_NODES * 8), notes)
        )
        assert parse(data) == parse(sched.read_bytes()), kind  # type: ignore[operator]


def test_from_rm_uses_the_configs_rm_section(tmp_path: Path) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "twoqueue:small,large", 0.3)
    sched = tmp_path / "capacity-scheduler.xml"
    sched.write_text(CAPACITY)
    with sim_with("capacity", sched) as url:
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": ["http://127.0.0.1:9", url]},
            scheduler={"kind": "capacity", "config_file": str(tmp_path / "absent.xml"),
                       "targets": ["root.b"]},
        )  # fmt: skip
        report = advise("--trace", str(trace), "--config", str(cfg), "--from-rm")
    assert report["queues_from"] == "rm" and report["current"] == "0.3"
    assert report["targets"][0]["target"] == "root.b"


def test_an_rm_that_cannot_be_read_is_refused(tmp_path: Path, canned_rm: Any) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    fixtures = Path(__file__).parents[1] / "data" / "shared" / "fixtures" / "rm-rest-real"
    partial = (fixtures / "datadog" / "scheduler_metrics").read_bytes()
    metrics = (fixtures / "datadog" / "cluster_metrics").read_bytes()

    def answer(req: Any) -> tuple[int, dict[str, str], bytes]:
        body = partial if req.path.startswith("/ws/v1/cluster/scheduler") else metrics
        return 200, {"Content-Type": "application/json"}, body

    url = canned_rm(answer)
    run = amtuner("advise", "--trace", str(trace), "--rm", url)
    assert run.returncode == ExitCode.RM and run.stdout == ""
    assert "bad-response" in run.stderr and "root.nofollowqueue" in run.stderr

    run = amtuner("advise", "--trace", str(trace), "--rm", "http://127.0.0.1:9")
    assert run.returncode == ExitCode.RM and "no ResourceManager answered" in run.stderr

    sched = tmp_path / "fair.xml"
    sched.write_text(FAIR)
    with sim_with("fair", sched) as sim_url:
        run = amtuner("advise", "--trace", str(trace), "--rm", sim_url, "--scheduler",
                      "capacity")  # fmt: skip
    assert run.returncode == ExitCode.CONFIG
    assert "the RM runs the fair scheduler, not capacity" in run.stderr
    run = amtuner("advise", "--trace", str(trace), "--rm", url, "--scheduler-file", str(sched))
    assert run.returncode == ExitCode.CONFIG and "not both" in run.stderr
    run = amtuner("advise", "--trace", str(trace), "--from-rm", "--scheduler", "fair")
    assert run.returncode == ExitCode.CONFIG and "give --config" in run.stderr


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_without_the_nodes_document_the_metrics_give_the_shape(
    tmp_path: Path, canned_rm: Any, kind: str
) -> None:
    """Hadoop 3.5.0's answers, behind a gateway that passes no /ws/v1/cluster/nodes: A 0.1875
    on both schedulers (the FairScheduler's read back from its leaf's AM limit)."""
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    recorded = HADOOP_350 / kind

    def answer(req: Any) -> tuple[int, dict[str, str], bytes]:
        path = req.path.split("?")[0].removeprefix("/ws/v1/cluster/")
        if path not in ("info", "metrics", "scheduler"):
            return 404, {"Content-Type": "text/plain"}, b"Not Found"
        return 200, {"Content-Type": "application/json"}, (recorded / f"{path}.json").read_bytes()

    url = canned_rm(answer)
    report = advise("--trace", str(trace), "--rm", url)
    assert (report["scheduler"], report["queues_from"], report["shape_from"]) == (kind, "rm", "rm")
    assert report["current"] == "0.1875"
    assert (report["workload"]["nodes"], report["workload"]["node_memory_mb"]) == (2, 8192)
    (note,) = report["notes"]
    assert "/ws/v1/cluster/nodes" in note and "answered HTTP 404" in note
    assert note.endswith("each node's size is the cluster's total over its activeNodes")
    people = amtuner("advise", "--trace", str(trace), "--rm", url, "--seeds", "2")
    assert people.returncode == 0, people.stderr
    assert f"note: {note}\n" in people.stdout and "2 nodes x 8192 MB (the RM's)" in people.stdout
