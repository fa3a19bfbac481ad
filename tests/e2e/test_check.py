"""`amtuner check`: the pre-flight an operator runs before letting amtuner write anything."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from amtuner.sim.server import SimServer
from amtuner.sim.simulation import build_simulation
from amtuner.sim.spec import JobSpec, TaskGroup, Workload
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


def test_a_guard_tighter_than_the_policies_is_a_risk(tmp_path: Path, canned_rm) -> None:
    code, out = check(
        tmp_path, canned_rm(healthy), SAFE, refresh={"method": "none"},
        controller={"a_min": 0.1, "period_seconds": 15},
        guard={"max_change_per_cycle": 0.2, "hold_off_seconds": 25},
    )  # fmt: skip
    assert code == 1, out
    assert "guard.hold_off_seconds 25 is not under controller.period_seconds 15" in out
    assert "guard.max_change_per_cycle 0.2 is under the widest step the policies take, 0.425" in out


def test_unreachable_rm_and_bad_config(tmp_path: Path) -> None:
    code, out = check(tmp_path, "http://127.0.0.1:9", SAFE)
    assert code == 3 and "UNREACHABLE (rm-unreachable)" in out
    # One short line: the socket's reason, no traceback, no urllib3 wrapper text.
    assert (
        "rm        UNREACHABLE (rm-unreachable): no ResourceManager answered: "
        "http://127.0.0.1:9/ws/v1/cluster/info: Connection refused\n"
    ) in out, out
    assert "Traceback" not in out and "HTTPConnectionPool" not in out
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
        for command in (["check"], ["once"], ["once", "--dry-run"]):
            run = amtuner(*command, "--config", str(cfg))
            out = run.stdout + run.stderr
            assert run.returncode == 2, out
            assert "refresh.method" in out and "never reloads" in out, out
            assert "Traceback" not in out, out
    assert sched.read_bytes() == before


# The first live cycle: everything it writes, runs and binds, checked before it runs.

SOUND = {"refresh": {"method": "none"}, "controller": {"a_min": 0.1}}


def problems(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("risk")]


def test_a_refresh_command_not_on_path_fails_check(tmp_path: Path, canned_rm) -> None:
    code, out = check(
        tmp_path, canned_rm(healthy), SAFE, controller={"a_min": 0.1},
        refresh={"method": "command", "command": ["amtuner-no-such-yarn", "rmadmin"]},
    )
    assert code == 1, out
    assert problems(out) == [
        next(line for line in out.splitlines() if "refresh.command" in line)
    ], out
    assert "'amtuner-no-such-yarn' is not an executable file on the PATH of uid" in out


def test_a_refresh_command_given_by_its_path_passes(tmp_path: Path, canned_rm) -> None:
    stub = tmp_path / "bin" / "yarn"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    command = {"method": "command", "command": [str(stub), "rmadmin", "-refreshQueues"]}
    code, out = check(
        tmp_path, canned_rm(healthy), SAFE, controller={"a_min": 0.1}, refresh=command
    )
    assert code == 0, out
    stub.chmod(0o644)  # no longer executable
    code, out = check(
        tmp_path, canned_rm(healthy), SAFE, controller={"a_min": 0.1}, refresh=command
    )
    assert code == 1 and f"refresh.command: '{stub}' is not an executable file" in out, out


def test_a_metrics_port_in_use_fails_check(tmp_path: Path, canned_rm) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out = check(
            tmp_path, canned_rm(healthy), SAFE, **SOUND,
            metrics={"enabled": True, "address": "127.0.0.1", "port": port},
        )
    assert code == 1, out
    assert f"metrics: cannot listen on 127.0.0.1:{port} (Address already in use)" in out
    # Free again: the same port passes.
    code, out = check(
        tmp_path, canned_rm(healthy), SAFE, **SOUND,
        metrics={"enabled": True, "address": "127.0.0.1", "port": port},
    )
    assert code == 0, out


def test_a_web_ui_url_is_named(tmp_path: Path, canned_rm) -> None:
    url = canned_rm(healthy)
    code, out = check(tmp_path, f"{url}/cluster", SAFE, **SOUND)
    assert code == 1, out
    assert (
        f"rm.urls: {url}/cluster is a web UI page, not the REST API: the RM's queue figures are "
        f"read from {url}/ws/v1; give the RM's address ({url})"
    ) in out


def test_the_a_min_risk_names_the_smallest_value_that_holds_one_am(
    tmp_path: Path, canned_rm
) -> None:
    # One 2048 MB AM of a 32768 MB cluster: 0.0625, rounded up to two decimals.
    code, out = check(tmp_path, canned_rm(healthy), SAFE, refresh={"method": "none"})
    assert code == 1, out
    assert "raise controller.a_min to at least 0.07" in out


AS_SERVICE_USER = """
import json, os, sys
from amtuner.config import parse_config
from amtuner.preflight import live_cycle_problems
import amtuner.state  # what the checks import lazily, loaded before the drop (the interpreter
                      # may live where the service user cannot read, as under /root)
cfg = parse_config(json.loads(sys.argv[1]))
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
print("\\n".join(live_cycle_problems(cfg)))
"""
"""`check` run by root would say yes to every write (os.access), so as root the test asks the
way an operator should run it: as the service's user (here nobody), in a process that dropped
to that user after loading amtuner."""


def test_unwritable_paths_fail_check(tmp_path: Path, canned_rm) -> None:
    if os.geteuid() == 0:
        _unwritable_paths_as_the_service_user()
        return
    locked = tmp_path / "locked"
    locked.mkdir()
    audit = tmp_path / "audit.log"
    audit.write_text("")
    audit.chmod(0o444)
    locked.chmod(0o555)
    try:
        code, out = check(
            tmp_path, canned_rm(healthy), SAFE, **SOUND,
            state_file=str(locked / "state.json"), backup_dir=str(locked / "backups"),
            audit_log=str(audit),
        )
    finally:
        locked.chmod(0o755)
    assert code == 1, out
    assert f"state_file: directory {locked} is not writable" in out
    assert f"backup_dir: directory {locked} is not writable by uid {os.geteuid()} (to create" in out
    assert f"audit_log: {audit} is not writable" in out


def _unwritable_paths_as_the_service_user() -> None:
    locked = Path(tempfile.mkdtemp(prefix="amtuner-test-"))  # root's, 0755: nobody cannot write
    try:
        locked.chmod(0o755)
        audit = locked / "audit.log"
        audit.write_text("")
        doc = {
            "rm": {"urls": ["http://127.0.0.1:1"]},
            "scheduler": {"kind": "fair", "config_file": str(locked / "fair-scheduler.xml")},
            "refresh": {"method": "none"},
            "metrics": {"enabled": False},
            "state_file": str(locked / "state.json"),
            "backup_dir": str(locked / "backups"),
            "audit_log": str(audit),
        }
        proc = subprocess.run(
            [sys.executable, "-c", AS_SERVICE_USER, json.dumps(doc)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        shutil.rmtree(locked)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"state_file: directory {locked} is not writable" in out
    assert f"backup_dir: directory {locked} is not writable by uid 65534 (to create" in out
    assert f"audit_log: {audit} is not writable" in out


def test_paths_that_will_be_created_are_no_problem(tmp_path: Path, canned_rm) -> None:
    code, out = check(
        tmp_path, canned_rm(healthy), SAFE, **SOUND,
        state_file=str(tmp_path / "new" / "deeper" / "state.json"),
        audit_log=str(tmp_path / "logs" / "audit.log"),
    )
    assert code == 0, out
    assert not (tmp_path / "new").exists(), "check must not create anything"


def test_a_file_where_a_directory_should_be(tmp_path: Path, canned_rm) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    code, out = check(
        tmp_path, canned_rm(healthy), SAFE, **SOUND, state_file=str(blocker / "state.json")
    )
    assert code == 1, out
    assert f"state_file: {blocker} is not a directory" in out


def test_a_trace_the_daemon_could_not_append_to_fails_check(tmp_path: Path, canned_rm) -> None:
    """``record.trace``: a file that is not an app trace, or a FIFO, is what would stop `amtuner
    run` at start; a trace of an older version, or none yet, is no problem."""
    other = tmp_path / "notes.txt"
    other.write_text("not a trace\n")
    fifo = tmp_path / "apps.fifo"
    os.mkfifo(fifo)
    old = tmp_path / "v2.jsonl"
    old.write_text('{"format": "amtuner-apps", "version": 2, "rm": "http://rm", "nodes": 4}\n')
    for trace, expected in (
        (other, f"record.trace: {other}:1: not an amtuner-apps trace"),
        (fifo, f"record.trace: {fifo} is a FIFO, not a regular file"),
        (old, None),
        (tmp_path / "new" / "apps.jsonl", None),
    ):
        code, out = check(tmp_path, canned_rm(healthy), SAFE, **SOUND, record={"trace": str(trace)})
        assert code == (0 if expected is None else 1), out
        assert expected is None or expected in out, out
    assert not (tmp_path / "new").exists(), "check must not create anything"


USERS_FILE = b"""<?xml version="1.0"?>
<allocations>
  <queueMaxAMShareDefault>0.5</queueMaxAMShareDefault>
  <queue name="default"><maxAMShare>0.5</maxAMShare></queue>
</allocations>
"""


def test_apps_in_queues_made_for_their_users_are_a_risk_when_only_default_is_tuned(
    tmp_path: Path,
) -> None:
    """Hadoop's FairScheduler puts an app that names no queue in root.<user> by default; the
    simulated RM does the same, over HTTP, and `check` says that tuning root.default alone
    leaves those apps' AM limit (queueMaxAMShareDefault) untouched."""
    maps = (TaskGroup("map", 2, 1024, 1, 600.0, 0.0, 0.0),)
    jobs = tuple(
        JobSpec(job_id=f"{user}-{i}", submit_s=0.0, queue="default", user=user, maps=maps)
        for user in ("alice", "bob")
        for i in range(3)
    )
    sim = build_simulation("fair", Workload("users", jobs, nodes=4), USERS_FILE)
    sim.run_until(30.0)
    with SimServer(sim, run_clock=False) as server:
        scheduler = {"kind": "fair", "config_file": str(tmp_path / "fair-scheduler.xml")}
        code, out = check(
            tmp_path, server.url, USERS_FILE, refresh={"method": "none"},
            scheduler={**scheduler, "targets": ["root.default"]},
        )  # fmt: skip
        assert code == 1, out
        assert "apps run in root.alice, root.bob, which the allocation file does not" in out
        code, out = check(tmp_path, server.url, USERS_FILE, refresh={"method": "none"},
                          scheduler=scheduler)  # fmt: skip
        assert "does not declare" not in out, out


# Every problem at once, each named: an operator fixes them in one round, not one per run.


def test_every_problem_is_reported_not_only_the_first(tmp_path: Path) -> None:
    """An RM that does not answer, a refresh command not on PATH, a busy metrics port, a corrupt
    state file and a FIFO where the audit log goes: five lines, exit 3 (the RM's), and the FIFO
    is never opened (opening it would block check)."""
    state = tmp_path / "state.json"
    state.write_text("{not json")
    fifo = tmp_path / "audit.log"
    os.mkfifo(fifo)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out = check(
            tmp_path, "http://127.0.0.1:9", SAFE, controller={"a_min": 0.1},
            refresh={"method": "command", "command": ["amtuner-no-such-yarn"]},
            metrics={"enabled": True, "address": "127.0.0.1", "port": port},
            state_file=str(state), audit_log=str(fifo),
        )  # fmt: skip
    assert code == 3, out
    assert "rm        UNREACHABLE (rm-unreachable)" in out
    found = problems(out)
    for expected in (
        "refresh.command: 'amtuner-no-such-yarn' is not an executable file",
        f"metrics: cannot listen on 127.0.0.1:{port}",
        f"state_file: state file {state} is not valid",
        f"audit_log: {fifo} is a FIFO, not a regular file",
    ):
        assert sum(expected in line for line in found) == 1, (expected, out)
    assert len(found) == 4, out


@pytest.mark.parametrize("kind", ["fifo", "corrupt", "directory"])
def test_a_state_file_run_could_not_load_fails_check(
    tmp_path: Path, canned_rm, kind: str
) -> None:
    state = tmp_path / "state.json"
    if kind == "fifo":
        os.mkfifo(state)
    elif kind == "directory":
        state.mkdir()
    else:
        state.write_bytes(b'{"version": 1, "targets": {"": {"a": 7, "n": 1}}}')
    code, out = check(tmp_path, canned_rm(healthy), SAFE, **SOUND, state_file=str(state))
    assert code == 1, out
    (line,) = [p for p in problems(out) if "state_file" in p]
    said = {
        "fifo": f"{state} is a FIFO, not a regular file; amtuner does not open it: move it aside",
        "directory": f"{state} is a directory, not a regular file",
        "corrupt": "a is 7.0, not in [0, 1]",
    }[kind]
    assert said in line, out


def test_a_config_that_does_not_fit_the_rm_exits_2_in_check_and_once(
    tmp_path: Path, canned_rm
) -> None:
    """Another scheduler than the RM runs, or a target queue it does not have: the config's
    fault, exit 2 (a restart cannot fix it), and said as what it is, not "unreachable"."""
    from tests.e2e.test_once import seed_file

    url = canned_rm(healthy)  # a FairScheduler with one leaf, root.default
    sched = tmp_path / "fair-scheduler.xml"
    for scheduler, said in (
        ({"kind": "capacity", "config_file": str(sched)},
         "scheduler MISMATCH: config says capacity, RM runs fair"),
        ({"kind": "fair", "config_file": str(sched), "targets": ["root.nosuch"]},
         "rm        NO SUCH QUEUE (unknown-queue): target queue 'root.nosuch'"),
    ):  # fmt: skip
        before = seed_file(sched, "fair")
        cfg = write_config(
            tmp_path / "amtuner.yaml", rm={"urls": [url]}, scheduler=scheduler,
            refresh={"method": "command", "command": ["true"]}, controller={"a_min": 0.1},
        )  # fmt: skip
        run = amtuner("check", "--config", str(cfg))
        assert run.returncode == 2, run.stdout
        assert said in run.stdout and "UNREACHABLE" not in run.stdout, run.stdout
        run = amtuner("once", "--config", str(cfg))
        assert run.returncode == 2, run.stdout + run.stderr
        assert sched.read_bytes() == before


def test_a_file_the_service_user_cannot_keep_the_owner_of_fails_check(tmp_path: Path) -> None:
    """amtuner replaces the scheduler file with a new one and gives it the old one's owner:
    a user without CAP_CHOWN can give it only its own uid. check says so, with the chown that
    fixes it, and passes once the file is the service user's."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a file another user owns")
    conf = Path(tempfile.mkdtemp(prefix="amtuner-test-"))
    try:
        conf.chmod(0o755)
        os.chown(conf, 65534, 65534)  # the directory is writable by the service user
        sched = conf / "fair-scheduler.xml"
        sched.write_bytes(SAFE)  # root's
        doc = {
            "rm": {"urls": ["http://127.0.0.1:1"]},
            "scheduler": {"kind": "fair", "config_file": str(sched)},
            "refresh": {"method": "none"},
            "metrics": {"enabled": False},
            "state_file": str(conf / "state.json"),
            "backup_dir": str(conf / "backups"),
        }

        def as_service_user() -> str:
            proc = subprocess.run(
                [sys.executable, "-c", AS_SERVICE_USER, json.dumps(doc)],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            return proc.stdout

        out = as_service_user()
        assert f"scheduler.config_file: {sched} is owned by root:root, and uid 65534 cannot" in out
        assert f"chown nobody:root {sched}" in out
        os.chown(sched, 65534, 65534)
        assert "scheduler.config_file" not in as_service_user()
    finally:
        shutil.rmtree(conf)


FILL = """
set -e
mount -t tmpfs -o size=1m,nr_inodes=64 amtuner-test "$1"
cp "$2" "$1/fair-scheduler.xml"
dd if=/dev/zero of="$1/filler" bs=4k 2>/dev/null || true
shift 2
exec "$@"
"""
"""Inside a private mount namespace (`unshare --mount`): a 1 MiB tmpfs, filled to the last block
after the scheduler file is put there; the mount goes away with the namespace."""


def test_a_full_file_system_fails_check(tmp_path: Path, canned_rm) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to mount a small tmpfs in a namespace of its own")
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"unshare --mount is refused here: {probe.stderr.decode().strip()}")
    disk = tmp_path / "disk"
    disk.mkdir()
    seed = tmp_path / "seed.xml"
    seed.write_bytes(SAFE)
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [canned_rm(healthy)]},
        scheduler={"kind": "fair", "config_file": str(disk / "fair-scheduler.xml")},
        refresh={"method": "none"}, controller={"a_min": 0.1},
        state_file=str(disk / "state.json"), backup_dir=str(disk / "backups"),
    )  # fmt: skip
    run = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", FILL, "fill",
         str(disk), str(seed), sys.executable, "-m", "amtuner", "check", "--config", str(cfg)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    full = [p for p in problems(out) if "no space left on the file system of" in p]
    assert {p.split(":")[0] for p in full} == {
        "risk      scheduler.config_file", "risk      backup_dir", "risk      state_file"
    }, out
    assert not (disk / "filler").exists(), "the tmpfs belonged to the namespace alone"


OVERRIDES = b"""<?xml version="1.0"?>
<configuration>
  <property><name>yarn.scheduler.capacity.root.queues</name><value>a,b,c</value></property>
  <property><name>yarn.scheduler.capacity.root.a.capacity</name><value>40</value></property>
  <property><name>yarn.scheduler.capacity.root.b.capacity</name><value>40</value></property>
  <property><name>yarn.scheduler.capacity.root.c.capacity</name><value>20</value></property>
  <property>
    <name>yarn.scheduler.capacity.maximum-am-resource-percent</name><value>0.5</value>
  </property>
  <property>
    <name>yarn.scheduler.capacity.root.a.maximum-am-resource-percent</name><value>0.1</value>
  </property>
  <property>
    <name>yarn.scheduler.capacity.root.b.maximum-am-resource-percent</name><value>0.2</value>
  </property>
  <property><name>yarn.scheduler.capacity.root.b.max-parallel-apps</name><value>2</value></property>
</configuration>
"""


def test_leaves_that_override_the_global_value_and_the_limits_that_bind_are_named(
    tmp_path: Path,
) -> None:
    """A simulated CapacityScheduler, over HTTP, whose busy leaves root.a and root.b set their
    own AM share: tuning the global value would reach none of their 12 apps (of 13), and `check`
    says so first. It prints the waits as `once` does (root.a behind its own 0.1, root.b behind
    its max-parallel-apps 2 and its user AM limit) and what the file sets each limit to. With
    both leaves as targets the risk is gone."""
    maps = (TaskGroup("map", 2, 1024, 1, 600.0, 0.0, 0.0),)
    jobs = tuple(
        JobSpec(job_id=f"{q}-{i}", submit_s=0.0, queue=q, user="alice", maps=maps)
        for q, n in (("a", 6), ("b", 6), ("c", 1))
        for i in range(n)
    )
    workload = Workload("overrides", jobs, nodes=4, queues=("root.a", "root.b", "root.c"))
    sim = build_simulation("capacity", workload, OVERRIDES)
    sim.run_until(30.0)
    sched = tmp_path / "capacity-scheduler.xml"
    sched.write_bytes(OVERRIDES)
    p = "yarn.scheduler.capacity."
    with SimServer(sim, run_clock=False) as server:

        def check_targets(targets: list[str]) -> tuple[int, str]:
            cfg = write_config(
                tmp_path / "amtuner.yaml", rm={"urls": [server.url]},
                scheduler={"kind": "capacity", "config_file": str(sched), "targets": targets},
                refresh={"method": "command", "command": ["true"]}, controller={"a_min": 0.1},
            )  # fmt: skip
            run = amtuner("check", "--config", str(cfg))
            return run.returncode, run.stdout + run.stderr

        code, out = check_targets([])
        assert code == 1, out
        assert problems(out)[0] == (
            "risk      the global value reaches none of root.a, root.b, which hold 12 of 13 apps: "
            f"tune them as targets (scheduler.targets; each sets its own {p}<leaf>.maximum-am-"
            f"resource-percent, amtuner tunes {p}maximum-am-resource-percent)"
        ), out
        assert (
            f"waiting   global: 5 queue-am-limit in root.a (cure: {p}root.a.maximum-am-resource-"
            f"percent); 4 max-apps in root.b (cure: {p}root.b.max-parallel-apps); 1 user-am-limit "
            f"in root.b (cure: {p}root.b.user-limit-factor)\n"
        ) in out, out
        settings = [line for line in out.splitlines() if line.startswith("setting")]
        assert settings == [
            f"setting   {p}root.a.maximum-am-resource-percent = 0.1",
            f"setting   {p}root.b.max-parallel-apps = 2",
            f"setting   {p}root.b.user-limit-factor unset: default 1",
            f"setting   {p}root.b.minimum-user-limit-percent unset: default 100",
        ], out

        code, out = check_targets(["root.a", "root.b"])
        assert "global value" not in out, out
        assert f"waiting   root.a: 5 queue-am-limit in root.a (cure: {p}root.a." in out, out
        assert f"setting   {p}root.a.maximum-am-resource-percent = 0.1\n" in out, out
    assert sched.read_bytes() == OVERRIDES, "check must never write"


def test_the_jobhistory_server_named_is_probed(tmp_path: Path, canned_rm) -> None:
    """`history.urls`: a JobHistory server that answers (the simulated RM is its own) is named
    with its version; one that is down is a risk, exit 1 (only `amtuner record` asks it); a
    URL whose server answers as no JobHistory server does (an RM: 404) is the config's
    mistake, exit 2."""
    rm = canned_rm(healthy)
    sound = {"refresh": {"method": "none"}, "controller": {"a_min": 0.1}}
    sim = build_simulation("fair", Workload("none", (), nodes=1))
    with SimServer(sim, run_clock=False) as server:
        code, out = check(tmp_path, rm, SAFE, history={"urls": [server.url]}, **sound)
        assert code == 0, out
        assert f"history   ok: {server.url}: Hadoop 3." in out and "up since" in out, out
    code, out = check(tmp_path, rm, SAFE, history={"urls": ["http://127.0.0.1:9"]}, **sound)
    assert code == 1, out
    assert (
        "history   UNREACHABLE (rm-unreachable): no JobHistory server answered: "
        "http://127.0.0.1:9/ws/v1/history/info: Connection refused\n"
    ) in out, out
    assert "risk      the JobHistory server (http://127.0.0.1:9) did not answer" in out
    assert "rm        ok" in out
    code, out = check(tmp_path, rm, SAFE, history={"urls": [rm]}, **sound)
    assert code == 2, out
    assert f"history   NOT A JOBHISTORY SERVER (http-error): {rm}: " in out, out
    assert "HTTP 404" in out
