"""No traceback for any input: what the RM answers, what is found in the state file, the audit
log and the scheduler file, and the machine amtuner starts on. Each is an error with a reason
(or, for the scheduler file, read as any other); none is a traceback or a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amtuner import audit, lock
from amtuner.config import RMSettings
from amtuner.cycle import CycleReport
from amtuner.executor import SchedulerFile
from amtuner.model import Decision, Observation, Rule, SchedulerKind
from amtuner.monitor import ObservationError, make_session
from amtuner.monitor.rest import build_observation, decode_json
from amtuner.state import StateError, load_states
from tests.e2e.conftest import amtuner, write_config

DEEP = 100_000

METRICS = {
    "clusterMetrics": {
        "appsPending": 1, "appsRunning": 1, "allocatedMB": 1024, "totalMB": 8192,
        "appsSubmitted": 2,
    }
}  # fmt: skip
SCHEDULER = {
    "scheduler": {
        "schedulerInfo": {
            "type": "fairScheduler",
            "rootQueue": {
                "queueName": "root",
                "childQueues": {"queue": [{
                    "queueName": "root.default", "type": "fairSchedulerLeafQueueInfo",
                    "numPendingApps": 1, "numActiveApps": 1,
                    "usedResources": {"memory": 1024, "vCores": 1},
                }]},
            },
        }
    }
}  # fmt: skip


def observe(metrics: Any, scheduler: Any = SCHEDULER) -> Observation:
    return build_observation(metrics, scheduler, time=0.0, source="rest http://rm:8088")


def test_the_documents_above_are_a_good_observation() -> None:
    assert observe(METRICS).pending_apps == 1


@pytest.mark.parametrize("body", ["[" * DEEP + "]" * DEEP, '{"a":' * DEEP + "1" + "}" * DEEP])
def test_deep_json_from_the_rm_is_a_bad_response(body: str) -> None:
    with pytest.raises(ObservationError) as err:
        decode_json(body.encode(), "application/json", "http://rm:8088/ws/v1/cluster/metrics")
    assert err.value.reason == "bad-response"
    assert "nested deeper" in str(err.value)


@pytest.mark.parametrize(
    "value", [10**30, 10**400, 1e300, float("inf"), float("nan"), -1, 1.5, "7", None, True]
)
def test_numbers_no_rm_reports_are_refused(value: object) -> None:
    doc = json.loads(json.dumps(METRICS))
    doc["clusterMetrics"]["totalMB"] = value
    with pytest.raises(ObservationError) as err:
        observe(doc)
    assert err.value.reason == "bad-response"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=30,
)


def _mutations(doc: Any) -> st.SearchStrategy[Any]:
    """The document with one value anywhere in it replaced by an arbitrary JSON value."""
    paths: list[tuple[Any, ...]] = []

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        paths.append(path)
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (*path, k))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, (*path, i))

    walk(doc, ())

    def put(path: tuple[Any, ...], value: Any) -> Any:
        if not path:
            return value
        copy = json.loads(json.dumps(doc))
        node = copy
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return copy

    return st.builds(put, st.sampled_from(paths), json_values)


@given(_mutations(METRICS), _mutations(SCHEDULER))
def test_any_answer_is_an_observation_or_a_reason(metrics: Any, scheduler: Any) -> None:
    try:
        obs = observe(metrics, scheduler)
    except ObservationError as exc:
        assert exc.message
        return
    assert 0 <= obs.memory_used_mb <= obs.memory_total_mb


def _state_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "state.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text",
    [
        '{"version": 1, "targets": {"": {"a": 0.5, "n": 1, "extra": {"changed_at": '
        + "1" * 400
        + "}}}}",
        '{"version": 1, "targets": ' + "[" * DEEP + "]" * DEEP + "}",
        '{"version": 1, "targets": {"": {"a": 0.5, "n": ' + "9" * 5000 + "}}}",
    ],
    ids=["huge number", "deep", "too many digits"],
)
def test_a_hostile_state_file_is_a_state_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(StateError, match="move it aside"):
        load_states(_state_file(tmp_path, text))


@pytest.mark.timeout(30)
def test_a_fifo_as_state_file_is_refused_unopened(tmp_path: Path) -> None:
    fifo = tmp_path / "state.json"
    os.mkfifo(fifo)
    with pytest.raises(StateError, match="FIFO"):
        load_states(fifo)


def _applied_report() -> CycleReport:
    obs = Observation(
        time=0.0, scheduler=SchedulerKind.FAIR, pending_apps=1, running_apps=1,
        memory_used_mb=1024, memory_total_mb=8192, source="rest http://rm:8088",
    )  # fmt: skip
    change = Decision(old_a=0.5, new_a=0.6, rule=Rule.UNDER_ALLOCATION, reason="test")
    return CycleReport(started=0.0, duration_s=0.0, observation=obs, decisions=(change,),
                       applied=True)  # fmt: skip


@pytest.mark.timeout(30)
def test_a_fifo_as_audit_log_is_refused_unopened(tmp_path: Path) -> None:
    fifo = tmp_path / "audit.log"
    os.mkfifo(fifo)
    with pytest.raises(audit.AuditError, match="FIFO"):
        audit.record(fifo, _applied_report(), {}, unit_mb=1024)
    with pytest.raises(audit.AuditError, match="FIFO"):
        audit.tail(fifo, 5)


@pytest.mark.timeout(60)
def test_status_with_a_fifo_as_audit_log_says_why_it_shows_no_changes(tmp_path: Path) -> None:
    fifo = tmp_path / "audit.log"
    os.mkfifo(fifo)
    _state_file(tmp_path, '{"version": 1, "targets": {"": {"a": 0.5, "n": 1}}}')
    config = write_config(
        tmp_path / "amtuner.yaml",
        scheduler={"kind": "fair", "config_file": str(tmp_path / "fair-scheduler.xml")},
        audit_log=str(fifo),
    )
    status = amtuner("status", "--config", str(config))
    assert status.returncode == 0, status.stderr
    assert "FIFO" in status.stderr and "Traceback" not in status.stderr


@pytest.mark.parametrize("kind", [SchedulerKind.FAIR, SchedulerKind.CAPACITY])
def test_a_deep_scheduler_file_is_read_and_edited(tmp_path: Path, kind: SchedulerKind) -> None:
    path = tmp_path / "scheduler.xml"
    root = "allocations" if kind is SchedulerKind.FAIR else "configuration"
    path.write_bytes(
        f"<?xml version='1.0'?><{root}>".encode()
        + b"<x>" * DEEP + b"</x>" * DEEP
        + f"</{root}>".encode()
    )  # fmt: skip
    edit = SchedulerFile.read(path, kind).edit({"": 0.3})
    assert edit.changed and edit.targets[""][1] == 0.3


def test_a_missing_client_certificate_is_a_start_up_error(tmp_path: Path) -> None:
    with pytest.raises(ObservationError, match=r"rm\.client_cert"):
        make_session(RMSettings(client_cert=str(tmp_path / "missing.pem")))
    config = write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": ["https://127.0.0.1:1"], "client_cert": str(tmp_path / "missing.pem")},
        scheduler={"kind": "fair", "config_file": str(tmp_path / "fair-scheduler.xml")},
        refresh={"method": "none"},
    )
    for command in ("once", "run"):
        proc = amtuner(command, "--config", str(config))
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "missing.pem" in proc.stderr and "Traceback" not in proc.stderr


def test_a_lock_file_that_cannot_be_opened_is_not_locked(tmp_path: Path) -> None:
    """Not "another process holds it" (exit 7, try again): an error that names the file."""
    (tmp_path / "state.json.lock").mkdir()  # EISDIR, for root as for anyone
    with pytest.raises(lock.LockFileError, match="cannot open the lock file"):
        lock.check(tmp_path / "state.json.lock")
    config = write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": ["http://127.0.0.1:1"]},
        scheduler={"kind": "fair", "config_file": str(tmp_path / "fair-scheduler.xml")},
        refresh={"method": "none"},
    )
    for command in ("once", "run"):
        proc = amtuner(command, "--config", str(config))
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "cannot open the lock file" in proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr


AS_NOBODY = """
import os, sys
from amtuner.sim import native
if os.geteuid() == 0:
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
print(native.activate())
"""
"""Root reads any directory, so as root the process drops to nobody once amtuner is loaded (its
interpreter may live where nobody cannot read)."""


def test_an_unreadable_home_runs_the_simulator_as_python() -> None:
    home = Path(tempfile.mkdtemp(prefix="amtuner-home-"))
    try:
        home.chmod(0o700 if os.geteuid() == 0 else 0o000)
        env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME",
                                                               "AMTUNER_NATIVE_DIR")}
        proc = subprocess.run(
            [sys.executable, "-c", AS_NOBODY], capture_output=True, text=True, timeout=60,
            env={**env, "HOME": str(home)},
        )  # fmt: skip
    finally:
        home.chmod(0o700)
        home.rmdir()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


def test_a_queue_with_more_pending_apps_than_it_holds_is_refused() -> None:
    """A CapacityScheduler leaf counts its apps (``numApplications``, pending and active): one
    that says more are pending than it holds is no figure a LeafQueue reports."""
    leaf = {
        "type": "capacitySchedulerLeafQueueInfo", "queueName": "default",
        "queuePath": "root.default", "numPendingApplications": 9, "numActiveApplications": 1,
        "numApplications": 3, "resourcesUsed": {"memory": 1024, "vCores": 1},
    }  # fmt: skip
    doc = {"scheduler": {"schedulerInfo": {
        "type": "capacityScheduler", "queueName": "root", "queues": {"queue": [leaf]},
    }}}  # fmt: skip
    with pytest.raises(ObservationError, match="9 apps pending, more than the 3 it holds"):
        observe(METRICS, doc)
    leaf["numApplications"] = 10
    assert observe(METRICS, doc).queue("root.default") is not None
