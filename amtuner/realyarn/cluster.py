"""One real YARN cluster (Hadoop's MiniYARNCluster) in a child JVM, in a directory of its own.

The conf directory goes first on the JVM's classpath: ``AdminService.refreshQueues`` re-reads
``yarn-site.xml`` and ``capacity-scheduler.xml`` from there, so the scheduler file amtuner edits is
the one the RM reloads. The launcher stops when its stdin closes, so a test process that dies
takes its cluster with it; `RealRM.stop` then ends every process left with this cluster's
directory as its working directory (containers run under ``setsid`` and outlive their NM).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import requests

from amtuner.model import SchedulerKind
from amtuner.realyarn.build import Build, ensure_built
from amtuner.realyarn.secure import HOST, Security, hadoop_xml
from amtuner.sim.placement import ALLOW_UNDECLARED_POOLS, AM_NODE_LABEL, USER_AS_DEFAULT_QUEUE
from amtuner.sim.sched_config import default_scheduler_config

LAUNCHER = "io.amtuner.realyarn.Launcher"
RMADMIN = "org.apache.hadoop.yarn.client.cli.RMAdminCLI"
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0

JVM_OPTIONS = (
    "-Xmx768m",
    "-XX:+UseSerialGC",
    "-Djava.net.preferIPv4Stack=true",
    # The set Hadoop's own scripts pass on Java 17 (hadoop-functions.sh): it reflects into these.
    *(
        f"--add-opens=java.base/{package}=ALL-UNNAMED"
        for package in (
            "java.io", "java.lang", "java.lang.invoke", "java.lang.reflect", "java.math",
            "java.net", "java.nio", "java.text", "java.util", "java.util.concurrent",
            "java.util.concurrent.atomic", "java.util.regex", "java.util.zip", "sun.nio.ch",
            "sun.nio.cs", "sun.security.action", "sun.security.util", "sun.security.x509",
        )
    ),
)  # fmt: skip

NODE_LABELS = "yarn.node-labels.enabled"
NODE_LABELS_STORE = "yarn.node-labels.fs-store.root-dir"


CS_CLASS = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler"
FS_CLASS = "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler"


@dataclass(frozen=True)
class ClusterSpec:
    """The shape of a real cluster; `bench real` gives the simulator the same one."""

    scheduler: SchedulerKind
    nodes: int = 2
    node_memory_mb: int = 8192
    node_vcores: int = 8
    min_alloc_mb: int = 1024
    nm_heartbeat_ms: int = 1000
    """yarn.resourcemanager.nodemanagers.heartbeat-interval-ms (Hadoop's default)."""
    am_heartbeat_ms: int = 1000
    """How often the launcher's AM host heartbeats each AM (MapReduce's AM: 1 s)."""
    am_share: float | None = None
    """The AM share the scheduler file starts with; None leaves Hadoop's default."""
    queues: tuple[str, ...] = ("root.default",)
    mutable_store: bool = False
    """CapacityScheduler only: the configuration lives in the RM (store class ``memory``) and
    changes by ``PUT /ws/v1/cluster/scheduler-conf``; ``rmadmin -refreshQueues`` is refused."""
    site: dict[str, str] = field(default_factory=dict)
    """More yarn-site.xml properties (they win over the ones derived from the fields above)."""
    security: Security | None = None
    """Kerberos (and HTTPS) instead of simple authentication (`amtuner.realyarn.secure`)."""
    node_label: str = ""
    """An exclusive node label on the first NodeManager (`RealRM.label_first_node`), where
    every AM goes (the RM's ``am.default-node-label-expression``), as on EMR."""
    timeline: bool = False
    """The timeline server beside the RM (MiniYARNCluster's ApplicationHistoryServer, its
    timeline store in memory), which the RM publishes every app, attempt and container to
    (`RealRM.timeline_url`): YARN's generic application history, as `amtuner record` reads it."""

    @property
    def labelled_nodes(self) -> tuple[tuple[str, int], ...]:
        """The simulator's ``labelled``: each label and how many nodes (the first) carry it."""
        return ((self.node_label, 1),) if self.node_label else ()

    def yarn_site(self, work: Path, scheduler_file: Path) -> dict[str, str]:
        props = {
            "yarn.resourcemanager.scheduler.class": (
                CS_CLASS if self.scheduler is SchedulerKind.CAPACITY else FS_CLASS
            ),
            "yarn.minicluster.yarn.nodemanager.resource.memory-mb": str(self.node_memory_mb),
            "yarn.nodemanager.resource.memory-mb": str(self.node_memory_mb),
            "yarn.nodemanager.resource.cpu-vcores": str(self.node_vcores),
            "yarn.scheduler.minimum-allocation-mb": str(self.min_alloc_mb),
            "yarn.resource-types.memory-mb.increment-allocation": str(self.min_alloc_mb),
            "yarn.scheduler.maximum-allocation-mb": str(self.node_memory_mb),
            "yarn.scheduler.maximum-allocation-vcores": str(self.node_vcores),
            "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": str(self.nm_heartbeat_ms),
            "yarn.resourcemanager.am.max-attempts": "1",
            # Containers are idle shells: no memory monitor, and a nearly full disk is not bad.
            "yarn.nodemanager.pmem-check-enabled": "false",
            "yarn.nodemanager.vmem-check-enabled": "false",
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "100",
            "yarn.nodemanager.delete.debug-delay-sec": "0",
            "yarn.log-aggregation-enable": "false",
            "hadoop.tmp.dir": str(work / "tmp"),
            # Callers name themselves with ?user.name=, as on a cluster without Kerberos.
            "hadoop.http.filter.initializers":
                "org.apache.hadoop.security.AuthenticationFilterInitializer",
            "hadoop.http.authentication.type": "simple",
            "hadoop.http.authentication.simple.anonymous.allowed": "true",
        }  # fmt: skip
        if self.scheduler is SchedulerKind.FAIR:
            props["yarn.scheduler.fair.allocation.file"] = str(scheduler_file)
        elif self.mutable_store:
            props["yarn.scheduler.configuration.store.class"] = "memory"
        if self.security is not None:
            props |= self.security.yarn_site(work)
        if self.timeline:
            props |= {
                "yarn.timeline-service.enabled": "true",
                "yarn.resourcemanager.system-metrics-publisher.enabled": "true",
            }
        if self.node_label:
            props[NODE_LABELS] = "true"
            # Hadoop's default store is under /tmp, shared by every cluster of the machine.
            props[NODE_LABELS_STORE] = (work / "node-labels").as_uri()
        return props | self.scheduler_site()

    def scheduler_site(self) -> dict[str, str]:
        """The yarn-site.xml properties beyond the scheduler's file that decide where apps go;
        the simulator is given the same (`amtuner.sim.placement`). Unless `site` says otherwise,
        a FairScheduler puts apps where they are sent (root.default), not in root.<user>."""
        props: dict[str, str] = {}
        if self.scheduler is SchedulerKind.FAIR:
            props = {USER_AS_DEFAULT_QUEUE: "false", ALLOW_UNDECLARED_POOLS: "false"}
        if self.node_label:
            props[AM_NODE_LABEL] = self.node_label
        return props | self.site


class RealRM:
    """A started real cluster: its URLs, its files, and the means to stop or kill it."""

    def __init__(self, spec: ClusterSpec, work: Path, build: Build | None = None) -> None:
        self.spec = spec
        self.work = work.resolve()
        if ":" in str(self.work):
            # The conf directory goes on a Java classpath, whose separator this is.
            raise ValueError(f"a real cluster's directory cannot contain ':': {self.work}")
        self.build = build or ensure_built()
        self.conf_dir = self.work / "conf"
        self.markers = self.work / "am-done"
        name = "capacity-scheduler.xml" if spec.scheduler is SchedulerKind.CAPACITY else (
            "fair-scheduler.xml")  # fmt: skip
        self.scheduler_file = self.conf_dir / name
        self.log = self.work / "rm.log"
        self.yarn = self.work / "bin" / "yarn"
        self.ready: dict[str, Any] = {}
        self._proc: subprocess.Popen[bytes] | None = None

    # -- what a test or benchmark reads ------------------------------------------------------

    @property
    def url(self) -> str:
        """The RM's web address (REST API and web UI). A secured cluster's is on ``localhost``,
        the host of its SPNEGO principal (``HTTP/localhost``) and of its certificate."""
        host = "127.0.0.1" if self.spec.security is None else HOST
        scheme = str(self.ready.get("scheme", "http://"))
        return f"{scheme}{host}:" + str(self.ready["webapp"]).rsplit(":", 1)[1]

    @property
    def timeline_url(self) -> str:
        """The timeline server's web address (its REST API), of a cluster started with one."""
        if "timeline" not in self.ready:
            raise ValueError("this cluster runs no timeline server (ClusterSpec.timeline)")
        return "http://127.0.0.1:" + str(self.ready["timeline"]).rsplit(":", 1)[1]

    def client_env(self) -> dict[str, str]:
        """What a Kerberos client of this cluster needs in its environment: its krb5.conf."""
        if self.spec.security is None:
            return {}
        return {"KRB5_CONFIG": str(self.spec.security.krb5_conf(self.work))}

    @property
    def hadoop_version(self) -> str:
        return str(self.ready["hadoop_version"])

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # -- life cycle --------------------------------------------------------------------------

    def write_scheduler_file(self, am_share: float | None = None) -> bytes:
        """The scheduler file of this cluster's spec, written in place; returns its bytes."""
        share = self.spec.am_share if am_share is None else am_share
        data = default_scheduler_config(self.spec.scheduler, self.spec.queues, am_share=share)
        self.scheduler_file.write_bytes(data)
        return data

    def refresh_queues(self, env: Mapping[str, str] | None = None) -> None:
        """``yarn rmadmin -refreshQueues``: the RM reloads the scheduler file (RMAdminCLI). A
        secured cluster's caller passes the environment naming its ticket cache (KRB5CCNAME)."""
        done = subprocess.run(
            [str(self.yarn), "rmadmin", "-refreshQueues"], capture_output=True, text=True,
            timeout=60, env=env,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"refreshQueues exited {done.returncode}: {done.stderr}")

    def label_first_node(self, label: str) -> None:
        """Put the exclusive node label ``label`` on the first NodeManager the RM lists, the
        way an operator does (``add-node-labels``, then ``replace-labels`` on the node, through
        the RM's REST API, as its admin); repeating it changes nothing."""
        base, who = f"{self.url}/ws/v1/cluster", {"user.name": "amtuner"}
        with requests.Session() as session:
            known = session.get(f"{base}/get-node-labels", timeout=10)
            known.raise_for_status()
            infos = known.json().get("nodeLabelInfo") or []
            if label not in [i["name"] for i in ([infos] if isinstance(infos, dict) else infos)]:
                body = {"nodeLabelInfo": [{"name": label, "exclusivity": True}]}
                done = session.post(f"{base}/add-node-labels", params=who, json=body, timeout=10)
                done.raise_for_status()
            nodes = session.get(f"{base}/nodes", timeout=10)
            nodes.raise_for_status()
            first = min(n["id"] for n in nodes.json()["nodes"]["node"])
            done = session.post(
                f"{base}/nodes/{first}/replace-labels", params={**who, "labels": label},
                timeout=10,
            )  # fmt: skip
            done.raise_for_status()

    def start(self) -> RealRM:
        for sub in ("conf", "run", "data", "tmp", "am-done", "bin"):
            (self.work / sub).mkdir(parents=True, exist_ok=True)
        site = self.spec.yarn_site(self.work, self.scheduler_file)
        (self.conf_dir / "yarn-site.xml").write_bytes(hadoop_xml(site))
        security = self.spec.security
        secure_options: list[str] = []
        if security is not None:
            security.prepare(self.work, self.conf_dir, self.build.java)
            (self.conf_dir / "core-site.xml").write_bytes(hadoop_xml(security.core_site()))
            secure_options = security.jvm_properties(self.work)
        self.write_scheduler_file()
        ready = self.work / "ready.json"
        ready.unlink(missing_ok=True)
        argv = [
            self.build.java, *JVM_OPTIONS, *secure_options,
            f"-Dtest.build.data={self.work / 'data'}", f"-Djava.io.tmpdir={self.work / 'tmp'}",
            "-cp", self.build.classpath(self.conf_dir), LAUNCHER,
            str(self.spec.nodes), str(ready), str(self.markers), str(self.spec.am_heartbeat_ms),
        ]  # fmt: skip
        with self.log.open("ab") as log:
            self._proc = subprocess.Popen(
                argv, cwd=self.work / "run", stdin=subprocess.PIPE, stdout=log, stderr=log,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.exists():
            if self._proc.poll() is not None:
                self.stop()
                raise RuntimeError(
                    f"the real RM exited {self._proc.returncode} while starting:\n"
                    + self.log_tail()
                )
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"the real RM did not start in {START_TIMEOUT_S:.0f} s:\n" + self.log_tail()
                )
            time.sleep(0.2)
        self.ready = json.loads(ready.read_text())
        if security is not None:
            security.write_krb5_conf(self.work, int(self.ready["kdc_port"]))
        self._write_yarn_shim()
        if self.spec.node_label:
            self.label_first_node(self.spec.node_label)
        return self

    def _write_yarn_shim(self) -> None:
        """``bin/yarn``: ``yarn rmadmin …`` as Hadoop's own RMAdminCLI against this cluster, so
        amtuner's default ``refresh.command`` runs unchanged. A short connect wait: a dead RM
        makes the CLI retry for minutes otherwise. On a secured cluster the CLI logs in from the
        ticket cache its caller names (KRB5CCNAME), as Hadoop's own ``yarn`` does, with the
        cluster's krb5.conf."""
        krb5 = []
        if self.spec.security is not None:
            krb5 = [f"-Djava.security.krb5.conf={self.spec.security.krb5_conf(self.work)}"]
        java_argv = " ".join([
            self.build.java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Djava.net.preferIPv4Stack=true", *krb5,
            "-cp", f"'{self.build.classpath(self.conf_dir)}'", RMADMIN,
            "-D", f"yarn.resourcemanager.admin.address={self.ready['admin']}",
            "-D", "yarn.resourcemanager.connect.max-wait.ms=5000",
            "-D", "yarn.resourcemanager.connect.retry-interval.ms=500",
        ])  # fmt: skip
        self.yarn.write_text(
            "#!/bin/sh\n"
            "# yarn rmadmin ARGS, for this test cluster only.\n"
            'if [ "$1" != rmadmin ]; then echo "yarn shim: only rmadmin is supported" >&2;'
            " exit 2; fi\n"
            "shift\n"
            f'exec {java_argv} "$@"\n'
        )
        self.yarn.chmod(0o755)

    def kill(self) -> None:
        """SIGKILL the RM's JVM, as a crash would; `stop` still reaps its containers."""
        if self.alive():
            assert self._proc is not None
            self._proc.kill()
            self._proc.wait()

    def stop(self) -> None:
        """Stop the cluster (quit, then SIGKILL after STOP_TIMEOUT_S) and every process left in
        its directory."""
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                try:
                    assert proc.stdin is not None
                    proc.stdin.write(b"quit\n")
                    proc.stdin.close()
                except OSError:
                    pass
                try:
                    proc.wait(STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            elif proc.stdin is not None:
                proc.stdin.close()
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while (left := leftover_processes(self.work)) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)

    def __enter__(self) -> RealRM:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def leftover_processes(work: Path) -> list[int]:
    """PIDs of live processes running in ``work`` or naming it on their command line
    (containers, the launcher), never this process; zombies are gone already. Matched by
    directory, never by program name."""
    root = str(work.resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state == "Z":
            continue
        if cwd == root or cwd.startswith(root + "/") or root in cmdline:
            found.append(int(entry.name))
    return found
