"""deploy/amtuner.service: systemd accepts it, its sandbox scores well, and it agrees with the code.

`systemd-analyze verify` insists that ExecStart's binary exists, so it checks a copy whose
ExecStart runs this interpreter with ``-m amtuner``; every other line is the shipped one.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amtuner.cli import get_parser
from amtuner.config import Config, load_config
from amtuner.daemon import worst_cycle_s
from amtuner.sim.simulation import default_scheduler_config

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "amtuner.service"
INSTALLED_BINARY = "/usr/local/bin/amtuner"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None,
    reason="systemd-analyze is not installed (.ci/run installs Debian's systemd package as root)",
)


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """Sections -> key -> every value in order (systemd keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        assert not line.endswith("\\"), f"continuation lines are not expected: {raw!r}"
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"key outside a section: {raw!r}"
        key, sep, value = line.partition("=")
        assert sep, f"not key=value: {raw!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def timespan_s(value: str) -> float:
    units = {"ms": 0.001, "s": 1, "sec": 1, "min": 60, "m": 60, "h": 3600}
    for suffix in sorted(units, key=len, reverse=True):
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * units[suffix]
    return float(value)


SERVICE = parse_unit(UNIT.read_text())["Service"]


def one(key: str) -> str:
    values = SERVICE.get(key, [])
    assert len(values) == 1, f"{key}: expected one value, got {values}"
    return values[0]


def runnable_copy(tmp_path: Path, text: str | None = None) -> Path:
    """The unit with ExecStart pointing at an interpreter that exists on this machine."""
    text = UNIT.read_text() if text is None else text
    assert f"ExecStart={INSTALLED_BINARY} " in text
    copy = tmp_path / "amtuner.service"
    copy.write_text(
        text.replace(f"ExecStart={INSTALLED_BINARY} ", f"ExecStart={sys.executable} -m amtuner ")
    )
    return copy


def analyze(*args: str) -> subprocess.CompletedProcess[str]:
    assert SYSTEMD_ANALYZE is not None
    return subprocess.run(
        [SYSTEMD_ANALYZE, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_LOG_COLOR": "0", "LANG": "C"},
    )


def complaints(result: subprocess.CompletedProcess[str]) -> list[str]:
    """Lines about our unit; other units on the machine are not this test's business."""
    return [
        line for line in (result.stdout + result.stderr).splitlines() if "amtuner.service" in line
    ]


@needs_systemd_analyze
def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    result = analyze("verify", "--man=no", str(runnable_copy(tmp_path)))
    assert result.returncode == 0 and not complaints(result), result.stdout + result.stderr


@needs_systemd_analyze
@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ProtectHome=maybe", "protect home"),
        ("WatchdogSecs=60s", "Unknown key"),
    ],
)
def test_verify_would_catch_a_broken_line(tmp_path: Path, line: str, expected: str) -> None:
    """The check above is not vacuous: the same call reports a bad value or a misspelt key."""
    text = UNIT.read_text().replace("[Service]\n", f"[Service]\n{line}\n")
    result = analyze("verify", "--man=no", str(runnable_copy(tmp_path, text)))
    assert expected.lower() in "\n".join(complaints(result)).lower()


@needs_systemd_analyze
def test_sandbox_exposure_is_ok(tmp_path: Path) -> None:
    """systemd's own score (0 = locked down, 10 = none): 'OK' is below 2.5 (it is 1.4 now)."""
    result = analyze("security", "--offline=true", "--threshold=25", str(runnable_copy(tmp_path)))
    if "--offline" in result.stderr and "unrecognized" in result.stderr:
        pytest.skip("systemd-analyze security --offline needs systemd >= 250")
    tail = "\n".join(result.stdout.splitlines()[-3:])
    assert result.returncode == 0, tail + result.stderr


def test_exec_start_is_the_documented_command_line() -> None:
    argv = shlex.split(one("ExecStart"))
    assert argv[0] == INSTALLED_BINARY
    assert argv[1:] == ["run", "--config", "/etc/amtuner/amtuner.yaml"]
    args = get_parser().parse_args(argv[1:])
    assert args.func.__name__ == "cmd_run"
    assert args.config == Path("/etc/amtuner/amtuner.yaml")


def test_type_notify_with_a_watchdog_and_reload_by_sighup() -> None:
    assert one("Type") == "notify"
    assert one("NotifyAccess") == "main"
    assert one("ExecReload") == "/bin/kill -HUP $MAINPID"
    assert one("Restart") == "on-failure"
    assert one("RestartPreventExitStatus") == "2"  # an invalid config does not restart-loop
    # The daemon pings every half of it while cycles complete; a wedged loop stops the pings and
    # is restarted within that allowance plus WatchdogSec: before the no-cycle alert (10 periods,
    # for 1 m).
    cfg = Config()
    allowance = 2 * cfg.controller.period_seconds + worst_cycle_s(cfg)
    watchdog_s = timespan_s(one("WatchdogSec"))
    assert watchdog_s >= 10
    assert allowance + watchdog_s < 10 * cfg.controller.period_seconds + 60


def test_the_numbers_in_the_comments_follow_the_defaults() -> None:
    """The unit's comments quote the watchdog allowance and a slow cycle; keep them current."""
    cfg, text = Config(), UNIT.read_text()
    allowance = 2 * cfg.controller.period_seconds + worst_cycle_s(cfg)
    assert f"the longest cycle ({allowance:g} s by default)" in text
    rm, refresh = cfg.rm, cfg.refresh
    assert (
        f"at most {rm.connect_timeout_seconds:g} s connect + {rm.read_timeout_seconds:g} s read "
        "(one deadline for all of a cycle's requests) and the refresh at most "
        f"{refresh.timeout_seconds:g} s: {worst_cycle_s(cfg):g} s."
    ) in " ".join(line.lstrip("# ") for line in text.splitlines())


def test_stop_timeout_outlasts_a_slow_cycle() -> None:
    assert timespan_s(one("TimeoutStopSec")) > worst_cycle_s(Config())
    assert one("KillMode") == "mixed"  # the refresh child is not sent SIGTERM mid-way


def test_writable_paths_match_the_config_defaults() -> None:
    example = load_config(ROOT / "config.example.yaml")
    assert example.scheduler.config_file is not None
    # The directory, not the file: the atomic rename needs to create a file beside it.
    assert SERVICE["ReadWritePaths"] == [str(example.scheduler.config_file.parent)]
    assert one("ProtectSystem") == "strict"
    state_dir = Path("/var/lib") / one("StateDirectory")
    for path in (example.state_file, example.backup_dir, Config().state_file, Config().backup_dir):
        assert path.is_relative_to(state_dir), path


def test_hardening_list_without_memory_deny_write_execute() -> None:
    expected = {
        "User": "amtuner",
        "Group": "hadoop",
        "NoNewPrivileges": "yes",
        "PrivateTmp": "yes",
        "PrivateDevices": "yes",
        "ProtectHome": "yes",
        "ProtectKernelTunables": "yes",
        "ProtectKernelModules": "yes",
        "ProtectKernelLogs": "yes",
        "ProtectControlGroups": "yes",
        "ProtectClock": "yes",
        "ProtectHostname": "yes",
        "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
        "RestrictNamespaces": "yes",
        "RestrictRealtime": "yes",
        "RestrictSUIDSGID": "yes",
        "LockPersonality": "yes",
        "SystemCallArchitectures": "native",
        "CapabilityBoundingSet": "",
        "UMask": "0027",
        "SyslogLevelPrefix": "yes",
    }
    assert {key: one(key) for key in expected} == expected
    assert SERVICE["SystemCallFilter"][0] == "@system-service"
    # `yarn rmadmin` is a JVM: its JIT needs writable+executable memory.
    assert "MemoryDenyWriteExecute" not in SERVICE


SANDBOX = r"""
set -e
etc="$1/etc"; writable="$2"
mount --bind "$etc" "$etc"
mount --bind "$writable" "$writable"
mount -o remount,bind,ro "$etc"
exec "$3" -c '
import sys
from pathlib import Path
from amtuner.executor import SchedulerFile, WriteError, write_atomically
path = Path(sys.argv[1])
edit = SchedulerFile.read(path, "capacity").edit({"": 0.3})
try:
    write_atomically(edit, backup_dir=None, keep_backups=0)
except WriteError as exc:
    sys.exit(f"WriteError: {exc}")
print(SchedulerFile.read(path, "capacity").current_value(""))
' "$etc/conf/capacity-scheduler.xml"
"""


@pytest.mark.parametrize("writable", ["conf", "conf/capacity-scheduler.xml"])
def test_read_write_paths_must_name_the_directory(tmp_path: Path, writable: str) -> None:
    """What ProtectSystem=strict + ReadWritePaths= build, rebuilt with the same mounts in a
    private mount namespace: a read-only tree with one read-write bind mount inside. The real
    atomic write gets through when the directory is writable, not when only the file is."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to build a mount namespace")
    conf = tmp_path / "etc" / "conf"
    conf.mkdir(parents=True)
    (conf / "capacity-scheduler.xml").write_bytes(
        default_scheduler_config("capacity", ["root.default"], am_share=0.1)
    )
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True
    )
    if probe.returncode != 0:
        pytest.skip(f"no mount namespaces here: {probe.stderr.decode().strip()}")
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", SANDBOX, "sh",
         str(tmp_path), str(tmp_path / "etc" / writable), sys.executable],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if writable == "conf":
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "0.3"
    else:
        assert "WriteError" in result.stderr, result.stdout + result.stderr
        assert b"0.1" in (conf / "capacity-scheduler.xml").read_bytes()
