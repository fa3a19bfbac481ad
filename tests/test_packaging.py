"""The wheel an operator installs: built from a fresh clone as the deploy guide builds it,
installed in a fresh virtualenv outside the tree, it names its build, carries the licence and
everything the guide installs, and `pip install --upgrade` moves from one commit's build to the
next."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = {
    "config.example.yaml": ROOT / "config.example.yaml",
    "amtuner.service": ROOT / "deploy" / "amtuner.service",
    "README.md": ROOT / "deploy" / "README.md",
    "prometheus/scrape.yml": ROOT / "deploy" / "prometheus" / "scrape.yml",
    "prometheus/alerts.yml": ROOT / "deploy" / "prometheus" / "alerts.yml",
    "grafana/amtuner-dashboard.json": ROOT / "deploy" / "grafana" / "amtuner-dashboard.json",
}
"""What deploy/README.md installs, by its path under `amtuner deploy-files DIR`."""


def run(*argv: str | Path, cwd: Path) -> str:
    proc = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"{argv}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def git(*argv: str, cwd: Path) -> str:
    return run("git", "-c", "user.name=t", "-c", "user.email=t@example.com", *argv, cwd=cwd)


def build_wheel(tree: Path, out: Path) -> Path:
    """`python3 -m pip wheel --no-deps -w dist .`, the guide's command."""
    run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", out, ".", cwd=tree)
    wheels = sorted(out.glob("amtuner-*.whl"), key=lambda p: p.stat().st_mtime)
    assert wheels, list(out.iterdir())
    return wheels[-1]


def version_of(wheel: Path) -> str:
    return wheel.name.split("-")[1]


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout: the version is the commit's")
    path = tmp_path_factory.mktemp("clone") / "amtuner"
    git("clone", "--quiet", str(ROOT), str(path), cwd=ROOT)
    return path


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv outside the tree. The dependencies come from the one running the
    tests (a .pth line), so the wheel installs with --no-deps and no index is asked; amtuner
    itself comes only from the wheel (that environment's editable finder is not loaded)."""
    path = tmp_path_factory.mktemp("venv") / "venv"
    run(sys.executable, "-m", "venv", path, cwd=path.parent)
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = run(path / "bin" / "python", "-c", purelib, cwd=path.parent).strip()
    Path(site, "deps-from-the-test-environment.pth").write_text(
        sysconfig.get_path("purelib") + "\n"
    )
    return path


def test_the_wheel_names_its_commit_and_carries_the_licence_and_the_deploy_files(
    clone: Path, venv: Path, tmp_path: Path
) -> None:
    wheel = build_wheel(clone, tmp_path / "dist")
    version = version_of(wheel)
    head = git("rev-parse", "HEAD", cwd=clone).strip()
    count = git("rev-list", "--count", "HEAD", cwd=clone).strip()
    match = re.fullmatch(r"\d+\.\d+\.\d+\.dev(\d+)\+g([0-9a-f]+)", version)
    assert match, version
    assert match[1] == count and head.startswith(match[2]), (version, count, head)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (licence,) = [n for n in names if n.endswith(".dist-info/licenses/LICENSE")]
        assert z.read(licence) == (ROOT / "LICENSE").read_bytes()
        for name, source in SHIPPED.items():
            assert z.read(f"amtuner/deployfiles/{name}") == source.read_bytes(), name
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert "Version 2.0, January 2004" in (ROOT / "LICENSE").read_text()

    run(venv / "bin" / "pip", "install", "--quiet", "--no-deps", wheel, cwd=tmp_path)
    amtuner = venv / "bin" / "amtuner"
    assert run(amtuner, "--version", cwd=tmp_path).strip() == f"amtuner {version}"
    located = run(venv / "bin" / "python", "-c", "import amtuner; print(amtuner.__file__)",
                  cwd=tmp_path)  # fmt: skip
    assert not Path(located.strip()).is_relative_to(ROOT), located
    # amtuner_build_info, as the daemon exports it.
    info = run(venv / "bin" / "python", "-c",
               "from prometheus_client import CollectorRegistry as R, generate_latest as g\n"
               "from amtuner.metrics import Metrics\nr = R(); Metrics(r); print(g(r).decode())",
               cwd=tmp_path)  # fmt: skip
    assert f'amtuner_build_info{{version="{version}"}} 1.0' in info
    out = tmp_path / "deploy-files"
    listed = run(amtuner, "deploy-files", out, cwd=tmp_path).split()
    assert sorted(listed) == sorted(str(out / name) for name in SHIPPED)
    for name, source in SHIPPED.items():
        assert (out / name).read_bytes() == source.read_bytes(), name
    json.loads((out / "grafana" / "amtuner-dashboard.json").read_text())
    # A second run refuses to overwrite, unless told.
    again = subprocess.run([amtuner, "deploy-files", out], capture_output=True, text=True,
                           timeout=60)  # fmt: skip
    assert again.returncode == 1 and "already exist" in again.stderr
    run(amtuner, "deploy-files", "--force", out, cwd=tmp_path)

    # The next commit's build is newer: pip install --upgrade takes it.
    git("commit", "--quiet", "--allow-empty", "-m", "next", cwd=clone)
    newer = build_wheel(clone, tmp_path / "dist")
    assert newer != wheel and version_of(newer) != version
    run(venv / "bin" / "pip", "install", "--quiet", "--no-deps", "--upgrade", newer, cwd=tmp_path)
    assert run(amtuner, "--version", cwd=tmp_path).strip() == f"amtuner {version_of(newer)}"


def test_without_git_metadata_the_build_falls_back_to_the_base_version(
    clone: Path, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=clone, capture_output=True,
                             check=True, timeout=60).stdout  # fmt: skip
    subprocess.run(["tar", "-x", "-C", plain], input=archive, check=True, timeout=60)
    assert not (plain / ".git").exists()
    wheel = build_wheel(plain, tmp_path / "dist")
    assert version_of(wheel) == "0.1.0"
    with zipfile.ZipFile(wheel) as z:
        unit = z.read("amtuner/deployfiles/amtuner.service")
    assert unit == SHIPPED["amtuner.service"].read_bytes()
