"""The audit log: one fsynced JSON line per applied change, shared by the daemon and `once`."""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml

from amtuner import audit, commands
from amtuner.cycle import CycleReport
from amtuner.exitcodes import ExitCode
from amtuner.model import ControllerState, Decision, Observation, Rule, SchedulerKind

OBS = Observation(
    time=1_700_000_000.0,
    scheduler=SchedulerKind.CAPACITY,
    pending_apps=12,
    running_apps=3,
    memory_used_mb=40_960,
    memory_total_mb=102_400,
    source="rest http://rm1:8088",
)
UP = Decision(0.1, 0.2, Rule.UNDER_ALLOCATION, "P 12 > P(t-1) 9 ...", "root.a")
HOLD = Decision(0.3, 0.3, Rule.HOLD, "P 12 <= P(t-1) 12 ...", "root.b")
APPLIED = CycleReport(
    started=1_700_000_000.0,
    duration_s=0.1,
    observation=OBS,
    decisions=(UP, HOLD),
    applied=True,
    refresh="yarn rmadmin -refreshQueues",
)
BEFORE = {"root.a": ControllerState(a=0.1, n=3, prev_pending=9, prev_running=4)}


def test_one_line_per_changed_target_with_the_inputs_that_fired_it(tmp_path: Path) -> None:
    path = tmp_path / "log" / "audit.jsonl"
    assert audit.record(path, APPLIED, BEFORE, unit_mb=1024) == 1
    (line,) = path.read_text().splitlines()
    entry = json.loads(line)
    assert entry["time"] == "2023-11-14T22:13:20Z"
    assert (entry["target"], entry["old"], entry["new"]) == ("root.a", 0.1, 0.2)
    assert (entry["rule"], entry["direction"]) == ("under-allocation", "up")
    inputs = entry["inputs"]
    assert (inputs["pending_apps"], inputs["prev_pending_apps"], inputs["n"]) == (12, 9, 3)
    assert inputs["memory_used_ratio"] == 0.4
    # M_tasks/M_total = (40960 - 3 x 1024 x 2) / 102400
    assert inputs["task_memory_ratio"] == 0.34
    assert entry["refresh"] == "yarn rmadmin -refreshQueues"


def test_lines_are_appended_never_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"kept": true}\n')
    audit.record(path, APPLIED, BEFORE, unit_mb=1024)
    audit.record(path, replace(APPLIED, started=APPLIED.started + 30), BEFORE, unit_mb=1024)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0] == {"kept": True}
    assert [x["time"] for x in lines[1:]] == ["2023-11-14T22:13:20Z", "2023-11-14T22:13:50Z"]


@pytest.mark.parametrize(
    "report",
    [
        replace(APPLIED, applied=False),  # dry-run, paused, or a failed write
        replace(APPLIED, decisions=(HOLD,)),
        replace(APPLIED, observation=None, error="rm-unreachable"),
    ],
)
def test_nothing_is_written_without_an_applied_change(tmp_path: Path, report: CycleReport) -> None:
    path = tmp_path / "audit.jsonl"
    assert audit.record(path, report, BEFORE, unit_mb=1024) == 0
    assert not path.exists()


def test_without_a_file_the_change_still_goes_to_the_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="amtuner.audit"):
        assert audit.record(None, APPLIED, BEFORE, unit_mb=1024) == 0
    assert "change root.a: 0.1 -> 0.2 [under-allocation]" in caplog.text


def test_an_unwritable_log_is_an_audit_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(audit.AuditError, match="cannot append to audit log"):
        audit.record(blocker / "audit.jsonl", APPLIED, BEFORE, unit_mb=1024)


def test_tail_returns_the_last_records_and_skips_garbage(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_text('{"i": 1}\nnot json\n{"i": 2}\n[3]\n{"i": 4}\n{"i": 5')
    assert audit.tail(path, 2) == [{"i": 2}, {"i": 4}]
    assert audit.tail(path, 10) == [{"i": 1}, {"i": 2}, {"i": 4}]
    assert audit.tail(tmp_path / "missing", 3) == []


@dataclass
class FakeCycle:
    report: CycleReport

    def run(
        self, states: Mapping[str, ControllerState], pending: object = None
    ) -> tuple[CycleReport, dict]:
        return self.report, {"root.a": ControllerState(a=0.2, n=4, prev_pending=12)}


def test_once_records_its_applied_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "amtuner.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "scheduler": {"config_file": str(tmp_path / "cs.xml")},
                "state_file": str(tmp_path / "state.json"),
                "audit_log": str(tmp_path / "audit.jsonl"),
            }
        )
    )
    monkeypatch.setattr(commands, "build_cycle", lambda cfg: FakeCycle(APPLIED))
    args = argparse.Namespace(config=config, dry_run=False)
    assert commands.cmd_once(args) == ExitCode.OK
    (entry,) = audit.tail(tmp_path / "audit.jsonl", 5)
    assert (entry["target"], entry["new"]) == ("root.a", 0.2)

    (tmp_path / "audit.jsonl").unlink()
    (tmp_path / "audit.jsonl").mkdir()
    assert commands.cmd_once(args) == ExitCode.RECORD  # applied, not "nothing changed"
    assert "cannot append to audit log" in capsys.readouterr().err
