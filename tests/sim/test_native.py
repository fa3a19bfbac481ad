"""The compiled simulator core: the same results as the Python modules, and never a stale build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from amtuner.sim import native

RUNS = """
import json, sys
from amtuner.config import ControllerSettings
from amtuner.sim import native
from amtuner.sim.control import ControlledRun
from amtuner.sim.simulation import build_simulation
from amtuner.sim.spec import HADOOP_3
from amtuner.sim.workload import load_workload

out = {"compiled": None, "runs": []}
for kind, spec, nodes, heartbeats, policy in [
    ("capacity", "paper:mixed", None, None, None),
    ("fair", "paper:wordcount", None, HADOOP_3, None),
    ("capacity", "phase:small,large", None, HADOOP_3, "adaptive"),
    ("fair", "poisson:mixed", None, None, "paper"),
    ("fair", "day:300,3000,7", 4, None, None),
]:
    kw = {"heartbeats": heartbeats} if heartbeats else {}
    sim = build_simulation(kind, load_workload(spec, seed=3), nodes=nodes, seed=3, **kw)
    if policy:
        ControlledRun(sim, __import__("pathlib").Path(sys.argv[1]),
                      controller=ControllerSettings(policy=policy))
    r = sim.run().to_json_dict()
    r.pop("wall_seconds")
    out["runs"].append(r)
out["compiled"] = native.loaded()
print(json.dumps(out))
"""


def _run(tmp_path: Path, compiled: bool) -> dict[str, object]:
    work = tmp_path / ("compiled" if compiled else "python")
    work.mkdir()
    env = {**os.environ, "AMTUNER_SIM_NATIVE": "1" if compiled else "0"}
    done = subprocess.run(
        [sys.executable, "-c", RUNS, str(work)], env=env, capture_output=True, text=True,
        timeout=300, check=True,
    )  # fmt: skip
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.slow
def test_the_compiled_core_gives_the_python_core_s_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = native.toolchain_missing()
    if missing is not None:
        pytest.skip(f"no compiled core can be built here: {missing}")
    monkeypatch.setenv("AMTUNER_SIM_NATIVE", "1")  # even where the session runs the Python
    assert native.ensure_built(quiet=True)
    python, compiled = _run(tmp_path, False), _run(tmp_path, True)
    assert python["compiled"] is False and compiled["compiled"] is True
    assert compiled["runs"] == python["runs"]  # every figure, event counts and A traces included


def _copy_core(tmp_path: Path) -> Path:
    copy = tmp_path / "sim"
    copy.mkdir()
    for name in native.CORE:
        (copy / f"{name}.py").write_bytes((native.SIM_DIR / f"{name}.py").read_bytes())
    return copy


def test_a_build_is_named_after_the_sources_it_was_made_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(native, "SIM_DIR", _copy_core(tmp_path))
    before = native.build_key()
    assert native.build_key() == before
    engine = native.SIM_DIR / "engine.py"
    engine.write_text(engine.read_text() + "\n# an edit\n")
    assert native.build_key() != before  # a build of the old sources is never used for these


def test_only_a_finished_build_of_the_current_sources_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AMTUNER_NATIVE_DIR", str(tmp_path))
    path = list(sys.modules["amtuner.sim"].__path__)
    half_built = tmp_path / native.build_key() / "amtuner" / "sim"
    half_built.mkdir(parents=True)
    assert native.activate() is False  # no "built" mark: a build that died half-way
    assert list(sys.modules["amtuner.sim"].__path__) == path
    monkeypatch.setenv("AMTUNER_SIM_NATIVE", "0")
    assert native.ensure_built(quiet=True) is False
    assert not (tmp_path / native.build_key() / "built").exists()
