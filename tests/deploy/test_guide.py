"""deploy/README.md followed word for word, as root, with amtuner running as its own non-root
system user: the first live write succeeds and the RM holds it.

The guide's shell blocks are read from the guide and run as they are, in a root shell's PATH
(the distribution's python3, which the service user can run too), except what needs systemd:
step 5's unit install and step 7's systemctl lines (the service's user, group and umask come
from the unit file, and the daemon's first live cycle is `amtuner once`, the same cycle). Step 2
installs the wheel built from this tree into /opt/amtuner, its dependencies from the package
index. The RM is the simulated one, over HTTP, reading the scheduler file at the path the guide
uses; the refresh command is its `yarn rmadmin -refreshQueues`.

It writes the guide's own paths (/opt/amtuner, /etc/amtuner, /etc/hadoop/conf, /var/lib/amtuner,
/var/log/amtuner, /usr/local/bin/amtuner) and creates the `amtuner` user, so it runs only as
root (CI runs as root) on a host where none of them exists, one run at a time, and removes
them after.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import json
import os
import pwd
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from amtuner.demo import running_sim
from amtuner.sim.simulation import default_scheduler_config
from tests.deploy.test_unit import parse_unit

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "deploy" / "README.md"
USER, GROUP = "amtuner", "hadoop"
CONFIG = Path("/etc/amtuner/amtuner.yaml")
SCHEDULER_FILE = Path("/etc/hadoop/conf/capacity-scheduler.xml")
LINK = Path("/usr/local/bin/amtuner")
TOUCHED = (Path("/opt/amtuner"), Path("/etc/amtuner"), Path("/etc/hadoop"),
           Path("/var/lib/amtuner"), Path("/var/log/amtuner"), LINK)  # fmt: skip
ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""A root login shell's PATH (login.defs' ENV_SUPATH): its python3 is the distribution's."""
LOCK = Path(tempfile.gettempdir()) / "amtuner-deploy-guide-test.lock"


def steps() -> dict[str, list[str]]:
    """The shell blocks of each numbered step of "## Install", dedented, by the step's label
    ("4", and "4b" for a step that only some clusters take, such as the Kerberised one)."""
    text = GUIDE.read_text(encoding="utf-8")
    install = text[text.index("## Install") : text.index("\n## ", text.index("## Install") + 1)]
    found: dict[str, list[str]] = {}
    for step in re.split(r"\n(?=\d+[a-z]?\. \*\*)", install)[1:]:
        label = step.split(".", 1)[0]
        blocks = re.findall(r"\n   ```sh\n(.*?)\n   ```", step, flags=re.S)
        found[label] = ["\n".join(line[3:] for line in b.splitlines()) for b in blocks]
    return found


def sh(script: str, cwd: Path) -> str:
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True,
        timeout=600, env={"PATH": ROOT_PATH, "HOME": "/root", "LANG": "C.UTF-8"},
    )  # fmt: skip
    assert proc.returncode == 0, f"{script}\n--- exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
    return proc.stdout


def no_python_for_the_guide() -> str | None:
    """Why step 2 could not make /opt/amtuner here, or None."""
    proc = subprocess.run(
        ["python3", "-c", "import sys, venv, ensurepip; assert sys.version_info >= (3, 11)"],
        capture_output=True, text=True, timeout=60, env={"PATH": ROOT_PATH},
    )  # fmt: skip
    if proc.returncode != 0:
        return f"no python3 >= 3.11 with venv and ensurepip on {ROOT_PATH}: {proc.stderr[-200:]}"
    return None


@pytest.fixture
def host() -> Iterator[None]:
    """The guide's paths and user, on a host that has none of them; removed after."""
    if os.geteuid() != 0:
        pytest.skip("the guide is followed as root, with a system user made by useradd")
    for tool in ("useradd", "userdel", "runuser", "install", "git"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    why = no_python_for_the_guide()
    if why:
        pytest.skip(why)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run of this test on the same host waits
        existing = [str(p) for p in TOUCHED if p.exists() or p.is_symlink()]
        with contextlib.suppress(KeyError):
            pwd.getpwnam(USER)
            existing.append(f"user {USER}")
        if existing:
            pytest.skip(f"would touch an existing installation: {', '.join(existing)}")
        had_group = _group_exists(GROUP)
        try:
            yield
        finally:
            for path in TOUCHED:
                if path.is_symlink() or path.is_file():
                    path.unlink()
                elif path.exists():
                    shutil.rmtree(path)
            # userdel refuses while a process of the user is still exiting: try again.
            for _ in range(20):
                gone = subprocess.run(["userdel", USER], capture_output=True, timeout=60)
                if gone.returncode in (0, 6):  # 6: no such user
                    break
                time.sleep(0.5)
            if not had_group:
                subprocess.run(["groupdel", GROUP], capture_output=True, timeout=60)


def _group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
    except KeyError:
        return False
    return True


def source_tree(out: Path) -> Path:
    """The tree's files as git sees them, uncommitted changes included (not its build/ or
    compiled modules); links stay links."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True, timeout=60,
    ).stdout.decode().split("\0")  # fmt: skip
    for name in filter(None, listed):
        source = ROOT / name
        if not (source.exists() or source.is_symlink()):
            continue  # deleted, not yet committed
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, out / name, follow_symlinks=False)
    return out


def maximum_am_percent(url: str) -> float:
    """What the RM holds for root.default, read back over REST (`CapacitySchedulerQueueInfo`'s
    capacities by partition)."""
    info = requests.get(f"{url}/ws/v1/cluster/scheduler", timeout=10).json()
    stack = [info["scheduler"]["schedulerInfo"]]
    while stack:
        q = stack.pop()
        if q.get("queuePath") == "root.default" or q.get("queueName") == "default":
            (default,) = q["capacities"]["queueCapacitiesByPartition"]  # the default partition
            return float(default["maxAMLimitPercentage"])
        stack.extend((q.get("queues") or {}).get("queue", []))
    raise AssertionError(f"no root.default in {info}")


def edit(path: Path, *changes: tuple[str, str]) -> None:
    """What an operator does in an editor: each line of the example replaced by the site's."""
    text = path.read_text(encoding="utf-8")
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")


def test_following_the_deploy_guide_ends_with_a_change_the_rm_holds(
    host: None, tmp_path: Path
) -> None:
    guide = steps()
    work = tmp_path / "work"
    work.mkdir()

    # 1. A user.
    (block,) = guide["1"]
    sh(block, work)
    service = pwd.getpwnam(USER)
    assert service.pw_uid != 0 and grp.getgrgid(service.pw_gid).gr_name == GROUP

    # 2. The software, from a wheel built from this tree, as the guide builds it.
    tree = source_tree(tmp_path / "src")
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", work / "dist", "."],
        capture_output=True, text=True, timeout=600, cwd=tree,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    (block,) = guide["2"]
    sh(block, work)
    here = work / "amtuner-deploy"
    example = (here / "config.example.yaml").read_bytes()
    assert example == (ROOT / "config.example.yaml").read_bytes()

    # The RM host as Hadoop left it: the conf directory and the scheduler file root's.
    SCHEDULER_FILE.parent.mkdir(parents=True)
    SCHEDULER_FILE.write_bytes(default_scheduler_config("capacity", ["root.default"], am_share=0.1))
    argv = ["--scheduler", "capacity", "--workload", "paper:mixed", "--port", "0",
            "--speed", "20", "--scheduler-config", str(SCHEDULER_FILE)]  # fmt: skip
    with running_sim(argv) as (url, _):
        # 3. The config, then the keys the guide says to set.
        (block,) = guide["3"]
        sh(block, here)
        with socket.socket() as free:  # the host's 9108 may be taken: the site picks a port
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        edit(
            CONFIG,
            ('  urls: ["http://127.0.0.1:8088"]', f'  urls: ["{url}"]'),
            ('  command: ["yarn", "rmadmin", "-refreshQueues"]',
             f'  command: ["amtuner", "sim-admin", "refresh-queues", "--url", "{url}"]'),
            ("\ndry_run: false ", "\ndry_run: true "),
            ("\naudit_log: null ", "\naudit_log: /var/log/amtuner/audit.log "),
            ("  port: 9108 ", f"  port: {port} "),
        )  # fmt: skip
        # 4. Write access to the scheduler file's directory.
        (block,) = guide["4"]
        sh(block, here)

        # 6. Check before starting, as the service user: ready, and a dry run writes nothing.
        (block,) = guide["6"]
        before = SCHEDULER_FILE.read_bytes()
        out = sh(block, here)
        assert "risk" not in out and "global A = 0.1" in out, out
        assert SCHEDULER_FILE.read_bytes() == before

        # 7. The service in dry-run, as the unit starts it: its first cycle runs at once and
        # `amtuner status` shows it; SIGTERM (systemctl stop) ends it with 0.
        unit = parse_unit((here / "amtuner.service").read_text())["Service"]
        assert (unit["User"], unit["Group"]) == ([USER], [GROUP])
        (exec_start,) = unit["ExecStart"]
        assert exec_start == f"{LINK} run --config {CONFIG}"
        daemon = subprocess.Popen(  # as systemd starts it: User=, Group=, no other group, UMask=
            exec_start.split(), user=USER, group=GROUP, extra_groups=[],
            umask=int(unit["UMask"][0], 8), cwd="/",
            env={"PATH": ROOT_PATH, "PYTHONUNBUFFERED": "1", "HOME": service.pw_dir},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            status = f"runuser -u {USER} -- amtuner status --json"  # the default --config
            deadline = time.monotonic() + 60
            while True:
                shown = subprocess.run(["bash", "-c", status], capture_output=True, text=True,
                                       timeout=60, cwd=here, env={"PATH": ROOT_PATH})  # fmt: skip
                if shown.returncode == 0:
                    break
                assert daemon.poll() is None, daemon.communicate()[1]
                assert time.monotonic() < deadline, shown.stderr
                time.sleep(0.5)
            last = json.loads(shown.stdout)["last_cycle"]
            assert last["dry_run"] and last["error"] is None, last
        finally:
            daemon.send_signal(signal.SIGTERM)
            _, err = daemon.communicate(timeout=60)
        assert daemon.returncode == 0, err
        assert SCHEDULER_FILE.read_bytes() == before

        # dry_run: false; the service's first live cycle (`once` runs the cycle `run` runs).
        edit(CONFIG, ("\ndry_run: true ", "\ndry_run: false "))
        live = f"umask {unit['UMask'][0]}; exec {LINK} once --config {CONFIG}"
        for _ in range(6):
            out = sh(f"runuser -u {USER} -g {GROUP} -- sh -c '{live}'", here)
            if "result    wrote" in out:
                break
            assert "error" not in out, out
        else:
            pytest.fail(f"no change in six cycles; the scenario no longer writes:\n{out}")
        new_a = float(re.findall(r"^decision  global: \S+ -> (\S+) ", out, flags=re.M)[-1])
        assert new_a != 0.1

        # The file is the new one, still the service user's and readable by the RM's group;
        # the RM holds the value; the audit line, the state and the backup are where the
        # guide says.
        st = SCHEDULER_FILE.stat()
        assert (st.st_uid, grp.getgrgid(st.st_gid).gr_name) == (service.pw_uid, GROUP)
        assert st.st_mode & stat.S_IRGRP
        assert f"<value>{new_a:g}</value>" in SCHEDULER_FILE.read_text()
        assert maximum_am_percent(url) == pytest.approx(new_a * 100)
        assert '"new": ' in Path("/var/log/amtuner/audit.log").read_text()
        assert Path("/var/lib/amtuner/state.json").stat().st_uid == service.pw_uid
        assert list(Path("/var/lib/amtuner/backups").glob("capacity-scheduler.xml.*"))
