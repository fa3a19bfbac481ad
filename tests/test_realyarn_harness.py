"""The real-RM harness without a JVM: its configuration, its refusal of unusable directories,
and how it finds the processes a cluster leaves behind."""

from __future__ import annotations

import json
import subprocess
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from amtuner.model import SchedulerKind
from amtuner.realyarn import ClusterSpec, RealRM, apps
from amtuner.realyarn.build import Build
from amtuner.realyarn.cluster import leftover_processes
from amtuner.realyarn.secure import hadoop_xml

NO_BUILD = Build(jar=Path("realyarn.jar"), lib=Path("lib"), java="java")


def test_yarn_site_carries_the_scheduler_its_file_and_the_cluster_shape(tmp_path: Path) -> None:
    fair = ClusterSpec(SchedulerKind.FAIR, nodes=3, node_memory_mb=4096, node_vcores=2)
    site = fair.yarn_site(tmp_path, tmp_path / "fair-scheduler.xml")
    assert site["yarn.resourcemanager.scheduler.class"].endswith("fair.FairScheduler")
    assert site["yarn.scheduler.fair.allocation.file"] == str(tmp_path / "fair-scheduler.xml")
    # Apps go to the queue they name, not root.<user> (user-as-default-queue's default).
    assert site["yarn.scheduler.fair.user-as-default-queue"] == "false"
    # MiniYARNCluster overwrites the NodeManager's memory with its own key.
    assert site["yarn.minicluster.yarn.nodemanager.resource.memory-mb"] == "4096"
    assert site["yarn.nodemanager.resource.cpu-vcores"] == "2"
    mutable = ClusterSpec(SchedulerKind.CAPACITY, mutable_store=True, site={"x.y": "1"})
    site = mutable.yarn_site(tmp_path, tmp_path / "capacity-scheduler.xml")
    assert site["yarn.scheduler.configuration.store.class"] == "memory"
    assert site["x.y"] == "1"
    assert "yarn.timeline-service.enabled" not in site
    site = ClusterSpec(SchedulerKind.CAPACITY, timeline=True).yarn_site(tmp_path, tmp_path / "c")
    assert site["yarn.timeline-service.enabled"] == "true"
    assert site["yarn.resourcemanager.system-metrics-publisher.enabled"] == "true"
    with pytest.raises(ValueError, match="runs no timeline server"):
        _ = RealRM(mutable, tmp_path, NO_BUILD).timeline_url


def test_the_site_file_is_hadoop_xml_with_values_escaped() -> None:
    root = ET.fromstring(hadoop_xml({"a.b": "<1 & 2>"}))
    assert root.tag == "configuration"
    assert [(p.findtext("name"), p.findtext("value")) for p in root] == [("a.b", "<1 & 2>")]


def test_a_directory_with_the_classpath_separator_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot contain ':'"):
        RealRM(ClusterSpec(SchedulerKind.CAPACITY), tmp_path / "fixed:0.3", NO_BUILD)


def test_leftovers_are_found_by_their_directory_never_by_name(tmp_path: Path) -> None:
    """Containers run under setsid in the cluster's directory and outlive its JVM: what runs
    there is found; the same program elsewhere is not."""
    inside, outside = tmp_path / "cluster", tmp_path / "elsewhere"
    inside.mkdir()
    outside.mkdir()
    ours = subprocess.Popen(["sleep", "30"], cwd=inside)
    theirs = subprocess.Popen(["sleep", "30"], cwd=outside)
    try:
        found = leftover_processes(inside)
        assert ours.pid in found and theirs.pid not in found
    finally:
        for p in (ours, theirs):
            p.kill()
            p.wait()
    assert ours.pid not in leftover_processes(inside)


def test_a_secured_cluster_turns_simple_auth_into_kerberos_and_spnego(tmp_path: Path) -> None:
    from amtuner.realyarn.secure import Security

    security = Security(admins=("amtuner",), https=True, ticket_lifetime_s=30)
    spec = ClusterSpec(SchedulerKind.CAPACITY, security=security)
    site = spec.yarn_site(tmp_path, tmp_path / "capacity-scheduler.xml")
    assert site["hadoop.security.authentication"] == "kerberos"
    assert site["hadoop.http.authentication.type"] == "kerberos"
    assert site["hadoop.http.authentication.simple.anonymous.allowed"] == "false"
    assert site["yarn.resourcemanager.webapp.spnego-principal"] == "HTTP/localhost@EXAMPLE.COM"
    assert (site["yarn.admin.acl"], site["yarn.http.policy"]) == ("amtuner", "HTTPS_ONLY")
    props = security.jvm_properties(tmp_path)
    assert "-Damtuner.kdc.ticket-lifetime=30" in props
    keytabs = next(p for p in props if p.startswith("-Damtuner.kdc.keytabs="))
    assert f"{tmp_path}/secure/tenant.keytab=tenant/localhost" in keytabs
    (tmp_path / "secure").mkdir()
    conf = security.write_krb5_conf(tmp_path, 4321)
    assert "kdc = 127.0.0.1:4321" in conf.read_text()


class _AuthFilterRM(BaseHTTPRequestHandler):
    """The two submission calls of the RM's REST API behind Hadoop's pseudo authentication
    filter: the first request's ``user.name`` is set in a cookie, and from then on the cookie,
    not ``user.name``, says who calls. Records who submitted each app."""

    submitted: dict[str, str]

    def do_POST(self) -> None:
        jar = SimpleCookie(self.headers.get("Cookie", ""))
        query = parse_qs(urlsplit(self.path).query)
        user = jar["hadoop.auth"].value if "hadoop.auth" in jar else query["user.name"][0]
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if urlsplit(self.path).path.endswith("/new-application"):
            status, reply = 200, {"application-id": f"application_1_{len(self.submitted):04d}"}
            self.submitted[reply["application-id"]] = ""
        else:
            status, reply = 202, {}
            self.submitted[json.loads(body)["application-id"]] = user
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Set-Cookie", f"hadoop.auth={user}; Path=/")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def auth_filter_rm() -> Iterator[tuple[str, dict[str, str]]]:
    submitted: dict[str, str] = {}
    handler = type("Handler", (_AuthFilterRM,), {"submitted": submitted})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", submitted
    server.shutdown()
    server.server_close()


def test_each_app_is_submitted_as_its_own_user_behind_the_auth_filter(
    auth_filter_rm: tuple[str, dict[str, str]],
) -> None:
    url, submitted = auth_filter_rm
    users = ["alice", "bob", "alice", "carol", "bob"]
    with apps.Submitter(url, "/markers") as submitter:
        ids = [submitter.submit(apps.RealJob(name=f"j{i}", user=u)) for i, u in enumerate(users)]
    assert [submitted[i] for i in ids] == users
