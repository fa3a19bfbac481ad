"""Exit codes an operator (and systemd's RestartPreventExitStatus=2) relies on: a bad start-up
setting is exit 2 with a message, never a traceback; a change applied whose record could not be
written is not "nothing changed"."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from amtuner.exitcodes import ExitCode
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_faults import healthy, seed_state

pytestmark = pytest.mark.slow

SAFE = b'<?xml version="1.0"?>\n<allocations>\n  <queue name="default"/>\n</allocations>\n'


def config(tmp_path: Path, url: str, **sections: object) -> Path:
    sched = tmp_path / "fair-scheduler.xml"
    if not sched.exists():
        sched.write_bytes(SAFE)
    base: dict[str, object] = {
        "rm": {"urls": [url]},
        "scheduler": {"kind": "fair", "config_file": str(sched)},
        "refresh": {"method": "none"},
    }
    for key, value in sections.items():
        old = base.get(key)
        base[key] = {**old, **value} if isinstance(old, dict) and isinstance(value, dict) else value
    return write_config(tmp_path / "amtuner.yaml", **base)


def run_daemon(cfg: Path) -> tuple[int, str]:
    """`amtuner run` until it exits by itself (a start-up error) or 20 s have passed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "amtuner", "run", "--config", str(cfg)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=20)
        pytest.fail(f"amtuner run kept running on a bad start-up setting:\n{out}")
    return proc.returncode, out


try:
    import requests_gssapi  # noqa: F401
except ImportError:
    KERBEROS = {
        "kerberos-extra-missing": ({"rm": {"kerberos": True}}, "requests-gssapi is not installed")
    }
else:
    KERBEROS = {
        "kerberos-keytab-missing": (
            {"rm": {"kerberos": True, "keytab": "/nonexistent/amtuner.keytab"}},
            "keytab /nonexistent/amtuner.keytab does not exist",
        )
    }
START_UP = {
    **KERBEROS,
    "ca-bundle-missing": ({"rm": {"verify": "/nonexistent/ca.pem"}}, "does not exist"),
    "period-out-of-range": ({"controller": {"period_seconds": 1e308}}, "controller.period_seconds"),
    "timeout-out-of-range": ({"rm": {"read_timeout_seconds": 1e300}}, "rm.read_timeout_seconds"),
}


@pytest.mark.parametrize("case", list(START_UP))
def test_a_bad_start_up_setting_exits_2_with_a_message(
    tmp_path: Path, canned_rm, case: str
) -> None:
    sections, message = START_UP[case]
    cfg = config(tmp_path, canned_rm(healthy), **sections)
    for command in ("once", "check"):
        run = amtuner(command, "--config", str(cfg))
        out = run.stdout + run.stderr
        assert run.returncode == ExitCode.CONFIG, (command, out)
        assert message in out and "Traceback" not in out, (command, out)
    code, out = run_daemon(cfg)
    assert code == ExitCode.CONFIG, out
    assert message in out and "Traceback" not in out, out


def test_a_state_file_that_is_not_utf8_exits_2(tmp_path: Path, canned_rm) -> None:
    cfg = config(tmp_path, canned_rm(healthy))
    (tmp_path / "state.json").write_bytes(b'\xff\xfe{"version": 1}')
    for command in ("once", "status"):
        run = amtuner(command, "--config", str(cfg))
        out = run.stdout + run.stderr
        assert run.returncode == ExitCode.CONFIG, (command, out)
        assert "state file" in out and "UTF-8" in out and "Traceback" not in out, (command, out)
    code, out = run_daemon(cfg)
    assert code == ExitCode.CONFIG, out
    assert "UTF-8" in out and "Traceback" not in out, out


def test_a_change_applied_whose_audit_line_is_lost_has_its_own_exit_code(
    tmp_path: Path, canned_rm
) -> None:
    """The file changed and the RM reloads it: that is not exit 4's "nothing changed"."""
    (tmp_path / "audit").mkdir()  # a directory where the audit file should be
    cfg = config(tmp_path, canned_rm(healthy), audit_log=str(tmp_path / "audit"))
    seed_state(tmp_path / "state.json")
    before = (tmp_path / "fair-scheduler.xml").read_bytes()
    run = amtuner("once", "--config", str(cfg))
    out = run.stdout + run.stderr
    assert run.returncode == ExitCode.RECORD, out
    assert "cannot append to audit log" in out, out
    assert (tmp_path / "fair-scheduler.xml").read_bytes() != before, "the change was applied"
