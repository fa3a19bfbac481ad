"""The MapReduce JobHistory server's job document: Hadoop's documented answer parsed, and the
recorder asking a server on loopback, which may not know a job, answer badly or be down."""

from __future__ import annotations

import dataclasses
import json
import logging
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from amtuner.apptrace import AppRecord, read_trace
from amtuner.config import RMSettings
from amtuner.jobhistory import (
    JobDocumentError,
    conf_figures,
    heap_mb,
    history_client,
    job_figures,
    job_id,
    server_info,
)
from amtuner.monitor import RMClient, make_session
from amtuner.record import HISTORY_WAIT_S, Held, open_trace, poll, with_history
from tests.monitor.test_monitor_client import FakeRM, dead_url, jsonr, rm_factory

__all__ = ["dead_url", "rm_factory"]  # the fixtures, imported to be used here

DOCUMENTED = Path(__file__).resolve().parents[1] / "data/shared/fixtures/jobhistory/job.json"
"""Hadoop's HistoryServerRest.md, "Job API" (tests/data/shared/README.md)."""
CONF = DOCUMENTED.with_name("conf.json")
"""Built from the same page's "Job Conf API" and mapred-default.xml (its README row)."""


def documented() -> dict:
    return json.loads(DOCUMENTED.read_text())


def app(seq: int, **kw: object) -> AppRecord:
    fields: dict = {
        "id": f"application_1326381300833_{seq:04d}", "queue": "default", "user": "user1",
        "type": "MAPREDUCE", "state": "FINISHED", "submit_ms": 1, "launch_ms": 2,
        "finish_ms": 3, "memory_mb_s": 10, "vcore_s": 1,
    }  # fmt: skip
    fields.update(kw)
    return AppRecord(**fields)


def test_the_documented_answer_gives_counts_and_phase_times() -> None:
    assert job_figures(documented(), "job_1326381300833_2_2") == {
        "maps": 1, "reduces": 1, "map_ms": 2638, "shuffle_ms": 2540, "merge_ms": 2589,
        "reduce_ms": 124961,
    }  # fmt: skip
    assert job_id("application_1326381300833_0002") == "job_1326381300833_0002"
    assert job_id("attempt_1") is None


def test_bad_answers_are_refused_with_the_reason() -> None:
    doc = documented()
    with pytest.raises(JobDocumentError, match="of job 'job_1326381300833_2_2', not job_1_1"):
        job_figures(doc, "job_1_1")
    with pytest.raises(JobDocumentError, match="not a job document"):
        job_figures({"RemoteException": {}}, "job_1326381300833_2_2")
    for key, value in (("mapsTotal", None), ("avgMapTime", -1), ("reducesTotal", True)):
        broken = {"job": {**doc["job"], key: value}}
        with pytest.raises(JobDocumentError, match=f"{key} is not a count or ms"):
            job_figures(broken, "job_1326381300833_2_2")
    # An uber job's tasks ran inside its AM: no containers of their own to replay.
    assert job_figures({"job": {**doc["job"], "uberized": True}}, "job_1326381300833_2_2") is None


def test_the_job_configuration_gives_the_task_sizes_as_jobconf_resolves_them() -> None:
    """-1 (Hadoop 3's default) is derived from the task's -Xmx over the heap ratio; an unset
    property takes mapred-default.xml's value; a value the job could not have run with is
    null, not a guess."""
    doc = json.loads(CONF.read_text())
    assert conf_figures(doc) == {
        "map_mb": 2050, "map_vcores": 1, "reduce_mb": 4096, "reduce_vcores": 2,
        "am_memory_mb": 1536,
    }  # fmt: skip

    def with_props(**props: str) -> dict:
        listed = [{"name": k.replace("_", "."), "value": v, "source": ["job.xml"]}
                  for k, v in props.items()]  # fmt: skip
        return {"conf": {"path": "job.xml", "property": listed}}

    assert conf_figures(with_props()) == {
        "map_mb": 1024, "map_vcores": 1, "reduce_mb": 1024, "reduce_vcores": 1,
        "am_memory_mb": 1536,
    }  # fmt: skip
    child = with_props(mapred_child_java_opts="-Xmx1g", mapreduce_reduce_memory_mb="x")
    got = conf_figures(child)
    assert (got["map_mb"], got["reduce_mb"]) == (1280, None)
    assert conf_figures(with_props(mapreduce_map_cpu_vcores="0"))["map_vcores"] is None
    assert (heap_mb("-Xmx512m -Dx=1 -Xmx2g"), heap_mb("-Xms1g"), heap_mb("-Xmx1048576k")) == (
        2048, -1, 1024,
    )  # fmt: skip
    for bad in ({"conf": {"path": "x"}}, {"job": {}}, []):
        with pytest.raises(JobDocumentError, match="not a job configuration document"):
            conf_figures(bad)


def test_the_servers_own_info_says_it_is_a_jobhistory_server(
    rm_factory: Callable[[], FakeRM],
) -> None:
    """Hadoop's documented ``/ws/v1/history/info``; a server without one (an RM: 404) or with
    another document is no JobHistory server (`amtuner check`)."""
    from amtuner.monitor import ObservationError

    jhs, rm_server, other = rm_factory(), rm_factory().active(), rm_factory()
    info = json.loads(DOCUMENTED.with_name("info.json").read_text())
    jhs.routes["/ws/v1/history/info"] = jsonr(info)
    other.routes["/ws/v1/history/info"] = jsonr({"clusterInfo": {}})
    settings = RMSettings()

    def client(url: str) -> RMClient:
        return history_client(settings, [url], make_session(settings))

    assert server_info(client(jhs.url)) == info["historyInfo"]
    with pytest.raises(ObservationError) as caught:
        server_info(client(rm_server.url))
    assert getattr(caught.value.__cause__, "status", None) == 404
    with pytest.raises(JobDocumentError, match="not a JobHistory server's info"):
        server_info(client(other.url))


def test_the_recorder_asks_twice_per_mapreduce_app_and_loses_none(
    rm_factory: Callable[[], FakeRM], caplog: pytest.LogCaptureFixture
) -> None:
    """The job document, then, once it answered, the job's configuration; a job the server
    does not know (404) is handed back to be asked again, a bad answer costs the app its
    figures, nothing else."""
    jhs = rm_factory()
    known = documented()
    known["job"]["id"] = "job_1326381300833_0001"
    seen = {"job": {**known["job"], "id": "job_1326381300833_0006"}}
    bad = {"job": {**known["job"], "id": "job_1326381300833_0003", "avgMapTime": "2638"}}
    jhs.routes["/ws/v1/history/mapreduce/jobs/job_1326381300833_0001"] = jsonr(known)
    jhs.routes["/ws/v1/history/mapreduce/jobs/job_1326381300833_0003"] = jsonr(bad)
    jhs.routes["/ws/v1/history/mapreduce/jobs/job_1326381300833_0006"] = jsonr(seen)
    conf = jsonr(json.loads(CONF.read_text()))
    for jid in ("job_1326381300833_0001", "job_1326381300833_0006"):
        jhs.routes[f"/ws/v1/history/mapreduce/jobs/{jid}/conf"] = conf
    rm = RMSettings(urls=("http://rm:8088",), user_name="amtuner")
    client = history_client(rm, [jhs.url], make_session(rm))
    records = [
        app(1), app(2), app(3), app(4, type="SPARK"), app(5, launch_ms=0, state="KILLED"),
        app(6, am_memory_mb=2048),
    ]  # fmt: skip
    with caplog.at_level(logging.WARNING, "amtuner.record"):
        out, unknown = with_history(records, client)
    assert [r.id for r in out] == [r.id for r in records]
    assert (out[0].maps, out[0].reduces, out[0].map_ms, out[0].reduce_ms) == (1, 1, 2638, 124961)
    sizes = (out[0].map_mb, out[0].map_vcores, out[0].reduce_mb, out[0].reduce_vcores)
    assert sizes == (2050, 1, 4096, 2)
    # The AM's ask where the recorder never saw it run; what it saw where it did.
    assert (out[0].am_memory_mb, out[5].am_memory_mb, out[5].map_mb) == (1536, 2048, 2050)
    assert out[1:5] == records[1:5], "a job the server did not give stays as the RM told it"
    assert list(unknown) == [records[1].id] and "HTTP 404" in unknown[records[1].id]
    # Two requests per MapReduce app whose AM started and whose job answered, no HA probe,
    # user.name as for the RM.
    base = "/ws/v1/history/mapreduce/jobs/"
    assert [urlsplit(p).path.removeprefix(base) for p in jhs.requests] == [
        "job_1326381300833_0001", "job_1326381300833_0001/conf", "job_1326381300833_0002",
        "job_1326381300833_0003", "job_1326381300833_0006", "job_1326381300833_0006/conf",
    ]  # fmt: skip
    assert all("user.name=amtuner" in p for p in jhs.requests)
    (warning,) = caplog.records
    assert "did not give 1 of 4 MapReduce apps" in warning.getMessage()
    assert "avgMapTime is not a count or ms" in warning.getMessage()
    # A continued version 2 file has no place for the sizes: the configuration is not asked.
    jhs.requests.clear()
    out, _ = with_history(records[:1], client, sizes=False)
    assert out[0].maps == 1 and out[0].map_mb is None and len(jhs.requests) == 1


def test_a_server_down_is_asked_once_a_poll(
    dead_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    rm = RMSettings(connect_timeout_seconds=0.5, read_timeout_seconds=0.5)
    client = history_client(rm, [dead_url], make_session(rm))
    records = [app(1), app(2), app(3)]
    with caplog.at_level(logging.WARNING, "amtuner.record"):
        assert with_history(records, client) == (records, {})
    (warning,) = caplog.records
    message = warning.getMessage()
    assert "did not give 3 of 3 MapReduce apps" in message
    assert "not asked about 2 after it failed" in message
    assert "no JobHistory server answered" in message


def test_a_recorded_app_keeps_its_figures_through_its_line() -> None:
    rec = dataclasses.replace(app(1), maps=4, reduces=0, map_ms=10, shuffle_ms=0, merge_ms=0,
                              reduce_ms=0, map_mb=2048, map_vcores=1)  # fmt: skip
    doc = json.loads(rec.line())
    assert AppRecord(**doc) == rec
    assert "maps" not in json.loads(rec.line(version=1))
    assert "map_mb" not in json.loads(rec.line(version=2))
    assert json.loads(rec.line(version=2))["maps"] == 4


def test_a_url_on_the_command_line_is_held_to_the_configs_rule() -> None:
    from amtuner.config import check_url

    assert check_url("http://jhs:19888/") == "http://jhs:19888"
    with pytest.raises(ValueError, match="must be an http:// or https:// URL"):
        check_url("jhs:19888")


def rm_app(seq: int, finish_ms: int) -> dict:
    """A finished MapReduce app as the RM's apps API reports it."""
    return {
        "id": f"application_1326381300833_{seq:04d}", "queue": "default", "user": "user1",
        "state": "FINISHED", "applicationType": "MAPREDUCE", "startedTime": finish_ms - 50,
        "launchTime": finish_ms - 40, "finishedTime": finish_ms, "memorySeconds": 100,
        "vcoreSeconds": 1,
    }  # fmt: skip


def knows(jhs: FakeRM, seq: int) -> None:
    jid = f"job_1326381300833_{seq:04d}"
    doc = documented()
    doc["job"]["id"] = jid
    jhs.routes[f"/ws/v1/history/mapreduce/jobs/{jid}"] = jsonr(doc)
    jhs.routes[f"/ws/v1/history/mapreduce/jobs/{jid}/conf"] = jsonr(json.loads(CONF.read_text()))


def test_an_app_the_server_does_not_know_yet_is_asked_again_and_holds_back_the_rest(
    rm_factory: Callable[[], FakeRM], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A 404 (its history file not moved to the done directory yet) is asked again at each
    poll, one request, until the server knows the job or the wait is over, also through a poll
    the server is down at; the apps after it wait with it, so the file's order and cursor stay
    the RM's; none is lost."""
    rm, jhs = rm_factory().active(), rm_factory()
    apps = [rm_app(1, 100), rm_app(2, 200)]
    rm.routes["/ws/v1/cluster/apps"] = lambda _: jsonr({"apps": {"app": apps}})
    knows(jhs, 2)
    settings = RMSettings(urls=(rm.url,))
    client = RMClient.from_settings(settings, make_session(settings))
    history = history_client(settings, [jhs.url], make_session(settings))
    trace = tmp_path / "apps.jsonl"
    since, version = open_trace(trace, client, rm.url)
    held, now = Held(), [0.0]

    def poll_at(t: float) -> int:
        nonlocal since
        now[0] = t
        since, n = poll(trace, client, since, 100, 2**20, None, history, version, held,
                        HISTORY_WAIT_S, lambda: now[0])  # fmt: skip
        return n

    def job_asks(seq: int) -> int:
        jid = f"job_1326381300833_{seq:04d}"
        return sum(urlsplit(p).path.endswith(jid) for p in jhs.requests)

    assert poll_at(0) == 0 and read_trace(trace)[1] == []
    assert [a.id for a in held.apps] == [apps[0]["id"], apps[1]["id"]]
    assert poll_at(60) == 0 and (job_asks(1), job_asks(2)) == (2, 1)
    knows(jhs, 1)
    assert poll_at(120) == 2 and not held.apps
    got = read_trace(trace)[1]
    assert [a.id for a in got] == [a["id"] for a in apps]
    assert [(a.maps, a.map_mb) for a in got] == [(1, 2050), (1, 2050)]

    apps.append(rm_app(3, 300))  # never known: written without its figures once the wait ends
    with caplog.at_level(logging.WARNING, "amtuner.record"):
        assert poll_at(200) == 0
        assert poll_at(200 + HISTORY_WAIT_S - 1) == 0
        assert not caplog.records
        assert poll_at(200 + HISTORY_WAIT_S) == 1
    (warning,) = caplog.records
    assert "did not know the job of 1 MapReduce apps" in warning.getMessage()
    assert job_asks(3) == 3
    last = read_trace(trace)[1][-1]
    assert last.id == apps[2]["id"] and last.maps is None and not held.apps

    # A server down meanwhile: the app waiting keeps waiting, the one after it with it.
    apps += [rm_app(4, 400), rm_app(5, 500)]
    knows(jhs, 5)
    assert poll_at(1000) == 0 and [a.id for a in held.apps] == [apps[3]["id"], apps[4]["id"]]
    jhs.server.shutdown()
    jhs.server.server_close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, "amtuner.record"):
        assert poll_at(1060) == 0
        assert [a.id for a in held.apps] == [apps[3]["id"], apps[4]["id"]]
        assert poll_at(1000 + HISTORY_WAIT_S) == 2  # the wait from its first 404 is over
    (warning,) = caplog.records
    assert "did not know the job of 1 MapReduce apps" in warning.getMessage()
    assert "no JobHistory server answered" in warning.getMessage()
    got = read_trace(trace)[1][-2:]
    assert [(a.id, a.maps) for a in got] == [(apps[3]["id"], None), (apps[4]["id"], 1)]
    assert not held.apps and not held.unknown


@pytest.mark.slow
def test_a_recorder_stopped_by_sigterm_writes_the_apps_it_held(
    rm_factory: Callable[[], FakeRM], tmp_path: Path
) -> None:
    """`amtuner record` held back by an app the JobHistory server does not know writes it and
    the apps after it when it is stopped, rather than lose them."""
    from tests.e2e.conftest import write_config

    rm, jhs = rm_factory().active(), rm_factory()
    apps = [rm_app(1, 100), rm_app(2, 200)]
    rm.routes["/ws/v1/cluster/apps"] = jsonr({"apps": {"app": apps}})
    knows(jhs, 2)
    sched = tmp_path / "capacity-scheduler.xml"
    sched.write_text("<configuration/>")
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [rm.url]}, history={"urls": [jhs.url]},
        scheduler={"kind": "capacity", "config_file": str(sched)},
    )  # fmt: skip
    trace = tmp_path / "apps.jsonl"
    argv = [sys.executable, "-m", "amtuner", "record", "--config", str(cfg), "--out", str(trace),
            "--interval", "0.1", "--history-wait", "3600"]  # fmt: skip
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        unknown = "/ws/v1/history/mapreduce/jobs/job_1326381300833_0001"
        while sum(urlsplit(p).path == unknown for p in jhs.requests) < 3:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        assert read_trace(trace)[1] == [], "written before the app it waits on"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    got = read_trace(trace)[1]
    assert [a.id for a in got] == [a["id"] for a in apps], err
    assert (got[0].maps, got[1].maps) == (None, 1)
    assert "did not know the job of 1 MapReduce apps" in err
