"""Refreshers over real subprocesses and a real loopback HTTP server, and apply_edit's rollback."""

from __future__ import annotations

import shlex
import socket
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from amtuner.config import Config, GuardSettings, RefreshSettings, SchedulerSettings
from amtuner.cycle import Cycle
from amtuner.executor import (
    CommandRefresher,
    Edit,
    NoRefresh,
    RefreshError,
    RestRefresher,
    SchedulerFile,
    apply_edit,
    make_refresher,
)
from amtuner.executor.command import KEEP_BYTES, run_bounded
from amtuner.executor.refresh import sched_conf_xml
from amtuner.model import ControllerState, Observation, SchedulerKind

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "tests" / "data" / "shared"
DATA = ROOT / "tests" / "data" / "executor"


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def capacity_edit(tmp_path: Path, values: dict[str, float]) -> Edit:
    path = tmp_path / "conf" / "capacity-scheduler.xml"
    if not path.exists():
        path.parent.mkdir()
        path.write_bytes((DATA / "capacity-scheduler.xml").read_bytes())
    return SchedulerFile.read(path, "capacity").edit(values)


# --- command ---------------------------------------------------------------------------------


def test_command_success_and_describe() -> None:
    refresher = CommandRefresher(py("print('ok')"), 10)
    assert refresher.describe() == shlex.join(py("print('ok')"))
    refresher.refresh(Edit(Path("x"), b"", b"", "", False, {}))


def test_command_failure_quotes_stderr_tail() -> None:
    code = "import sys; sys.stderr.write('x' * 5000 + 'refreshQueues: Queue root.q not found'); "
    refresher = CommandRefresher(py(code + "sys.exit(255)"), 10)
    with pytest.raises(RefreshError, match=r"exited with status 255: …x+refreshQueues: Queue") as e:
        refresher.refresh(Edit(Path("x"), b"", b"", "", False, {}))
    assert len(str(e.value)) < 1000 + len(refresher.describe())


def test_command_missing_binary_and_timeout(tmp_path: Path) -> None:
    with pytest.raises(RefreshError, match=r"not found: .*no-such-yarn"):
        CommandRefresher([str(tmp_path / "no-such-yarn"), "rmadmin"], 10).refresh(
            Edit(Path("x"), b"", b"", "", False, {})
        )
    slow = CommandRefresher(py("import time; time.sleep(30)"), 0.3)
    with pytest.raises(RefreshError, match=r"did not finish within 0.3 s"):
        slow.refresh(Edit(Path("x"), b"", b"", "", False, {}))


GRANDCHILD = """
import os, subprocess, sys, time
pidfile = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
open(pidfile, "w").write(str(child.pid))
time.sleep(60)
"""


def gone(pid: int) -> bool:
    """Whether ``pid`` is dead (a zombie left for init to reap counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_a_refresh_that_times_out_is_killed_with_everything_it_started(tmp_path: Path) -> None:
    """`yarn` is a script that starts a JVM: killing the script alone would leave the JVM to
    reload the RM after the restore. The whole process group goes at the timeout."""
    pidfile = tmp_path / "grandchild"
    script = tmp_path / "refresh.py"
    script.write_text(GRANDCHILD)
    slow = CommandRefresher([sys.executable, str(script), str(pidfile)], 1.5)
    with pytest.raises(RefreshError, match=r"did not finish within 1.5 s \(its process group"):
        slow.refresh(Edit(Path("x"), b"", b"", "", False, {}))
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while not gone(grandchild):
        assert time.monotonic() < deadline, f"grandchild {grandchild} outlived the timeout"
        time.sleep(0.05)


def test_a_command_that_exits_leaves_no_helper_behind(tmp_path: Path) -> None:
    """A helper the command started and left holding its output pipe neither keeps the refresh
    waiting until the timeout nor runs on after it."""
    pidfile = tmp_path / "helper"
    code = (
        "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
        f"'import time; time.sleep(60)']); open({str(pidfile)!r}, 'w').write(str(p.pid))"
    )
    CommandRefresher(py(code), 30).refresh(Edit(Path("x"), b"", b"", "", False, {}))
    helper = int(pidfile.read_text())
    deadline = time.monotonic() + 10
    while not gone(helper):
        assert time.monotonic() < deadline, f"helper {helper} outlived the refresh"
        time.sleep(0.05)


def test_a_chatty_command_s_output_is_bounded() -> None:
    """200 MB on stdout and stderr: only the tail is kept and quoted."""
    code = (
        "import os, sys\n"
        "for _ in range(1600): os.write(1, b'o' * 65536); os.write(2, b'e' * 65536)\n"
        "sys.stderr.write('the last line'); sys.exit(3)"
    )
    done = run_bounded(py(code), 60)
    assert done.returncode == 3
    assert len(done.output) == KEEP_BYTES and done.output.endswith(b"the last line")
    assert done.dropped == 1600 * 2 * 65536 + len("the last line") - KEEP_BYTES
    with pytest.raises(RefreshError, match=r"exited with status 3: …e+the last line$"):
        CommandRefresher(py(code), 60).refresh(Edit(Path("x"), b"", b"", "", False, {}))


def test_apply_edit_refreshes_after_the_write(tmp_path: Path) -> None:
    edit = capacity_edit(tmp_path, {"": 0.3})
    check = f"import sys; sys.exit(0 if b'<value>0.3</value>' in open({str(edit.path)!r}, 'rb')"
    apply_edit(edit, CommandRefresher(py(check + ".read() else 7)"), 10), backup_dir=None)
    assert edit.path.read_bytes() == edit.new_data


def test_failed_refresh_command_rolls_back_byte_identical(tmp_path: Path) -> None:
    edit = capacity_edit(tmp_path, {"root.default": 0.3, "": 0.2})
    refresher = CommandRefresher(py("import sys; sys.exit('RM is in safe mode')"), 10)
    with pytest.raises(RefreshError, match=r"RM is in safe mode; restored the previous file"):
        apply_edit(edit, refresher, backup_dir=tmp_path / "b", keep_backups=3)
    assert edit.path.read_bytes() == edit.old_data
    assert [p.read_bytes() for p in (tmp_path / "b").iterdir()] == [edit.old_data]
    assert sorted(p.name for p in edit.path.parent.iterdir()) == ["capacity-scheduler.xml"]


def test_a_failed_refresh_is_run_again_on_the_restored_file(tmp_path: Path) -> None:
    """The RM may have reloaded before the refresh failed (a timeout after the reload): the
    restored file must be reloaded too, or file and RM disagree."""
    edit = capacity_edit(tmp_path, {"": 0.3})
    seen = tmp_path / "seen"
    code = (
        f"import sys; data = open({str(edit.path)!r}, 'rb').read(); "
        f"log = open({str(seen)!r}, 'ab'); log.write(b'new\\n' if b'<value>0.3<' in data "
        "else b'old\\n'); log.close(); sys.exit(data.count(b'<value>0.3<'))"
    )
    with pytest.raises(RefreshError, match=r"restored the previous file .*; refreshed again"):
        apply_edit(edit, CommandRefresher(py(code), 10), backup_dir=tmp_path / "b")
    assert seen.read_text().split() == ["new", "old"]
    assert edit.path.read_bytes() == edit.old_data


def test_when_refreshing_the_restored_file_fails_too_it_says_they_may_disagree(
    tmp_path: Path,
) -> None:
    edit = capacity_edit(tmp_path, {"": 0.3})
    refresher = CommandRefresher(py("import sys; sys.exit('RM is in safe mode')"), 10)
    with pytest.raises(RefreshError) as failed:
        apply_edit(edit, refresher, backup_dir=tmp_path / "b")
    message = str(failed.value)
    assert "restored the previous file" in message and "refreshing again failed too" in message
    assert "MAY DISAGREE" in message
    assert edit.path.read_bytes() == edit.old_data


def test_make_refresher_per_method() -> None:
    command = make_refresher(RefreshSettings(), ["http://rm:8088"])
    assert command.describe() == "yarn rmadmin -refreshQueues"
    rest = make_refresher(RefreshSettings(method="rest"), ["http://rm:8088/"])
    assert rest.describe().startswith("PUT http://rm:8088/ws/v1/cluster/scheduler-conf")
    none = make_refresher(RefreshSettings(method="none"), [])
    assert isinstance(none, NoRefresh)
    assert "5-15 s" in none.describe()


# --- REST ------------------------------------------------------------------------------------

Handler = Callable[[BaseHTTPRequestHandler, bytes], tuple[int, dict[str, str], bytes]]


class FakeRM:
    """A loopback HTTP server whose PUT answers come from ``respond``; records what it got."""

    def __init__(self, respond: Handler) -> None:
        self.requests: list[tuple[str, str, bytes, str]] = []
        rm = self

        class H(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                rm.requests.append(("PUT", self.path, body, self.headers["Content-Type"]))
                status, headers, payload = respond(self, body)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                rm.requests.append(("GET", self.path, b"", ""))
                payload = (DATA / "capacity-scheduler.xml").read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def rms() -> Iterator[Callable[[Handler], FakeRM]]:
    started: list[FakeRM] = []

    def start(respond: Handler) -> FakeRM:
        started.append(FakeRM(respond))
        return started[-1]

    yield start
    for rm in started:
        rm.close()


def ok(_h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
    return 200, {}, b"Configuration change successfully applied."


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def entries(element: ET.Element | None) -> dict[str | None, str | None]:
    assert element is not None
    return {e.findtext("key"): e.findtext("value") for e in element.iter("entry")}


def test_rest_put_sends_global_and_queue_updates(
    tmp_path: Path, rms: Callable[[Handler], FakeRM]
) -> None:
    rm = rms(ok)
    edit = capacity_edit(tmp_path, {"": 0.2, "prod.etl": 0.3, "root.default": 0.1})
    with requests.Session() as session:
        RestRefresher([rm.url], session, 5).refresh(edit)
    [(method, path, body, ctype)] = rm.requests
    assert (method, path, ctype) == ("PUT", "/ws/v1/cluster/scheduler-conf", "application/xml")
    root = ET.fromstring(body)
    assert root.tag == "sched-conf"
    assert entries(root.find("global-updates")) == {
        "yarn.scheduler.capacity.maximum-am-resource-percent": "0.2"
    }
    updates = {
        u.findtext("queue-name"): entries(u.find("params")) for u in root.iter("update-queue")
    }
    # root.default was unset (None -> 0.1): still sent; prod.etl 0.25 -> 0.3.
    assert updates == {
        "root.prod.etl": {"maximum-am-resource-percent": "0.3"},
        "root.default": {"maximum-am-resource-percent": "0.1"},
    }


def test_rest_body_has_the_documented_shape() -> None:
    samples = SHARED / "fixtures" / "rm-rest"

    def shape(data: bytes) -> set[str]:
        out = set()

        def walk(e: ET.Element, prefix: str) -> None:
            out.add(prefix + e.tag)
            for child in e:
                walk(child, prefix + e.tag + "/")

        walk(ET.fromstring(data), "")
        return out

    ours = shape(sched_conf_xml({"": (None, 0.2), "root.a": (0.1, 0.3)}))
    documented = shape((samples / "scheduler-conf-put-global-updates.xml").read_bytes()) | shape(
        (samples / "scheduler-conf-put-update-queue.xml").read_bytes()
    )
    assert ours == documented


def test_rest_follows_a_standby_redirect_once(rms: Callable[[Handler], FakeRM]) -> None:
    active = rms(ok)

    def standby(h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 307, {"Location": active.url + h.path}, b"This is standby RM."

    rm2 = rms(standby)
    with requests.Session() as session:
        RestRefresher([dead_url(), rm2.url], session, 5).refresh(
            Edit(Path("x"), b"", b"", "", True, {"": (0.1, 0.4)})
        )
    assert len(rm2.requests) == 1
    assert len(active.requests) == 1
    assert active.requests[0][2] == rm2.requests[0][2]


def test_rest_redirect_loop_and_rm_error_and_unreachable(rms: Callable[[Handler], FakeRM]) -> None:
    def loop(h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 307, {"Location": f"http://127.0.0.1:{h.server.server_address[1]}{h.path}"}, b""

    def refuse(_h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 400, {}, b"Configuration change only supported by MutableConfScheduler."

    edit = Edit(Path("x"), b"", b"", "", True, {"root.a": (0.1, 0.4)})
    with requests.Session() as session:
        looping = rms(loop)
        with pytest.raises(RefreshError, match="redirected again"):
            RestRefresher([looping.url], session, 5).refresh(edit)
        assert len(looping.requests) == 2
        with pytest.raises(RefreshError, match=r"HTTP 400: Configuration change only supported"):
            RestRefresher([rms(refuse).url], session, 5).refresh(edit)
        with pytest.raises(RefreshError, match="no ResourceManager reachable"):
            RestRefresher([dead_url()], session, 5).refresh(edit)


def test_rest_refused_for_want_of_an_admin_says_what_to_set(
    rms: Callable[[Handler], FakeRM],
) -> None:
    def unauthenticated(_h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 401, {}, b"Unable to obtain user name, user not authenticated"

    edit = Edit(Path("x"), b"", b"", "", True, {"": (0.1, 0.4)})
    with requests.Session() as session, pytest.raises(RefreshError) as refused:
        RestRefresher([rms(unauthenticated).url], session, 5).refresh(edit)
    assert "HTTP 401: Unable to obtain user name" in str(refused.value)
    assert "set rm.user_name" in str(refused.value)


def test_rest_failure_rolls_back_the_file(tmp_path: Path, rms: Callable[[Handler], FakeRM]) -> None:
    def refuse(_h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 400, {}, b"Invalid configuration: maximum-am-resource-percent"

    edit = capacity_edit(tmp_path, {"": 0.5})
    with requests.Session() as session:
        refresher = make_refresher(RefreshSettings(method="rest"), [rms(refuse).url], session)
        with pytest.raises(RefreshError, match=r"HTTP 400.*restored the previous file"):
            apply_edit(edit, refresher, backup_dir=tmp_path / "b")
    assert edit.path.read_bytes() == edit.old_data


def test_rest_fetch_then_edit_without_a_local_file(rms: Callable[[Handler], FakeRM]) -> None:
    rm = rms(ok)
    with requests.Session() as session:
        refresher = RestRefresher([rm.url], session, 5)
        conf = SchedulerFile(Path("scheduler-conf"), "capacity", refresher.fetch())
        edit = conf.edit({"": 0.15})
        refresher.refresh(edit)
    assert [r[0] for r in rm.requests] == ["GET", "PUT"]
    assert b"<value>0.15</value>" in rm.requests[1][2]


def test_a_failed_put_puts_the_previous_values_back(
    tmp_path: Path, rms: Callable[[Handler], FakeRM]
) -> None:
    """A PUT that failed may have been applied: the old values go back, and a key the file did
    not set goes back empty (removed), not as a value amtuner made up."""
    answers = iter([(500, {}, b"timed out writing the store"), (200, {}, b"applied")])
    rm = rms(lambda _h, _b: next(answers))
    edit = capacity_edit(tmp_path, {"": 0.2, "root.default": 0.3})
    with requests.Session() as session:
        refresher = make_refresher(RefreshSettings(method="rest"), [rm.url], session)
        with pytest.raises(RefreshError, match=r"HTTP 500.*restored .*; refreshed again"):
            apply_edit(edit, refresher, backup_dir=tmp_path / "b")
    assert edit.path.read_bytes() == edit.old_data
    first, second = (ET.fromstring(r[2]) for r in rm.requests)
    key = "yarn.scheduler.capacity.maximum-am-resource-percent"
    assert entries(first.find("global-updates")) == {key: "0.2"}
    assert entries(second.find("global-updates")) == {key: "0.1"}
    [queue] = second.iter("update-queue")
    assert queue.findtext("queue-name") == "root.default"
    assert entries(queue.find("params")) == {"maximum-am-resource-percent": ""}


def test_a_failed_put_to_the_store_puts_the_previous_value_back(
    tmp_path: Path, rms: Callable[[Handler], FakeRM]
) -> None:
    """Without a file (the RM's mutable store), the cycle undoes a PUT that failed the same way."""
    answers = iter([(500, {}, b"timed out writing the store"), (200, {}, b"applied")])
    rm = rms(lambda _h, _b: next(answers))
    cfg = Config(
        scheduler=SchedulerSettings(kind="capacity"),
        refresh=RefreshSettings(method="rest"),
        guard=GuardSettings(hold_off_seconds=0),
        state_file=tmp_path / "state.json",
    )

    class Busy:
        def observe(self, targets: object = ()) -> Observation:
            return Observation(
                time=1000.0, scheduler=SchedulerKind.CAPACITY, pending_apps=12, running_apps=6,
                memory_used_mb=8192, memory_total_mb=32768,
            )

    with requests.Session() as session:
        cycle = Cycle(config=cfg, monitor=Busy(), refresher=RestRefresher([rm.url], session, 5))
        seeded = {"": ControllerState(a=0.1, n=1, prev_pending=5, prev_running=6)}
        report, states = cycle.run(seeded)
    assert report.error == "refresh-failed", report
    assert "refreshed again with the previous configuration" in report.message
    assert states == seeded
    gets = [r for r in rm.requests if r[0] == "GET"]
    first, second = (ET.fromstring(r[2]) for r in rm.requests if r[0] == "PUT")
    key = "yarn.scheduler.capacity.maximum-am-resource-percent"
    assert gets and entries(first.find("global-updates")) != {key: "0.1"}
    assert entries(second.find("global-updates")) == {key: "0.1"}
