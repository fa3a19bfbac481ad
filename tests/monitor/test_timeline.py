"""The timeline server's generic application history: Hadoop's documented attempts and
containers answers parsed, and the recorder asking a server on loopback, which may not know an
app, answer badly or be down."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from amtuner.apptrace import VERSION, AppRecord
from amtuner.config import RMSettings
from amtuner.jobhistory import history_client
from amtuner.monitor import make_session
from amtuner.record import with_timeline
from amtuner.timeline import TimelineDocumentError, last_attempt, task_figures
from tests.monitor.test_monitor_client import FakeRM, dead_url, jsonr, rm_factory

__all__ = ["dead_url", "rm_factory"]  # the fixtures, imported to be used here

DOCUMENTED = Path(__file__).resolve().parents[1] / "data/shared/fixtures/timeline"
"""Hadoop's TimelineServer.md, "Generic Data REST APIs" (tests/data/shared/README.md)."""
CAPTURED = Path(__file__).resolve().parents[1] / "data/monitor/hadoop-3.5.0/timeline"
APP = "application_1430424020775_0001"
ATTEMPT = "appattempt_1430424020775_0001_000001"
AM = "container_1430424020775_0001_01_000001"


def documented(name: str) -> dict:
    return json.loads((DOCUMENTED / f"{name}.json").read_text())


def app(seq: int, **kw: object) -> AppRecord:
    fields: dict = {
        "id": f"application_1430424020775_{seq:04d}", "queue": "default", "user": "zshen",
        "type": "SPARK", "state": "FINISHED", "submit_ms": 1, "launch_ms": 2, "finish_ms": 3,
        "memory_mb_s": 10, "vcore_s": 1,
    }  # fmt: skip
    fields.update(kw)
    return AppRecord(**fields)


def test_the_documented_answers_give_the_tasks_but_the_am() -> None:
    assert last_attempt(documented("appattempts"), APP) == (ATTEMPT, AM)
    # Six task containers of 1024 MB and 1 vcore beside the AM's 2048 MB; their lives, from
    # allocation to finish, 4710, 7976, 7978, 7974, 7976 and 6937 ms: 7258.5 on average.
    assert task_figures(documented("containers"), AM) == {
        "tasks": 6, "task_mb": 1024, "task_vcores": 1, "task_ms": 7258, "am_memory_mb": 2048,
    }  # fmt: skip


def test_wrapped_single_and_empty_collections_read_alike() -> None:
    """As AHSWebServices answers (``{"appAttempts": {"appAttempt": [...]}}``), one item as an
    object, and an attempt with no container but its AM's."""
    attempts = documented("appattempts")["appAttempt"]
    second = {**attempts[0], "appAttemptId": ATTEMPT[:-1] + "2", "amContainerId": AM + "x"}
    wrapped = {"appAttempts": {"appAttempt": [second, attempts[0]]}}
    assert last_attempt(wrapped, APP) == (ATTEMPT[:-1] + "2", AM + "x")
    assert last_attempt({"appAttempts": {"appAttempt": attempts[0]}}, APP) == (ATTEMPT, AM)
    am_only = {"containers": {"container": documented("containers")["container"][-1]}}
    assert task_figures(am_only, AM) == {
        "tasks": 0, "task_mb": None, "task_vcores": None, "task_ms": None, "am_memory_mb": 2048,
    }  # fmt: skip
    assert task_figures({"containers": None}, AM)["tasks"] == 0


def test_hadoop_3_5_answers_under_the_java_fields_name_too() -> None:
    """A live Hadoop 3.5.0 timeline server (tests/data/monitor/README.md) answers some starts
    with the attempts under ``attempts``, not JAXB's ``appAttempts.appAttempt``."""
    live = json.loads((CAPTURED / "appattempts-jersey-field-names.json").read_text())
    app_id = "application_1795866479337_0001"
    assert last_attempt(live, app_id) == (
        "appattempt_1795866479337_0001_000001", "container_1795866479337_0001_01_000001"
    )
    containers = documented("containers")["container"]
    assert task_figures({"containers": containers}, AM)["tasks"] == 6


def test_sizes_the_store_lacks_and_containers_not_finished_are_left_out() -> None:
    doc = documented("containers")
    doc["container"][0] |= {"allocatedMB": -1, "allocatedVCores": -1}  # TestAHSWebServices
    doc["container"][1] |= {"allocatedMB": 4096, "allocatedVCores": 2, "finishedTime": 0}
    figures = task_figures(doc, AM)
    assert figures["tasks"] == 6
    assert (figures["task_mb"], figures["task_vcores"]) == (round(8192 / 5), round(6 / 5))
    assert figures["task_ms"] == round((7978 + 7974 + 7976 + 6937 + 4710) / 5)


def test_bad_answers_are_refused_with_the_reason() -> None:
    with pytest.raises(TimelineDocumentError, match="not an appAttempts document"):
        last_attempt({"RemoteException": {"message": "x"}}, APP)
    with pytest.raises(TimelineDocumentError, match="is not its own"):
        last_attempt(documented("appattempts"), "application_1_1")
    with pytest.raises(TimelineDocumentError, match="no attempt"):
        last_attempt({"appAttempts": None}, APP)
    no_am = {"appAttempt": [{"appAttemptId": ATTEMPT}]}
    with pytest.raises(TimelineDocumentError, match="no amContainerId"):
        last_attempt(no_am, APP)
    doc = documented("containers")
    doc["container"][2]["startedTime"] = "1430424060316"
    with pytest.raises(TimelineDocumentError, match="startedTime is not a number"):
        task_figures(doc, AM)
    with pytest.raises(TimelineDocumentError, match=r"containers\.container is not a list"):
        task_figures({"container": "x"}, AM)


def ahs_routes(server: FakeRM, app_id: str, attempts: dict, containers: dict) -> None:
    base = f"/ws/v1/applicationhistory/apps/{app_id}/appattempts"
    attempt, _ = last_attempt(attempts, app_id)
    server.routes[base] = jsonr(attempts)
    server.routes[f"{base}/{attempt}/containers"] = jsonr(containers)


def test_the_recorder_asks_twice_per_app_without_figures_and_loses_none(
    rm_factory: Callable[[], FakeRM], caplog: pytest.LogCaptureFixture
) -> None:
    ahs = rm_factory()
    ahs_routes(ahs, APP, documented("appattempts"), documented("containers"))
    bad = "application_1430424020775_0003"
    ahs.routes[f"/ws/v1/applicationhistory/apps/{bad}/appattempts"] = jsonr({"apps": None})
    rm = RMSettings(urls=("http://rm:8088",), user_name="amtuner")
    client = history_client(rm, [ahs.url], make_session(rm))
    records = [
        app(1), app(2, type="TEZ"), app(3), app(4, launch_ms=0, state="KILLED"),
        app(5, type="MAPREDUCE", maps=3, map_ms=10),
    ]  # fmt: skip
    with caplog.at_level(logging.WARNING, "amtuner.record"):
        out = with_timeline(records, client)
    assert [r.id for r in out] == [r.id for r in records]
    assert (out[0].tasks, out[0].task_mb, out[0].task_vcores, out[0].task_ms) == (6, 1024, 1, 7258)
    assert out[0].am_memory_mb == 2048
    assert out[1:] == records[1:], "an app the server did not give stays as the RM told it"
    # Two requests for the app it knows, one for each it does not; none for an app whose AM
    # never started or that the JobHistory server told of; user.name as for the RM.
    asked = [p.split("?")[0].removeprefix("/ws/v1/applicationhistory/apps/") for p in ahs.requests]
    assert asked == [
        f"{APP}/appattempts", f"{APP}/appattempts/{ATTEMPT}/containers",
        "application_1430424020775_0002/appattempts", f"{bad}/appattempts",
    ]  # fmt: skip
    assert all("user.name=amtuner" in p for p in ahs.requests)
    (warning,) = caplog.records
    message = warning.getMessage()
    assert "the timeline server did not give 2 of 3 apps their task figures" in message
    assert "HTTP 404" in message


def test_a_timeline_server_down_is_asked_once_a_poll(
    dead_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    rm = RMSettings(connect_timeout_seconds=0.5, read_timeout_seconds=0.5)
    client = history_client(rm, [dead_url], make_session(rm))
    records = [app(1), app(2), app(3)]
    with caplog.at_level(logging.WARNING, "amtuner.record"):
        assert with_timeline(records, client) == records
    (warning,) = caplog.records
    message = warning.getMessage()
    assert "did not give 3 of 3 apps" in message
    assert "not asked about 2 after it failed" in message
    assert "no timeline server answered" in message


def test_the_figures_live_in_version_3_only() -> None:
    rec = dataclasses.replace(app(1), tasks=6, task_mb=1024, task_vcores=1, task_ms=7258)
    assert VERSION == 3
    assert AppRecord(**json.loads(rec.line())) == rec
    older = json.loads(rec.line(version=2))
    assert "tasks" not in older and "maps" in older
    assert "maps" not in json.loads(rec.line(version=1))
