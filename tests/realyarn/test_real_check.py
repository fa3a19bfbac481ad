"""`amtuner check` against Hadoop's own RM: the pre-flight an operator runs first."""

from __future__ import annotations

from pathlib import Path

from amtuner.realyarn import RealRM
from tests.e2e.conftest import amtuner
from tests.realyarn.test_real_once import once_config


def test_check_passes_against_the_real_rm(real_rm: RealRM, tmp_path: Path) -> None:
    before = real_rm.scheduler_file.read_bytes()
    cfg = once_config(tmp_path, real_rm, controller={"a_min": 0.2})
    run = amtuner("check", "--config", str(cfg))
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert f"rm        ok: {real_rm.spec.scheduler} scheduler" in out
    assert f"global A = {real_rm.spec.am_share:g}" in out
    assert real_rm.scheduler_file.read_bytes() == before, "check must never write"
