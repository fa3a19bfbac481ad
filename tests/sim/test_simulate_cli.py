"""`amtuner simulate` as a user runs it: a real subprocess, real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from amtuner.sim.cli import parse_policy


def _simulate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amtuner", "simulate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_same_seed_gives_byte_identical_json() -> None:
    args = (
        "--scheduler",
        "fair",
        "--workload",
        "paper:mixed",
        "--policy",
        "fixed:0.4",
        "--seed",
        "3",
        "--json",
        "--no-timing",
    )
    first, second = _simulate(*args), _simulate(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    result = json.loads(first.stdout)
    assert result["finished"] is True and result["wall_seconds"] == 0.0
    assert result["jobs_completed"] == result["jobs_total"] == 30
    assert result["a_trace"] == [[0.0, 0.4]]
    other = _simulate(*args[:-3], "4", "--json", "--no-timing")
    assert other.stdout != first.stdout


def test_fixed_share_overrides_the_global_share_of_a_given_file(tmp_path: Path) -> None:
    config = tmp_path / "capacity-scheduler.xml"
    config.write_text(
        "<configuration>"
        "<property><name>yarn.scheduler.capacity.root.queues</name><value>default</value>"
        "</property><property><name>yarn.scheduler.capacity.root.default.capacity</name>"
        "<value>100</value></property>"
        "<property><name>yarn.scheduler.capacity.maximum-am-resource-percent</name>"
        "<value>0.1</value></property></configuration>"
    )
    proc = _simulate(
        "--scheduler",
        "capacity",
        "--workload",
        "paper:grep",
        "--policy",
        "fixed:0.6",
        "--scheduler-config",
        str(config),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["a_trace"] == [[0.0, 0.6]]


def test_a_run_that_cannot_finish_exits_1_and_says_why() -> None:
    proc = _simulate(
        "--scheduler",
        "fair",
        "--workload",
        "paper:grep",
        "--policy",
        "fixed:0",
        "--max-sim-seconds",
        "600",
        "--json",
    )
    assert proc.returncode == 1
    result = json.loads(proc.stdout)
    assert result["finished"] is False and result["stopped_reason"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--policy", "pid"), "unknown policy 'pid'; known: fixed:A"),
        (("--policy", "fixed:1.5"), "within [0, 1]"),
        (("--workload", "nope:x"), "nope"),
    ],
)
def test_bad_arguments_are_refused_with_a_reason(args: tuple[str, ...], message: str) -> None:
    base = {"--scheduler": "capacity", "--workload": "paper:grep", "--policy": "fixed:0.5"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    proc = _simulate(*[x for kv in base.items() for x in kv])
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == ""


def test_parse_policy() -> None:
    assert parse_policy("fixed:0.25") == 0.25
    assert parse_policy("fixed:-1") == -1.0
    with pytest.raises(ValueError, match="A must be a number"):
        parse_policy("fixed:half")
