"""What `amtuner once` does when the world is broken: a clear error, an exit code that says which
part failed, and a scheduler file byte-identical to what it was."""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from amtuner.config import load_config
from amtuner.cycle import Cycle
from amtuner.executor import SchedulerFile, make_refresher
from amtuner.model import ControllerState, SchedulerKind
from amtuner.monitor import RMClient, make_session
from amtuner.sim.simulation import default_scheduler_config
from amtuner.state import save_states
from tests.e2e.conftest import amtuner, json_body, write_config

METRICS = {
    "clusterMetrics": {
        "appsSubmitted": 40, "appsCompleted": 10, "appsPending": 12, "appsRunning": 6,
        "appsFailed": 0, "appsKilled": 0, "reservedMB": 0, "availableMB": 8192,
        "allocatedMB": 24576, "totalMB": 32768, "reservedVirtualCores": 0,
        "availableVirtualCores": 20, "allocatedVirtualCores": 12, "totalVirtualCores": 32,
        "containersAllocated": 12, "containersReserved": 0, "containersPending": 30,
        "totalNodes": 4, "activeNodes": 4, "lostNodes": 0, "unhealthyNodes": 0,
        "decommissionedNodes": 0, "rebootedNodes": 0,
    }
}


def fair_scheduler() -> dict[str, object]:
    def res(mb: int, vc: int) -> dict[str, int]:
        return {"memory": mb, "vCores": vc}

    leaf = {
        "type": "fairSchedulerLeafQueueInfo", "queueName": "root.default",
        "schedulingPolicy": "fair", "maxApps": 2147483647,
        "minResources": res(0, 0), "maxResources": res(32768, 32),
        "usedResources": res(24576, 12), "amUsedResources": res(12288, 6),
        "amMaxResources": res(16384, 16), "demandResources": res(40960, 20),
        "steadyFairResources": res(32768, 32), "fairResources": res(32768, 32),
        "clusterResources": res(32768, 32), "reservedResources": res(0, 0),
        "numPendingApps": 12, "numActiveApps": 6, "preemptable": True,
    }
    root = {**leaf, "queueName": "root", "childQueues": {"queue": [leaf]}}
    del root["type"]
    return {"scheduler": {"schedulerInfo": {"type": "fairScheduler", "rootQueue": root}}}


def healthy(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    path = h.path.split("?")[0]
    if path.endswith("/cluster/info"):
        return json_body({"clusterInfo": {"id": 1, "haState": "ACTIVE", "state": "STARTED"}})
    if path.endswith("/cluster/metrics"):
        return json_body(METRICS)
    if path.endswith("/cluster/scheduler"):
        return json_body(fair_scheduler())
    return 404, {}, b"not found"


@pytest.fixture
def fair_file(tmp_path: Path) -> Path:
    path = tmp_path / "fair-scheduler.xml"
    path.write_bytes(default_scheduler_config("fair", ["root.default"], am_share=0.1))
    return path


def once(tmp_path: Path, url: str, sched: Path, **sections: object) -> tuple[int, str]:
    sections = {"refresh": {"method": "none"}, **sections}
    cfg = write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": [url], "connect_timeout_seconds": 1, "read_timeout_seconds": 2},
        scheduler={"kind": "fair", "config_file": str(sched)},
        **sections,
    )
    seed_state(tmp_path / "state.json")
    run = amtuner("once", "--config", str(cfg))
    return run.returncode, run.stdout + run.stderr


def seed_state(path: Path) -> None:
    """P(t-1) 5 < P 12 with memory to spare: the paper's under-allocation case, so every healthy
    cycle here wants to raise A and reaches the write and refresh steps."""
    save_states(path, {"": ControllerState(a=0.1, n=1, prev_pending=5, prev_running=6)})


def test_a_healthy_canned_rm_gets_a_change(tmp_path: Path, canned_rm, fair_file: Path) -> None:
    """The control for every test below: the same setup with nothing broken does write."""
    before = fair_file.read_bytes()
    code, out = once(tmp_path, canned_rm(healthy), fair_file)
    assert code == 0, out
    assert fair_file.read_bytes() != before, out


def test_rm_unreachable(tmp_path: Path, fair_file: Path) -> None:
    before = fair_file.read_bytes()
    code, out = once(tmp_path, "http://127.0.0.1:9", fair_file)
    assert code == 3, out
    assert "rm-unreachable" in out and "127.0.0.1:9" in out
    assert fair_file.read_bytes() == before


def test_standby_loop(tmp_path: Path, canned_rm, fair_file: Path) -> None:
    urls: list[str] = []

    def standby(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if h.path.startswith("/ws/v1/cluster/info"):
            return json_body({"clusterInfo": {"id": 1, "haState": "STANDBY"}})
        return 307, {"Location": urls[0] + h.path}, b"This is standby RM."

    urls.append(canned_rm(standby))
    before = fair_file.read_bytes()
    code, out = once(tmp_path, urls[0], fair_file)
    assert code == 3, out
    assert "standby" in out
    assert fair_file.read_bytes() == before


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html><body>Please log in</body></html>", "bad-response"),
        (b'{"clusterMetrics": {"appsPending": 3, "apps', "bad-response"),
        (b"\x00\xff garbage", "bad-response"),
    ],
)
def test_garbage_body(tmp_path: Path, canned_rm, fair_file: Path, body: bytes, reason: str) -> None:
    def garbage(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if "/metrics" in h.path:
            return 200, {"Content-Type": "application/json"}, body
        return healthy(h)

    before = fair_file.read_bytes()
    code, out = once(tmp_path, canned_rm(garbage), fair_file)
    assert code == 3, out
    assert reason in out
    assert fair_file.read_bytes() == before


def test_zero_total_memory(tmp_path: Path, canned_rm, fair_file: Path) -> None:
    def empty(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        if "/metrics" in h.path:
            return json_body({"clusterMetrics": {**METRICS["clusterMetrics"], "totalMB": 0}})
        return healthy(h)

    before = fair_file.read_bytes()
    code, out = once(tmp_path, canned_rm(empty), fair_file)
    assert code == 3, out
    assert "zero-total" in out and "totalMB" in out
    assert fair_file.read_bytes() == before


def test_entity_declaration_is_refused(tmp_path: Path, canned_rm) -> None:
    sched = tmp_path / "fair-scheduler.xml"
    sched.write_bytes(
        b'<?xml version="1.0"?>\n<!DOCTYPE a [<!ENTITY x "0.5">]>\n'
        b"<allocations>\n  <queueMaxAMShareDefault>&x;</queueMaxAMShareDefault>\n</allocations>\n"
    )
    before = sched.read_bytes()
    code, out = once(tmp_path, canned_rm(healthy), sched)
    assert code == 4, out
    assert "DOCTYPE" in out or "entity" in out.lower()
    assert sched.read_bytes() == before


@contextlib.contextmanager
def read_only(directory: Path) -> Iterator[None]:
    """A directory nobody may create files in. Root ignores permission bits, so as root the
    directory is made immutable instead (skipped where the file system or sandbox refuses)."""
    if os.geteuid() == 0:
        made = subprocess.run(["chattr", "+i", str(directory)], capture_output=True, check=False)
        if made.returncode != 0:
            pytest.skip(f"running as root and chattr +i is refused: {made.stderr!r}")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
    else:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)


def test_read_only_directory(tmp_path: Path, canned_rm, fair_file: Path) -> None:
    before = fair_file.read_bytes()
    conf = fair_file.parent / "conf"
    conf.mkdir()
    sched = conf / fair_file.name
    sched.write_bytes(before)
    with read_only(conf):
        code, out = once(tmp_path, canned_rm(healthy), sched)
        assert sorted(p.name for p in conf.iterdir()) == [sched.name]
    assert code == 4, out
    assert "write-failed" in out and str(conf) in out
    assert sched.read_bytes() == before


def test_write_that_fails_partway_leaves_the_old_file(
    tmp_path: Path, canned_rm, fair_file: Path
) -> None:
    """A full disk, in effect: the child may not write a file longer than 64 bytes, so the
    temporary copy fails half-written and must be discarded."""
    before = fair_file.read_bytes()
    assert len(before) > 64
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [canned_rm(healthy)]},
        scheduler={"kind": "fair", "config_file": str(fair_file)}, refresh={"method": "none"},
    )
    seed_state(tmp_path / "state.json")
    run = amtuner(
        "once", "--config", str(cfg),
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64)),
    )
    assert run.returncode == 4, run.stdout + run.stderr
    assert "write-failed" in run.stdout
    assert fair_file.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(fair_file.name)) == [
        fair_file.name
    ]


def test_failing_refresh_restores_the_file(tmp_path: Path, canned_rm, fair_file: Path) -> None:
    before = fair_file.read_bytes()
    fail = [sys.executable, "-c", "import sys; sys.exit('refreshQueues: Connection refused')"]
    code, out = once(
        tmp_path, canned_rm(healthy), fair_file, refresh={"method": "command", "command": fail}
    )
    assert code == 5, out
    assert "refresh-failed" in out and "restored" in out and "Connection refused" in out
    assert fair_file.read_bytes() == before


def test_file_edited_between_read_and_write(tmp_path: Path, canned_rm, fair_file: Path) -> None:
    """An admin saves the file while the cycle is deciding: the cycle must not overwrite it."""
    url = canned_rm(healthy)
    cfg = load_config(write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [url]},
        scheduler={"kind": "fair", "config_file": str(fair_file)}, refresh={"method": "none"},
    ))
    admins = fair_file.read_bytes().replace(b"</allocations>", b"<!-- admin -->\n</allocations>")

    def read_then_admin_saves(path: Path, kind: SchedulerKind) -> SchedulerFile:
        read = SchedulerFile.read(path, kind)
        path.write_bytes(admins)
        return read

    session = make_session(cfg.rm)
    cycle = Cycle(
        config=cfg, monitor=RMClient.from_settings(cfg.rm, session=session),
        refresher=make_refresher(cfg.refresh),
        read_file=read_then_admin_saves,
    )
    seeded = {"": ControllerState(a=0.1, n=1, prev_pending=5, prev_running=6)}
    report, states = cycle.run(seeded)
    assert report.error == "concurrent-edit", report
    assert "changed on disk" in report.message
    assert fair_file.read_bytes() == admins
    assert states == seeded


@pytest.mark.parametrize(
    ("body", "targets", "reason"),
    [
        ('<queue name="other"/>', ["root.default"], "is not declared in the file"),
        ('<queue name="default"><queue name="c"/></queue>', ["root.default"], "parent queue"),
        ('<queue name="root.default"/>', ["root.default"], "is not declared in the file"),
        ("<queue name=\"default\"><maxAMShare>abc</maxAMShare></queue>", ["root.default"],
         "holds 'abc', not a number"),
        ("<queueMaxAMShareDefault>x</queueMaxAMShareDefault>", [], "holds 'x', not a number"),
    ],
    ids=["undeclared", "parent", "dotted", "queue-not-a-number", "global-not-a-number"],
)
def test_a_target_the_file_cannot_hold_is_a_clean_file_error(
    tmp_path: Path, canned_rm, body: str, targets: list[str], reason: str
) -> None:
    """The RM has root.default as a leaf; the file does not, or holds no number for it. `once`
    and `check` both say why and exit 4; neither shows a traceback nor writes."""
    sched = tmp_path / "fair-scheduler.xml"
    sched.write_text(f'<?xml version="1.0"?>\n<allocations>\n  {body}\n</allocations>\n')
    before = sched.read_bytes()
    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [canned_rm(healthy)]},
        scheduler={"kind": "fair", "config_file": str(sched), "targets": targets},
        refresh={"method": "none"},
    )
    seed_state(tmp_path / "state.json")
    for command in ("once", "check"):
        run = amtuner(command, "--config", str(cfg))
        out = run.stdout + run.stderr
        assert run.returncode == 4, out
        assert reason in out and "Traceback" not in out, out
    assert "error     scheduler-file: " in amtuner("once", "--config", str(cfg)).stdout
    assert sched.read_bytes() == before


def test_a_refresh_command_that_never_ran_is_not_a_disagreement(
    tmp_path: Path, canned_rm, fair_file: Path
) -> None:
    """A refresh command not on PATH never reached the RM: after the file is put back, file and
    RM agree, and the message says so (exit 5) instead of "MAY DISAGREE", which sends an
    operator to check the RM's queues for nothing."""
    before = fair_file.read_bytes()
    code, out = once(
        tmp_path, canned_rm(healthy), fair_file,
        refresh={"method": "command", "command": ["amtuner-no-such-yarn", "rmadmin"]},
    )  # fmt: skip
    assert code == 5, out
    assert "refresh command not found: amtuner-no-such-yarn" in out
    assert "restored the previous file" in out
    assert "the RM was not asked to reload: it still runs the previous configuration" in out
    assert "MAY DISAGREE" not in out and "refreshing again" not in out
    assert fair_file.read_bytes() == before
