"""The simulator stays divided into parts one can read whole: no module over 600 lines, no
function over ruff's McCabe complexity 15. Checked here so a change that grows a part past the
limit is split when it is made, not in a later clean-up."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SIM = Path(__file__).resolve().parents[2] / "amtuner" / "sim"
MAX_LINES = 600
MAX_COMPLEXITY = 15


def test_no_simulator_module_exceeds_600_lines() -> None:
    sizes = {
        str(p.relative_to(SIM)): len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted(SIM.rglob("*.py"))
    }
    assert len(sizes) > 20, sizes
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_no_simulator_function_exceeds_complexity_15() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    run = subprocess.run(
        [
            ruff,
            "check",
            "--no-cache",
            "--select",
            "C901",
            "--config",
            f"lint.mccabe.max-complexity={MAX_COMPLEXITY}",
            str(SIM),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
