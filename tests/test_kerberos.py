"""amtuner's Kerberos identity without a KDC: which cache and keytab a config means, what a
missing ticket or keytab says, that nothing is sent without a token, and the admin ACL reading.

The same code against a real KDC and a Kerberised RM: tests/realyarn/test_real_kerberos.py.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from amtuner.config import RMSettings
from amtuner.executor import CommandRefresher, RefreshError
from amtuner.kerberos import (
    KerberosError,
    KerberosLogin,
    admin_acl_verdict,
    keytab_principals,
    short_name,
)
from amtuner.monitor import ObservationError, RMClient, make_session
from amtuner.realyarn.secure import hadoop_xml


def test_a_keytab_gets_a_cache_of_amtuners_own(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    rm = RMSettings(kerberos=True, keytab=tmp_path / "a.keytab")
    assert KerberosLogin.of(rm, state, {}) == KerberosLogin(None, rm.keytab, tmp_path / "krb5cc")
    from_env = KerberosLogin.of(RMSettings(kerberos=True), state, {"KRB5_CLIENT_KTNAME": "FILE:/k"})
    assert from_env.keytab == Path("/k") and from_env.ticket_cache == tmp_path / "krb5cc"
    assert from_env.environment() == {
        "KRB5CCNAME": f"FILE:{tmp_path / 'krb5cc'}", "KRB5_CLIENT_KTNAME": "/k",
    }  # fmt: skip
    # No keytab: the cache someone else keeps (KRB5CCNAME), untouched.
    assert KerberosLogin.of(RMSettings(kerberos=True), state, {}) == KerberosLogin(None, None, None)


def test_short_name_is_the_default_auth_to_local_rule() -> None:
    assert short_name("amtuner/rm1.example.com@EXAMPLE.COM") == "amtuner"
    assert short_name("amtuner@EXAMPLE.COM") == short_name("amtuner") == "amtuner"


def test_an_unreadable_or_missing_keytab_is_named(tmp_path: Path) -> None:
    missing = KerberosLogin("amtuner", tmp_path / "none.keytab", tmp_path / "cc")
    with pytest.raises(KerberosError, match=r"keytab .*none.keytab does not exist"):
        missing.credentials()


@pytest.fixture
def no_ticket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KerberosLogin:
    pytest.importorskip("gssapi", reason="the kerberos extra is not installed")
    monkeypatch.setenv("KRB5_CONFIG", str(tmp_path / "krb5.conf"))
    (tmp_path / "krb5.conf").write_text("[libdefaults]\n  default_realm = EXAMPLE.COM\n")
    monkeypatch.delenv("KRB5_CLIENT_KTNAME", raising=False)
    return KerberosLogin(None, None, tmp_path / "empty-cache")


class _Counting(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Counting.seen.append(self.path)
        self.send_response(401)
        self.send_header("WWW-Authenticate", "Negotiate")
        self.end_headers()

    do_PUT = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def counting_server() -> Iterator[str]:
    _Counting.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_without_a_ticket_nothing_is_sent(no_ticket: KerberosLogin, counting_server: str) -> None:
    """An RM that wants SPNEGO is never asked anonymously: the observation fails with reason
    auth, saying what is missing, before any request leaves."""
    session = make_session(RMSettings(urls=(counting_server,), kerberos=True), no_ticket)
    client = RMClient((counting_server,), session, web_ui_fallback=False)
    with pytest.raises(ObservationError) as err:
        client.observe()
    assert err.value.reason == "auth"
    assert "no Kerberos ticket" in err.value.message and "set rm.keytab" in err.value.message
    assert _Counting.seen == []


def test_without_a_ticket_the_refresh_command_is_not_run(
    no_ticket: KerberosLogin, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    argv = [sys.executable, "-c", f"open({str(marker)!r}, 'w')"]
    refresher = CommandRefresher(argv, 10, environment=no_ticket.fresh_environment)
    with pytest.raises(RefreshError, match="not run: no Kerberos ticket"):
        refresher.refresh(None)  # type: ignore[arg-type]
    assert not marker.exists()


def test_the_refresh_command_gets_the_ticket_cache(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import os, sys; sys.exit(os.environ['KRB5CCNAME'] != 'FILE:/c')"]
    CommandRefresher(argv, 10, environment=lambda: {"KRB5CCNAME": "FILE:/c"}).refresh(None)  # type: ignore[arg-type]
    done = subprocess.run(argv, env={"KRB5CCNAME": "other"}, check=False)
    assert done.returncode == 1, "the check above can fail"


@pytest.mark.parametrize(
    ("acl", "allowed"),
    [
        (None, True),  # unset: Hadoop's default, "*"
        ("*", True),
        ("yarn,amtuner", True),
        ("yarn,amtuners", False),
        ("yarn", False),
        (" no-such-group-here", False),
    ],
)
def test_the_admin_acl_is_read_beside_the_scheduler_file(
    tmp_path: Path, acl: str | None, allowed: bool
) -> None:
    props = {} if acl is None else {"yarn.admin.acl": acl}
    (tmp_path / "yarn-site.xml").write_bytes(hadoop_xml(props))
    verdict, why = admin_acl_verdict("amtuner/h@R", tmp_path / "capacity-scheduler.xml", {})
    assert verdict is allowed, why
    if not allowed:
        assert "is not in yarn.admin.acl" in why and "-refreshAdminAcls" in why


def test_no_yarn_site_means_the_acl_cannot_be_told(tmp_path: Path) -> None:
    verdict, why = admin_acl_verdict("amtuner", tmp_path / "capacity-scheduler.xml", {})
    assert verdict is None and "cannot tell" in why
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "yarn-site.xml").write_bytes(hadoop_xml({"yarn.admin.acl": "x"}))
    env = {"HADOOP_CONF_DIR": str(tmp_path / "conf")}
    assert admin_acl_verdict("amtuner", tmp_path / "capacity-scheduler.xml", env)[0] is False


def test_the_principals_of_a_keytab_mit_wrote() -> None:
    """``tests/data/ktutil.keytab``: MIT ktutil 1.20's ``addent`` of two keys of one principal
    and one of another, then ``wkt`` (a password of 'secret': nothing to protect)."""
    data = (Path(__file__).parent / "data" / "ktutil.keytab").read_bytes()
    assert keytab_principals(data) == ["svc/h.example.com@R.ORG", "other@R.ORG"]
    with pytest.raises(ValueError, match="version 2"):
        keytab_principals(b"\x05\x01")


def test_a_principal_the_keytab_lacks_is_named_with_those_it_holds(tmp_path: Path) -> None:
    kt = tmp_path / "a.keytab"
    kt.write_bytes((Path(__file__).parent / "data" / "ktutil.keytab").read_bytes())
    with pytest.raises(KerberosError, match=r"holds no key for rm.principal amtuner@R.ORG "
                       r"\(it holds: svc/h.example.com@R.ORG, other@R.ORG\)"):  # fmt: skip
        KerberosLogin("amtuner@R.ORG", kt, tmp_path / "cc").credentials()
