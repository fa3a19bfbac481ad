"""Credentials never leave the config, and the RM's words reach a terminal or the journal only
escaped: `once`, `check`, `status`, `run`, the audit log and the state file, against a real
HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import logging
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from amtuner.executor import SchedulerFile
from amtuner.model import SchedulerKind
from amtuner.safetext import SafeFormatter, printable, redact
from amtuner.sim.simulation import default_scheduler_config
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_faults import healthy

pytestmark = pytest.mark.slow

SECRET = "s3cr3t-Pa55"
ESC = "\x1b"


def with_password(url: str) -> str:
    return url.replace("http://", f"http://admin:{SECRET}@")


def setup(tmp_path: Path, url: str, **sections: object) -> Path:
    sched = tmp_path / "fair-scheduler.xml"
    sched.write_bytes(default_scheduler_config("fair", ["root.default"], am_share=0.1))
    return write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": [with_password(url)], "connect_timeout_seconds": 1,
            "read_timeout_seconds": 2},
        scheduler={"kind": "fair", "config_file": str(sched)},
        refresh={"method": "none"},
        audit_log=str(tmp_path / "audit.jsonl"),
        **sections,
    )  # fmt: skip


def everything_written(tmp_path: Path, *outputs: str) -> str:
    files = [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()
             and p.name != "amtuner.yaml"]  # fmt: skip
    return "\n".join([*outputs, *files])


def test_a_password_in_rm_urls_reaches_no_output_log_audit_or_state(
    tmp_path: Path, canned_rm
) -> None:
    seen: list[str] = []

    def rm(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        seen.append(h.headers.get("Authorization", ""))
        return healthy(h)

    config = setup(tmp_path, canned_rm(rm))
    once = amtuner("once", "--config", str(config))
    assert once.returncode == 0, once.stdout + once.stderr
    assert "rest http://***@127.0.0.1:" in once.stdout
    assert (tmp_path / "audit.jsonl").read_text().strip(), "the change was recorded"
    assert seen and all(a.startswith("Basic ") for a in seen), "the RM still gets the password"
    check = amtuner("check", "--config", str(config))
    status = amtuner("status", "--config", str(config))
    assert status.returncode == 0, status.stderr
    down = setup(tmp_path, "http://127.0.0.1:1")  # an error names the URL too
    failed = amtuner("once", "--config", str(down))
    assert failed.returncode == 3
    outputs = [p.stdout + p.stderr for p in (once, check, status, failed)]
    assert SECRET not in everything_written(tmp_path, *outputs)


def test_a_password_in_a_bad_rm_url_is_not_echoed_by_config_errors(tmp_path: Path) -> None:
    config = tmp_path / "amtuner.yaml"
    config.write_text(f"rm: {{urls: ['ftp://admin:{SECRET}@rm:8088']}}\n")
    check = amtuner("check", "--config", str(config))
    assert check.returncode == 2
    assert "rm.urls[0]" in check.stdout + check.stderr
    assert SECRET not in check.stdout + check.stderr


def hostile(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
    if h.path.split("?")[0].endswith("/cluster/info"):
        return healthy(h)
    body = f"{ESC}[2J{ESC}]0;owned{chr(7)}boom\nWARNING amtuner.daemon: cycle: forged line"
    return 500, {"Content-Type": "text/plain"}, body.encode()


def test_the_rms_words_are_escaped_in_output_and_journal(tmp_path: Path, canned_rm) -> None:
    config = setup(tmp_path, canned_rm(hostile))
    once = amtuner("once", "--config", str(config))
    assert once.returncode == 3, once.stdout + once.stderr
    assert "HTTP 500 Internal Server Error: \\x1b[2J\\x1b]0;owned\\x07boom" in once.stdout
    shown = everything_written(tmp_path, once.stdout, once.stderr)
    assert ESC not in shown and chr(7) not in shown
    assert not any(line.startswith("WARNING amtuner.daemon") for line in shown.splitlines())


def test_log_records_are_redacted_and_escaped() -> None:
    record = logging.LogRecord(
        "amtuner.monitor", logging.WARNING, __file__, 1,
        "%s answered %r", (f"http://u:{SECRET}@rm:8088/ws/v1", f"{ESC}[31mred"), None,
    )  # fmt: skip
    line = SafeFormatter("%(levelname)s %(message)s").format(record)
    assert SECRET not in line and ESC not in line
    assert "http://***@rm:8088/ws/v1" in line


@pytest.mark.parametrize(
    ("text", "safe"),
    [
        ("https://a:b@rm:8443/x and http://c@rm2", "https://***@rm:8443/x and http://***@rm2"),
        ("http://rm:8088/a@b", "http://rm:8088/a@b"),  # an @ in the path is no user information
        ("no url here: user@host", "no url here: user@host"),
    ],
)
def test_redact(text: str, safe: str) -> None:
    assert redact(text) == safe


def test_printable_escapes_controls_and_bidi_overrides() -> None:
    assert printable("a\x1b[0m\u202eb\nc") == "a\\x1b[0m\\u202eb\\x0ac"
    assert printable("a\nb\tc", lines=True) == "a\nb\tc"


def test_tls_verification_off_is_a_check_risk(tmp_path: Path, canned_rm) -> None:
    config = setup(tmp_path, canned_rm(healthy), controller={"a_min": 0.1})
    doc = json.loads(json.dumps(__import__("yaml").safe_load(config.read_text())))
    doc["rm"]["verify"] = False
    config.write_text(json.dumps(doc))
    check = amtuner("check", "--config", str(config))
    assert check.returncode == 1, check.stdout
    assert "risk      rm.verify: false: the RM's TLS certificate is not checked" in check.stdout


@pytest.mark.parametrize(
    ("value", "after"),
    [
        ("<!-- managed by puppet -->0.1", "<!-- managed by puppet -->0.3"),
        (" 0.1 <!-- was 0.2 --> ", " 0.3 <!-- was 0.2 --> "),
        ("<?keep me?>0.1", "<?keep me?>0.3"),
        ("<![CDATA[0.1]]><!-- managed -->", "0.3<!-- managed -->"),
    ],
)
def test_a_comment_inside_a_value_survives_an_edit(tmp_path: Path, value: str, after: str) -> None:
    path = tmp_path / "capacity-scheduler.xml"
    key = "yarn.scheduler.capacity.maximum-am-resource-percent"
    path.write_text(f"<configuration>\n  <property><name>{key}</name><value>{value}</value>"
                    "</property>\n</configuration>\n")  # fmt: skip
    edit = SchedulerFile.read(path, SchedulerKind.CAPACITY).edit({"": 0.3})
    assert f"<value>{after}</value>".encode() in edit.new_data
    assert edit.diff.count("\n-") == 1
