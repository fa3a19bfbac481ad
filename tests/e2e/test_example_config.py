"""config.example.yaml passes `amtuner check` against the project's own simulated RM.

The example stays what an operator starts from (a real RM address, /etc/hadoop/conf,
`yarn rmadmin`), so only the values that name a site are replaced: the RM's URL (here the
simulator listens on a free port, not its default 8088), the scheduler file (the one the
simulator writes by default, in its state directory) and the two paths under /var/lib/amtuner
(`check` asks whether the running user can write them). `yarn` is a stub on PATH, as the Hadoop
client is on an RM host. Every other line — the defaults, the refresh command, a_min — is checked
as shipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from amtuner.demo import running_sim
from tests.e2e.conftest import amtuner

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.yaml"
URLS_LINE = '  urls: ["http://127.0.0.1:8088"]\n'
FILE_LINE = "  config_file: /etc/hadoop/conf/capacity-scheduler.xml\n"
VAR_LIB = "/var/lib/amtuner/"


def site_config(tmp_path: Path, url: str, sched_file: Path) -> Path:
    """The example with only rm.urls and scheduler.config_file replaced, line for line."""
    text = EXAMPLE.read_text(encoding="utf-8")
    assert text.count(URLS_LINE) == 1 and text.count(FILE_LINE) == 1
    text = text.replace(URLS_LINE, f'  urls: ["{url}"]\n')
    text = text.replace(FILE_LINE, f"  config_file: {sched_file}\n")
    assert text.count(VAR_LIB) == 3  # backup_dir, state_file, and record.trace's comment
    text = text.replace(VAR_LIB, f"{tmp_path}/var/")
    out = tmp_path / "amtuner.yaml"
    out.write_text(text, encoding="utf-8")
    ours, example = yaml.safe_load(text), yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    ours["rm"]["urls"] = example["rm"]["urls"]
    ours["scheduler"]["config_file"] = example["scheduler"]["config_file"]
    ours["backup_dir"], ours["state_file"] = example["backup_dir"], example["state_file"]
    assert ours == example
    return out


@pytest.fixture(autouse=True)
def yarn_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`refresh.command`'s `yarn`, which `check` looks up on PATH; never run by `check`."""
    stub = tmp_path / "bin" / "yarn"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{stub.parent}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture
def sim(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """`amtuner sim` as an operator would start it, on a free port; (scheduler, extra args)."""
    scheduler, extra = request.param
    argv = ["--scheduler", scheduler, "--workload", "paper:mixed", "--port", "0"]
    with running_sim([*argv, "--state-dir", str(tmp_path / "sim"), *extra]) as started:
        yield started


# The simulator as it starts by default: 4 x 8 GB nodes for the paper's jobs.
@pytest.mark.parametrize("sim", [("capacity", []), ("fair", [])], indirect=True)
def test_the_example_passes_check_against_the_simulator(
    tmp_path: Path, sim: tuple[str, Path]
) -> None:
    url, sched_file = sim
    assert sched_file.parent == tmp_path / "sim"
    before = sched_file.read_bytes()
    run = amtuner("check", "--config", str(site_config(tmp_path, url, sched_file)))
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "config    ok" in out and f"via rest {url}" in out
    assert f"file      {sched_file}: global A = " in out
    assert "risk" not in out
    assert "refresh   yarn rmadmin -refreshQueues" in out
    assert sched_file.read_bytes() == before, "check must never write"


@pytest.mark.parametrize("sim", [("capacity", [])], indirect=True)
def test_on_the_papers_small_cluster_the_default_a_min_is_a_risk(
    tmp_path: Path, sim: tuple[str, Path]
) -> None:
    """The default a_min, 0.05, of the simulator's 4 x 8 GB cannot hold one 2 GB AM, and check
    says so (exit 1): why the example departs from it, as its comment says."""
    url, sched_file = sim
    path = site_config(tmp_path, url, sched_file)
    text = path.read_text(encoding="utf-8")
    assert text.count("  a_min: 0.1 ") == 1
    path.write_text(text.replace("  a_min: 0.1 ", "  a_min: 0.05"), encoding="utf-8")
    run = amtuner("check", "--config", str(path))
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    risks = [line for line in out.splitlines() if line.startswith("risk")]
    assert len(risks) == 1 and "controller.a_min 0.05" in risks[0], out
    assert "raise controller.a_min to at least 0.07" in risks[0]
