"""The RM face rendered from hand-built snapshots, checked against real RM response shapes."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape as xml_escape

import pytest
from bs4 import BeautifulSoup
from hypothesis import given
from hypothesis import strategies as st

from amtuner.model import SchedulerKind
from amtuner.sim import rmapi
from amtuner.sim.rmapi import FaceOptions, handle
from amtuner.sim.view import AppView, ClusterView, QueueView, Res

SHARED = Path(__file__).resolve().parents[1] / "data" / "shared"
RM_REST = SHARED / "fixtures" / "rm-rest"

CS_CONF = b"""<?xml version="1.0"?>
<configuration>
  <property><name>yarn.scheduler.capacity.root.queues</name><value>default,b</value></property>
  <property><name>yarn.scheduler.capacity.root.default.capacity</name><value>50</value></property>
  <property><name>yarn.scheduler.capacity.root.b.capacity</name><value>50</value></property>
  <property>
    <name>yarn.scheduler.capacity.maximum-am-resource-percent</name><value>0.1</value>
  </property>
</configuration>
"""


def _leaf(path: str, **kw: Any) -> QueueView:
    base: dict[str, Any] = {
        "path": path,
        "is_leaf": True,
        "children": (),
        "used": Res(6144, 3),
        "am_used": Res(2048, 1),
        "am_limit": Res(4096, 1),
        "num_pending_apps": 2,
        "num_active_apps": 1,
        "max_apps": 5000,
        "pending_containers": 4,
        "allocated_containers": 3,
    }
    return QueueView(**(base | kw))


def cs_view() -> ClusterView:
    total = Res(32768, 32)
    root = QueueView(
        path="root",
        is_leaf=False,
        children=("root.default", "root.b"),
        used=Res(6144, 3),
        am_used=Res(2048, 1),
        am_limit=Res(),
        num_pending_apps=2,
        num_active_apps=1,
        max_apps=10000,
        pending_containers=4,
        allocated_containers=3,
        capacity=1.0,
        absolute_capacity=1.0,
    )
    default = _leaf(
        "root.default",
        capacity=0.125,
        maximum_capacity=0.5,
        absolute_capacity=0.125,
        absolute_max_capacity=0.5,
        max_am_percent=0.1,
        demand=Res(10240, 5),
    )
    b = _leaf(
        "root.b",
        used=Res(),
        am_used=Res(),
        num_pending_apps=0,
        num_active_apps=0,
        pending_containers=0,
        allocated_containers=0,
        capacity=0.875,
        absolute_capacity=0.875,
        max_am_percent=0.1,
    )
    return ClusterView(
        now_s=100.0,
        scheduler="capacity",
        total=total,
        allocated=Res(6144, 3),
        reserved=Res(1024, 1),
        active_nodes=4,
        apps_submitted=3,
        apps_completed=0,
        apps_pending=2,
        apps_running=1,
        apps_failed=0,
        apps_killed=0,
        containers_allocated=3,
        containers_pending=4,
        queues=(root, default, b),
    )


def fs_view() -> ClusterView:
    total = Res(8192, 8)
    root = QueueView(
        path="root",
        is_leaf=False,
        children=("root.default", "root.sample_queue"),
        used=Res(2048, 1),
        am_used=Res(2048, 1),
        am_limit=Res(),
        num_pending_apps=1,
        num_active_apps=1,
        max_apps=INT_MAX,
        pending_containers=0,
        allocated_containers=1,
        fair_share=total,
        steady_fair_share=total,
    )
    default = _leaf(
        "root.default",
        used=Res(2048, 1),
        fair_share=Res(8192, 8),
        steady_fair_share=Res(4096, 4),
        max_am_percent=0.5,
        max_apps=INT_MAX,
    )
    parent = QueueView(
        path="root.sample_queue",
        is_leaf=False,
        children=("root.sample_queue.sub",),
        used=Res(),
        am_used=Res(),
        am_limit=Res(),
        num_pending_apps=0,
        num_active_apps=0,
        max_apps=50,
        pending_containers=0,
        allocated_containers=0,
        max_resources=Res(100000, 100),
    )
    sub = _leaf("root.sample_queue.sub", used=Res(), num_active_apps=0, num_pending_apps=0)
    return ClusterView(
        now_s=5.0,
        scheduler="fair",
        total=total,
        allocated=Res(2048, 1),
        reserved=Res(),
        active_nodes=1,
        apps_submitted=2,
        apps_completed=0,
        apps_pending=1,
        apps_running=1,
        apps_failed=0,
        apps_killed=0,
        containers_allocated=1,
        containers_pending=0,
        queues=(root, default, parent, sub),
    )


INT_MAX = 2147483647


def app(seq: int, state: str, queue: str = "root.default", user: str = "alice") -> AppView:
    done = state in ("FINISHED", "FAILED", "KILLED")
    return AppView(
        app_id=f"application_1700000000000_{seq:04d}",
        name=f"job{seq}",
        queue=queue,
        user=user,
        state=state,  # type: ignore[arg-type]
        submitted_s=1.0,
        started_s=2.0 if state != "ACCEPTED" else None,
        finished_s=9.5 if done else None,
        allocated=Res(2048, 1),
        running_containers=1,
        progress=100.0 if done else 10.0,
    )


class FakeSim:
    """Only what the face reads; reload validates like a real scheduler would (roughly)."""

    def __init__(self, view: ClusterView, apps: list[AppView] | None = None) -> None:
        self.scheduler_kind = SchedulerKind(view.scheduler)
        self._view = view
        self.apps = apps or []
        self.config = CS_CONF
        self.reloads = 0

    def view(self) -> ClusterView:
        return self._view

    def app_views(
        self, states: Collection[str] | None = None, limit: int | None = None
    ) -> list[AppView]:
        out = [a for a in self.apps if states is None or a.state in states]
        return out if limit is None else out[:limit]

    def scheduler_config(self) -> bytes:
        return self.config

    def reload_scheduler_config(self, data: bytes) -> None:
        try:
            root = ET.fromstring(data)
        except ET.ParseError as e:
            raise ValueError(f"malformed XML: {e}") from e
        for p in root.iter("property"):
            name, value = p.findtext("name") or "", p.findtext("value") or ""
            if name.endswith("capacity") or name.endswith("percent"):
                try:
                    float(value)
                except ValueError:
                    raise ValueError(f"{name}: not a number: {value!r}") from None
        self.config = data
        self.reloads += 1


ACTIVE = FaceOptions()


def get(sim: FakeSim, path: str, options: FaceOptions = ACTIVE, **headers: str) -> Any:
    r = handle(sim, "GET", path, b"", headers, options=options)
    assert r.status == 200, r.body
    assert r.headers["Content-Type"].startswith("application/json")
    return json.loads(r.body)


def conf_value(data: bytes, name: str) -> str | None:
    return dict(rmapi.conf_properties(data)).get(name)


def shared_json(name: str) -> Any:
    return json.loads((RM_REST / name).read_text())


def missing_keys(real: dict[str, Any], ours: dict[str, Any], where: str = "") -> list[str]:
    """Keys of a real RM object (recursively through objects) absent from ours."""
    out = []
    for k, v in real.items():
        if k.startswith("_"):
            continue
        if k not in ours:
            out.append(f"{where}{k}")
        elif isinstance(v, dict) and isinstance(ours[k], dict) and k not in ("queues", "users"):
            out += missing_keys(v, ours[k], f"{where}{k}.")
        elif isinstance(v, list) and v and isinstance(v[0], dict) and ours[k]:
            out += missing_keys(v[0], ours[k][0], f"{where}{k}[].")
    return out


# --------------------------------------------------------------------------- info / metrics


def test_cluster_info_has_the_real_fields_and_ha_state() -> None:
    sim = FakeSim(cs_view())
    info = get(sim, "/ws/v1/cluster/info")
    assert info["clusterInfo"]["haState"] == "ACTIVE"
    assert get(sim, "/ws/v1/cluster") == info
    assert not missing_keys(shared_json("cluster-info.json"), info)


def test_cluster_metrics_values_and_fields() -> None:
    m = get(FakeSim(cs_view()), "/ws/v1/cluster/metrics")["clusterMetrics"]
    assert m["totalMB"] == 32768 == m["availableMB"] + m["allocatedMB"] + m["reservedMB"]
    assert (m["allocatedMB"], m["reservedMB"], m["availableMB"]) == (6144, 1024, 25600)
    assert (m["appsPending"], m["appsRunning"], m["activeNodes"]) == (2, 1, 4)
    assert m["pendingMB"] == 10240 - 6144
    assert not missing_keys(shared_json("cluster-metrics.json"), {"clusterMetrics": m})


def test_fair_metrics_do_not_subtract_reserved_from_available() -> None:
    m = get(FakeSim(fs_view()), "/ws/v1/cluster/metrics")["clusterMetrics"]
    assert m["availableMB"] + m["allocatedMB"] == m["totalMB"] == 8192


# --------------------------------------------------------------------------- scheduler


def test_capacity_scheduler_shape_and_am_fields() -> None:
    info = get(FakeSim(cs_view()), "/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]
    assert info["type"] == "capacityScheduler"
    assert info["queueName"] == "root"
    leaves = info["queues"]["queue"]
    assert [q["queuePath"] for q in leaves] == ["root.default", "root.b"]
    a = leaves[0]
    assert a["type"] == "capacitySchedulerLeafQueueInfo"
    assert a["queueName"] == "default"
    # percentages, as the RM prints them
    assert (a["capacity"], a["absoluteCapacity"], a["maxCapacity"]) == (12.5, 12.5, 50.0)
    assert a["absoluteUsedCapacity"] == pytest.approx(6144 / 32768 * 100)
    assert a["usedCapacity"] == pytest.approx(6144 / 4096 * 100)
    assert a["AMResourceLimit"] == {"memory": 4096, "vCores": 1}
    assert a["usedAMResource"] == {"memory": 2048, "vCores": 1}
    assert (a["numPendingApplications"], a["numActiveApplications"], a["numApplications"]) == (
        2,
        1,
        3,
    )
    assert a["maxApplications"] == 5000
    assert a["configuredMaxAMResourceLimit"] == 0.1
    part = a["capacities"]["queueCapacitiesByPartition"][0]
    assert part["maxAMLimitPercentage"] == 10.0
    assert part["effectiveMinResource"] == {"memory": 4096, "vCores": 4}
    assert a["resources"]["resourceUsagesByPartition"][0]["amLimit"] == a["AMResourceLimit"]


def test_capacity_scheduler_has_every_field_of_a_real_3_4_rm() -> None:
    real = shared_json("scheduler-capacity-3.4-am-fields-excerpt.json")
    ours = get(FakeSim(cs_view()), "/ws/v1/cluster/scheduler")
    real_info, our_info = real["scheduler"]["schedulerInfo"], ours["scheduler"]["schedulerInfo"]
    assert not missing_keys(real_info, our_info)
    for real_q, our_q in zip(
        real_info["queues"]["queue"], our_info["queues"]["queue"], strict=True
    ):
        assert not missing_keys(real_q, our_q), real_q["queuePath"]


def test_capacity_scheduler_parent_queues_nest_like_the_doc_example() -> None:
    real = shared_json("scheduler-capacity.json")["scheduler"]["schedulerInfo"]
    real_parent = real["queues"]["queue"][0]
    assert "type" not in real_parent  # parents carry no type in real output either
    view = cs_view()
    parent = QueueView(
        path="root.p",
        is_leaf=False,
        children=("root.p.x",),
        used=Res(),
        am_used=Res(),
        am_limit=Res(),
        num_pending_apps=0,
        num_active_apps=0,
        max_apps=0,
        pending_containers=0,
        allocated_containers=0,
        capacity=0.5,
        absolute_capacity=0.5,
    )
    root = QueueView(**{**_asdict(view.queues[0]), "children": ("root.p",)})
    nested = ClusterView(**{**_asdict(view), "queues": (root, parent, _leaf("root.p.x"))})
    info = get(FakeSim(nested), "/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]
    p = info["queues"]["queue"][0]
    assert "type" not in p
    assert p["queues"]["queue"][0]["queuePath"] == "root.p.x"
    wanted = {k for k in real_parent if k not in ("usedResources",)}
    assert wanted <= set(p)


def _asdict(obj: Any) -> dict[str, Any]:
    return {k: getattr(obj, k) for k in obj.__slots__}


def test_fair_scheduler_shape() -> None:
    info = get(FakeSim(fs_view()), "/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]
    assert info["type"] == "fairScheduler"
    root = info["rootQueue"]
    assert "type" not in root
    default, parent = root["childQueues"]["queue"]
    assert default["type"] == "fairSchedulerLeafQueueInfo"
    assert "childQueues" not in default
    assert default["queueName"] == "root.default"
    assert default["amMaxResources"] == {"memory": 4096, "vCores": 1}
    assert default["amUsedResources"] == {"memory": 2048, "vCores": 1}
    assert (default["numPendingApps"], default["numActiveApps"]) == (2, 1)
    assert default["fairResources"] == {"memory": 8192, "vCores": 8}
    assert parent["maxResources"] == {"memory": 8192, "vCores": 8}  # clamped to the cluster
    assert parent["maxApps"] == 50
    assert parent["childQueues"]["queue"][0]["queueName"] == "root.sample_queue.sub"


def test_fair_scheduler_has_every_field_of_the_doc_example() -> None:
    real = shared_json("scheduler-fair.json")["scheduler"]["schedulerInfo"]
    ours = get(FakeSim(fs_view()), "/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]
    assert not missing_keys(real, ours)
    real_leaf, real_parent = real["rootQueue"]["childQueues"]["queue"]
    our_leaf, our_parent = ours["rootQueue"]["childQueues"]["queue"]
    assert not missing_keys(real_leaf, our_leaf)
    assert not missing_keys(real_parent, our_parent)
    assert set(real_leaf) - set(our_leaf) == set()


# --------------------------------------------------------------------------- apps


def test_apps_filters_by_state_and_bounds_the_answer() -> None:
    apps = [app(1, "RUNNING"), app(2, "ACCEPTED"), app(3, "FINISHED"), app(4, "RUNNING", "root.b")]
    sim = FakeSim(cs_view(), apps)
    got = get(sim, "/ws/v1/cluster/apps?states=running,accepted")["apps"]["app"]
    assert [a["id"][-4:] for a in got] == ["0001", "0002", "0004"]
    assert len(get(sim, "/ws/v1/cluster/apps?limit=2")["apps"]["app"]) == 2
    bounded = FaceOptions(apps_limit=3)
    assert len(get(sim, "/ws/v1/cluster/apps", bounded)["apps"]["app"]) == 3
    assert len(get(sim, "/ws/v1/cluster/apps?limit=50", bounded)["apps"]["app"]) == 3
    only_b = get(sim, "/ws/v1/cluster/apps?queue=b")["apps"]["app"]
    assert [a["queue"] for a in only_b] == ["root.b"]
    done = get(sim, "/ws/v1/cluster/apps?states=FINISHED")["apps"]["app"][0]
    assert done["finalStatus"] == "SUCCEEDED"
    assert done["elapsedTime"] == 8500
    assert done["finishedTime"] - done["startedTime"] == 8500


def test_a_finished_apps_job_as_the_jobhistory_server_serves_it() -> None:
    """Every field of Hadoop's documented job answer; the averages over the tasks done; a job
    the server does not hold (running, unknown, not a job id) is its 404."""
    done = replace(
        app(3, "FINISHED"), maps=12, reduces=2, maps_done=12, reduces_done=2, map_s=2.6384,
        reduce_s=30.0,
    )  # fmt: skip
    sim = FakeSim(cs_view(), [app(1, "RUNNING"), done])
    job = get(sim, "/ws/v1/history/mapreduce/jobs/job_1700000000000_0003")["job"]
    real = json.loads((SHARED / "fixtures" / "jobhistory" / "job.json").read_text())["job"]
    assert missing_keys(real, job) == []
    assert job["id"] == "job_1700000000000_0003" and job["state"] == "SUCCEEDED"
    assert (job["mapsTotal"], job["reducesTotal"]) == (12, 2)
    assert (job["avgMapTime"], job["avgReduceTime"], job["avgShuffleTime"]) == (2638, 30000, 0)
    assert job["finishTime"] - job["submitTime"] == 8500
    for jid in ("job_1700000000000_0001", "job_1700000000000_0009", "application_1_1"):
        r = handle(sim, "GET", f"/ws/v1/history/mapreduce/jobs/{jid}", b"", {})
        assert r.status == 404
        assert json.loads(r.body)["RemoteException"]["message"] == f"job, {jid}, is not found"


def test_a_finished_apps_job_configuration_as_the_jobhistory_server_serves_it() -> None:
    """The shape of Hadoop's documented answer (the fixture's, a property's name, value and
    sources), its values strings as a ``Configuration`` holds them: the sizes the job asked
    for, which the recorder reads back as Hadoop resolves them; the same 404s as the job."""
    from amtuner.jobhistory import conf_figures

    done = replace(
        app(3, "FINISHED"), maps=12, reduces=2, map_mb=2048, map_vcores=1, reduce_mb=3072,
        reduce_vcores=2, am_mb=1536,
    )  # fmt: skip
    sim = FakeSim(cs_view(), [app(1, "RUNNING"), done])
    conf = get(sim, "/ws/v1/history/mapreduce/jobs/job_1700000000000_0003/conf")
    real = json.loads((SHARED / "fixtures" / "jobhistory" / "conf.json").read_text())
    assert missing_keys(real["conf"], conf["conf"]) == []
    for prop in conf["conf"]["property"]:
        assert set(prop) == {"name", "value", "source"} and isinstance(prop["value"], str)
        assert isinstance(prop["source"], list)
    assert conf["conf"]["path"].endswith("/job_1700000000000_0003_conf.xml")
    assert conf_figures(conf) == {
        "map_mb": 2048, "map_vcores": 1, "reduce_mb": 3072, "reduce_vcores": 2,
        "am_memory_mb": 1536,
    }  # fmt: skip
    for jid in ("job_1700000000000_0001", "job_1700000000000_0009"):
        r = handle(sim, "GET", f"/ws/v1/history/mapreduce/jobs/{jid}/conf", b"", {})
        assert r.status == 404
        assert json.loads(r.body)["RemoteException"]["message"] == f"job, {jid}, is not found"
    tasks = "/ws/v1/history/mapreduce/jobs/job_1700000000000_0003/tasks"
    assert handle(sim, "GET", tasks, b"", {}).status == 404


def test_the_jobhistory_servers_own_info_as_hadoop_documents_it() -> None:
    sim = FakeSim(cs_view(), [])
    doc = get(sim, "/ws/v1/history/info")
    real = json.loads((SHARED / "fixtures" / "jobhistory" / "info.json").read_text())
    assert missing_keys(real, doc) == [] and get(sim, "/ws/v1/history") == doc
    assert doc["historyInfo"]["hadoopVersion"] == FaceOptions().rm_version


def test_a_finished_apps_attempts_and_containers_as_the_timeline_server_serves_them() -> None:
    """Every field of Hadoop's documented attempt and container answers, wrapped as
    AHSWebServices answers; the AM container and one container per task over the app's runs,
    each of the spec's time; an app or attempt the server does not hold is its 404."""
    from amtuner.timeline import last_attempt, task_figures

    done = replace(
        app(3, "FINISHED"), am_container_mb=2048, am_vcores=1, am_startup_s=5.0,
        task_groups=((12, 1024, 1, 2.5), (2, 3072, 2, 30.0)),
    )  # fmt: skip
    sim = FakeSim(cs_view(), [app(1, "RUNNING"), done])
    base = "/ws/v1/applicationhistory/apps/application_1700000000000_0003/appattempts"
    attempts = get(sim, base)
    documented = SHARED / "fixtures" / "timeline"
    real = json.loads((documented / "appattempts.json").read_text())["appAttempt"][0]
    assert missing_keys(real, attempts["appAttempts"]["appAttempt"][0]) == []
    attempt, am = last_attempt(attempts, done.app_id)
    assert (attempt, am) == (
        "appattempt_1700000000000_0003_000001", "container_1700000000000_0003_01_000001",
    )  # fmt: skip
    containers = get(sim, f"{base}/{attempt}/containers")
    real = json.loads((documented / "containers.json").read_text())["container"][0]
    listed = containers["containers"]["container"]
    assert all(missing_keys(real, c) == [] for c in listed)
    assert len({c["containerId"] for c in listed}) == len(listed) == 1 + 12 + 2
    assert listed[0]["finishedTime"] - listed[0]["startedTime"] == 7500  # the AM: 2 s to 9.5 s
    assert task_figures(containers, am) == {
        "tasks": 14, "task_mb": round((12 * 1024 + 2 * 3072) / 14),
        "task_vcores": round(16 / 14), "task_ms": round((12 * 2500 + 2 * 30000) / 14),
        "am_memory_mb": 2048,
    }  # fmt: skip
    for path in (
        "/ws/v1/applicationhistory/apps/application_1700000000000_0001/appattempts",
        "/ws/v1/applicationhistory/apps/application_1700000000000_0009/appattempts",
        f"{base}/appattempt_1700000000000_0003_000002/containers",
    ):
        r = handle(sim, "GET", path, b"", {})
        assert r.status == 404
        assert "not found" in json.loads(r.body)["RemoteException"]["message"]


def test_apps_empty_is_null_and_bad_state_is_400() -> None:
    sim = FakeSim(cs_view(), [app(1, "RUNNING")])
    assert get(sim, "/ws/v1/cluster/apps?states=KILLED") == {"apps": None}
    r = handle(sim, "GET", "/ws/v1/cluster/apps?states=BOGUS", b"", {})
    assert r.status == 400
    assert "Invalid application-state BOGUS" in json.loads(r.body)["RemoteException"]["message"]
    for limit in ("0", "x"):
        assert handle(sim, "GET", f"/ws/v1/cluster/apps?limit={limit}", b"", {}).status == 400


# --------------------------------------------------------------------------- web UI


@pytest.mark.parametrize(
    ("mb", "text"),
    [(8192, "8 GB"), (1536, "1.50 GB"), (512, "512 MB"), (0, "0 B"), (1024 * 1024, "1 TB")],
)
def test_byte_desc_matches_hadoop(mb: int, text: str) -> None:
    assert rmapi.byte_desc(mb * 1024 * 1024) == text


def test_byte_desc_rounds_up_to_the_next_prefix_like_hadoop() -> None:
    assert rmapi.byte_desc(2**40 - 1) == "1.00 TB"
    assert rmapi.byte_desc(1000) == "1000 B"


def _metrics_table(page: bytes) -> dict[str, str]:
    table = BeautifulSoup(page, "html.parser").find("table", id="metricsoverview")
    assert table is not None
    heads = [th.get_text() for th in table.find("thead").find_all("th")]
    cells = [td.get_text() for td in table.find("tbody").find_all("td")]
    return dict(zip(heads, cells, strict=True))


def test_web_ui_layout_2() -> None:
    r = handle(FakeSim(cs_view()), "GET", "/cluster", b"", {}, options=FaceOptions(web_ui_layout=2))
    assert r.status == 200 and r.headers["Content-Type"].startswith("text/html")
    t = _metrics_table(r.body)
    assert t["Apps Pending"] == "2" and t["Apps Running"] == "1"
    assert (t["Memory Used"], t["Memory Total"], t["Memory Reserved"]) == ("6 GB", "32 GB", "1 GB")
    assert (t["VCores Used"], t["VCores Total"]) == ("3", "32")


def test_web_ui_layout_3_and_about_page() -> None:
    sim = FakeSim(cs_view())
    assert handle(sim, "GET", "/", b"", {}).body == handle(sim, "GET", "/cluster", b"", {}).body
    t = _metrics_table(handle(sim, "GET", "/cluster/", b"", {}).body)
    assert t["Used Resources"] == "<memory:6 GB, vCores:3>"
    assert t["Total Resources"] == "<memory:32 GB, vCores:32>"
    about = handle(sim, "GET", "/cluster/cluster", b"", {}).body.decode()
    assert "Cluster overview" in about and "ResourceManager HA state:" in about
    assert _metrics_table(about.encode())["Apps Submitted"] == "3"


# --------------------------------------------------------------------------- dispatch, HA


def test_unknown_paths_and_methods() -> None:
    sim = FakeSim(cs_view())
    r = handle(sim, "GET", "/ws/v1/cluster/nope", b"", {})
    assert r.status == 404
    assert json.loads(r.body)["RemoteException"]["exception"] == "NotFoundException"
    assert handle(sim, "POST", "/ws/v1/cluster/metrics", b"", {}).status == 405
    head = handle(sim, "HEAD", "/ws/v1/cluster/metrics", b"", {})
    assert head.status == 200 and head.body == b""


def test_standby_redirects_everything_but_info() -> None:
    sim = FakeSim(cs_view())
    standby = FaceOptions(standby_of="http://rm1:8088/")
    r = handle(sim, "GET", "/ws/v1/cluster/apps?states=RUNNING", b"", {}, options=standby)
    assert r.status == 307
    assert r.headers["Location"] == "http://rm1:8088/ws/v1/cluster/apps?states=RUNNING"
    assert b"This is standby RM" in r.body
    for path in ("/ws/v1/cluster/metrics", "/cluster", "/ws/v1/cluster/scheduler", REFRESH):
        assert handle(sim, "GET", path, b"", {}, options=standby).status == 307
    info = get(sim, "/ws/v1/cluster/info", standby)
    assert info["clusterInfo"]["haState"] == "STANDBY"
    assert handle(sim, "GET", "/isActive", b"", {}, options=standby).status == 405
    assert handle(sim, "GET", "/isActive", b"", {}).status == 200


REFRESH = rmapi.REFRESH_PATH


# --------------------------------------------------------------------------- scheduler-conf

MUTABLE = FaceOptions(mutable_conf=True)
UPDATE = b"""<sched-conf><update-queue><queue-name>root.default</queue-name><params>
<entry><key>maximum-am-resource-percent</key><value>VALUE</value></entry>
</params></update-queue></sched-conf>"""


def test_scheduler_conf_needs_capacity_and_a_mutable_store() -> None:
    for sim, options in ((FakeSim(cs_view()), FaceOptions()), (FakeSim(fs_view()), MUTABLE)):
        for method in ("GET", "PUT"):
            r = handle(sim, method, "/ws/v1/cluster/scheduler-conf", b"", {}, options=options)
            assert (r.status, r.body.decode()) == (400, rmapi.NOT_MUTABLE)


def test_scheduler_conf_get_json_and_xml() -> None:
    sim = FakeSim(cs_view())
    props = get(sim, "/ws/v1/cluster/scheduler-conf", MUTABLE)["property"]
    assert {"name": "yarn.scheduler.capacity.root.queues", "value": "default,b"} in props
    r = handle(
        sim,
        "GET",
        "/ws/v1/cluster/scheduler-conf",
        b"",
        {"Accept": "application/xml"},
        options=MUTABLE,
    )
    assert r.headers["Content-Type"].startswith("application/xml")
    assert conf_value(r.body, "yarn.scheduler.capacity.root.b.capacity") == "50"


def test_scheduler_conf_put_applies_and_reloads() -> None:
    sim = FakeSim(cs_view())
    body = UPDATE.replace(b"VALUE", b"0.3")
    r = handle(sim, "PUT", "/ws/v1/cluster/scheduler-conf", body, {}, options=MUTABLE)
    assert (r.status, r.body) == (200, b"Configuration change successfully applied.")
    key = "yarn.scheduler.capacity.root.default.maximum-am-resource-percent"
    assert conf_value(sim.config, key) == "0.3"
    assert conf_value(sim.config, "yarn.scheduler.capacity.root.b.capacity") == "50"


def test_scheduler_conf_put_invalid_keeps_the_old_config() -> None:
    sim = FakeSim(cs_view())
    before = sim.config
    bad_value = UPDATE.replace(b"VALUE", b"lots")
    for body in (bad_value, b"<sched-conf><oops", UPDATE.replace(b"root.default", b"root.zz")):
        r = handle(sim, "PUT", "/ws/v1/cluster/scheduler-conf", body, {}, options=MUTABLE)
        assert r.status == 400 and r.body
        assert sim.config == before
    r = handle(
        sim,
        "PUT",
        "/ws/v1/cluster/scheduler-conf",
        b"{}",
        {"Content-Type": "application/json"},
        options=MUTABLE,
    )
    assert r.status == 415


def test_sched_conf_add_remove_and_global() -> None:
    add = b"""<sched-conf><add-queue><queue-name>root.c</queue-name><params>
    <entry><key>capacity</key><value>10</value></entry></params></add-queue>
    <global-updates><entry><key>yarn.scheduler.capacity.maximum-am-resource-percent</key>
    <value>0.25</value></entry></global-updates></sched-conf>"""
    conf = rmapi.apply_sched_conf(CS_CONF, add)
    assert conf_value(conf, "yarn.scheduler.capacity.root.queues") == "default,b,c"
    assert conf_value(conf, "yarn.scheduler.capacity.root.c.capacity") == "10"
    assert conf_value(conf, "yarn.scheduler.capacity.maximum-am-resource-percent") == "0.25"
    removed = rmapi.apply_sched_conf(
        conf, b"<sched-conf><remove-queue>root.c</remove-queue></sched-conf>"
    )
    assert conf_value(removed, "yarn.scheduler.capacity.root.queues") == "default,b"
    assert conf_value(removed, "yarn.scheduler.capacity.root.c.capacity") is None
    with pytest.raises(rmapi.ConfUpdateError, match="existing queue"):
        rmapi.apply_sched_conf(conf, add)
    with pytest.raises(rmapi.ConfUpdateError, match="DOCTYPE"):
        rmapi.apply_sched_conf(CS_CONF, b'<!DOCTYPE x [<!ENTITY a "b">]><sched-conf/>')


def test_sched_conf_fixture_bodies_apply() -> None:
    conf = (RM_REST / "scheduler-conf-put-update-queue.xml").read_bytes()
    out = rmapi.apply_sched_conf(CS_CONF, conf)
    assert conf_value(out, "yarn.scheduler.capacity.root.default.maximum-applications") == "100"
    out = rmapi.apply_sched_conf(out, (RM_REST / "scheduler-conf-put-add-queue.xml").read_bytes())
    assert conf_value(out, "yarn.scheduler.capacity.root.default.capacity") == "90"
    assert conf_value(out, "yarn.scheduler.capacity.root.queues") == "default,b,a"
    out = rmapi.apply_sched_conf(
        out, (RM_REST / "scheduler-conf-put-global-updates.xml").read_bytes()
    )
    assert conf_value(out, "yarn.scheduler.capacity.queue-mappings-override.enable") == "true"
    got = rmapi.conf_properties((RM_REST / "scheduler-conf-get-response.xml").read_bytes())
    assert ("yarn.scheduler.capacity.root.queues", "default") in got


# --------------------------------------------------------------------------- refresh


def test_refresh_queues_capacity(tmp_path: Path) -> None:
    sim = FakeSim(cs_view())
    path = tmp_path / "capacity-scheduler.xml"
    options = FaceOptions(scheduler_config_path=path)
    path.write_bytes(CS_CONF.replace(b">0.1<", b">0.2<"))
    r = handle(sim, "POST", REFRESH, b"", {}, options=options)
    assert r.status == 200 and sim.config == path.read_bytes()
    good = sim.config
    path.write_bytes(CS_CONF.replace(b">0.1<", b">much<"))
    r = handle(sim, "POST", REFRESH, b"", {}, options=options)
    assert r.status == 400 and b"not a number" in r.body
    assert sim.config == good
    assert handle(sim, "POST", REFRESH, b"", {}).status == 400  # no file to read
    mutable = FaceOptions(scheduler_config_path=path, mutable_conf=True)
    r = handle(sim, "POST", REFRESH, b"", {}, options=mutable)
    assert (r.status, r.body.decode()) == (400, rmapi.MUTABLE_NO_REFRESH)


def test_refresh_queues_fair_logs_and_still_succeeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sim = FakeSim(fs_view())
    path = tmp_path / "fair-scheduler.xml"
    path.write_bytes(b"<allocations><oops")
    r = handle(sim, "POST", REFRESH, b"", {}, options=FaceOptions(scheduler_config_path=path))
    assert r.status == 200
    assert sim.reloads == 0
    assert "Failed to reload allocations file" in caplog.text


# --------------------------------------------------------------------------- the monitor reads it


@pytest.mark.parametrize("make_view", [cs_view, fs_view])
def test_the_monitor_parses_what_the_face_renders(make_view: Any) -> None:
    rest = pytest.importorskip("amtuner.monitor.rest")
    sim = FakeSim(make_view())
    obs = rest.build_observation(
        get(sim, "/ws/v1/cluster/metrics"),
        get(sim, "/ws/v1/cluster/scheduler"),
        time=0.0,
        source="sim",
        targets=["root.default"],
    )
    view = sim.view()
    assert (obs.pending_apps, obs.running_apps) == (view.apps_pending, view.apps_running)
    assert obs.memory_total_mb == view.total.memory_mb
    default = obs.queue("root.default")
    assert default is not None
    assert (default.am_memory_used_mb, default.am_memory_limit_mb) == (2048, 4096)


@pytest.mark.parametrize("layout", [2, 3])
@pytest.mark.parametrize("make_view", [cs_view, fs_view])
def test_the_monitor_reads_the_web_ui_in_both_layouts(
    layout: rmapi.WebUILayout, make_view: Any
) -> None:
    webui = pytest.importorskip("amtuner.monitor.webui")
    view = make_view()
    page = handle(FakeSim(view), "GET", "/cluster", b"", {}, options=FaceOptions(layout))
    parsed = webui.parse_cluster_page(page.body)
    assert (parsed.metrics.memory_used_mb, parsed.metrics.memory_total_mb) == (
        view.allocated.memory_mb,
        view.total.memory_mb,
    )
    assert (parsed.metrics.pending_apps, parsed.metrics.running_apps) == (
        view.apps_pending,
        view.apps_running,
    )
    assert parsed.scheduler == SchedulerKind(view.scheduler)


@pytest.mark.parametrize("make_view", [cs_view, fs_view])
def test_the_scheduler_page_gives_the_waits_the_document_gives(make_view: Any) -> None:
    """``/cluster/scheduler`` in the shape of Hadoop's page for the scheduler simulated: the
    monitor's web UI fallback reads from it the leaves, and so the waits, its REST path reads
    from the scheduler document (a FairScheduler parent's limit included), and each leaf's
    share (CapacityScheduler: its Effective Max Capacity, root.default's 16384 MB beside its
    4096 MB guarantee)."""
    from amtuner.monitor.rest import build_observation
    from amtuner.monitor.waits import classify
    from amtuner.monitor.webfair import parse_fair_page
    from amtuner.monitor.webqueues import parse_capacity_page

    sim = FakeSim(make_view())
    rest = build_observation(
        get(sim, "/ws/v1/cluster/metrics"), get(sim, "/ws/v1/cluster/scheduler"),
        time=0.0, source="sim",
    )  # fmt: skip
    r = handle(sim, "GET", "/cluster/scheduler", b"", {})
    assert r.status == 200 and r.headers["Content-Type"].startswith("text/html")
    if rest.scheduler is SchedulerKind.CAPACITY:
        leaves = parse_capacity_page(r.body, "sim", rest.memory_total_mb, rest.vcores_total)
    else:
        leaves = parse_fair_page(r.body)
    assert [q.name for q in leaves] == [q.name for q in rest.queues]
    for seen, truth in zip(leaves, rest.queues, strict=True):
        assert (seen.pending_apps, seen.running_apps, seen.am_memory_used_mb) == (
            truth.pending_apps, truth.running_apps, truth.am_memory_used_mb,
        )  # fmt: skip
        assert seen.am_memory_limit_mb == truth.am_memory_limit_mb
        assert seen.guarantee_mb == truth.guarantee_mb  # each CS leaf's; a FairScheduler's: None
        assert (seen.memory_share_mb, seen.vcores_share) == (
            truth.memory_share_mb, truth.vcores_share,
        )  # fmt: skip
        # The page leaves out root's limit (FairScheduler: no table for root) and unset ones.
        assert list(seen.ancestor_max_apps) == [
            a for a in truth.ancestor_max_apps if a[0] != "root" and a[1] < 2**31 - 1
        ]
    web = classify(replace(rest, queues=leaves, waits=()))
    assert web.waits == rest.waits and rest.waits
    assert rest.scheduler is SchedulerKind.CAPACITY or any(q.ancestor_max_apps for q in leaves)


def test_a_scheduler_page_of_partitions_heads_each_leaf_per_partition() -> None:
    """Once the cluster has node labels Hadoop's page heads each leaf's table per partition,
    and the fallback reads no leaf from it."""
    from amtuner.monitor.webqueues import parse_capacity_page, queue_tables
    from amtuner.sim.view import PartitionView

    view = cs_view()
    core = PartitionView(
        label="core", capacity=1.0, maximum_capacity=1.0, absolute_capacity=1.0,
        absolute_max_capacity=1.0, max_am_percent=0.5, guaranteed=Res(8192, 8),
        maximum=Res(8192, 8), used=Res(2048, 2), pending=Res(1024, 1), am_used=Res(2048, 2),
        am_limit=Res(4096, 1), user_am_limit=Res(4096, 1),
    )  # fmt: skip
    queues = tuple(replace(q, partitions=(core,)) if q.is_leaf else q for q in view.queues)
    body = handle(FakeSim(replace(view, queues=queues)), "GET", "/cluster/scheduler", b"", {})
    tables = queue_tables(body.body)
    assert {(t.name, t.partition) for t in tables} == {
        (q.path, p) for q in queues if q.is_leaf for p in ("<DEFAULT_PARTITION>", "core")
    }
    core_am = [t.figures["Max Application Master Resources:"] for t in tables
               if t.partition == "core"]  # fmt: skip
    assert set(core_am) == {"<memory:4096, vCores:1>"}
    assert parse_capacity_page(body.body) == ()


_KEYS = st.from_regex(r"[a-z][a-z0-9.-]{0,30}", fullmatch=True)
_VALUES = st.text(
    alphabet=st.characters(codec="utf-8", categories=["L", "N", "P", "S"]), min_size=1, max_size=20
)


@given(updates=st.dictionaries(_KEYS, _VALUES, max_size=6))
def test_update_queue_sets_exactly_the_given_keys(updates: dict[str, str]) -> None:
    entries = "".join(
        f"<entry><key>{k}</key><value>{xml_escape(v)}</value></entry>" for k, v in updates.items()
    )
    body = (
        "<sched-conf><update-queue><queue-name>root.b</queue-name>"
        f"<params>{entries}</params></update-queue></sched-conf>"
    ).encode()
    before = dict(rmapi.conf_properties(CS_CONF))
    after = dict(rmapi.conf_properties(rmapi.apply_sched_conf(CS_CONF, body)))
    expected = before | {f"yarn.scheduler.capacity.root.b.{k}": v for k, v in updates.items()}
    assert after == expected


def test_the_nodes_document_adds_up_to_the_cluster_metrics() -> None:
    """Each node's ``NodeInfo`` (``totalResource`` 3.3+, and the 2.x MB and vcore figures) sums
    to what the metrics say of the whole cluster, mid-run."""
    from amtuner.sim.simulation import build_simulation, default_scheduler_config
    from amtuner.sim.workload import load_workload

    wl = load_workload("paper:mixed")
    sim = build_simulation("capacity", wl, default_scheduler_config("capacity", wl.queues, 0.5))
    sim.run(30)
    nodes = get(sim, "/ws/v1/cluster/nodes?states=RUNNING")["nodes"]["node"]
    m = get(sim, "/ws/v1/cluster/metrics")["clusterMetrics"]
    assert len(nodes) == m["activeNodes"] == wl.nodes
    assert {n["state"] for n in nodes} == {"RUNNING"} and len({n["id"] for n in nodes}) == wl.nodes
    assert sum(n["totalResource"]["memory"] for n in nodes) == m["totalMB"]
    assert sum(n["totalResource"]["vCores"] for n in nodes) == m["totalVirtualCores"]
    assert sum(n["usedMemoryMB"] for n in nodes) == m["allocatedMB"] > 0
    assert sum(n["numContainers"] for n in nodes) == m["containersAllocated"]
    for n in nodes:
        assert n["usedMemoryMB"] + n["availMemoryMB"] == n["totalResource"]["memory"]
        assert n["usedResource"]["memory"] == n["usedMemoryMB"] and n["nodeLabels"] == []
