"""`amtuner record` reading Hadoop's own timeline server: Tez sessions and Spark drivers, played
by the AM host on the real RM, which publishes every app, attempt and container to the
ApplicationHistoryServer beside it; the recorder's task figures are checked against what ran."""

from __future__ import annotations

from pathlib import Path

import requests

from amtuner.apptrace import read_trace
from amtuner.realyarn import RealRM, apps
from amtuner.sim.spec import Workload
from amtuner.sim.workload import load_workload
from amtuner.sim.workload.frameworks import drivers, sessions
from amtuner.timeline import TimelineDocumentError, collection, last_attempt
from tests.e2e.conftest import amtuner, write_config
from tests.realyarn.conftest import ours, wait_for


def _published(session: requests.Session, base: str, app_id: str) -> bool:
    """The timeline server lists the app's last attempt with every container finished (the RM
    publishes asynchronously, after the app ends; until then it may answer without them)."""
    r = session.get(f"{base}/{app_id}/appattempts", timeout=10)
    try:
        attempt, _ = last_attempt(r.json(), app_id) if r.status_code == 200 else ("", "")
        if not attempt:
            return False
        r = session.get(f"{base}/{app_id}/appattempts/{attempt}/containers", timeout=10)
        listed = collection(r.json(), ("containers",), "container") if r.status_code == 200 else []
    except (TimelineDocumentError, KeyError, TypeError, ValueError):
        return False
    return bool(listed) and all(c["finishedTime"] > 0 for c in listed)


def test_record_takes_each_apps_task_containers_from_the_real_timeline_server(
    timeline_rm: RealRM, tmp_path: Path
) -> None:
    """Two Tez sessions (two DAGs of two 1 GB maps and a reduce each) and two Spark drivers (two
    jobs of two 2 GB executors each) on the real RM, recorded with ``--timeline``: each app's
    task containers counted as its AM asked for them over its runs, of the size it asked,
    living together at least its tasks' time, each on average at most its app's run; its AM
    container's 1 GB; and the replay runs that many tasks. None of them is MapReduce, so no
    JobHistory server could have told."""
    rm = timeline_rm
    shape = {"am_startup_s": 1.0, "am_teardown_s": 1.0, "nodes": 2, "node_memory_mb": 8192}
    tez = sessions(2, dags=2, gap_s=2.0, timeout_s=2.0, map_s=3.0, reduce_s=2.0, **shape)
    spark = drivers(2, jobs=2, work_s=1.0, executor_s=3.0, **shape)
    batch = Workload("frameworks", tez.jobs + spark.jobs, 2)
    session = requests.Session()
    before = {str(r["id"]) for r in apps.listed(session, rm.url)}
    for job in apps.real_jobs(batch):
        apps.submit(session, rm.url, job, str(rm.markers))

    def ended() -> list[dict] | None:
        records = ours(apps.listed(session, rm.url), before)
        done = len(records) == len(batch.jobs) and all(r["state"] == "FINISHED" for r in records)
        return records if done else None

    records = wait_for(ended, 300, "every session and driver to end")
    base = f"{rm.timeline_url}/ws/v1/applicationhistory/apps"
    for r in records:
        wait_for(lambda r=r: _published(session, base, str(r["id"])), 60, f"{r['id']} published")

    cfg = write_config(
        tmp_path / "amtuner.yaml", rm={"urls": [rm.url]},
        scheduler={"kind": "capacity", "config_file": str(rm.scheduler_file)},
    )  # fmt: skip
    trace = tmp_path / "apps.jsonl"
    run = amtuner("record", "--config", str(cfg), "--out", str(trace), "--once",
                  "--timeline", rm.timeline_url)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "timeline" not in run.stderr, run.stderr
    got = {a.id: a for a in read_trace(trace)[1]}
    spec = {j.job_id: j for j in batch.jobs}
    for r in records:
        a, job = got[str(r["id"])], spec[str(r["name"])]
        groups = (*job.maps, *job.reduces)
        print(f"{job.job_id}: tasks {a.tasks} of {a.task_mb} MB, {a.task_vcores} vcores, "
              f"{a.task_ms} ms; AM {a.am_memory_mb} MB; run {a.finish_ms - a.launch_ms} ms")
        # The RM may allocate beyond a lowered ask; the AM host releases the extras at once, and
        # they held their node all the same (docs/real-yarn.md), so they count, briefly.
        asked = job.runs * sum(g.count for g in groups)
        assert a.tasks is not None and asked <= a.tasks < 2 * asked, a
        mean_mb = sum(g.count * g.memory_mb for g in groups) / sum(g.count for g in groups)
        assert a.tasks > asked or a.task_mb == round(mean_mb), a
        assert a.task_vcores == 1, a
        assert a.task_ms is not None and a.task_ms <= a.finish_ms - a.launch_ms, a
        ran_ms = job.runs * sum(g.count * g.duration_s for g in groups) * 1000
        assert a.tasks * a.task_ms >= ran_ms, a
        assert a.am_memory_mb == 1024 and a.maps is None
    replay = {j.job_id: j for j in load_workload(f"trace:{trace}").jobs}
    for a in got.values():
        assert sum(g.count for g in replay[a.id].maps) == a.tasks

