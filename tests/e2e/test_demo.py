"""`amtuner demo` as a newcomer runs it: a real simulated RM over HTTP, the chosen policy."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("policy", ["paper", "adaptive"])
def test_demo_runs_the_chosen_policy_against_a_simulated_rm(policy: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "amtuner", "demo", "--policy", policy, "--speed", "50",
         "--max-cycles", "3", "--dry-run"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert f"policy {policy};" in proc.stdout
    cycles = [line for line in proc.stdout.splitlines() if re.match(r"\s+\d+\s+\d+\s", line)]
    assert len(cycles) == 3, proc.stdout
    assert "3 cycles; the controller would have changed A" in proc.stdout
