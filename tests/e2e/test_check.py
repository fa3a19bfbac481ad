"""`amtuner check`: the pre-flight an operator runs before letting amtuner write anything."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_faults import healthy

RISKY = b"""<?xml version="1.0"?>
<allocations>
  <queueMaxAppsDefault>20</queueMaxAppsDefault>
  <queue name="default">
    <maxAMShare>-1</maxAMShare>
  </queue>
</allocations>
"""
SAFE = b"""<?xml version="1.0"?>
<allocations>
  <queueMaxAMShareDefault>0.5</queueMaxAMShareDefault>
</allocations>
"""


def check(tmp_path: Path, url: str, sched: bytes, **sections: object) -> tuple[int, str]:
    path = tmp_path / "fair-scheduler.xml"
    path.write_bytes(sched)
    sections = {"scheduler": {"kind": "auto", "config_file": str(path)}, **sections}
    cfg = write_config(tmp_path / "amtuner.yaml", rm={"urls": [url]}, **sections)
    run = amtuner("check", "--config", str(cfg))
    assert path.read_bytes() == sched, "check must never write"
    return run.returncode, run.stdout + run.stderr


def test_a_sound_setup_passes(tmp_path: Path, canned_rm) -> None:
    code, out = check(
        tmp_path, canned_rm(healthy), SAFE, refresh={"method": "none"}, controller={"a_min": 0.1}
    )
    assert code == 0, out
    assert "rm        ok: fair scheduler" in out and "global A = 0.5" in out
    assert "risk" not in out


def test_risky_settings_are_named(tmp_path: Path, canned_rm) -> None:
    code, out = check(
        tmp_path, canned_rm(healthy), RISKY,
        scheduler={"kind": "fair", "config_file": str(tmp_path / "fair-scheduler.xml"),
                   "targets": ["root.default"]},
        controller={"a_min": 0.05},
    )
    assert code == 1, out
    assert "queueMaxAppsDefault 20 also applies to the root queue" in out
    assert "root.default: maxAMShare is -1" in out


def test_an_a_min_that_cannot_hold_one_am_is_a_risk(tmp_path: Path, canned_rm) -> None:
    # 0.05 x 32768 MB = 1638 MB < one 2048 MB AM.
    code, out = check(tmp_path, canned_rm(healthy), SAFE)
    assert code == 1, out
    assert "less than one AM (2048 MB): no job could start" in out


def test_unreachable_rm_and_bad_config(tmp_path: Path) -> None:
    code, out = check(tmp_path, "http://127.0.0.1:9", SAFE)
    assert code == 3 and "UNREACHABLE (rm-unreachable)" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("controller: {t2: abc}\n")
    run = amtuner("check", "--config", str(bad))
    assert run.returncode == 2
    assert "controller.t2" in run.stdout


def test_a_capacity_scheduler_without_refresh_is_refused(tmp_path: Path) -> None:
    """kind auto resolves to capacity only once the RM answers; a CapacityScheduler never
    reloads its file by itself, so `refresh.method: none` would write changes the RM never
    loads. `check` and `once` both refuse it (exit 2), naming the key; nothing is written."""
    from amtuner.demo import running_sim
    from amtuner.sim.simulation import default_scheduler_config

    sched = tmp_path / "conf" / "capacity-scheduler.xml"
    sched.parent.mkdir()
    sched.write_bytes(default_scheduler_config("capacity", ["root.default"], am_share=0.1))
    before = sched.read_bytes()
    argv = ["--scheduler", "capacity", "--workload", "paper:mixed", "--port", "0",
            "--speed", "20", "--scheduler-config", str(sched)]
    with running_sim(argv) as (url, _):
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [url]},
            scheduler={"kind": "auto", "config_file": str(sched)}, refresh={"method": "none"},
        )
        for command in ("check", "once"):
            run = amtuner(command, "--config", str(cfg))
            out = run.stdout + run.stderr
            assert run.returncode == 2, out
            assert "refresh.method" in out and "never reloads" in out, out
            assert "Traceback" not in out, out
    assert sched.read_bytes() == before
