"""Hadoop's own ResourceManager for the tests that matter to operators (marker ``realyarn``).

One cluster per kind, started on first use and shared by the session (a start costs about 9 s);
each test gets it back reset: no app left, the scheduler file as the kind's spec writes it, and
the RM reloaded. Where Java, Maven or Maven Central is missing these tests skip with the reason,
unless AMTUNER_REQUIRE_REALYARN=1 (CI sets it), which turns the skip into a failure.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import requests

from amtuner.bench import real
from amtuner.bench.real import Figures
from amtuner.model import SchedulerKind
from amtuner.realyarn import ClusterSpec, RealRM, Unavailable, apps
from amtuner.realyarn.build import MODULE_DIR, MR_ALLOCATOR_DIR, Build, ensure_built
from amtuner.realyarn.capture import SCENES
from amtuner.realyarn.cluster import leftover_processes
from amtuner.sim.placement import ALLOW_UNDECLARED_POOLS, USER_AS_DEFAULT_QUEUE
from amtuner.sim.simulation import Simulation, build_simulation
from amtuner.sim.spec import Workload
from tests.e2e.test_concurrency import amtuner_run
from tests.e2e.test_run import Lines
from tests.e2e.test_run import wait_for as wait_while_running

REQUIRE = os.environ.get("AMTUNER_REQUIRE_REALYARN") == "1"

CLUSTERS = {
    "capacity": ClusterSpec(SchedulerKind.CAPACITY, am_share=0.1),
    "fair": ClusterSpec(SchedulerKind.FAIR, am_share=0.5),
    "capacity-mutable": ClusterSpec(SchedulerKind.CAPACITY, am_share=0.1, mutable_store=True),
    "capacity-labels": SCENES["capacity-partition-am-limit"].spec(),
    "capacity-timeline": ClusterSpec(SchedulerKind.CAPACITY, am_share=0.5, timeline=True),
    "fair-users": ClusterSpec(
        SchedulerKind.FAIR,
        am_share=0.5,
        site={USER_AS_DEFAULT_QUEUE: "true", ALLOW_UNDECLARED_POOLS: "true"},
    ),
}
"""Two 8 GB / 8-vcore NodeManagers each; AMs of 1 GB (the minimum allocation)."""


def _built(module: Path, what: str) -> Build:
    try:
        return ensure_built(module)
    except Unavailable as exc:
        if REQUIRE:
            pytest.fail(f"AMTUNER_REQUIRE_REALYARN=1 but {what} cannot run here: {exc}")
        pytest.skip(f"no {what} here: {exc}")


@pytest.fixture(scope="session")
def realyarn_build() -> Build:
    return _built(MODULE_DIR, "real RM")


@pytest.fixture(scope="session")
def mr_allocator_build() -> Build:
    return _built(MR_ALLOCATOR_DIR, "MapReduce allocator")


@pytest.fixture(scope="session")
def realyarn_clusters(
    realyarn_build: Build, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[str], RealRM]]:
    """Starts each kind of cluster on first request; stops them all and checks nothing of
    theirs survives."""
    started: dict[str, RealRM] = {}

    def get(kind: str) -> RealRM:
        rm = started.get(kind)
        if rm is None or not rm.alive():
            if rm is not None:
                rm.stop()
            rm = RealRM(CLUSTERS[kind], tmp_path_factory.mktemp(kind), realyarn_build).start()
            started[kind] = rm
        return rm

    yield get
    for rm in started.values():
        rm.stop()
    left = {str(rm.work): leftover_processes(rm.work) for rm in started.values()}
    assert not any(left.values()), f"processes outlived their cluster: {left}"


def reset(rm: RealRM) -> None:
    """No app left and the spec's scheduler configuration in force."""
    session = requests.Session()
    apps.kill_all(session, rm.url)
    if rm.spec.mutable_store:
        body = {"global-updates": {"entry": [
            {"key": "yarn.scheduler.capacity.maximum-am-resource-percent",
             "value": f"{rm.spec.am_share:g}"}]}}  # fmt: skip
        r = session.put(
            f"{rm.url}/ws/v1/cluster/scheduler-conf", params={"user.name": apps.USER},
            json=body, timeout=30,
        )  # fmt: skip
        assert r.status_code == 200, r.text
    else:
        rm.write_scheduler_file()
        rm.refresh_queues()
    wait_for(lambda: not apps.listed(session, rm.url, "ACCEPTED,RUNNING"), 30, "apps to end")


def set_am_share(rm: RealRM, am_share: float) -> None:
    """Write ``am_share`` as the global AM share and make the RM reload it."""
    rm.write_scheduler_file(am_share)
    rm.refresh_queues()


def share_for(rm: RealRM, ams: int, am_mb: int = 1024) -> float:
    """The global AM share at which exactly ``ams`` AMs of ``am_mb`` fit on the whole cluster
    (the one leaf's base is the cluster in both schedulers here)."""
    return ams * am_mb / (rm.spec.nodes * rm.spec.node_memory_mb)


def cluster_fixture(kind: str) -> Any:
    @pytest.fixture
    def fixture(realyarn_clusters: Callable[[str], RealRM]) -> Iterator[RealRM]:
        rm = realyarn_clusters(kind)
        reset(rm)
        yield rm
        if rm.alive():
            apps.kill_all(requests.Session(), rm.url)

    return fixture


capacity_rm = cluster_fixture("capacity")
fair_rm = cluster_fixture("fair")
mutable_rm = cluster_fixture("capacity-mutable")
labels_rm = cluster_fixture("capacity-labels")
"""A CapacityScheduler whose AMs all go to the node label core (`amtuner.realyarn.capture`)."""
timeline_rm = cluster_fixture("capacity-timeline")
"""A CapacityScheduler whose RM publishes to a timeline server beside it (`RealRM.timeline_url`)."""
fair_users_rm = cluster_fixture("fair-users")
"""A FairScheduler that places apps as Hadoop does by default: in root.<user>."""


@pytest.fixture(params=["capacity", "fair"])
def real_rm(request: pytest.FixtureRequest, realyarn_clusters: Callable[[str], RealRM]) -> Any:
    """Each test that takes it runs once per scheduler."""
    return request.getfixturevalue(f"{request.param}_rm")


def wait_for(ok: Callable[[], object], seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = ok()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds:.0f} s for {what}")
        time.sleep(0.25)


def submit_holders(rm: RealRM, count: int) -> list[str]:
    """``count`` apps that hold a 1 GB AM until killed."""
    session = requests.Session()
    return [apps.submit(session, rm.url, apps.RealJob(), str(rm.markers)) for _ in range(count)]


def ours(records: list[dict[str, Any]], before: set[str]) -> list[dict[str, Any]]:
    """The apps submitted since the RM listed ``before`` (ids): the cluster is shared with the
    other tests, whose apps it lists too."""
    return [a for a in records if a["id"] not in before]


def warm_up(rm: RealRM) -> None:
    """One app run to its AM's registration and killed: the first launch on a fresh cluster
    (JIT, first localisation) takes seconds that no YARN setting makes, and a batch compared
    with the simulator would count them (docs/fidelity.md)."""
    session = requests.Session()
    submit_holders(rm, 1)
    wait_for(lambda: metrics(rm)["appsRunning"] == 1, 60, "the warm-up AM")
    apps.kill_all(session, rm.url)
    wait_for(lambda: not apps.listed(session, rm.url, "ACCEPTED,RUNNING"), 30, "no app")


def metrics(rm: RealRM) -> dict[str, Any]:
    r = requests.get(f"{rm.url}/ws/v1/cluster/metrics", timeout=10)
    return dict(r.json()["clusterMetrics"])


def against_sim(
    rm: RealRM,
    batch: Workload,
    a: float,
    label: str,
    *,
    watch: dict[str, list[tuple[float, int]]] | None = None,
    before_late: Callable[[], None] | None = None,
) -> tuple[Figures, Figures]:
    """``batch`` on ``rm`` (either scheduler) at ``a`` from a warm cluster to its last app's end
    (every one SUCCEEDED), and through the simulator: AMs at once exact, makespans within 10 %;
    (real, simulated). Each job is submitted as the simulator submits it: at its ``submit_s``
    after the first submission, as its user (`apps.real_job`). ``watch``: each running app's
    containers at every look (monotonic seconds, count), filled in. ``before_late``: run
    before each job submitted after the first instant (what the cluster holds then)."""
    set_am_share(rm, a)
    warm_up(rm)
    session = requests.Session()
    before = {str(r["id"]) for r in apps.listed(session, rm.url)}
    timed = sorted(apps.timed_jobs(batch), key=lambda t: t[0])
    first = timed[0][0]
    began = time.monotonic()
    with apps.Submitter(rm.url, str(rm.markers)) as submitter:
        for at, job in timed:
            time.sleep(max(0.0, began + at - first - time.monotonic()))
            if at > first and before_late is not None:
                before_late()
            submitter.submit(job)

    def ended() -> list[dict[str, Any]] | None:
        records = ours(apps.listed(session, rm.url), before)
        if watch is not None:
            for r in records:
                if r["state"] == "RUNNING":
                    look = (time.monotonic(), int(r["runningContainers"]))
                    watch.setdefault(str(r["name"]), []).append(look)
        done = len(records) == len(batch.jobs) and all(r["state"] == "FINISHED" for r in records)
        return records if done else None

    records = wait_for(ended, 300, f"every app of {batch.name} to end")
    assert {r["finalStatus"] for r in records} == {"SUCCEEDED"}
    got = real.figures_of(records)
    sim = real.run_sim(rm.spec.scheduler, a, "paper", real.HADOOP_HEARTBEATS, batch)
    diff = (sim.makespan_s - got.makespan_s) / got.makespan_s
    print(f"{label} ({rm.spec.scheduler}) at {a}: real {got} sim {sim} makespan diff {diff:+.1%}")
    assert got.ams_at_once == sim.ams_at_once, (got, sim)
    assert abs(diff) <= 0.10, (got, sim)
    return got, sim


def simulation_of(rm: RealRM, batch: Workload) -> Simulation:
    """``batch`` in a simulator of ``rm``'s cluster, its scheduler file as the RM has it now."""
    spec = rm.spec
    return build_simulation(
        spec.scheduler, batch, rm.scheduler_file.read_bytes(), nodes=spec.nodes,
        node_memory_mb=spec.node_memory_mb, node_vcores=spec.node_vcores,
        site=spec.scheduler_site(),
    )  # fmt: skip


@contextmanager
def run_with_metrics(config: Path) -> Iterator[tuple[subprocess.Popen[str], Lines, str]]:
    """`amtuner run` on ``config`` (whose metrics listen on port 0) as a child process: the
    process, its stderr, and the metrics URL it says it listens on; killed on the way out if
    still alive."""
    with amtuner_run(config) as (proc, log):
        found = wait_while_running(
            lambda: log.find(r"metrics on (http://\S+/metrics)"), "metrics", proc
        )
        assert isinstance(found, re.Match), log.text()
        yield proc, log, found.group(1)


def run_until_finished(
    rm: RealRM, config: Path, before: set[str], count: int, seconds: float
) -> list[dict[str, Any]]:
    """`amtuner run` on ``config`` until the ``count`` apps submitted since the RM listed
    ``before`` have all FINISHED (for ``seconds`` at most), then SIGTERM, which it ends on with
    0: their records, every one SUCCEEDED."""
    session = requests.Session()

    def ended() -> list[dict[str, Any]] | None:
        records = ours(apps.listed(session, rm.url), before)
        done = len(records) == count and all(a["state"] == "FINISHED" for a in records)
        return records if done else None

    with amtuner_run(config) as (proc, log):
        try:
            records: list[dict[str, Any]] = wait_for(ended, seconds, f"{count} apps to end")
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        assert proc.returncode == 0, log.text()
    assert {a["finalStatus"] for a in records} == {"SUCCEEDED"}, records
    return records


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.realyarn)
            item.add_marker(pytest.mark.slow)
