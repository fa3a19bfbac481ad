"""`amtuner simulate --policy paper`: the daemon's cycle drives the simulated RM in virtual time."""

from __future__ import annotations

import json

from tests.e2e.conftest import amtuner


def simulate(*extra: str) -> dict:
    run = amtuner(
        "simulate", "--scheduler", "capacity", "--workload", "paper:mixed", "--json",
        "--no-timing", *extra,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_the_paper_policy_moves_a_and_beats_the_default() -> None:
    default = simulate("--policy", "fixed:0.1")
    controlled = simulate("--policy", "paper")
    assert controlled["a_trace"][0] == [0.0, 0.1]
    assert len(controlled["a_trace"]) > 2
    assert controlled["makespan_s"] < 0.5 * default["makespan_s"]


def test_a_controlled_run_is_deterministic() -> None:
    args = ("--policy", "paper", "--seed", "3")
    assert simulate(*args) == simulate(*args)


def test_an_unknown_policy_is_a_usage_error() -> None:
    run = amtuner("simulate", "--scheduler", "fair", "--workload", "paper:grep", "--policy", "pid")
    assert run.returncode == 2
    assert "unknown policy 'pid'" in run.stderr and "fixed:A" in run.stderr


