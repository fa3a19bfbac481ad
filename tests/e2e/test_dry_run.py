"""A dry run shows what the live run would do: the same baseline, the same decision, the same
diff, also when an admin changed the file since amtuner last wrote it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from amtuner.model import ControllerState
from amtuner.sim.simulation import default_scheduler_config
from amtuner.state import load_states, save_states
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_faults import healthy

pytestmark = pytest.mark.slow

DECISION = re.compile(r"^decision  .*$", re.M)


def test_after_an_admins_edit_dry_run_and_live_start_from_the_file(
    tmp_path: Path, canned_rm
) -> None:
    """amtuner last wrote 0.3 (the state says so); an admin has since set 0.6. A live cycle
    takes the file's 0.6 as its start; the dry run before it must show the same, not a move
    from 0.3 that would undo the admin's value."""
    sched = tmp_path / "fair-scheduler.xml"
    sched.write_bytes(default_scheduler_config("fair", ["root.default"], am_share=0.6))
    state = tmp_path / "state.json"
    save_states(state, {"": ControllerState(a=0.3, n=3, prev_pending=5, prev_running=6)})
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [canned_rm(healthy)]},
        scheduler={"kind": "fair", "config_file": str(sched)}, refresh={"method": "none"},
    )  # fmt: skip
    dry = amtuner("once", "--config", str(cfg), "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    live = amtuner("once", "--config", str(cfg))
    assert live.returncode == 0, live.stdout + live.stderr
    assert DECISION.findall(dry.stdout) == DECISION.findall(live.stdout), (dry.stdout, live.stdout)
    assert "global: 0.6 -> " in dry.stdout
    # The diff the dry run showed is the one the live run wrote.
    diff = [line for line in dry.stdout.splitlines() if line.startswith(("-  ", "+  "))]
    assert diff and all(line in live.stdout for line in diff), (dry.stdout, live.stdout)
    assert load_states(state)[""].n != 3  # the live run restarted the search


def test_a_dry_runs_own_state_continues_until_the_file_changes() -> None:
    """The daemon in dry-run keeps the values it would have written; it goes on from them while
    the file holds what it held then, and starts from the file on an edit. Live again (dry_run
    off, or a pause ended), it starts from the file, never from a value it did not write."""
    from amtuner.config import Config
    from amtuner.cycle import _baseline

    cfg = Config()
    mine = ControllerState(a=0.5, n=3, prev_pending=4, prev_running=2, file_a=0.1)
    assert _baseline(mine, 0.1, cfg, hypothetical=True) is mine
    edited = _baseline(mine, 0.4, cfg, hypothetical=True)
    assert (edited.a, edited.n, edited.prev_pending, edited.file_a) == (0.4, 1, 4, None)
    live = _baseline(mine, 0.1, cfg, hypothetical=False)
    assert (live.a, live.n) == (0.1, 1)
