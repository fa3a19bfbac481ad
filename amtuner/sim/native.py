"""The simulator's core compiled to C with mypyc, built once per change of its sources.

The event loop, the cluster, the job model and the two schedulers are plain typed Python; mypyc
(mypy's compiler) turns the same files into C extensions that run them 2-3x faster, with the same
float arithmetic and so the same results (`tests/sim/test_native.py` compares the two). Nothing
here is needed for correctness: without mypy or a C compiler the Python modules run as they are.

The build lives in a cache directory named after a hash of the sources and the Python ABI, never
beside the sources: a compiled module can so never be older than the file it was built from,
however the checkout changes. The build is self-contained (mypyc's runtime is compiled in), so
the compiler's version is not part of the name. `activate` (run when `amtuner.sim` is imported)
puts a finished build first on the package's search path; `ensure_built` (run by the commands that
simulate a lot: `amtuner simulate`, `amtuner bench`) builds it first if it is missing.

``AMTUNER_SIM_NATIVE=0`` runs the Python modules whatever is built; ``AMTUNER_NATIVE_DIR`` moves
the cache (default ``$XDG_CACHE_HOME/amtuner/native``).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import zlib
from pathlib import Path

CORE = (
    "engine", "cluster", "units", "app", "jobs", "mrallocator", "capacity", "csqueue", "fair",
    "fairshare", "fsqueue", "fsreserve",
)
"""The modules compiled: what runs per event. The rest of the simulator (configuration readers,
workloads, the REST face) runs once per run or per request and stays Python."""

SIM_DIR = Path(__file__).resolve().parent
BUILD_TIMEOUT_S = 600.0
_DONE = "built"
"""Written last into a build directory: without it the directory is not a build."""


def enabled() -> bool:
    return os.environ.get("AMTUNER_SIM_NATIVE", "1") != "0"


def build_key() -> str:
    """Names the build: the core's sources and the interpreter's ABI. Two 32-bit checksums, not
    a cryptographic hash: this runs whenever `amtuner.sim` is imported, and the OpenSSL import a
    hashlib digest needs would cost more than the whole check (3 ms)."""
    data = importlib.machinery.EXTENSION_SUFFIXES[0].encode()
    for name in CORE:
        data += b"\0" + name.encode() + b"\0" + (SIM_DIR / f"{name}.py").read_bytes()
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def cache_root() -> Path:
    explicit = os.environ.get("AMTUNER_NATIVE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "amtuner" / "native"


def build_dir() -> Path:
    return cache_root() / build_key()


def loaded() -> bool:
    """Whether this process runs the compiled core (its engine came from a build)."""
    engine = sys.modules.get("amtuner.sim.engine")
    return engine is not None and not str(engine.__file__).endswith(".py")


def activate() -> bool:
    """Put a finished build of the current sources first on ``amtuner.sim``'s search path, so
    the core modules import from it. Effective only before they are first imported."""
    if not enabled():
        return False
    try:
        where = build_dir()
        if not (where / _DONE).is_file():
            return False
    except (OSError, RuntimeError):  # an unreadable $HOME, or none (Path.home)
        return False
    package = sys.modules["amtuner.sim"]
    modules = str(where / "amtuner" / "sim")
    if modules not in package.__path__:
        package.__path__.insert(0, modules)
    lib = str(where / "lib")
    if lib not in sys.path:
        sys.path.append(lib)  # mypyc's shared runtime, a top-level module of its own name
    return True


COMPILED_CANNOT_COPY = (
    "the compiled simulator core is loaded, and its classes cannot be copied: run with "
    "AMTUNER_SIM_NATIVE=0"
)
"""What a command that copies simulations says where `loaded` is true."""


def use_python_core() -> bool:
    """Run the Python modules in this process and the ones it starts, whatever is built: for
    what copies a simulation (`copy.deepcopy`), which mypyc's compiled classes do not support.
    Effective only before the core is first imported; whether the Python core is the one."""
    os.environ["AMTUNER_SIM_NATIVE"] = "0"
    package = sys.modules["amtuner.sim"]
    package.__path__[:] = [p for p in package.__path__ if Path(p).resolve() == SIM_DIR]
    return not loaded()


def toolchain_missing() -> str | None:
    """Why no build can be made here, or None."""
    import importlib.util
    import shutil

    if importlib.util.find_spec("mypyc") is None:
        return "mypyc is not installed: pip install 'amtuner[fast]'"
    import sysconfig

    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler}) on PATH"
    return None


def ensure_built(*, quiet: bool = False) -> bool:
    """Build the compiled core if it is missing (about 30 s, once per change), then use it.
    False, with the reason on stderr, when it cannot be built: the Python modules then run."""
    if not enabled():
        return False
    if activate():
        return True
    missing = toolchain_missing()
    if missing is not None:
        if not quiet:
            print(f"amtuner: simulator core not compiled ({missing}); running it as Python",
                  file=sys.stderr)  # fmt: skip
        return False
    if not quiet:
        print("amtuner: compiling the simulator core with mypyc (once per version, ~30 s)",
              file=sys.stderr)  # fmt: skip
    try:
        build(build_dir())
    except (BuildError, OSError, RuntimeError) as exc:  # an unwritable cache, $HOME unreadable
        print(f"amtuner: {exc}; running the simulator core as Python", file=sys.stderr)
        return False
    return activate()


class BuildError(RuntimeError):
    pass


def build(target: Path) -> None:
    """Compile into ``target`` in a child process (mypy and setuptools stay out of this one),
    one builder at a time; the directory appears whole or not at all."""
    import fcntl
    import shutil
    import subprocess
    import tempfile

    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same
        if (target / _DONE).is_file():
            return
        with tempfile.TemporaryDirectory(prefix=f"{target.name}.", dir=target.parent) as work:
            try:
                done = subprocess.run(
                    [sys.executable, "-m", "amtuner.sim.native", work],
                    cwd=work, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                    env={**os.environ, "PYTHONPATH": os.pathsep.join(
                        [str(SIM_DIR.parents[1]), os.environ.get("PYTHONPATH", "")]
                    )},
                )  # fmt: skip
            except subprocess.TimeoutExpired as exc:
                raise BuildError(f"mypyc took over {BUILD_TIMEOUT_S:.0f} s") from exc
            if done.returncode != 0:
                tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-10:])
                raise BuildError(f"mypyc failed (exit {done.returncode}):\n{tail}")
            out = Path(work) / "out"
            (out / _DONE).write_text(build_key() + "\n")
            shutil.rmtree(target, ignore_errors=True)
            os.rename(out, target)


def _compile(work: Path) -> None:
    """In the child: mypyc's C for the core, built by setuptools into ``work/out``."""
    import shutil

    from mypyc.build import mypycify
    from setuptools import setup  # type: ignore[import-untyped]

    os.chdir(work)
    sources = [str(SIM_DIR / f"{name}.py") for name in CORE]
    extensions = mypycify(sources, opt_level="3", target_dir=str(work / "c"))
    out = work / "out"
    setup(
        name="amtuner-sim-native",
        ext_modules=extensions,
        script_args=["-q", "build_ext", "--build-lib", str(out / "stage"),
                     "--build-temp", str(work / "tmp")],
    )  # fmt: skip
    stage = out / "stage"
    (out / "amtuner").mkdir()
    shutil.move(str(stage / "amtuner" / "sim"), out / "amtuner" / "sim")
    (out / "lib").mkdir()
    for lib in stage.glob("*__mypyc*"):
        shutil.move(str(lib), out / "lib" / lib.name)
    shutil.rmtree(stage)


if __name__ == "__main__":
    _compile(Path(sys.argv[1]))
