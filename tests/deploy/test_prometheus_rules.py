"""deploy/prometheus and deploy/grafana: well-formed, and naming only metrics amtuner exports.

The structure and metric-name checks run everywhere. With `promtool` on PATH the rules are also
checked and unit-tested by Prometheus itself (tests/data/deploy/alerts_test.yml), and every
dashboard query is compiled; without it those tests skip.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from amtuner.config import ControllerSettings, MetricsSettings
from amtuner.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
SCRAPE = ROOT / "deploy" / "prometheus" / "scrape.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "amtuner-dashboard.json"
ALERT_TESTS = ROOT / "tests" / "data" / "deploy" / "alerts_test.yml"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed")

METRICS: dict[str, frozenset[str]] = {
    name: frozenset(labels)
    for name, labels in {
        "amtuner_am_share_ratio": {"target"},
        "amtuner_pending_apps": set(),
        "amtuner_running_apps": set(),
        "amtuner_waiting_apps": {"target", "cause"},
        "amtuner_memory_used_ratio": set(),
        "amtuner_task_memory_ratio": set(),
        "amtuner_last_decision_rule": {"target", "amtuner_last_decision_rule"},  # an Enum
        "amtuner_last_decision_case": {"target", "amtuner_last_decision_case"},  # an Enum
        "amtuner_changes_total": {"target", "direction"},
        "amtuner_cycle_duration_seconds": {"le"},
        "amtuner_cycles_total": {"result"},
        "amtuner_cycles_skipped_total": {"reason"},
        "amtuner_observation_errors_total": {"reason"},
        "amtuner_refresh_failures_total": set(),
        "amtuner_audit_failures_total": set(),
        "amtuner_apps_recorded_total": set(),
        "amtuner_record_failures_total": set(),
        "amtuner_last_success_timestamp_seconds": set(),
        "amtuner_dry_run": set(),
        "amtuner_paused": set(),
        "amtuner_mode": {"amtuner_mode"},  # an Enum
        "amtuner_proposed_am_share_ratio": {"target"},
        "amtuner_build_info": {"version"},
    }.items()
}
"""The names and labels amtuner exports; a test holds amtuner.metrics to the same names."""
HISTOGRAMS = {"amtuner_cycle_duration_seconds"}
TARGET_LABELS = frozenset({"job", "instance", "cluster"})
"""Added by Prometheus (job, instance) and by deploy/prometheus/scrape.yml (cluster)."""
EXPECTED_ALERTS = {
    "AmtunerDown",
    "AmtunerNoSuccessfulCycle",
    "AmtunerAShareAtBound",
    "AmtunerRefreshFailures",
    "AmtunerObservationErrors",
}


def metric_name(token: str) -> str:
    for suffix in ("_bucket", "_sum", "_count"):
        base = token.removesuffix(suffix)
        if base != token and base in HISTOGRAMS:
            return base
    return token


def check_expr(expr: str) -> set[str]:
    """The agreed metrics an expression reads; fails on unknown names or labels."""
    assert expr.strip(), "empty expression"
    names: set[str] = set()
    for match in re.finditer(r"\b(amtuner_[a-zA-Z0-9_:]*)\s*(\{[^}]*\})?", expr):
        name = metric_name(match.group(1))
        assert name in METRICS, f"{match.group(1)!r} is not an amtuner metric: {expr}"
        names.add(name)
        for label in re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", match.group(2) or ""):
            assert label in METRICS[name] | TARGET_LABELS, f"{name} has no label {label!r}"
    known = TARGET_LABELS.union(*(METRICS[n] for n in names))
    for clause in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", expr):
        for label in filter(None, (s.strip() for s in clause.split(","))):
            assert label in known, f"label {label!r} is not on {sorted(names)}: {expr}"
    return names


def test_the_list_here_is_what_the_daemon_exports() -> None:
    """Once the RM was read: the RM's figures are absent before (tests/test_metrics.py)."""
    from tests.test_metrics import APPLIED, STATES

    registry = CollectorRegistry()
    Metrics(registry).observe_cycle(APPLIED, STATES, unit_mb=1024, ended=1.0)
    exposed = set()
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        if family.name.endswith("_created"):  # `amtuner run` turns these off
            continue
        suffix = {"counter": "_total", "info": "_info"}.get(family.type, "")
        exposed.add(family.name + suffix)
    assert {n for n in exposed if n.startswith("amtuner_")} == set(METRICS)


def test_check_expr_rejects_unknown_metrics_and_labels() -> None:
    assert check_expr('rate(amtuner_cycle_duration_seconds_bucket{instance="a"}[5m])') == {
        "amtuner_cycle_duration_seconds"
    }
    for bad in (
        "amtuner_am_share",  # misspelt metric
        "amtuner_changes_total_bucket",  # not a histogram
        'amtuner_am_share_ratio{queue="root.a"}',  # label is "target"
        "sum by (queue) (amtuner_am_share_ratio)",
        "   ",
    ):
        with pytest.raises(AssertionError):
            check_expr(bad)


# --- alert rules ------------------------------------------------------------------------------


def alert_rules() -> list[dict[str, Any]]:
    doc = yaml.safe_load(ALERTS.read_text())
    assert set(doc) == {"groups"}
    rules: list[dict[str, Any]] = []
    for group in doc["groups"]:
        assert set(group) <= {"name", "interval", "rules"} and group["name"]
        rules.extend(group["rules"])
    return rules


def test_the_agreed_alerts_are_defined_once_each() -> None:
    names = [r["alert"] for r in alert_rules()]
    assert sorted(names) == sorted(EXPECTED_ALERTS)


@pytest.mark.parametrize("rule", alert_rules(), ids=lambda r: r["alert"])
def test_alert_rule_shape(rule: dict[str, Any]) -> None:
    assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}
    assert re.fullmatch(r"[A-Z][A-Za-z0-9]+", rule["alert"])
    if "for" in rule:
        assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["for"]
    assert rule["labels"]["severity"] in {"info", "warning", "critical"}
    assert {"summary", "description"} <= set(rule["annotations"])
    if rule["alert"] != "AmtunerDown":  # reads `up`, the scrape's own series
        assert check_expr(rule["expr"])
    else:
        assert 'up{job="amtuner"}' in rule["expr"]


def test_alert_thresholds_follow_the_config_defaults() -> None:
    """alerts.yml cannot read amtuner's config; its numbers are the defaults, written out."""
    ctl = ControllerSettings()
    exprs = {r["alert"]: r["expr"] for r in alert_rules()}
    assert f"> {10 * ctl.period_seconds:g}" in exprs["AmtunerNoSuccessfulCycle"]
    assert f">= {ctl.a_max:g} - 0.0001" in exprs["AmtunerAShareAtBound"]
    assert f"<= {ctl.a_min:g} + 0.0001" in exprs["AmtunerAShareAtBound"]


def test_every_alert_has_a_row_in_the_operators_guide() -> None:
    guide = (ROOT / "deploy" / "README.md").read_text()
    rows = set(re.findall(r"^\| (Amtuner\w+) \|", guide, flags=re.MULTILINE))
    assert rows == EXPECTED_ALERTS


def test_scrape_config_points_at_the_default_metrics_address() -> None:
    doc = yaml.safe_load(SCRAPE.read_text())
    (job,) = [j for j in doc["scrape_configs"] if j["job_name"] == "amtuner"]
    defaults = MetricsSettings()
    targets = [t for sc in job["static_configs"] for t in sc["targets"]]
    assert targets == [f"{defaults.address}:{defaults.port}"]
    for sc in job["static_configs"]:
        assert set(sc.get("labels", {})) <= TARGET_LABELS


# --- dashboard --------------------------------------------------------------------------------

DASH: dict[str, Any] = json.loads(DASHBOARD.read_text())
PANEL_DS = {"type": "prometheus", "uid": "${datasource}"}


def test_dashboard_has_a_datasource_variable_and_a_recent_schema() -> None:
    assert 36 <= DASH["schemaVersion"] <= 41
    assert DASH["uid"] and DASH["title"]
    variables = {v["name"]: v for v in DASH["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name, var in variables.items():
        if var["type"] == "query":
            assert var["datasource"] == PANEL_DS, name
            check_expr(var["definition"].removeprefix("label_values(").rsplit(",", 1)[0])


def test_every_panel_queries_through_the_variable_and_known_metrics() -> None:
    used: set[str] = set()
    for panel in DASH["panels"]:
        assert panel["datasource"] == PANEL_DS, panel["title"]
        assert panel["targets"], panel["title"]
        assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"])
        for target in panel["targets"]:
            assert target["datasource"] == PANEL_DS, panel["title"]
            used |= check_expr(target["expr"])
    # Every exported metric is on the dashboard somewhere.
    assert used == set(METRICS)


def test_panels_have_unique_ids_and_do_not_overlap() -> None:
    panels = DASH["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells: dict[tuple[int, int], str] = {}
    for p in panels:
        g = p["gridPos"]
        assert g["x"] >= 0 and g["w"] > 0 and g["h"] > 0 and g["x"] + g["w"] <= 24, p["title"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, f"{p['title']!r} overlaps {cells[(x, y)]!r}"
                cells[(x, y)] = p["title"]


def test_dashboard_covers_what_operators_asked_for() -> None:
    exprs = " ".join(t["expr"] for p in DASH["panels"] for t in p["targets"])
    assert "histogram_quantile(0.99" in exprs and "histogram_quantile(0.5" in exprs
    assert "by (target, direction)" in exprs
    assert "by (reason)" in exprs


# --- promtool ---------------------------------------------------------------------------------


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60, cwd=cwd)


@needs_promtool
def test_promtool_checks_the_rules_and_the_scrape_config() -> None:
    for args in (("check", "rules", str(ALERTS)), ("check", "config", str(SCRAPE))):
        result = promtool(*args)
        assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_alerts_fire_on_their_cases_and_not_on_normal_ones() -> None:
    result = promtool("test", "rules", ALERT_TESTS.name, cwd=ALERT_TESTS.parent)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_dashboard_queries_compile(tmp_path: Path) -> None:
    """Each query, with Grafana's variables filled in, loaded as a recording rule."""
    fill = {"$__rate_interval": "1m", "$__interval": "1m", "$instance": ".*", "$target": ".*"}
    rules = []
    for panel in DASH["panels"]:
        for target in panel["targets"]:
            expr = target["expr"]
            for var, value in fill.items():
                expr = expr.replace(var, value)
            assert "$" not in expr, expr
            rules.append(
                {"record": f"dashboard:panel{panel['id']}:{target['refId']}", "expr": expr}
            )
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_guide_lists_every_metric() -> None:
    guide = (ROOT / "deploy" / "README.md").read_text()
    section = guide[guide.index("## Metrics") : guide.index("## Alerts")]
    listed = set(re.findall(r"`(amtuner_\w+)", section))
    assert listed == set(METRICS)
