"""`amtuner advise --dask`: the same replays on a Dask cluster (here Dask's own LocalCluster, two
worker processes on 127.0.0.1) give the same report as the local process pool; a scheduler that
does not answer and a missing extra are refused before any replay."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from amtuner.exitcodes import ExitCode
from tests.e2e.conftest import amtuner
from tests.e2e.test_advise import recorded_trace

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A LocalCluster of two worker processes, one thread each: its scheduler's address."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=":0",  # any free port: never a fixed one
    ) as local:  # fmt: skip
        yield local.scheduler_address


def test_a_dask_cluster_gives_the_local_pools_answer(tmp_path: Path, cluster: str) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    argv = ["advise", "--trace", str(trace), "--scheduler", "capacity", "--seeds", "2", "--json"]
    local = amtuner(*argv, "--workers", "2")
    on_dask = amtuner(*argv, "--dask", cluster)
    assert local.returncode == 0, local.stderr
    assert on_dask.returncode == 0, on_dask.stderr
    mine, theirs = json.loads(local.stdout), json.loads(on_dask.stdout)
    assert theirs == mine
    # Not two empty answers: the mixed batch at 0.1 is far from its best, and every value ran.
    assert mine["recommended"] != "0.1"
    assert len(mine["rows"]) > 11 and all(r["jct_s"] for r in mine["rows"] if r["a"] != 1)


def test_dasks_own_setting_names_the_cluster(
    tmp_path: Path, cluster: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--dask`` alone takes the address from Dask's DASK_SCHEDULER_ADDRESS."""
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    argv = ["advise", "--trace", str(trace), "--scheduler", "fair", "--seeds", "2", "--json"]
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster)
    run = amtuner(*argv, "--dask")
    monkeypatch.delenv("DASK_SCHEDULER_ADDRESS")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == json.loads(amtuner(*argv, "--workers", "1").stdout)


def test_a_trace_the_workers_cannot_read_is_refused(tmp_path: Path, cluster: str) -> None:
    """Each worker is asked whether the file is there: on another machine without it, a replay
    would fail there instead."""
    from amtuner.bench import daskpool

    with pytest.raises(daskpool.EngineError, match=r"not a file on the Dask worker\(s\) tcp://"):
        daskpool.connect(cluster, tmp_path / "elsewhere.jsonl")


def test_workers_are_the_clusters_own(tmp_path: Path, cluster: str) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    run = amtuner("advise", "--trace", str(trace), "--scheduler", "capacity", "--dask", cluster,
                  "--workers", "2")  # fmt: skip
    assert run.returncode == ExitCode.CONFIG
    assert "--workers is the local pool's" in run.stderr and run.stdout == ""


def test_an_unreachable_scheduler_is_refused_before_any_replay(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    run = amtuner("advise", "--trace", str(trace), "--scheduler", "capacity", "--dask",
                  f"tcp://127.0.0.1:{port}")  # fmt: skip
    assert run.returncode == ExitCode.CONFIG
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in run.stderr
    assert run.stdout == ""


def test_without_the_extra_dask_is_refused_with_the_fix(tmp_path: Path) -> None:
    trace = recorded_trace(tmp_path / "apps.jsonl", "paper:mixed", 0.1)
    hide = "import sys; sys.modules['distributed'] = None; from amtuner.cli import main; "
    proc = subprocess.run(
        [sys.executable, "-c", hide + "sys.exit(main(sys.argv[1:]))", "advise", "--trace",
         str(trace), "--scheduler", "fair", "--dask", "tcp://127.0.0.1:8786"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == ExitCode.CONFIG
    assert "pip install 'amtuner[dask]'" in proc.stderr and proc.stdout == ""
