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

from amtuner.config import (
    Config,
    ControllerSettings,
    GuardSettings,
    RefreshSettings,
    RMSettings,
    SchedulerSettings,
)
from amtuner.cycle import Cycle
from amtuner.executor import (
    CommandRefresher,
    Edit,
    ExecutorError,
    NoRefresh,
    RefreshError,
    RestRefresher,
    SchedulerFile,
    StoreChanged,
    apply_edit,
    make_refresher,
)
from amtuner.executor.command import KEEP_BYTES, run_bounded
from amtuner.executor.refresh import sched_conf_xml
from amtuner.model import ControllerState, Observation, SchedulerKind
from amtuner.monitor.transport import RequestsTransport
from amtuner.rmchannel import RMChannel

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "tests" / "data" / "shared"
DATA = ROOT / "tests" / "data" / "executor"

PAPER = ControllerSettings(policy="paper")
"""The paper's loop raises A for the busy observations these cycles read, so each makes a change."""


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
    command = make_refresher(RefreshSettings())
    assert command.describe() == "yarn rmadmin -refreshQueues"
    with requests.Session() as session:
        described = rest_settings(["http://rm:8088/"], session).describe()
    assert described.startswith("PUT http://rm:8088/ws/v1/cluster/scheduler-conf")
    none = make_refresher(RefreshSettings(method="none"))
    assert isinstance(none, NoRefresh)
    assert "5-15 s" in none.describe()


# --- REST ------------------------------------------------------------------------------------

Handler = Callable[[BaseHTTPRequestHandler, bytes], tuple[int, dict[str, str], bytes]]


def apply_put(doc: bytes, body: bytes) -> bytes:
    """What a mutable store does with a ``<sched-conf>`` PUT (keys set to a value; a key sent
    empty, which the RM removes, is left alone here)."""
    root = ET.fromstring(body)
    values: dict[str, str] = {}
    for value in entries(root.find("global-updates")).values():
        if value:
            values[""] = value
    for update in root.iter("update-queue"):
        value = entries(update.find("params")).get("maximum-am-resource-percent")
        if value:
            values[update.findtext("queue-name") or ""] = value
    conf = SchedulerFile(Path("scheduler-conf"), "capacity", doc)
    return conf.edit({t: float(v) for t, v in values.items()}).new_data


class FakeRM:
    """A loopback HTTP server holding a mutable store (GET serves it, a PUT changes it when
    ``applies(status)``), whose PUT answers come from ``respond``; records what it got."""

    def __init__(
        self, respond: Handler, applies: Callable[[int], bool] = lambda status: status < 300
    ) -> None:
        self.requests: list[tuple[str, str, bytes, str]] = []
        self.doc = (DATA / "capacity-scheduler.xml").read_bytes()
        rm = self

        class H(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                rm.requests.append(("PUT", self.path, body, self.headers["Content-Type"]))
                status, headers, payload = respond(self, body)
                if applies(status):
                    rm.doc = apply_put(rm.doc, body)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                rm.requests.append(("GET", self.path, b"", ""))
                self.send_response(200)
                self.send_header("Content-Length", str(len(rm.doc)))
                self.end_headers()
                self.wfile.write(rm.doc)

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


def rest(urls: list[str], session: requests.Session, deadline_s: float = 5.0) -> RestRefresher:
    """The REST refresher as `amtuner once` builds it (`amtuner.commands.rest_channel`)."""
    return RestRefresher(
        RMChannel(urls, RequestsTransport(session), deadline_s=deadline_s, timeout=(5, 5))
    )


def rest_settings(urls: list[str], session: requests.Session) -> RestRefresher:
    refresher = make_refresher(
        RefreshSettings(method="rest"),
        RMChannel.for_settings(RMSettings(urls=tuple(urls)), session, 5),
    )
    assert isinstance(refresher, RestRefresher)
    return refresher


@pytest.fixture
def rms() -> Iterator[Callable[..., FakeRM]]:
    started: list[FakeRM] = []

    def start(respond: Handler, applies: Callable[[int], bool] | None = None) -> FakeRM:
        started.append(FakeRM(respond, applies) if applies else FakeRM(respond))
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
    tmp_path: Path, rms: Callable[..., FakeRM]
) -> None:
    rm = rms(ok)
    edit = capacity_edit(tmp_path, {"": 0.2, "prod.etl": 0.3, "root.default": 0.1})
    with requests.Session() as session:
        rest([rm.url], session).refresh(edit)
    [read, (method, path, body, ctype)] = rm.requests
    assert read[:2] == ("GET", "/ws/v1/cluster/scheduler-conf")  # the values it replaces
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

    ours = shape(sched_conf_xml({"": (None, 0.2), "root.a": (0.1, 0.3), "root.a@core": (0.1, 1)}))
    assert b"<key>accessible-node-labels.core.maximum-am-resource-percent</key>" in sched_conf_xml(
        {"root.a@core": (None, 0.5)}
    )
    documented = shape((samples / "scheduler-conf-put-global-updates.xml").read_bytes()) | shape(
        (samples / "scheduler-conf-put-update-queue.xml").read_bytes()
    )
    assert ours == documented


def test_rest_follows_a_standby_redirect_once(rms: Callable[..., FakeRM]) -> None:
    active = rms(ok)

    def standby(h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 307, {"Location": active.url + h.path}, b"This is standby RM."

    rm2 = rms(standby)
    with requests.Session() as session:
        rest([dead_url(), rm2.url, active.url], session).refresh(
            Edit(Path("x"), b"", b"", "", True, {"": (0.1, 0.4)})
        )
    [put] = [r for r in rm2.requests if r[0] == "PUT"]
    assert [r[0] for r in active.requests] == ["PUT"] and active.requests[0][2] == put[2]


def test_rest_redirect_loop_and_rm_error_and_unreachable(rms: Callable[..., FakeRM]) -> None:
    def loop(h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 307, {"Location": f"http://127.0.0.1:{h.server.server_address[1]}{h.path}"}, b""

    def refuse(_h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 400, {}, b"Configuration change only supported by MutableConfScheduler."

    edit = Edit(Path("x"), b"", b"", "", True, {"prod.etl": (0.25, 0.4)})
    with requests.Session() as session:
        looping = rms(loop)
        with pytest.raises(RefreshError, match="redirected again"):
            rest([looping.url], session).refresh(edit)
        assert [r[0] for r in looping.requests] == ["GET", "PUT", "PUT"]
        with pytest.raises(RefreshError, match=r"HTTP 400: Configuration change only supported"):
            rest([rms(refuse).url], session).refresh(edit)
        with pytest.raises(RefreshError, match="no ResourceManager answered"):
            rest([dead_url()], session).refresh(edit)


def test_rest_refused_for_want_of_an_admin_says_what_to_set(
    rms: Callable[..., FakeRM],
) -> None:
    def unauthenticated(_h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 401, {}, b"Unable to obtain user name, user not authenticated"

    edit = Edit(Path("x"), b"", b"", "", True, {"": (0.1, 0.4)})
    with requests.Session() as session, pytest.raises(RefreshError) as refused:
        rest([rms(unauthenticated).url], session).refresh(edit)
    assert "HTTP 401: Unable to obtain user name" in str(refused.value)
    assert "set rm.user_name" in str(refused.value)


def test_rest_failure_rolls_back_the_file(tmp_path: Path, rms: Callable[..., FakeRM]) -> None:
    def refuse(_h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 400, {}, b"Invalid configuration: maximum-am-resource-percent"

    edit = capacity_edit(tmp_path, {"": 0.5})
    with requests.Session() as session:
        refresher = rest_settings([rms(refuse).url], session)
        with pytest.raises(RefreshError, match=r"HTTP 400.*restored the previous file"):
            apply_edit(edit, refresher, backup_dir=tmp_path / "b")
    assert edit.path.read_bytes() == edit.old_data


def test_rest_fetch_then_edit_without_a_local_file(rms: Callable[..., FakeRM]) -> None:
    rm = rms(ok)
    with requests.Session() as session:
        refresher = rest([rm.url], session)
        conf = SchedulerFile(Path("scheduler-conf"), "capacity", refresher.fetch())
        edit = conf.edit({"": 0.15})
        refresher.refresh(edit)
    assert [r[0] for r in rm.requests] == ["GET", "GET", "PUT"]
    assert b"<value>0.15</value>" in rm.requests[2][2]


def test_a_failed_put_puts_the_previous_values_back(
    tmp_path: Path, rms: Callable[..., FakeRM]
) -> None:
    """A PUT that failed may have been applied: the old values go back, and a key the file did
    not set goes back empty (removed), not as a value amtuner made up."""
    answers = iter([(500, {}, b"timed out writing the store"), (200, {}, b"applied")])
    rm = rms(lambda _h, _b: next(answers), lambda _status: True)  # applied, then failed
    edit = capacity_edit(tmp_path, {"": 0.2, "root.default": 0.3})
    with requests.Session() as session:
        refresher = rest_settings([rm.url], session)
        with pytest.raises(RefreshError, match=r"HTTP 500.*restored .*; refreshed again"):
            apply_edit(edit, refresher, backup_dir=tmp_path / "b")
    assert edit.path.read_bytes() == edit.old_data
    first, second = (ET.fromstring(r[2]) for r in rm.requests if r[0] == "PUT")
    key = "yarn.scheduler.capacity.maximum-am-resource-percent"
    assert entries(first.find("global-updates")) == {key: "0.2"}
    assert entries(second.find("global-updates")) == {key: "0.1"}
    [queue] = second.iter("update-queue")
    assert queue.findtext("queue-name") == "root.default"
    assert entries(queue.find("params")) == {"maximum-am-resource-percent": ""}


def test_a_failed_put_to_the_store_puts_the_previous_value_back(
    tmp_path: Path, rms: Callable[..., FakeRM]
) -> None:
    """Without a file (the RM's mutable store), the cycle undoes a PUT that failed the same way."""
    answers = iter([(500, {}, b"timed out writing the store"), (200, {}, b"applied")])
    rm = rms(lambda _h, _b: next(answers), lambda _status: True)  # applied, then failed
    cfg = Config(
        scheduler=SchedulerSettings(kind="capacity"),
        refresh=RefreshSettings(method="rest"),
        controller=PAPER,
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
        cycle = Cycle(config=cfg, monitor=Busy(), refresher=rest([rm.url], session))
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


# --- REST: redirects, deadline, cap, and a store changed since it was read ------------------


def test_a_redirect_to_an_rm_not_configured_is_refused_and_nothing_reaches_it(
    rms: Callable[..., FakeRM],
) -> None:
    """A standby (or anything posing as one) that names another host or port gets neither the
    PUT nor the GET, nor the session's user.name: only configured RMs are asked."""
    foreign = rms(ok)

    def elsewhere(h: BaseHTTPRequestHandler, _b: bytes) -> tuple[int, dict[str, str], bytes]:
        return 307, {"Location": foreign.url + h.path}, b"This is standby RM."

    standby = rms(elsewhere)
    edit = Edit(Path("x"), b"", b"", "", True, {"": (0.1, 0.4)})
    with requests.Session() as session:
        session.params = {"user.name": "yarn"}
        with pytest.raises(RefreshError, match=r"not one of the configured RMs .*not followed"):
            rest([standby.url], session).refresh(edit)
    assert foreign.requests == []
    assert [r[0] for r in standby.requests] == ["GET", "PUT"]


class Redirecting(BaseHTTPRequestHandler):
    """Answers every request with ``status`` to ``location`` (a gateway's login page)."""

    status = 302
    location = "http://127.0.0.1:1/login"

    def _answer(self) -> None:
        self.send_response(self.status)
        self.send_header("Location", self.location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("status", [301, 302, 303, 308])
def test_a_redirect_that_is_not_a_standby_s_307_is_refused(status: int) -> None:
    handler = type("H", (Redirecting,), {"status": status})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with requests.Session() as session, pytest.raises(
            ExecutorError, match=rf"HTTP {status} redirect to .*/login, not a standby RM's 307"
        ):
            rest([f"http://127.0.0.1:{server.server_address[1]}"], session).fetch()
    finally:
        server.shutdown()
        server.server_close()


class Drip(BaseHTTPRequestHandler):
    """Says it sends 1 MB, then drips a byte every 0.2 s."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 20))
        self.end_headers()
        try:
            for _ in range(200):
                self.wfile.write(b"<")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass

    def log_message(self, *args: object) -> None:
        pass


def test_the_rest_refresh_keeps_the_monitor_s_deadline_and_cap(
    rms: Callable[..., FakeRM],
) -> None:
    """An RM that drips its answer cannot hold a refresh past its deadline (each socket read
    alone would never time out), and an answer larger than the cap is refused."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with requests.Session() as session, pytest.raises(
            ExecutorError, match=r"within the 1 s deadline"
        ):
            rest([f"http://127.0.0.1:{server.server_address[1]}"], session, 1.0).fetch()
    finally:
        server.shutdown()
        server.server_close()
    rm = rms(ok)
    with requests.Session() as session:
        small = RMChannel([rm.url], RequestsTransport(session), deadline_s=5, timeout=(5, 5),
                          max_body_bytes=100)  # fmt: skip
        with pytest.raises(ExecutorError, match=r"larger than the 100 byte cap"):
            RestRefresher(small).fetch()


def test_a_store_changed_since_it_was_read_is_kept(
    tmp_path: Path, rms: Callable[..., FakeRM]
) -> None:
    """An admin changes the global value between amtuner's read and its PUT: nothing is PUT,
    their value stays, and amtuner's file goes back as it was."""
    rm = rms(ok)
    edit = capacity_edit(tmp_path, {"": 0.3})  # read when the store held 0.1
    rm.doc = apply_put(rm.doc, sched_conf_xml({"": (0.1, 0.2)}))  # the admin's change
    with requests.Session() as session, pytest.raises(
        StoreChanged, match=r"holds 0.2 for the global value, not the 0.1"
    ):
        apply_edit(edit, rest([rm.url], session), backup_dir=tmp_path / "b")
    assert [r[0] for r in rm.requests] == ["GET"]
    assert edit.path.read_bytes() == edit.old_data
    assert StoreChanged.label == "concurrent-edit"
    assert b"<value>0.2</value>" in rm.doc


def test_a_store_changed_since_the_cycle_read_it_is_kept(
    tmp_path: Path, rms: Callable[..., FakeRM]
) -> None:
    """Without a file: the cycle read the store, an admin changed it, the PUT does not happen."""
    rm = rms(ok)
    cfg = Config(
        scheduler=SchedulerSettings(kind="capacity"), refresh=RefreshSettings(method="rest"),
        controller=PAPER, guard=GuardSettings(hold_off_seconds=0),
        state_file=tmp_path / "state.json",
    )  # fmt: skip

    class Busy:
        def observe(self, targets: object = ()) -> Observation:
            return Observation(
                time=1000.0, scheduler=SchedulerKind.CAPACITY, pending_apps=12, running_apps=6,
                memory_used_mb=8192, memory_total_mb=32768,
            )  # fmt: skip

    with requests.Session() as session:
        refresher = rest([rm.url], session)
        real_fetch, fetched = refresher.fetch, []

        def fetch_then_admin() -> bytes:
            data = real_fetch()
            if not fetched:  # the cycle's read; the admin saves right after it
                rm.doc = apply_put(rm.doc, sched_conf_xml({"": (0.1, 0.12)}))
            fetched.append(data)
            return data

        refresher.fetch = fetch_then_admin  # type: ignore[method-assign]
        cycle = Cycle(config=cfg, monitor=Busy(), refresher=refresher)
        seeded = {"": ControllerState(a=0.1, n=1, prev_pending=5, prev_running=6)}
        report, states = cycle.run(seeded)
    assert report.error == "concurrent-edit", report
    assert "not the 0.1 amtuner read" in report.message and states == seeded
    assert [r[0] for r in rm.requests if r[0] == "PUT"] == []
    assert b"<value>0.12</value>" in rm.doc
