"""Build the MiniYARNCluster launcher with Maven, once per change of its sources.

The build is cached in ``realyarn/target``: a stamp named after a hash of the pom and the Java
sources says the jars there are current, so a second test session starts the RM without Maven.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MODULE_DIR = Path(__file__).resolve().parents[2] / "realyarn"
"""The Maven module, beside the ``amtuner`` package in a source checkout."""
MR_ALLOCATOR_DIR = MODULE_DIR / "mr-allocator"
"""MapReduce's own reduce scheduling as an oracle (unshaded Hadoop: a module of its own)."""

BUILD_TIMEOUT_S = 900.0
"""A first build downloads about 110 MB from Maven Central."""


class Unavailable(RuntimeError):
    """No real RM can run here (no Java, no Maven, Maven Central unreachable, no checkout)."""


@dataclass(frozen=True)
class Build:
    jar: Path
    lib: Path
    java: str

    def classpath(self, *first: Path) -> str:
        """Java classpath: ``first`` (a conf directory) before the launcher and Hadoop's jars."""
        return ":".join([*(str(p) for p in first), str(self.jar), f"{self.lib}/*"])


def _source_hash(module: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted([module / "pom.xml", *(module / "src").rglob("*")]):
        if path.is_file():
            digest.update(str(path.relative_to(module)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def ensure_built(module: Path = MODULE_DIR) -> Build:
    """A module's jar (named after its directory) and dependencies, built now if the sources
    changed since the last build."""
    if not (module / "pom.xml").is_file():
        raise Unavailable(f"no Maven module at {module} (run from a source checkout)")
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None or mvn is None:
        raise Unavailable(f"needs java and mvn on PATH (java: {java}, mvn: {mvn})")
    target = module / "target"
    stamp = target / f".built-{_source_hash(module)}"
    build = Build(jar=target / f"{module.name}.jar", lib=target / "lib", java=java)
    if stamp.exists() and build.jar.is_file():
        return build
    try:
        done = subprocess.run(
            [mvn, "-q", "-B", "package"], cwd=module, capture_output=True, text=True,
            timeout=BUILD_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired as e:
        raise Unavailable(f"mvn package took over {BUILD_TIMEOUT_S:.0f} s") from e
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise Unavailable(f"mvn package failed in {module} (exit {done.returncode}):\n{tail}")
    for old in target.glob(".built-*"):
        old.unlink()
    stamp.touch()
    return build
