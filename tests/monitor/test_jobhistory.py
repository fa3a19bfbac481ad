"""The MapReduce JobHistory server's job document: Hadoop's documented answer parsed, and the
recorder asking a server on loopback, which may not know a job, answer badly or be down."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from amtuner.apptrace import AppRecord
from amtuner.config import RMSettings
from amtuner.jobhistory import JobDocumentError, history_client, job_figures, job_id
from amtuner.monitor import make_session
from amtuner.record import with_history
from tests.monitor.test_monitor_client import FakeRM, dead_url, jsonr, rm_factory

__all__ = ["dead_url", "rm_factory"]  # the fixtures, imported to be used here

DOCUMENTED = Path(__file__).resolve().parents[1] / "data/shared/fixtures/jobhistory/job.json"
"""Hadoop's HistoryServerRest.md, "Job API" (tests/data/shared/README.md)."""


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


def jobs_route(docs: dict[str, dict | None]) -> Callable[[str], tuple[int, dict, bytes]]:
    def route(path: str) -> tuple[int, dict, bytes]:
        doc = docs.get(path.rsplit("/", 1)[-1].split("?")[0])
        if doc is None:
            msg = {"RemoteException": {"exception": "NotFoundException", "message": "not found"}}
            return 404, {"Content-Type": "application/json"}, json.dumps(msg).encode()
        return jsonr(doc)

    return route


def test_the_recorder_asks_once_per_mapreduce_app_and_loses_none(
    rm_factory: Callable[[], FakeRM], caplog: pytest.LogCaptureFixture
) -> None:
    jhs = rm_factory()
    known = documented()
    known["job"]["id"] = "job_1326381300833_0001"
    bad = {"job": {**known["job"], "id": "job_1326381300833_0003", "avgMapTime": "2638"}}
    docs = {"job_1326381300833_0001": known, "job_1326381300833_0003": bad}
    route = jobs_route(docs)
    for jid in ("job_1326381300833_0001", "job_1326381300833_0002", "job_1326381300833_0003"):
        jhs.routes[f"/ws/v1/history/mapreduce/jobs/{jid}"] = route
    rm = RMSettings(urls=("http://rm:8088",), user_name="amtuner")
    client = history_client(rm, [jhs.url], make_session(rm))
    records = [
        app(1), app(2), app(3), app(4, type="SPARK"), app(5, launch_ms=0, state="KILLED"),
    ]  # fmt: skip
    with caplog.at_level(logging.WARNING, "amtuner.record"):
        out = with_history(records, client)
    assert [r.id for r in out] == [r.id for r in records]
    assert (out[0].maps, out[0].reduces, out[0].map_ms, out[0].reduce_ms) == (1, 1, 2638, 124961)
    assert out[1:] == records[1:], "a job the server did not give stays as the RM told it"
    # One request per MapReduce app whose AM started, no HA probe, user.name as for the RM.
    assert [p.split("?")[0].rsplit("/", 1)[-1] for p in jhs.requests] == [
        "job_1326381300833_0001", "job_1326381300833_0002", "job_1326381300833_0003",
    ]  # fmt: skip
    assert all("user.name=amtuner" in p for p in jhs.requests)
    (warning,) = caplog.records
    assert "did not give 2 of 3 MapReduce apps" in warning.getMessage()
    assert "HTTP 404" in warning.getMessage()


def test_a_server_down_is_asked_once_a_poll(
    dead_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    rm = RMSettings(connect_timeout_seconds=0.5, read_timeout_seconds=0.5)
    client = history_client(rm, [dead_url], make_session(rm))
    records = [app(1), app(2), app(3)]
    with caplog.at_level(logging.WARNING, "amtuner.record"):
        assert with_history(records, client) == records
    (warning,) = caplog.records
    message = warning.getMessage()
    assert "did not give 3 of 3 MapReduce apps" in message
    assert "not asked about 2 after it failed" in message
    assert "no JobHistory server answered" in message


def test_a_recorded_app_keeps_its_figures_through_its_line() -> None:
    rec = dataclasses.replace(app(1), maps=4, reduces=0, map_ms=10, shuffle_ms=0, merge_ms=0,
                              reduce_ms=0)  # fmt: skip
    doc = json.loads(rec.line())
    assert AppRecord(**doc) == rec
    assert "maps" not in json.loads(rec.line(version=1))


def test_a_url_on_the_command_line_is_held_to_the_configs_rule() -> None:
    from amtuner.config import check_url

    assert check_url("http://jhs:19888/") == "http://jhs:19888"
    with pytest.raises(ValueError, match="must be an http:// or https:// URL"):
        check_url("jhs:19888")
