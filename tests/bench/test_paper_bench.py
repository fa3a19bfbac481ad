"""`amtuner bench paper`: the paper's grid, its JSON, its figure, and the paper's own claims."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from amtuner.bench.paper import FIXED_VALUES, GROUPS
from tests.e2e.conftest import amtuner

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path, str]:
    out = tmp_path_factory.mktemp("bench")
    run = amtuner(
        "bench", "paper", "--scheduler", "both", "--workers", "2", "--policies", "adaptive",
        "--json", str(out / "out.json"), "--plot", str(out / "out.png"),
    )  # 10 seeds: ~5 s
    assert run.returncode == 0, run.stderr
    return json.loads((out / "out.json").read_text()), out / "out.png", run.stdout


def test_json_has_every_figure_per_scheduler_and_group(bench: tuple[dict, Path, str]) -> None:
    summary, _, _ = bench
    for kind in ("capacity", "fair"):
        for group in GROUPS:
            g = summary[kind][group]
            for key in ("default_makespan_s", "best_fixed_a", "best_fixed_makespan_s",
                        "controller_makespan_s"):
                assert g[key] is not None, (kind, group, key)
            assert set(g["fixed_makespan_s"]) == {f"{a:.1f}" for a in FIXED_VALUES}


def test_the_trade_off_has_an_interior_optimum(bench: tuple[dict, Path, str]) -> None:
    """Too low and too high are both slower; A = 1.0 lets AMs starve their own tasks."""
    summary, _, _ = bench
    for kind in ("capacity", "fair"):
        for group in GROUPS:
            g = summary[kind][group]
            assert 0.1 < g["best_fixed_a"] < 1.0
            fixed = g["fixed_makespan_s"]
            assert fixed["0.1"] > g["best_fixed_makespan_s"] < fixed["0.9"]
            assert fixed["1.0"] is None


def test_the_papers_claims_hold_and_adaptive_nears_the_best(bench: tuple[dict, Path, str]) -> None:
    summary, _, stdout = bench
    assert summary["heartbeats"] == "hadoop3"
    # The paper's claim, its controller within 7 % of its best fixed value, holds on the
    # CapacityScheduler. On the FairScheduler each move waits for the RM's own poll, 5-15 s
    # after the write: 1.06-1.11 (docs/results.md).
    for kind, bound in (("capacity", 1.07), ("fair", 1.12)):
        for group in GROUPS:
            g = summary[kind][group]
            assert g["controller_vs_best"] <= bound, (kind, group, g)
    for group in GROUPS:
        g = summary["capacity"][group]
        assert g["controller_makespan_s"] < 0.5 * g["default_makespan_s"], group
    # `adaptive` within 3 % of the best fixed value on every group (the fidelity issue's bar).
    for kind in ("capacity", "fair"):
        for group in GROUPS:
            g = summary[kind][group]
            assert g["policy_vs_best"]["adaptive"] <= 1.03, (kind, group, g)
    assert "best fixed (A)" in stdout


def test_the_figure_is_a_png_of_a_readable_size(bench: tuple[dict, Path, str]) -> None:
    _, png, _ = bench
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 800 and height >= 400
