"""`amtuner run` beside Hadoop's own RM under load, then the RM crashes under it."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import requests

from amtuner.executor import SchedulerFile
from amtuner.realyarn import RealRM, apps
from tests.e2e.test_run import cycles, scrape
from tests.e2e.test_run import wait_for as wait_while_running
from tests.realyarn.conftest import metrics, run_with_metrics, set_am_share, share_for, wait_for
from tests.realyarn.test_real_once import once_config

PERIOD_S = 3.0
LOAD = apps.RealJob(
    name="amtuner-load", maps=apps.Tasks(4, 1024, 1, 20.0), reduces=apps.Tasks(1, 1024, 1, 5.0),
    am_startup_s=2.0, am_teardown_s=1.0,
)  # fmt: skip


def test_run_tunes_the_loaded_rm_and_outlives_its_crash(
    capacity_rm: RealRM, tmp_path: Path
) -> None:
    """Eight jobs behind an AM limit of two: the daemon raises A through RMAdminCLI, the
    metrics and the audit log say so; then the RM is SIGKILLed: cycles go on failing with a
    reason, and SIGTERM still ends the daemon with exit 0."""
    initial = share_for(capacity_rm, 2)
    set_am_share(capacity_rm, initial)
    session = requests.Session()
    for _ in range(8):
        apps.submit(session, capacity_rm.url, LOAD, str(capacity_rm.markers))
    wait_for(lambda: metrics(capacity_rm)["appsRunning"] == 2, 60, "2 AMs to register")

    audit = tmp_path / "audit.jsonl"
    config = once_config(
        tmp_path, capacity_rm,
        rm={"urls": [capacity_rm.url], "connect_timeout_seconds": 2, "read_timeout_seconds": 5},
        controller={"period_seconds": PERIOD_S},
        metrics={"enabled": True, "address": "127.0.0.1", "port": 0},
        audit_log=str(audit),
    )  # fmt: skip
    with run_with_metrics(config) as (proc, log, metrics_url):
        def raised() -> bool:
            s = scrape(metrics_url)
            a = s.get(("amtuner_am_share_ratio", (("target", "global"),)))
            changes = sum(v for (name, _), v in s.items() if name == "amtuner_changes_total")
            return a is not None and a > initial and changes >= 1

        wait_while_running(raised, "A to rise in the metrics", proc)
        on_disk = SchedulerFile.read(capacity_rm.scheduler_file, capacity_rm.spec.scheduler)
        entries = [json.loads(line) for line in audit.read_text().splitlines()]
        assert entries and entries[0]["old"] == initial and entries[0]["new"] > initial
        assert on_disk.effective_value("") == entries[-1]["new"]
        wait_for(lambda: metrics(capacity_rm)["appsRunning"] > 2, 60, "more jobs to run")

        capacity_rm.kill()
        failed = ("amtuner_observation_errors_total", (("reason", "rm-unreachable"),))
        wait_while_running(lambda: scrape(metrics_url).get(failed, 0) >= 2, "failed cycles", proc)
        assert scrape(metrics_url)[("amtuner_cycles_total", (("result", "crashed"),))] == 0
        before = cycles(scrape(metrics_url))
        wait_while_running(lambda: cycles(scrape(metrics_url)) > before, "a later cycle", proc)

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=PERIOD_S + 30) == 0, log.text()
    assert log.find(r"SIGTERM received"), log.text()
