"""amtuner against a Kerberised real RM: SPNEGO, tickets of its own, rmadmin and the mutation API.

Four secured clusters (`amtuner.realyarn.secure`), one at a time (each started once for this
module, stopped before the next starts): ``http`` and ``https`` (HTTPS only, with a CA of the
test's own), each either file-based (a CapacityScheduler refreshed by Hadoop's RMAdminCLI) or
``-store`` (a mutable store changed by ``PUT scheduler-conf``; the RM refuses ``rmadmin
-refreshQueues`` there, so one cluster cannot serve both). Their KDC issues tickets of
`LIFETIME_S`, so amtuner must renew within a test. ``yarn.admin.acl`` names ``amtuner``;
``tenant`` has a keytab too and is refused admin calls. amtuner runs with only the cluster's
krb5.conf in its environment: no KRB5CCNAME, no kinit.

Without the Kerberos client libraries (``gssapi``, the ``kerberos`` extra) these tests skip with
the reason, unless AMTUNER_REQUIRE_REALYARN=1 (CI), which makes that a failure.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import requests

from amtuner.config import RMSettings
from amtuner.executor import SchedulerFile
from amtuner.model import GLOBAL_TARGET, SchedulerKind
from amtuner.realyarn import ClusterSpec, RealRM, apps
from amtuner.realyarn.build import Build
from amtuner.realyarn.cluster import leftover_processes
from amtuner.realyarn.secure import Security, client_principal
from tests.e2e.conftest import amtuner, write_config
from tests.e2e.test_once import leaf_record, limit_of
from tests.e2e.test_run import cycles, scrape
from tests.e2e.test_run import wait_for as wait_while_running
from tests.realyarn.conftest import REQUIRE, run_with_metrics, share_for, wait_for
from tests.realyarn.test_real_once import DECISION, expected_am_limit_mb

LIFETIME_S = 30
"""The longest ticket the test KDC issues."""
SPECS = {
    f"{web}{store}": ClusterSpec(
        SchedulerKind.CAPACITY, nodes=1, am_share=0.25, mutable_store=bool(store),
        security=Security(ticket_lifetime_s=LIFETIME_S, https=web == "https"),
    )
    for web in ("http", "https")
    for store in ("", "-store")
}  # fmt: skip
"""One 8 GB NodeManager each: AMs of 1 GB, two of them at A 0.25."""
STORE_KEY = "yarn.scheduler.capacity.maximum-am-resource-percent"


@pytest.fixture(scope="module")
def kerberos_client() -> None:
    try:
        import gssapi  # noqa: F401
        import requests_gssapi  # noqa: F401
    except ImportError as exc:
        why = f"the Kerberos client (pip install 'amtuner[kerberos]', libkrb5): {exc}"
        if REQUIRE:
            pytest.fail(f"AMTUNER_REQUIRE_REALYARN=1 but no {why}")
        pytest.skip(f"no {why}")


@pytest.fixture(scope="module")
def secured_rm(
    request: pytest.FixtureRequest,
    kerberos_client: None,
    realyarn_build: Build,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RealRM]:
    """The cluster `on` names; pytest runs a cluster's tests together and stops it before it
    starts the next, so one JVM at a time."""
    kind = request.param
    rm = RealRM(SPECS[kind], tmp_path_factory.mktemp(f"kerberos-{kind}"), realyarn_build).start()
    try:
        yield rm
    finally:
        rm.stop()
        left = leftover_processes(rm.work)
        assert not left, f"processes outlived their cluster: {left}"


def on(*kinds: str) -> pytest.MarkDecorator:
    """The test runs once on each of these clusters (`SPECS`)."""
    return pytest.mark.parametrize("secured_rm", kinds, indirect=True)


EVERY = on(*SPECS)


def keytab(rm: RealRM, user: str) -> Path:
    assert rm.spec.security is not None
    return rm.spec.security.keytab(rm.work, user)


def ca(rm: RealRM) -> str | bool:
    security = rm.spec.security
    assert security is not None
    return str(security.ca_pem(rm.work)) if security.https else True


class Admin:
    """The test's own SPNEGO client, as ``amtuner`` (an admin), with a ticket cache of its own:
    it submits and kills apps, reads the RM and puts the cluster back between tests."""

    def __init__(self, rm: RealRM, cache: Path) -> None:
        from amtuner.kerberos import KerberosLogin
        from amtuner.monitor import make_session

        self.rm = rm
        self.login = KerberosLogin(client_principal("amtuner"), keytab(rm, "amtuner"), cache)
        self.session = make_session(RMSettings(kerberos=True, verify=ca(rm)), self.login)

    def metrics(self) -> dict[str, Any]:
        r = self.session.get(f"{self.rm.url}/ws/v1/cluster/metrics", timeout=10)
        assert r.status_code == 200, r.text
        return dict(r.json()["clusterMetrics"])

    def am_limit_mb(self) -> int:
        return limit_of(leaf_record(self.rm.url, "root.default", self.session))

    def store_value(self) -> float:
        r = self.session.get(f"{self.rm.url}/ws/v1/cluster/scheduler-conf", timeout=10)
        assert r.status_code == 200, r.text
        conf = r.json()
        props = conf["property"] if "property" in conf else conf["configuration"]["property"]
        return float(next(p["value"] for p in props if p["name"] == STORE_KEY))

    def configured(self) -> float:
        """The global AM share amtuner would change: in the store, or in the scheduler file."""
        if self.rm.spec.mutable_store:
            return self.store_value()
        return SchedulerFile.read(self.rm.scheduler_file, self.rm.spec.scheduler).effective_value(
            GLOBAL_TARGET
        )

    def set_am_share(self, share: float) -> None:
        """The global AM share, in force: the file and rmadmin, or a PUT to the store."""
        if self.rm.spec.mutable_store:
            body = {"global-updates": {"entry": [{"key": STORE_KEY, "value": f"{share:g}"}]}}
            r = self.session.put(
                f"{self.rm.url}/ws/v1/cluster/scheduler-conf", json=body, timeout=30
            )
            assert r.status_code == 200, r.text
            return
        self.rm.write_scheduler_file(share)
        self.rm.refresh_queues({**os.environ, **self.login.fresh_environment()})

    def hold(self, k: int, waiting: int) -> None:
        """A set so k AMs fit, k + waiting apps submitted, k running."""
        self.set_am_share(share_for(self.rm, k))
        for _ in range(k + waiting):
            apps.submit(self.session, self.rm.url, apps.RealJob(), str(self.rm.markers))
        wait_for(
            lambda: (lambda m: (m["appsRunning"], m["appsPending"]) == (k, waiting))(
                self.metrics()
            ),
            60, f"{k} AMs to register and {waiting} apps to wait",
        )  # fmt: skip


@pytest.fixture
def admin_of(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Any]:
    """``admin_of(rm)``: the test's client of that cluster, the cluster reset to its spec's
    share with no app; the environment holds the cluster's krb5.conf and no ticket cache."""
    made: list[Admin] = []

    def admin_of(rm: RealRM) -> Admin:
        for name, value in rm.client_env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("KRB5CCNAME", raising=False)
        monkeypatch.delenv("KRB5_CLIENT_KTNAME", raising=False)
        admin = Admin(rm, tmp_path / "test-krb5cc")
        apps.kill_all(admin.session, rm.url)
        assert rm.spec.am_share is not None
        admin.set_am_share(rm.spec.am_share)
        wait_for(lambda: not apps.listed(admin.session, rm.url, "ACCEPTED,RUNNING"), 30, "apps")
        made.append(admin)
        return admin

    yield admin_of
    for admin in made:
        if admin.rm.alive():
            apps.kill_all(admin.session, admin.rm.url)


def config(tmp_path: Path, cluster: RealRM, user: str = "amtuner", **sections: Any) -> Path:
    """amtuner's config for ``rm`` as ``user``'s principal and keytab (its tickets in a cache
    beside the state file): rmadmin on the file-based cluster, the mutation API on the other."""
    rm_section = {
        "urls": [cluster.url], "kerberos": True, "verify": ca(cluster),
        "principal": client_principal(user), "keytab": str(keytab(cluster, user)),
    }  # fmt: skip
    if cluster.spec.mutable_store:
        defaults: dict[str, Any] = {
            "scheduler": {"kind": "capacity"}, "refresh": {"method": "rest"},
        }  # fmt: skip
    else:
        defaults = {
            "scheduler": {"kind": "capacity", "config_file": str(cluster.scheduler_file)},
            "refresh": {"method": "command", "timeout_seconds": 60,
                        "command": [str(cluster.yarn), "rmadmin", "-refreshQueues"]},
        }  # fmt: skip
    rm_section |= sections.pop("rm", {})
    return write_config(tmp_path / "amtuner.yaml", rm=rm_section, **(defaults | sections))


class Recorder:
    """A forwarding proxy on localhost that notes the Authorization header of every request:
    what amtuner sent, before the RM judged it. Headers pass both ways unchanged."""

    def __init__(self, target: str, verify: str | bool) -> None:
        self.seen: list[tuple[str, str, str | None]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self) -> None:
                auth = self.headers.get("Authorization")
                recorder.seen.append((self.command, self.path, auth))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                r = requests.request(
                    self.command, target + self.path, headers=headers, data=body,
                    allow_redirects=False, timeout=30, verify=verify,
                )  # fmt: skip
                self.send_response(r.status_code)
                for k, v in r.headers.items():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            do_GET = do_PUT = do_POST = _forward

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://localhost:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- on every cluster: check, once, the admin ACL, no request without SPNEGO ---------------


@EVERY
def test_check_names_the_principal_its_keytab_and_the_acl(
    secured_rm: RealRM, admin_of: Any, tmp_path: Path
) -> None:
    """The file-based cluster's ACL is read from its yarn-site.xml; the store's is what the RM
    answers ``GET scheduler-conf`` with (`check` sends no PUT). (a_min 0.25: `check` counts an
    AM as MapReduce's 2 GB, docs/real-yarn.md.)"""
    admin_of(secured_rm)
    a_min = {"a_min": 0.25}
    run = amtuner("check", "--config", str(config(tmp_path, secured_rm, controller=a_min)))
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    principal = client_principal("amtuner")
    assert f"kerberos  ok: {principal}, ticket valid for" in out
    assert f"keytab {keytab(secured_rm, 'amtuner')}" in out
    may = "change the store" if secured_rm.spec.mutable_store else "refresh"
    assert f"acl       {principal} ('amtuner') may {may}" in out, out

    tenant = amtuner(
        "check", "--config", str(config(tmp_path, secured_rm, "tenant", controller=a_min))
    )
    if secured_rm.spec.mutable_store:  # refused the read: the configuration is unusable
        assert tenant.returncode == 4, tenant.stdout + tenant.stderr
        assert "yarn.admin.acl must name 'tenant'" in tenant.stdout, tenant.stdout
    else:  # a risk, from the RM's yarn-site.xml
        assert tenant.returncode == 1, tenant.stdout + tenant.stderr
        assert "('tenant') is not in yarn.admin.acl 'amtuner'" in tenant.stdout, tenant.stdout

    nobody = client_principal("nobody")
    wrong = amtuner(
        "check", "--config", str(config(tmp_path, secured_rm, rm={"principal": nobody}))
    )
    assert wrong.returncode == 2, wrong.stdout + wrong.stderr
    assert f"holds no key for rm.principal {nobody} (it holds: {principal})" in wrong.stdout


@EVERY
def test_once_raises_a_with_its_own_ticket(
    secured_rm: RealRM, admin_of: Any, tmp_path: Path
) -> None:
    """Two AMs fit, two apps wait: `amtuner once` observes over SPNEGO and raises A, in the file
    refreshed through RMAdminCLI (which logs in from amtuner's own ticket cache) or by ``PUT
    scheduler-conf``, and the RM enforces the new limit."""
    admin = admin_of(secured_rm)
    admin.hold(2, 2)
    before = admin.configured()
    run = amtuner("once", "--config", str(config(tmp_path, secured_rm)))
    assert run.returncode == 0, run.stdout + run.stderr
    ((target, old, new, rule),) = DECISION.findall(run.stdout)
    assert (target, float(old), rule) == ("global", before, "under-allocation"), run.stdout
    assert float(new) > before
    assert f"via rest {secured_rm.url.split(':')[0]}://localhost:" in run.stdout, run.stdout
    assert admin.configured() == float(new)
    expected = expected_am_limit_mb(secured_rm, float(new))
    wait_for(lambda: admin.am_limit_mb() == expected, 30, f"AM limit {expected} MB")
    assert (tmp_path / "krb5cc").is_file(), "amtuner's own ticket cache, beside its state"


@EVERY
def test_a_principal_outside_the_admin_acl_changes_nothing(
    secured_rm: RealRM, admin_of: Any, tmp_path: Path
) -> None:
    """``tenant`` reads the RM but may not change it: RMAdminCLI or the mutation API refuses
    it, amtuner says it is the admin ACL, the file (put back) or the store is as it was, and
    the RM keeps its limit."""
    admin = admin_of(secured_rm)
    admin.hold(2, 2)
    before = secured_rm.scheduler_file.read_bytes(), admin.configured()
    limit = admin.am_limit_mb()
    run = amtuner("once", "--config", str(config(tmp_path, secured_rm, "tenant")))
    out = run.stdout + run.stderr
    if secured_rm.spec.mutable_store:  # GET scheduler-conf is refused already
        assert run.returncode == 4, out
        assert "scheduler-conf failed with HTTP 403: " in out, out
        assert "yarn.admin.acl must name 'tenant'" in out, out
    else:
        assert run.returncode == 5, out
        assert "the caller is not in the RM's yarn.admin.acl" in out
        assert "User tenant doesn't have permission to call 'refreshQueues'" in out
    assert (secured_rm.scheduler_file.read_bytes(), admin.configured()) == before
    assert admin.am_limit_mb() == limit == 2 * 1024
    assert admin.metrics()["appsRunning"] == 2


@EVERY
def test_every_request_carries_spnego_and_none_goes_without_a_ticket(
    secured_rm: RealRM, admin_of: Any, tmp_path: Path
) -> None:
    """Through a recording proxy (plain HTTP to amtuner, the cluster's scheme to the RM): with
    its keytab, each request amtuner sends, the change included, carries a Negotiate token from
    the start (none waits for a 401); with no ticket to be had, nothing is sent at all, the
    cycle fails naming what is missing, and the configuration is untouched."""
    admin = admin_of(secured_rm)
    admin.hold(2, 2)
    proxy = Recorder(secured_rm.url, ca(secured_rm))
    try:
        good = config(tmp_path, secured_rm, rm={"urls": [proxy.url]})
        run = amtuner("once", "--config", str(good))
        assert run.returncode == 0, run.stdout + run.stderr
        assert DECISION.findall(run.stdout), run.stdout
        assert len(proxy.seen) >= 2, proxy.seen
        assert all((auth or "").startswith("Negotiate ") for _, _, auth in proxy.seen), proxy.seen
        if secured_rm.spec.mutable_store:
            assert ("PUT", "/ws/v1/cluster/scheduler-conf") in {m[:2] for m in proxy.seen}

        proxy.seen.clear()
        before = secured_rm.scheduler_file.read_bytes(), admin.configured()
        none = config(
            tmp_path, secured_rm,
            rm={"urls": [proxy.url], "principal": None, "keytab": None,
                "ticket_cache": str(tmp_path / "no-such-cache")},
        )  # fmt: skip
        run = amtuner("once", "--config", str(none))
        assert run.returncode == 3, run.stdout + run.stderr
        assert "no Kerberos ticket" in run.stdout and "set rm.keytab" in run.stdout, run.stdout
        assert proxy.seen == []
        assert (secured_rm.scheduler_file.read_bytes(), admin.configured()) == before
    finally:
        proxy.close()


# -- run: renewal, on HTTP with rmadmin and on HTTPS with the mutation API -------------------


@on("http", "https-store")
def test_run_renews_its_ticket_past_two_lifetimes(
    secured_rm: RealRM, admin_of: Any, tmp_path: Path
) -> None:
    """`amtuner run` cycles for over two ticket lifetimes with no auth failure; then two apps
    wait and it raises A (through rmadmin, or a PUT over HTTPS) with the ticket it renewed
    itself. The two clusters between them renew for every channel: REST over HTTP and HTTPS,
    RMAdminCLI, and the mutation API."""
    admin = admin_of(secured_rm)
    admin.set_am_share(share_for(secured_rm, 2))
    cfg = config(
        tmp_path, secured_rm, controller={"period_seconds": 3.0},
        metrics={"enabled": True, "address": "127.0.0.1", "port": 0},
    )  # fmt: skip
    with run_with_metrics(cfg) as (proc, log, metrics_url):
        started = time.monotonic()
        while time.monotonic() - started < 2 * LIFETIME_S + 5:
            assert proc.poll() is None, log.text()
            time.sleep(1)
        samples = scrape(metrics_url)
        auth = ("amtuner_observation_errors_total", (("reason", "auth"),))
        assert samples.get(auth, 0) == 0, log.text()
        assert cycles(samples) >= 2 * LIFETIME_S / 3 / 2, samples

        for _ in range(4):
            apps.submit(admin.session, secured_rm.url, apps.RealJob(), str(secured_rm.markers))

        def raised() -> bool:
            a = scrape(metrics_url).get(("amtuner_am_share_ratio", (("target", "global"),)))
            return a is not None and a > share_for(secured_rm, 2)

        wait_while_running(raised, "A to rise", proc)
        wait_for(
            lambda: admin.am_limit_mb() == expected_am_limit_mb(secured_rm, admin.configured()),
            30, "the RM to load the raised A",
        )  # fmt: skip
        assert admin.configured() > share_for(secured_rm, 2)
        assert scrape(metrics_url).get(auth, 0) == 0, log.text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.text()
    assert "refresh-failed" not in log.text(), log.text()


# -- HTTPS only -------------------------------------------------------------------------------


@on("https")
def test_plain_http_and_an_unknown_ca_are_refused(
    secured_rm: RealRM, admin_of: Any, tmp_path: Path
) -> None:
    """HTTPS only: the RM does not answer HTTP on its port, and amtuner does not trust it
    without the test's CA."""
    admin_of(secured_rm)
    untrusted = amtuner("check", "--config", str(config(tmp_path, secured_rm, rm={"verify": True})))
    assert untrusted.returncode == 3, untrusted.stdout + untrusted.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stdout, untrusted.stdout

    plain = secured_rm.url.replace("https://", "http://")
    refused = amtuner("check", "--config", str(config(tmp_path, secured_rm, rm={"urls": [plain]})))
    assert refused.returncode == 3, refused.stdout + refused.stderr
