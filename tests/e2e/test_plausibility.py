"""Values that cannot be true are refused with a reason, never acted on: figures no RM could
report (over a real HTTP server), a CapacityScheduler share outside [0, 1] in the file, and a
hold-off whose clock was stepped back."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from amtuner.monitor import ObservationError
from amtuner.monitor.webui import parse_cluster_page
from amtuner.sim.simulation import default_scheduler_config
from tests.conftest import HADOOP_350
from tests.e2e.conftest import amtuner, json_body, write_config
from tests.e2e.test_faults import METRICS, fair_scheduler

pytestmark = pytest.mark.slow

LIVE = HADOOP_350 / "capacity"


def serving(metrics: dict[str, object], scheduler: dict[str, object]):
    def handler(h: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        path = h.path.split("?")[0]
        if path.endswith("/cluster/info"):
            return json_body({"clusterInfo": {"id": 1, "haState": "ACTIVE"}})
        if path.endswith("/cluster/metrics"):
            return json_body(metrics)
        if path.endswith("/cluster/scheduler"):
            return json_body(scheduler)
        return 404, {}, b"not found"

    return handler


def once(tmp_path: Path, url: str, sched: Path, *argv: str) -> tuple[int, str]:
    cfg = write_config(
        tmp_path / "amtuner.yaml",
        rm={"urls": [url], "connect_timeout_seconds": 1, "read_timeout_seconds": 2},
        scheduler={"kind": "auto", "config_file": str(sched)},
        refresh={"method": "none"} if "fair" in sched.name else {"method": "command",
                                                                  "command": ["true"]},
    )  # fmt: skip
    run = amtuner(*(argv or ("once",)), "--config", str(cfg))
    return run.returncode, run.stdout + run.stderr


def with_metrics(**figures: object) -> dict[str, object]:
    return {"clusterMetrics": {**METRICS["clusterMetrics"], **figures}}  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("figures", "words"),
    [
        ({"allocatedMB": 40000}, "memory used 40000 MB is more than the total 32768 MB"),
        ({"totalMB": 2**50, "allocatedMB": 1}, "more than any cluster holds"),
        ({"appsPending": -3}, "negative value -3"),
        ({"appsPending": 10**30}, "more than any RM reports"),
    ],
)
def test_figures_no_rm_reports_are_a_bad_observation(
    tmp_path: Path, canned_rm, figures: dict[str, object], words: str
) -> None:
    sched = tmp_path / "fair-scheduler.xml"
    sched.write_bytes(default_scheduler_config("fair", ["root.default"], am_share=0.1))
    before = sched.read_bytes()
    code, out = once(tmp_path, canned_rm(serving(with_metrics(**figures), fair_scheduler())), sched)
    assert code == 3, out
    assert "bad-response" in out and words in out
    assert sched.read_bytes() == before


def test_the_web_ui_refuses_memory_used_beyond_the_total() -> None:
    html = (
        b"<h3>Cluster Metrics</h3><table><tr><th>Apps Pending<th>Apps Running<th>Memory Used"
        b"<th>Memory Total<tr><td>2<td>1<td>9 GB<td>8 GB</table>"
    )
    with pytest.raises(ObservationError, match="more than the total"):
        parse_cluster_page(html)


def capacity_file(tmp_path: Path, value: str) -> Path:
    path = tmp_path / "capacity-scheduler.xml"
    path.write_text(
        "<?xml version='1.0'?>\n<configuration>\n"
        "  <property><name>yarn.scheduler.capacity.root.queues</name><value>default</value>"
        "</property>\n"
        "  <property><name>yarn.scheduler.capacity.maximum-am-resource-percent</name>"
        f"<value>{value}</value></property>\n</configuration>\n"
    )
    return path


@pytest.mark.parametrize("value", ["10", "-0.1", "1.5"])
@pytest.mark.parametrize("command", ["once", "check"])
def test_a_capacity_share_outside_0_1_is_refused(
    tmp_path: Path, canned_rm, value: str, command: str
) -> None:
    metrics = json.loads((LIVE / "metrics.json").read_text())
    scheduler = json.loads((LIVE / "scheduler.json").read_text())
    sched = capacity_file(tmp_path, value)
    before = sched.read_bytes()
    code, out = once(tmp_path, canned_rm(serving(metrics, scheduler)), sched, command)
    assert code == 4, out
    assert f"maximum-am-resource-percent is {value}, not a fraction in [0, 1]" in out
    assert "Traceback" not in out
    assert sched.read_bytes() == before


def test_a_clock_stepped_back_does_not_freeze_the_hold_off(tmp_path: Path, canned_rm) -> None:
    """The state file says the last change was an hour from now (the clock was stepped back
    since, or the file came from a host whose clock ran ahead): the hold-off is over, not
    an hour longer."""
    sched = tmp_path / "fair-scheduler.xml"
    sched.write_bytes(default_scheduler_config("fair", ["root.default"], am_share=0.1))
    (tmp_path / "state.json").write_text(json.dumps({
        "version": 1,
        "targets": {"": {"a": 0.1, "n": 1, "prev_pending": 4, "prev_running": 6,
                         "extra": {"changed_at": time.time() + 3600}}},
    }))  # fmt: skip
    code, out = once(tmp_path, canned_rm(serving(METRICS, fair_scheduler())), sched)
    assert code == 0, out
    assert "hold-off" not in out
    assert "0.1 -> " in out and "wrote" in out
