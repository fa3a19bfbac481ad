"""`amtuner run`: the control cycle every period, as a long-running service.

What an operator can rely on:

* The first cycle runs at start, then one per ``controller.period_seconds`` (APScheduler 3.x
  interval job: one instance at a time, late runs coalesced, a late start tolerated for one
  period). Every RM and refresh timeout should be below the period; a warning says so at start.
* No single cycle can stop the daemon: RM, file and refresh problems are reported by the cycle
  itself, and anything unexpected is logged with its traceback and counted
  (``amtuner_cycles_total{result="crashed"}``).
* Signals are handled on the main thread with ``sigtimedwait``, never in a handler, so nothing
  re-enters a lock: SIGTERM/SIGINT let the running cycle finish (its write, refresh, audit line
  and state) and exit 0; SIGHUP reloads the config (an invalid one is refused and the old one
  kept); SIGUSR1 pauses (monitor, write nothing) and SIGUSR2 resumes, like the pause file; a
  SIGUSR1 that arrives while a cycle observes or decides stops that cycle's write too. The
  refresh command runs in a session of its own (and inherits the blocked signals), so a Ctrl-C
  does not cut a `yarn rmadmin` short; its own timeout still kills it, with all it started.
* Each cycle holds the cycle lock (`amtuner.lock`) shared with `amtuner once` and any other
  `run` on the same state file, and starts from the state file when another process saved
  there, so the guard's step limit and hold-off hold across processes. A cycle that cannot get
  the lock within a few seconds is skipped (``amtuner_cycles_skipped{reason="locked"}``).
* The controller state is saved after every live cycle (with a summary for `amtuner status`), so a
  restart continues the bisection; A itself is re-read from the scheduler file each cycle. In
  dry-run only the summary is saved, so `amtuner status` shows what the dry run would do.
* With ``record.trace`` set, the apps that finish are appended to that app trace as
  `amtuner record` would (`amtuner.recorder`), for `amtuner advise`: a job of its own every
  ``record.interval_seconds`` on a thread of its own, so a slow RM answer or JobHistory server
  never delays a cycle; its failures are logged and counted, and never stop the cycles. A trace
  it cannot write, or a file there that is not a trace, stops `run` at start (exit 2); stopping
  writes the apps still held for the JobHistory server.
* systemd: READY=1 once serving, STATUS=<last decision>, STOPPING=1, and WATCHDOG=1 only while
  cycles keep completing, so a wedged cycle gets the service restarted.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED, JobEvent
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from prometheus_client import REGISTRY, CollectorRegistry, disable_created_metrics

from amtuner import audit, guard, lock, preflight, proposals, sdnotify
from amtuner.apptrace import TraceError
from amtuner.commands import build_cycle, mode_suffix, startup_errors, target_name
from amtuner.config import Config, load_config
from amtuner.cycle import Cycle, CycleReport, States
from amtuner.exitcodes import ExitCode
from amtuner.metrics import Metrics, MetricsServer
from amtuner.monitor import ObservationError
from amtuner.record import TraceFull
from amtuner.recorder import Recorder
from amtuner.safetext import SafeFormatter
from amtuner.state import StateError, load_pending, load_states, save_states, summarize

log = logging.getLogger(__name__)

JOB_ID = "control"
RECORD_JOB_ID = "record"
SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2})
IDLE_WAIT_S = 60.0
"""How long the main thread sleeps between signals when no watchdog needs feeding."""


def worst_cycle_s(cfg: Config) -> float:
    """The longest a cycle can wait on the RM and the refresh, per the configured timeouts."""
    rm = cfg.rm.connect_timeout_seconds + cfg.rm.read_timeout_seconds
    return rm + (cfg.refresh.timeout_seconds if cfg.refresh.method != "none" else 0.0)


def check_timeouts(cfg: Config) -> bool:
    """Warn when a slow RM could make a cycle overrun its period (the next tick is then
    skipped, not run late); True when the timeouts fit."""
    worst = worst_cycle_s(cfg)
    period = cfg.controller.period_seconds
    if worst < period:
        return True
    log.warning(
        "rm connect+read timeouts + refresh timeout = %g s >= controller.period_seconds %g s: "
        "a slow RM can make a cycle overrun and the next one be skipped",
        worst,
        period,
    )
    return False


@runtime_checkable
class Cancellable(Protocol):
    """A monitor whose requests in flight can be ended (`amtuner.monitor.RMClient`)."""

    def cancel(self) -> None: ...


class Daemon:
    """The scheduler, the metrics endpoint and the state between cycles.

    `run_cycle` is the scheduled job; `reload` and `set_paused` are what the signals do; `serve`
    is the whole service (start, wait for signals, stop)."""

    def __init__(
        self,
        config_path: Path,
        cfg: Config,
        *,
        force_dry_run: bool = False,
        registry: CollectorRegistry = REGISTRY,
        build: Callable[[Config], Cycle] = build_cycle,
    ) -> None:
        self.config_path = config_path
        self.force_dry_run = force_dry_run
        self.registry = registry
        self._build = build
        self.cfg = cfg
        self._cycle = self._build_cycle(cfg)
        lock.check(lock.path_for(cfg.state_file))
        self._persisted: States = load_states(cfg.state_file)
        self._states: States = dict(self._persisted)
        """In-memory controller state; differs from the saved one in dry-run or while paused."""
        self._on_disk: States = dict(self._persisted)
        """The states this process last read from or wrote to the state file: anything else
        found there was written by another amtuner process."""
        self.paused_by_signal = False
        self._last_failure: tuple[str, str] | None = None
        """The last cycle's error and message: the same failure is logged once, not every period
        (the metrics count each one)."""
        self.metrics = Metrics(registry)
        self.metrics.observe_states(self._states)
        self.metrics.dry_run.set(cfg.dry_run)
        self.metrics.mode.state(cfg.mode)
        self.metrics.paused.set(guard.paused(cfg.guard))
        self.last_end = time.monotonic()
        """Monotonic time the last cycle ended (any result): what the watchdog certifies."""
        self.cycles_done = 0
        self._server: MetricsServer | None = None
        self.recorder = recorder_for(cfg)
        self._record_failure: str | None = None
        """The last poll's failure: logged once a streak, as the cycle's."""
        self.scheduler = BackgroundScheduler(
            executors={
                "default": ThreadPoolExecutor(max_workers=1),
                RECORD_JOB_ID: ThreadPoolExecutor(max_workers=1),
            },
            job_defaults=self._job_options(cfg),
            timezone=UTC,
        )
        self.scheduler.add_listener(self._skipped, EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES)

    # -- the job ---------------------------------------------------------------------------

    @staticmethod
    def _job_options(cfg: Config) -> dict[str, object]:
        return {
            "coalesce": True,
            "max_instances": 1,
            # A run that starts up to one period late (a loaded host) still runs; APScheduler's
            # default of 1 s would silently drop it.
            "misfire_grace_time": max(1, math.ceil(cfg.controller.period_seconds)),
        }

    def run_cycle(self) -> None:
        """One scheduled cycle; never raises, whatever goes wrong."""
        started = time.monotonic()
        try:
            self._run_cycle()
        except Exception:
            log.exception("cycle failed unexpectedly; the daemon goes on with the next period")
            self.metrics.observe_crash(time.monotonic() - started)
        self.cycles_done += 1
        self.last_end = time.monotonic()

    def _run_cycle(self) -> None:
        cfg = self._cycle.config
        try:
            with lock.held(lock.path_for(cfg.state_file)):
                self._adopt_saved_states(cfg)
                self._cycle_under_lock(cfg)
        except (lock.LockUnavailable, lock.LockFileError) as exc:
            self._skip_locked(exc)

    def _adopt_saved_states(self, cfg: Config) -> None:
        """Continue from the state file when another process (`once`, a second `run`) saved
        there since this one did: its change started a hold-off, and the guard's step limit is
        from its A, so deciding from this process's memory would break both."""
        try:
            saved = load_states(cfg.state_file)
        except StateError as exc:
            log.error("%s; continuing from this process's own state", exc)
            return
        if saved == self._on_disk:
            return
        log.info("%s was saved by another amtuner process: continuing from it", cfg.state_file)
        self._persisted = self._on_disk = saved
        self._states = dict(saved)

    def _build_cycle(self, cfg: Config) -> Cycle:
        return replace(self._build(cfg), paused_by=self._signal_pause)

    def _signal_pause(self) -> str | None:
        return "SIGUSR1; SIGUSR2 resumes" if self.paused_by_signal else None

    def _cycle_under_lock(self, cfg: Config) -> None:
        before = self._states
        try:
            pending = load_pending(cfg.state_file)
        except StateError as exc:
            log.error("%s; no interrupted change is settled", exc)
            pending = None
        report, states = self._cycle.run(before, pending)
        failure = None if report.error is None else (report.error, report.message)
        log_report(report, repeated=failure is not None and failure == self._last_failure)
        self._last_failure = failure
        if not (report.dry_run or report.paused):
            self._persisted = states  # after an error, as they were (or with a change settled)
        self._states = states
        self.metrics.observe_cycle(
            report, states, unit_mb=cfg.controller.unit_mb, ended=time.time()
        )
        try:
            audit.record(cfg.audit_log, report, before, unit_mb=cfg.controller.unit_mb)
        except audit.AuditError as exc:
            log.error("%s", exc)
            self.metrics.audit_failures.inc()
        # In dry-run `_persisted` is the state loaded at start, unchanged: only the summary moves,
        # so `amtuner status` shows what the dry run would do.
        try:
            save_states(cfg.state_file, self._persisted, summarize(report, states), report.owed)
        except StateError as exc:
            log.error("%s; a restart would begin the search again", exc)
        else:
            self._on_disk = self._persisted
        self._publish(cfg, report, before)
        sdnotify.notify(f"STATUS={status_line(report)}")

    def _publish(self, cfg: Config, report: CycleReport, before: States) -> None:
        """In ``mode`` recommend or approve: the cycle's proposal replaces the standing one
        (`amtuner.proposals`), and the metrics show what stands."""
        if cfg.mode == "auto":
            return
        try:
            standing = proposals.publish(cfg, report, before)
        except proposals.ProposalError as exc:
            log.error("%s", exc)
            return
        if standing is not None and report.proposed is not None:
            log.info("proposal %s", proposals.describe(standing))
        self.metrics.observe_proposal(standing)

    def _skip_locked(self, exc: lock.LockUnavailable | lock.LockFileError) -> None:
        """Another process's cycle holds the lock, or the lock file cannot be opened: this
        period observes nothing and writes nothing; the next one tries again. Logged once per
        streak (a lock file that cannot be opened as an error), counted every time."""
        repeated = self._last_failure is not None and self._last_failure[0] == exc.label
        level = logging.WARNING if exc.label == lock.LABEL else logging.ERROR
        log.log(logging.DEBUG if repeated else level, "cycle skipped: %s", exc)
        self._last_failure = (exc.label, str(exc))
        self.metrics.skipped.labels(exc.label).inc()
        sdnotify.notify(f"STATUS=last cycle skipped: {exc.label}")

    def record(self) -> None:
        """One poll of the recorder; never raises. An RM that does not answer is asked again at
        the next poll; a trace that could not be written is opened again then (`Recorder`); a
        trace at its size bound ends recording, not the daemon."""
        assert self.recorder is not None
        failure = None
        try:
            self.metrics.apps_recorded.inc(self.recorder.poll())
        except ObservationError as exc:
            failure = f"recording: {exc.reason}: {exc}; asked again at the next poll"
        except (TraceError, OSError) as exc:
            failure = f"recording: {exc}; the trace is opened again at the next poll"
        except TraceFull as exc:
            log.error("recording stopped: %s", exc)
            self.metrics.record_failures.inc()
            self.scheduler.remove_job(RECORD_JOB_ID)
            return
        except Exception:
            failure = "recording failed unexpectedly"
            log.exception("%s; the next poll tries again", failure)
        if failure is not None:
            self.metrics.record_failures.inc()
            repeated = failure == self._record_failure
            log.log(logging.DEBUG if repeated else logging.WARNING, "%s", failure)
        self._record_failure = failure

    def _skipped(self, event: JobEvent) -> None:
        if event.job_id != JOB_ID:
            return  # a poll of the recorder: the next one reads what this one would have
        if event.code == EVENT_JOB_MISSED:
            reason, why = "missed", "it could not start within misfire_grace_time (loaded host?)"
        else:
            reason, why = "overlap", "the previous cycle was still running"
        log.warning("a scheduled cycle did not run: %s", why)
        self.metrics.skipped.labels(reason).inc()

    # -- what the signals do ---------------------------------------------------------------

    def reload(self) -> bool:
        """Re-read the config file; an invalid one is refused and the old one kept."""
        try:
            new = load_config(self.config_path)
            if self.force_dry_run:
                new = new.with_dry_run(True)
            cycle = self._build_cycle(new)
        except Exception as exc:  # a config error, or a session that cannot be built from it
            log.error("reload refused, keeping the running config: %s", exc)
            return False
        old, self.cfg = self.cfg, new
        self._cycle = cycle
        if new.controller.period_seconds != old.controller.period_seconds:
            self.scheduler.reschedule_job(
                JOB_ID, trigger="interval", seconds=new.controller.period_seconds
            )
            self.scheduler.modify_job(JOB_ID, **self._job_options(new))
        if new.metrics != old.metrics:
            log.warning("metrics settings changed: they take effect at the next restart")
        if (new.record, new.history, new.timeline) != (old.record, old.history, old.timeline):
            log.warning("record settings changed: they take effect at the next restart")
        if new.state_file != old.state_file:
            log.warning("state_file changed: the controller state moves to %s", new.state_file)
        check_timeouts(new)
        self.metrics.dry_run.set(new.dry_run)
        self.metrics.mode.state(new.mode)
        if new.mode == "auto":
            self.metrics.observe_proposal(None)
        log.info("reloaded %s (period %g s)", self.config_path, new.controller.period_seconds)
        return True

    def set_paused(self, paused: bool) -> None:
        self.paused_by_signal = paused
        self.metrics.paused.set(paused or guard.paused(self.cfg.guard))
        log.info("%s by signal", "paused (monitoring only)" if paused else "resumed")

    # -- the service -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the metrics endpoint and the scheduler; the first cycle runs at once."""
        if self.cfg.metrics.enabled:
            m = self.cfg.metrics
            self._server = MetricsServer(m.address, m.port, self.registry)
            log.info("metrics on http://%s:%d/metrics", m.address, self._server.port)
        self.scheduler.add_job(
            self.run_cycle,
            "interval",
            seconds=self.cfg.controller.period_seconds,
            id=JOB_ID,
            next_run_time=datetime.now(UTC),
            **self._job_options(self.cfg),
        )
        if self.recorder is not None:
            every = self.cfg.record.interval_seconds
            log.info("recording finished apps to %s every %g s", self.recorder.path, every)
            self.scheduler.add_job(
                self.record, "interval", seconds=every, id=RECORD_JOB_ID,
                executor=RECORD_JOB_ID, next_run_time=datetime.now(UTC), coalesce=True,
                max_instances=1, misfire_grace_time=max(1, math.ceil(every)),
            )  # fmt: skip
        self.scheduler.start()

    def stop(self) -> None:
        """Let the running cycle finish, then close the endpoint. A request to the RM in flight
        is ended first (the cycle then reports the RM unobserved and writes nothing), so a stuck
        RM cannot hold the exit up; a write or refresh under way runs to its end."""
        monitor = getattr(self._cycle, "monitor", None)  # a test's stand-in cycle may have none
        if isinstance(monitor, Cancellable):
            monitor.cancel()
        if self.recorder is not None:
            self.recorder.cancel()
        self.scheduler.shutdown(wait=True)
        if self.recorder is not None:
            self._flush_recorder(self.recorder)
        if self._server is not None:
            self._server.close()
            self._server = None

    def _flush_recorder(self, recorder: Recorder) -> None:
        """The apps the recorder still holds for the JobHistory server, written as they are
        (`Recorder.flush`); where they cannot be, the next recorder on the file reads them again
        from the RM."""
        try:
            self.metrics.apps_recorded.inc(recorder.flush())
        except (TraceFull, TraceError, OSError) as exc:
            log.error("stopping: the apps held for the JobHistory server not written: %s", exc)
            self.metrics.record_failures.inc()

    def watchdog_ok(self) -> bool:
        """The control loop is alive: a cycle ended within two periods plus the worst cycle."""
        allowed = 2 * self.cfg.controller.period_seconds + worst_cycle_s(self.cfg)
        return time.monotonic() - self.last_end < allowed

    def serve(self) -> int:
        """Run until SIGTERM/SIGINT. Signals are blocked before any thread starts (threads
        inherit the mask) and taken synchronously here."""
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        try:
            self.start()
            try:
                sdnotify.notify(
                    "READY=1", f"STATUS=running, period {self.cfg.controller.period_seconds:g} s"
                )
                self._wait_for_signals()
                sdnotify.notify("STOPPING=1")
                log.info("stopping: letting the running cycle finish")
            finally:
                self.stop()
                _drain_signals()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        log.info("stopped")
        return ExitCode.OK

    def _wait_for_signals(self) -> None:
        while True:
            interval = sdnotify.watchdog_interval_s()
            info = signal.sigtimedwait(SIGNALS, interval or IDLE_WAIT_S)
            if interval is not None and self.watchdog_ok():
                sdnotify.notify("WATCHDOG=1")
            if info is None:
                continue
            signo = info.si_signo
            if signo in (signal.SIGTERM, signal.SIGINT):
                log.info("%s received", signal.Signals(signo).name)
                return
            if signo == signal.SIGHUP:
                log.info("SIGHUP: reloading %s", self.config_path)
                self.reload()
            else:
                self.set_paused(signo == signal.SIGUSR1)


def _drain_signals() -> None:
    """Take the signals that arrived while the last cycle finished (a second Ctrl-C, a
    SIGTERM from a stop script after systemd's): unblocked, they would kill the process or
    raise KeyboardInterrupt after the cycle it waited for, and the exit status would not be 0."""
    while (info := signal.sigtimedwait(SIGNALS, 0)) is not None:
        log.info("%s while stopping: ignored", signal.Signals(info.si_signo).name)


def recorder_for(cfg: Config) -> Recorder | None:
    """The recorder of ``record.trace``, or None; TraceError, a start-up error, where the trace
    could not be appended to (`amtuner.preflight.unusable_trace`), so a daemon that could never
    record does not run on as if it did."""
    path = cfg.record.trace
    if path is None:
        return None
    reason = preflight.unusable_trace(path)
    if reason:
        raise TraceError(f"record.trace: {reason}")
    return Recorder.for_config(cfg)


def status_line(report: CycleReport) -> str:
    """One line for systemd's STATUS= (shown by `systemctl status`)."""
    if report.error:
        return f"last cycle failed: {report.error}"
    parts = [
        f"{target_name(d.target)} {d.old_a:g}->{d.new_a:g} [{d.rule}]"
        if d.changed
        else f"{target_name(d.target)} {d.new_a:g} [{d.rule}]"
        for d in report.decisions
    ]
    mode = mode_suffix(report.dry_run, report.paused, report.mode)
    return "last cycle: " + ", ".join(parts) + mode


def log_report(report: CycleReport, *, repeated: bool = False) -> None:
    """The cycle's lines; a failure ``repeated`` from the cycle before is logged at DEBUG only,
    so a bad file or a down RM gives one warning per change, not one per period."""
    obs = report.observation
    seen = (
        f"P={obs.pending_apps} R={obs.running_apps} memory {obs.memory_ratio:.2f}; "
        if obs is not None
        else ""
    )
    if report.error:
        level = logging.DEBUG if repeated else logging.WARNING
        log.log(level, "cycle: %s%s: %s", seen, report.error, report.message)
        return
    for d in report.decisions:
        log.info(
            "cycle: %s%s %g -> %g [%s] %s",
            seen,
            target_name(d.target),
            d.old_a,
            d.new_a,
            d.rule,
            d.reason,
        )
    log.info("cycle: %s", report.message)


# -- logging ---------------------------------------------------------------------------------

_PRIORITY = {
    logging.DEBUG: 7,
    logging.INFO: 6,
    logging.WARNING: 4,
    logging.ERROR: 3,
    logging.CRITICAL: 2,
}


class JournalFormatter(SafeFormatter):
    """journald adds the time; a ``<N>`` prefix on every line (tracebacks included) gives it the
    syslog priority (SyslogLevelPrefix=yes is systemd's default)."""

    def format(self, record: logging.LogRecord) -> str:
        priority = _PRIORITY.get(record.levelno, 6 if record.levelno < logging.WARNING else 3)
        return "\n".join(f"<{priority}>{line}" for line in super().format(record).splitlines())


def for_journal() -> bool:
    return "JOURNAL_STREAM" in os.environ or not sys.stderr.isatty()


def setup_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    fmt = "%(levelname)s %(name)s: %(message)s"
    if for_journal():
        handler.setFormatter(JournalFormatter(fmt))
    else:
        handler.setFormatter(SafeFormatter("%(asctime)s " + fmt))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    # Two INFO lines per run of the job would drown the cycle's own lines.
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


def cmd_run(args: argparse.Namespace) -> int:
    setup_logging(args.log_level)
    try:
        cfg = load_config(args.config)
        if args.dry_run:
            cfg = cfg.with_dry_run(True)
        disable_created_metrics()
        daemon = Daemon(args.config, cfg, force_dry_run=args.dry_run)
    except startup_errors() as exc:
        log.error("%s", exc)
        return ExitCode.CONFIG
    check_timeouts(cfg)
    log.info(
        "amtuner run: %s, period %g s, %s",
        args.config,
        cfg.controller.period_seconds,
        "dry-run" if cfg.dry_run else "live" if cfg.mode == "auto" else f"mode {cfg.mode}",
    )
    try:
        return daemon.serve()
    except OSError as exc:
        # A start-up setting that cannot work (a busy port): restarting will not fix it.
        log.error("cannot serve metrics on %s:%d: %s", cfg.metrics.address, cfg.metrics.port, exc)
        return ExitCode.CONFIG
