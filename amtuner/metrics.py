"""Every Prometheus metric amtuner exports, defined in one place.

The daemon hands `Metrics` the process registry (so the process_* and python_* collectors come
along); tests hand it a fresh CollectorRegistry. Names follow the Prometheus conventions: one
``amtuner_`` prefix, base units (ratios 0-1, seconds), ``_total`` on counters (the client adds it),
and only low-cardinality labels (target queue, rule, direction, reason).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, get_args

from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Histogram, Info
from prometheus_client.exposition import start_http_server

from amtuner import __version__, lock
from amtuner.audit import task_memory_ratio
from amtuner.config import Mode
from amtuner.controller.adaptive import Case
from amtuner.cycle import CycleReport
from amtuner.model import ControllerState, Observation, Rule, WaitCause

if TYPE_CHECKING:
    from amtuner.proposals import Proposal

RESULTS = ("applied", "ok", "error", "crashed")
"""`amtuner_cycles_total{result}`: a change written; no change (or dry-run/paused); an RM, file
or refresh error (see the other counters); an unexpected exception (a bug: see the log)."""

CASES = [str(r) for r in Rule] + [str(c) for c in Case]
"""Every decision label: the paper's policy names its rules, the adaptive one its cases."""

DURATION_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""A cycle is a few HTTP requests (and maybe a refresh command): tens of ms up to the timeouts."""


def target_label(target: str) -> str:
    return target or "global"


SKIP_REASONS = ("missed", "overlap", lock.LABEL, lock.LOCK_FILE_LABEL)
"""Every value of ``amtuner_cycles_skipped_total{reason}``, exported at 0 from the start so a
rate() over it has a series before the first skip."""


class Metrics:
    """The gauges of the RM's figures and the last success are made with ``registry=None`` and
    registered at their first value (`_set`): before the RM was first read a 0 would be a
    reading (no app waiting, a success in 1970), where Prometheus should see no series."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        self._shown: set[Gauge] = set()
        self.am_share = Gauge(
            "amtuner_am_share_ratio",
            "AM share A per target as the controller holds it after the last cycle "
            "(the value in the file; in dry-run or paused, the value it would have written; "
            "in mode recommend or approve, the value last written)",
            ["target"],
            registry=registry,
        )
        self.pending = Gauge(
            "amtuner_pending_apps", "P: apps waiting in the last observation", registry=None
        )
        self.running = Gauge(
            "amtuner_running_apps", "R: apps running in the last observation", registry=None
        )
        self.memory_used = Gauge(
            "amtuner_memory_used_ratio",
            "M_used/M_total in the last observation",
            registry=None,
        )
        self.task_memory = Gauge(
            "amtuner_task_memory_ratio",
            "M_tasks/M_total with the paper's estimate M_tasks = M_used - R x unit x 2",
            registry=None,
        )
        self.waiting = Gauge(
            "amtuner_waiting_apps",
            "Apps of a target waiting in the last observation, by the limit that holds them "
            "(max-apps, queue-am-limit, user-am-limit: raising A cures only the AM limits; "
            "cluster-full: no room for the AM container)",
            ["target", "cause"],
            registry=None,
        )
        self.rule = Enum(
            "amtuner_last_decision_rule",
            "Rule of the last decision per target (hold when nothing fired)",
            ["target"],
            states=[str(r) for r in Rule],
            registry=registry,
        )
        self.case = Enum(
            "amtuner_last_decision_case",
            "Case of the last decision per target: the policy's own, finer than its rule",
            ["target"],
            states=CASES,
            registry=registry,
        )
        self.changes = Counter(
            "amtuner_changes",
            "Changes of A written and refreshed, by target and direction",
            ["target", "direction"],
            registry=registry,
        )
        self.duration = Histogram(
            "amtuner_cycle_duration_seconds",
            "Wall time of one control cycle",
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.cycles = Counter(
            "amtuner_cycles", "Control cycles by result", ["result"], registry=registry
        )
        self.observation_errors = Counter(
            "amtuner_observation_errors",
            "Cycles whose RM observation failed, by reason",
            ["reason"],
            registry=registry,
        )
        self.refresh_failures = Counter(
            "amtuner_refresh_failures",
            "Refreshes that failed (the previous scheduler file was restored)",
            registry=registry,
        )
        self.skipped = Counter(
            "amtuner_cycles_skipped",
            "Scheduled cycles that did not run: missed (started too late), overlapping, or locked "
            "(another amtuner process held the cycle lock)",
            ["reason"],
            registry=registry,
        )
        self.audit_failures = Counter(
            "amtuner_audit_failures",
            "Applied changes whose audit line could not be written",
            registry=registry,
        )
        self.apps_recorded = Counter(
            "amtuner_apps_recorded",
            "Finished apps appended to the app trace (record.trace)",
            registry=registry,
        )
        self.record_failures = Counter(
            "amtuner_record_failures",
            "Polls of the recorder that failed (the RM, the trace file or its size bound)",
            registry=registry,
        )
        self.last_success = Gauge(
            "amtuner_last_success_timestamp_seconds",
            "When the last cycle without an error ended (seconds since the epoch)",
            registry=None,
        )
        self.dry_run = Gauge("amtuner_dry_run", "1 when running in dry-run", registry=registry)
        self.paused = Gauge(
            "amtuner_paused", "1 while paused (pause file or SIGUSR1)", registry=registry
        )
        self.mode = Enum(
            "amtuner_mode",
            "Who writes a change: amtuner (auto), nobody (recommend), an operator (approve)",
            states=list(get_args(Mode)),
            registry=registry,
        )
        self.proposed = Gauge(
            "amtuner_proposed_am_share_ratio",
            "A per target in the standing proposal (mode recommend or approve); no series "
            "while none stands",
            ["target"],
            registry=registry,
        )
        self.build = Info("amtuner_build", "amtuner version", registry=registry)
        self.build.info({"version": __version__})
        for result in RESULTS:
            self.cycles.labels(result)
        for reason in SKIP_REASONS:
            self.skipped.labels(reason)

    def observe_states(self, states: Mapping[str, ControllerState]) -> None:
        """A per target from controller states (also used at start, before the first cycle)."""
        for target, state in states.items():
            self.am_share.labels(target_label(target)).set(state.a)

    def observe_cycle(
        self,
        report: CycleReport,
        states: Mapping[str, ControllerState],
        *,
        unit_mb: int,
        ended: float,
    ) -> None:
        """Everything one finished cycle tells; `states` are those the cycle handed back."""
        self.duration.observe(max(report.duration_s, 0.0))
        self.dry_run.set(report.dry_run)
        self.paused.set(report.paused)
        obs = report.observation
        if obs is not None:
            self._set(self.pending, obs.pending_apps)
            self._set(self.running, obs.running_apps)
            self._set(self.memory_used, obs.memory_ratio)
            self._set(self.task_memory, task_memory_ratio(obs, unit_mb))
            self._set_waits(obs, [d.target for d in report.decisions])
        for d in report.decisions:
            self.rule.labels(target_label(d.target)).state(str(d.rule))
            self.case.labels(target_label(d.target)).state(d.label)
            if report.applied and d.changed:
                self.changes.labels(target_label(d.target), str(d.direction)).inc()
        self.observe_states(states)
        if report.error is None:
            self.cycles.labels("applied" if report.applied else "ok").inc()
            self._set(self.last_success, ended)
            return
        self.cycles.labels("error").inc()
        if obs is None:
            self.observation_errors.labels(report.error).inc()
        if report.error == "refresh-failed":
            self.refresh_failures.inc()

    def _set(self, gauge: Gauge, value: float, *labels: str) -> None:
        if gauge not in self._shown:
            self._registry.register(gauge)
            self._shown.add(gauge)
        (gauge.labels(*labels) if labels else gauge).set(value)

    def _set_waits(self, obs: Observation, targets: list[str]) -> None:
        """Every cause of every target, 0 included, so a sum over causes is the target's
        waiting apps and a cause that stops binding reads 0, not a stale value."""
        for target in targets:
            counts = dict.fromkeys(WaitCause, 0)
            for w in obs.waits_for(target):
                counts[w.cause] += w.apps
            for cause, apps in counts.items():
                self._set(self.waiting, apps, target_label(target), str(cause))

    def observe_proposal(self, proposal: Proposal | None) -> None:
        """The standing proposal's values; a withdrawn one's series go."""
        self.proposed.clear()
        for target, (_, new) in (proposal.targets if proposal else {}).items():
            self.proposed.labels(target_label(target)).set(new)

    def observe_crash(self, duration_s: float) -> None:
        """A cycle that raised: a bug, but the daemon goes on."""
        self.duration.observe(max(duration_s, 0.0))
        self.cycles.labels("crashed").inc()


class MetricsServer:
    """The /metrics endpoint; `close` stops it so a SIGTERM leaves no thread serving."""

    def __init__(self, address: str, port: int, registry: CollectorRegistry) -> None:
        self._server, self._thread = start_http_server(port, addr=address, registry=registry)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
