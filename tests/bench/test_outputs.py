"""A bench's ``--json`` and ``--plot``: refused before the run where they could not be written;
the JSON written whole or not at all after it, and a refusal at the end an error, not a
traceback."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from amtuner.exitcodes import ExitCode
from tests.e2e.conftest import amtuner

CYCLE = ("bench", "cycle", "--nodes", "10", "--apps", "10", "--repeats", "1",
         "--scheduler", "capacity")  # fmt: skip


@pytest.mark.parametrize(
    ("where", "says"),
    [("missing/out.json", "no directory"), (".", "is a directory")],
)
def test_a_path_that_cannot_be_written_is_refused_before_the_run(
    tmp_path: Path, where: str, says: str
) -> None:
    run = amtuner(*CYCLE, "--json", str(tmp_path / where))
    assert run.returncode == ExitCode.CONFIG, run.stderr
    assert says in run.stderr
    assert run.stdout == ""  # nothing ran
    assert not (tmp_path / "missing").exists()


def test_results_replace_the_file_whole(tmp_path: Path) -> None:
    out = tmp_path / "cycle.json"
    out.write_text("the last run's results\n")
    run = amtuner(*CYCLE, "--json", str(out))
    assert run.returncode == ExitCode.OK, run.stderr
    assert f"wrote {out}" in run.stdout
    (row,) = json.loads(out.read_text())
    assert row["apps_running"] > 0
    assert [p.name for p in tmp_path.iterdir()] == ["cycle.json"]  # no temp file left


def test_a_write_refused_after_the_run_is_an_error_that_keeps_the_table(tmp_path: Path) -> None:
    """A FIFO at the path (something else reads it) is never replaced: the table the run
    printed stays, the exit code says the results were not kept."""
    out = tmp_path / "cycle.json"
    os.mkfifo(out)
    run = amtuner(*CYCLE, "--json", str(out))
    assert run.returncode == ExitCode.FAILED
    assert "one cycle: median" in run.stdout
    assert f"amtuner bench: {out} is a FIFO, not a regular file" in run.stderr
    assert "Traceback" not in run.stderr
    assert stat.S_ISFIFO(out.stat().st_mode)


def test_a_chart_that_cannot_be_written_is_refused_before_the_run(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run = amtuner("bench", "paper", "--plot", str(tmp_path / "missing" / "paper.png"))
    assert run.returncode == ExitCode.CONFIG, run.stderr
    assert "no directory" in run.stderr
    assert run.stdout == ""
