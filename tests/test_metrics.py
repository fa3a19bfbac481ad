"""The Prometheus metrics: read from a fresh registry and from a real scrape of the endpoint."""

from __future__ import annotations

from dataclasses import replace

import pytest
import requests
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from amtuner import __version__
from amtuner.cycle import CycleReport
from amtuner.metrics import Metrics, MetricsServer
from amtuner.model import ControllerState, Decision, Observation, Rule, SchedulerKind

OBS = Observation(
    time=100.0,
    scheduler=SchedulerKind.FAIR,
    pending_apps=7,
    running_apps=2,
    memory_used_mb=5_000,
    memory_total_mb=10_000,
)
UP = Decision(0.1, 0.2, Rule.UNDER_ALLOCATION, "P 7 > P(t-1) 3 ...", "root.a")
HOLD = Decision(0.5, 0.5, Rule.HOLD, "...", "", case="dead-band")
APPLIED = CycleReport(
    started=100.0, duration_s=0.03, observation=OBS, decisions=(UP, HOLD), applied=True
)
STATES = {"root.a": ControllerState(a=0.2, n=3), "": ControllerState(a=0.5, n=2)}


@pytest.fixture
def reg() -> CollectorRegistry:
    return CollectorRegistry()


def test_an_applied_cycle(reg: CollectorRegistry) -> None:
    m = Metrics(reg)
    m.observe_cycle(APPLIED, STATES, unit_mb=1000, ended=123.5)
    v = reg.get_sample_value
    assert v("amtuner_am_share_ratio", {"target": "root.a"}) == 0.2
    assert v("amtuner_am_share_ratio", {"target": "global"}) == 0.5
    assert (v("amtuner_pending_apps"), v("amtuner_running_apps")) == (7, 2)
    assert v("amtuner_memory_used_ratio") == 0.5
    assert v("amtuner_task_memory_ratio") == pytest.approx((5000 - 2 * 1000 * 2) / 10000)
    rule = {"target": "root.a", "amtuner_last_decision_rule": "under-allocation"}
    assert v("amtuner_last_decision_rule", rule) == 1
    assert v("amtuner_last_decision_rule", {**rule, "amtuner_last_decision_rule": "hold"}) == 0
    # The paper's policy names its rule; the adaptive one its finer case.
    case = "amtuner_last_decision_case"
    assert v(case, {"target": "root.a", case: "under-allocation"}) == 1
    assert v(case, {"target": "global", case: "dead-band"}) == 1
    assert v(case, {"target": "global", case: "hold"}) == 0
    assert v("amtuner_changes_total", {"target": "root.a", "direction": "up"}) == 1
    assert v("amtuner_changes_total", {"target": "global", "direction": "none"}) is None
    assert v("amtuner_cycles_total", {"result": "applied"}) == 1
    assert v("amtuner_cycles_total", {"result": "error"}) == 0
    assert v("amtuner_cycle_duration_seconds_count") == 1
    assert v("amtuner_cycle_duration_seconds_bucket", {"le": "0.05"}) == 1
    assert v("amtuner_cycle_duration_seconds_bucket", {"le": "0.025"}) == 0
    assert v("amtuner_last_success_timestamp_seconds") == 123.5
    assert (v("amtuner_dry_run"), v("amtuner_paused")) == (0, 0)
    assert v("amtuner_build_info", {"version": __version__}) == 1


def test_dry_run_and_paused_cycles_count_no_change(reg: CollectorRegistry) -> None:
    m = Metrics(reg)
    report = replace(APPLIED, applied=False, dry_run=True, paused=True)
    m.observe_cycle(report, STATES, unit_mb=1024, ended=1.0)
    v = reg.get_sample_value
    assert v("amtuner_changes_total", {"target": "root.a", "direction": "up"}) is None
    assert v("amtuner_cycles_total", {"result": "ok"}) == 1
    assert (v("amtuner_dry_run"), v("amtuner_paused")) == (1, 1)


def test_errors_by_kind(reg: CollectorRegistry) -> None:
    m = Metrics(reg)
    m.observe_cycle(APPLIED, STATES, unit_mb=1024, ended=50.0)
    unreachable = CycleReport(started=0, duration_s=3.0, observation=None, error="rm-unreachable")
    m.observe_cycle(unreachable, STATES, unit_mb=1024, ended=60.0)
    m.observe_cycle(unreachable, STATES, unit_mb=1024, ended=70.0)
    refresh = replace(APPLIED, applied=False, error="refresh-failed")
    m.observe_cycle(refresh, STATES, unit_mb=1024, ended=80.0)
    m.observe_crash(0.5)
    v = reg.get_sample_value
    assert v("amtuner_observation_errors_total", {"reason": "rm-unreachable"}) == 2
    assert v("amtuner_observation_errors_total", {"reason": "refresh-failed"}) is None
    assert v("amtuner_refresh_failures_total") == 1
    assert v("amtuner_cycles_total", {"result": "error"}) == 3
    assert v("amtuner_cycles_total", {"result": "crashed"}) == 1
    assert v("amtuner_cycle_duration_seconds_count") == 5
    assert v("amtuner_last_success_timestamp_seconds") == 50.0
    # a failed refresh wrote nothing that stayed: no change counted
    assert v("amtuner_changes_total", {"target": "root.a", "direction": "up"}) == 1


def test_the_endpoint_serves_them_and_closes(reg: CollectorRegistry) -> None:
    m = Metrics(reg)
    m.observe_cycle(APPLIED, STATES, unit_mb=1024, ended=1.0)
    server = MetricsServer("127.0.0.1", 0, reg)
    url = f"http://127.0.0.1:{server.port}/metrics"
    try:
        body = requests.get(url, timeout=5).text
    finally:
        server.close()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body)
        for s in family.samples
    }
    assert samples[("amtuner_am_share_ratio", (("target", "root.a"),))] == 0.2
    assert samples[("amtuner_changes_total", (("direction", "up"), ("target", "root.a")))] == 1
    names = {family.name for family in text_string_to_metric_families(body)}
    assert {
        "amtuner_am_share_ratio",
        "amtuner_pending_apps",
        "amtuner_running_apps",
        "amtuner_memory_used_ratio",
        "amtuner_task_memory_ratio",
        "amtuner_last_decision_rule",
        "amtuner_changes",
        "amtuner_cycle_duration_seconds",
        "amtuner_cycles",
        "amtuner_observation_errors",
        "amtuner_refresh_failures",
        "amtuner_cycles_skipped",
        "amtuner_audit_failures",
        "amtuner_last_success_timestamp_seconds",
        "amtuner_dry_run",
        "amtuner_paused",
        "amtuner_build_info",
    } <= names
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=5)


def test_every_skip_reason_is_exported_before_the_first_skip(reg: CollectorRegistry) -> None:
    """A cycle skipped for the lock is counted under a series that already exists at 0."""
    Metrics(reg)
    for reason in ("missed", "overlap", "locked"):
        value = reg.get_sample_value("amtuner_cycles_skipped_total", {"reason": reason})
        assert value == 0.0, reason


READINGS = (
    "amtuner_pending_apps",
    "amtuner_running_apps",
    "amtuner_memory_used_ratio",
    "amtuner_task_memory_ratio",
    "amtuner_last_success_timestamp_seconds",
)
"""Figures read from the RM, and the time of the last success: a 0 before any would be a
reading (nothing waits, a success in 1970)."""


def test_readings_are_absent_until_the_rm_was_first_read(reg: CollectorRegistry) -> None:
    m = Metrics(reg)
    server = MetricsServer("127.0.0.1", 0, reg)
    url = f"http://127.0.0.1:{server.port}/metrics"

    def scraped() -> set[str]:
        body = requests.get(url, timeout=5).text
        return {s.name for f in text_string_to_metric_families(body) for s in f.samples}

    try:
        assert not scraped() & set(READINGS)
        unreachable = CycleReport(
            started=0, duration_s=3.0, observation=None, error="rm-unreachable"
        )
        m.observe_cycle(unreachable, {}, unit_mb=1024, ended=60.0)
        names = scraped()
        assert not names & set(READINGS), names
        assert "amtuner_cycles_total" in names
        m.observe_cycle(APPLIED, STATES, unit_mb=1024, ended=61.0)
        assert set(READINGS) <= scraped()
        m.observe_cycle(APPLIED, STATES, unit_mb=1024, ended=62.0)  # registered once
        assert reg.get_sample_value("amtuner_last_success_timestamp_seconds") == 62.0
    finally:
        server.close()
