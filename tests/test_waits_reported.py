"""Why apps wait, as `once`, `status`, the audit line and the metrics say it: read from what
Hadoop 3.5.0's FairScheduler answered, with ``maxRunningApps`` 4 so that one of the two waiting
apps is held by it and the other by the AM share (tests/monitor/test_monitor_waits.py)."""

from __future__ import annotations

import argparse
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from amtuner import audit
from amtuner.commands import print_report
from amtuner.cycle import CycleReport
from amtuner.metrics import Metrics
from amtuner.model import (
    GLOBAL_TARGET,
    ControllerState,
    Decision,
    IdleAMs,
    Rule,
    SchedulerKind,
    WaitCause,
)
from amtuner.monitor.idle import IDLE_CURE
from amtuner.monitor.rest import build_observation
from amtuner.state import save_states, summarize
from amtuner.status import cmd_status
from tests.monitor.test_monitor_waits import documents, leaf_of

LEAF = "root.default"
LINE = (
    "1 max-apps in root.default (cure: maxRunningApps of queue root.default); "
    "1 queue-am-limit in root.default (cure: maxAMShare of queue root.default)"
)


@pytest.fixture
def report() -> CycleReport:
    metrics, scheduler = documents("fair")
    leaf_of(scheduler, SchedulerKind.FAIR)["maxApps"] = 4
    obs = build_observation(metrics, scheduler, time=1_700_000_000.0, source="rest", targets=[LEAF])
    return CycleReport(
        started=obs.time,
        duration_s=0.02,
        observation=obs,
        decisions=(
            Decision(0.25, 0.3, Rule.UNDER_ALLOCATION, "P 2 > P(t-1) 1 ...", LEAF),
            Decision(0.5, 0.5, Rule.HOLD, "...", GLOBAL_TARGET),
        ),
        applied=True,
    )


STATES = {LEAF: ControllerState(a=0.3, n=2), GLOBAL_TARGET: ControllerState(a=0.5)}


def test_once_prints_each_target_s_waits_with_the_knob(report: CycleReport) -> None:
    out = io.StringIO()
    print_report(report, out)
    waiting = [line for line in out.getvalue().splitlines() if line.startswith("waiting")]
    assert waiting == [f"waiting   root.default: {LINE}", f"waiting   global: {LINE}"]


def test_the_audit_line_carries_the_waits(report: CycleReport) -> None:
    [entry] = audit.change_entries(report, STATES, unit_mb=1024)
    assert entry["waits"] == [
        {"queue": LEAF, "cause": "max-apps", "apps": 1, "a_cures": False,
         "knob": "maxRunningApps of queue root.default"},
        {"queue": LEAF, "cause": "queue-am-limit", "apps": 1, "a_cures": True,
         "knob": "maxAMShare of queue root.default"},
    ]  # fmt: skip


def saved(tmp_path: Path, report: CycleReport) -> Path:
    """A config whose state file holds ``report``'s cycle, as the daemon saves it."""
    config = tmp_path / "amtuner.yaml"
    state = tmp_path / "state.json"
    config.write_text(
        json.dumps(
            {
                "rm": {"urls": ["http://rm:8088"]},
                "scheduler": {"kind": "fair", "config_file": str(tmp_path / "fair.xml")},
                "refresh": {"method": "none"},
                "state_file": str(state),
            }
        )
    )
    save_states(state, STATES, summarize(report, STATES))
    return config


def test_status_shows_the_waits_from_the_state_file(
    tmp_path: Path, report: CycleReport, capsys: pytest.CaptureFixture[str]
) -> None:
    config = saved(tmp_path, report)
    assert cmd_status(argparse.Namespace(config=config, lines=0, json=False)) == 0
    assert f"waiting     root.default: {LINE}" in capsys.readouterr().out.splitlines()
    assert cmd_status(argparse.Namespace(config=config, lines=0, json=True)) == 0
    doc = json.loads(capsys.readouterr().out)
    [decision, _] = doc["last_cycle"]["decisions"]
    assert [w["cause"] for w in decision["waits"]] == ["max-apps", "queue-am-limit"]


def test_the_gauge_has_every_cause_of_every_target(report: CycleReport) -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    assert registry.get_sample_value(
        "amtuner_waiting_apps", {"target": LEAF, "cause": "max-apps"}
    ) is None  # fmt: skip
    metrics.observe_cycle(report, STATES, unit_mb=1024, ended=1.0)
    for target in (LEAF, "global"):
        values = {
            str(c): registry.get_sample_value(
                "amtuner_waiting_apps", {"target": target, "cause": str(c)}
            )
            for c in WaitCause
        }
        assert values == {
            "max-apps": 1, "queue-am-limit": 1, "partition-am-limit": 0, "user-am-limit": 0,
            "user-limit": 0, "cluster-full": 0,
        }  # fmt: skip


def test_idle_ams_are_said_beside_the_waits(
    tmp_path: Path, report: CycleReport, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recorded leaf's three running apps as if they held their AM alone: `once`, the audit
    line and `status` say so for each target; none is said where none was looked for."""
    assert report.observation is not None
    out = io.StringIO()
    print_report(report, out)
    assert "idle AMs" not in out.getvalue()
    idle = IdleAMs(LEAF, 3, 3072, 3)
    report = replace(report, observation=replace(report.observation, idle_ams=(idle,)))
    out = io.StringIO()
    print_report(report, out)
    said = (
        f"3 of 3 running apps hold their AM alone (3072 MB) and ask for nothing (cure: {IDLE_CURE})"
    )
    lines = [line for line in out.getvalue().splitlines() if line.startswith("idle AMs")]
    assert lines == [f"idle AMs  root.default: {said}", f"idle AMs  global: {said}"]
    [entry] = audit.change_entries(report, STATES, unit_mb=1024)
    assert entry["idle_ams"] == {"apps": 3, "running": 3, "memory_mb": 3072}
    config = saved(tmp_path, report)
    assert cmd_status(argparse.Namespace(config=config, lines=0, json=False)) == 0
    assert f"idle AMs    global: {said}" in capsys.readouterr().out.splitlines()
