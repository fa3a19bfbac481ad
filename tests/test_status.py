"""`amtuner status` and the state file's "last_cycle" summary (old files still load)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from amtuner import audit
from amtuner.cycle import CycleReport
from amtuner.exitcodes import ExitCode
from amtuner.model import ControllerState, Decision, Observation, Rule, SchedulerKind
from amtuner.state import StateError, load_last_cycle, load_states, save_states, summarize
from amtuner.status import cmd_status

STATES = {"": ControllerState(a=0.3, n=4, prev_pending=9, prev_running=2)}
REPORT = CycleReport(
    started=1_700_000_000.0,
    duration_s=0.02,
    observation=Observation(
        time=1_700_000_000.0,
        scheduler=SchedulerKind.CAPACITY,
        pending_apps=9,
        running_apps=2,
        memory_used_mb=4096,
        memory_total_mb=16384,
    ),
    decisions=(Decision(0.2, 0.3, Rule.UNDER_ALLOCATION, "P 9 > P(t-1) 4 and ...", ""),),
    applied=True,
    message="wrote /etc/hadoop/conf/capacity-scheduler.xml and refreshed with none",
)


def test_a_file_without_last_cycle_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    old = {
        "version": 1,
        "targets": {"": {"a": 0.3, "n": 4, "prev_pending": 9, "prev_running": 2, "extra": {}}},
    }
    path.write_text(json.dumps(old))
    assert load_states(path) == STATES
    assert load_last_cycle(path) is None
    assert load_last_cycle(tmp_path / "missing.json") is None


def test_the_summary_round_trips_beside_the_states(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    save_states(path, STATES, summarize(REPORT, STATES))
    assert load_states(path) == STATES
    last = load_last_cycle(path)
    assert last is not None
    assert (last["time"], last["result"], last["error"]) == (
        "2023-11-14T22:13:20Z",
        "applied",
        None,
    )
    assert last["decisions"] == [
        {
            "target": "",
            "old_a": 0.2,
            "new_a": 0.3,
            "rule": "under-allocation",
            "case": "under-allocation",
            "reason": "P 9 > P(t-1) 4 and ...",
            "n": 4,
            "waits": [],
        }
    ]
    save_states(path, STATES)  # as `amtuner once` writes it
    assert load_last_cycle(path) is None


def test_a_malformed_summary_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"version": 1, "targets": {}, "last_cycle": [1]}))
    with pytest.raises(StateError, match="last_cycle"):
        load_last_cycle(path)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "amtuner.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "scheduler": {"config_file": "cs.xml"},
                "state_file": "state.json",
                "audit_log": "audit.jsonl",
            }
        )
    )
    return path


def test_status_shows_the_last_cycle_state_and_audit_lines(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_states(config.parent / "state.json", STATES, summarize(REPORT, STATES))
    for i in range(4):
        report = replace(REPORT, started=REPORT.started + 30 * i)
        audit.record(config.parent / "audit.jsonl", report, STATES, unit_mb=1024)
    assert cmd_status(argparse.Namespace(config=config, lines=3, json=False)) == 0
    out = capsys.readouterr().out
    assert "last cycle  2023-11-14T22:13:20Z applied: wrote /etc/hadoop" in out
    assert "observed    P=9 R=2 memory 4096/16384 MB (0.25)" in out
    assert "decision    global: 0.2 -> 0.3 [under-allocation] P 9 > P(t-1) 4" in out
    assert "state       global: A=0.3 n=4 P(t-1)=9 R(t-1)=2" in out
    # Each rule named is explained once, in the words of `Rule.meaning`.
    meanings = [line for line in out.splitlines() if line.startswith("meaning")]
    assert meanings == ["meaning     under-allocation: " + Rule.UNDER_ALLOCATION.meaning]
    changes = [line for line in out.splitlines() if line.startswith("  2023")]
    assert [line.split()[0] for line in changes] == [
        "2023-11-14T22:13:50Z",
        "2023-11-14T22:14:20Z",
        "2023-11-14T22:14:50Z",
    ]


def test_status_of_a_failed_cycle_names_the_error(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failed = CycleReport(
        started=REPORT.started,
        duration_s=3.0,
        observation=None,
        error="rm-unreachable",
        message="no RM answered",
    )
    save_states(config.parent / "state.json", STATES, summarize(failed, STATES))
    assert cmd_status(argparse.Namespace(config=config, lines=5, json=False)) == 0
    out = capsys.readouterr().out
    assert "error rm-unreachable: no RM answered" in out
    assert "observed" not in out


def test_no_state_yet_is_a_clear_error(config: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "amtuner", "status", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == ExitCode.FAILED
    assert "no state yet in" in proc.stderr and proc.stdout == ""


def test_a_corrupt_state_file_is_reported(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (config.parent / "state.json").write_text("{")
    assert cmd_status(argparse.Namespace(config=config, lines=5, json=False)) == 2
    assert "move it aside" in capsys.readouterr().err


def test_status_names_the_adaptive_case_beside_the_rule(tmp_path: Path) -> None:
    """The adaptive policy's decisions carry a case finer than the paper's rule; status shows
    both, and records without a case (older daemons, the paper's policy) show the rule."""
    from amtuner.status import _label

    assert _label({"rule": "hold", "case": "dead-band"}) == "hold: dead-band"
    assert _label({"rule": "under-allocation", "case": "under-allocation"}) == "under-allocation"
    assert _label({"rule": "hold"}) == "hold"
    from amtuner.status import _meanings

    named = _meanings([{"rule": "hold", "case": "dead-band"}, {"rule": "hold"}])
    assert [name for name, _ in named] == ["hold", "dead-band"]
    assert all(meaning for _, meaning in named)


def test_status_names_labelled_partitions_as_not_tuned(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    obs = replace(REPORT.observation, labelled_partitions=("gpu", "ssd"))
    labelled = replace(REPORT, observation=obs)
    save_states(config.parent / "state.json", STATES, summarize(labelled, STATES))
    assert cmd_status(argparse.Namespace(config=config, lines=0, json=False)) == 0
    out = capsys.readouterr().out
    assert "partitions  labelled partitions gpu, ssd exist: their AM shares are tuned only" in out
    # Without labels, no such line.
    save_states(config.parent / "state.json", STATES, summarize(REPORT, STATES))
    assert cmd_status(argparse.Namespace(config=config, lines=0, json=False)) == 0
    assert "partitions" not in capsys.readouterr().out


def amtuner_status(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amtuner", "status", "--config", str(config), *extra],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_status_json_is_what_the_text_shows(config: Path) -> None:
    save_states(config.parent / "state.json", STATES, summarize(REPORT, STATES))
    audit.record(config.parent / "audit.jsonl", REPORT, STATES, unit_mb=1024)
    proc = amtuner_status(config, "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["state_file"] == str(config.parent / "state.json")
    assert doc["targets"] == {"": {"a": 0.3, "n": 4, "prev_pending": 9, "prev_running": 2}}
    assert doc["last_cycle"]["result"] == "applied"
    assert doc["last_cycle"]["decisions"][0]["new_a"] == 0.3
    assert [c["new"] for c in doc["changes"]] == [0.3]


def test_a_reader_that_closes_the_pipe_gets_no_traceback(config: Path) -> None:
    """`amtuner status | head -1`: the rest of the output has no reader; a shell would report
    the command as stopped by SIGPIPE (141), and nothing is printed on stderr."""
    save_states(config.parent / "state.json", STATES, summarize(REPORT, STATES))
    for i in range(1000):  # more than a pipe buffer (64 KiB): the writer meets the closed end
        audit.record(config.parent / "audit.jsonl", replace(REPORT, started=i), STATES,
                     unit_mb=1024)  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "amtuner", "status", "--config", str(config), "--lines", "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"state file")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == ExitCode.BROKEN_PIPE, err
    assert err == ""
