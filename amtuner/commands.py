"""`amtuner once`, `check` and `run`: their parsers, one cycle by hand and a pre-flight check.

The parsers are built for every invocation, so this module stays light: what talks to an RM or a
file (requests, the executor, the daemon's APScheduler and Prometheus) is imported by the command
that runs. Exit statuses: `amtuner.exitcodes.ExitCode`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from amtuner import lock
from amtuner.config import DEFAULT_PATH, Config, ConfigError, load_config, refresh_mismatch
from amtuner.exitcodes import ExitCode
from amtuner.model import GLOBAL_TARGET, Observation, Rule
from amtuner.safetext import shown

if TYPE_CHECKING:
    import requests

    from amtuner.cycle import Cycle, CycleReport, States
    from amtuner.executor import SchedulerFile
    from amtuner.kerberos import KerberosLogin
    from amtuner.monitor import RMClient
    from amtuner.rmchannel import RMChannel

log = logging.getLogger(__name__)

def decision_names() -> dict[str, str]:
    """Every name a decision can carry, with its meaning: the paper's rules (`Rule`), then the
    adaptive policy's finer cases (`Case`)."""
    from amtuner.controller.adaptive import Case

    return {r.value: r.meaning for r in Rule} | {c.value: c.meaning for c in Case}


def decision_names_help() -> str:
    """The epilog of `once`, `run` and `status`: what the names in their output mean."""
    names = decision_names()
    width = max(map(len, names))
    return "rules and cases:\n" + "\n".join(f"  {n:<{width}}  {m}" for n, m in names.items())


def target_name(target: str) -> str:
    return target or "global"


def mode_suffix(dry_run: bool, paused: bool, mode: str) -> str:
    """How the daemon's status line and `amtuner status` say a cycle wrote nothing by design."""
    if dry_run or paused:
        return " (dry-run)" if dry_run else " (paused)"
    return "" if mode == "auto" else f" ({mode})"


def describe_observation(obs: Observation) -> str:
    am = "n/a" if obs.am_memory_used_mb is None else f"{obs.am_memory_used_mb} MB"
    return (
        f"{obs.scheduler} scheduler via {obs.source}: P={obs.pending_apps} R={obs.running_apps} "
        f"memory {obs.memory_used_mb}/{obs.memory_total_mb} MB ({obs.memory_ratio:.2f}) "
        f"AM memory {am}"
    )


def print_report(report: CycleReport, out: TextIO = sys.stdout) -> None:
    """The human form of a cycle: observation, one decision line per target, then the diff;
    redacted and printable (`amtuner.safetext`), as it may quote the RM and name its URLs."""
    lines: list[str] = []
    if report.observation is not None:
        lines.append(f"observed  {describe_observation(report.observation)}")
    for d in report.decisions:
        lines.append(
            f"decision  {target_name(d.target)}: {d.old_a:g} -> {d.new_a:g} [{d.rule}] {d.reason}"
        )
        waits = None if report.observation is None else waiting(report.observation, d.target)
        if waits:
            lines.append(waits)
        idle = None if report.observation is None else idle_line(report.observation, d.target)
        if idle:
            lines.append(idle)
    if report.diff:
        lines.append(report.diff.rstrip("\n"))
    if report.error:
        lines.append(f"error     {report.error}: {report.message}")
    elif report.message:
        lines.append(f"result    {report.message}")
    for line in lines:
        print(shown(line, lines=True), file=out)


def waiting(obs: Observation, target: str) -> str | None:
    """How `once` and `check` say why a target's apps wait; None when none does."""
    from amtuner.cures import describe, wait_records  # the executor's keys: not for --help

    records = wait_records(obs, target)
    return f"waiting   {target_name(target)}: {describe(records)}" if records else None


def idle_line(obs: Observation, target: str) -> str | None:
    """How `once` and `check` say that a target's running apps hold their AM alone; None when
    none do or none were looked for (`amtuner.monitor.idle`)."""
    from amtuner.monitor.idle import describe_idle, idle_record

    record = idle_record(obs, target)
    return f"idle AMs  {target_name(target)}: {describe_idle(record)}" if record else None


def _load(args: argparse.Namespace) -> Config:
    cfg = load_config(args.config)
    if getattr(args, "dry_run", False):
        cfg = cfg.with_dry_run(True)
    return cfg


def kerberos_login(cfg: Config) -> KerberosLogin | None:
    """amtuner's Kerberos identity when ``rm.kerberos`` is on."""
    from amtuner.kerberos import KerberosLogin

    return KerberosLogin.of(cfg.rm, cfg.state_file) if cfg.rm.kerberos else None


def build_cycle(cfg: Config) -> Cycle:
    """The REST requests (SPNEGO) and the refresh (its command's ticket cache, or the same
    session) act as one identity."""
    from amtuner.cycle import Cycle
    from amtuner.executor import make_refresher
    from amtuner.monitor import RMClient, make_session
    from amtuner.state import journal_to

    login = kerberos_login(cfg)
    session = make_session(cfg.rm, login)
    monitor = RMClient.from_settings(cfg.rm, session=session, scheduler_hint=cfg.scheduler.kind)
    refresher = make_refresher(
        cfg.refresh, rest_channel(cfg, session),
        environment=None if login is None else login.fresh_environment,
    )  # fmt: skip
    journal = journal_to(cfg.state_file, cfg.controller.unit_mb)
    return Cycle(config=cfg, monitor=monitor, refresher=refresher, journal=journal, read_back=True)


def rest_channel(cfg: Config, session: requests.Session) -> RMChannel:
    """The REST refresh's way to the RMs: the monitor's session, its redirect rule, deadline
    and cap, and ``refresh.timeout_seconds`` for each exchange."""
    from amtuner.rmchannel import RMChannel

    return RMChannel.for_settings(cfg.rm, session, cfg.refresh.timeout_seconds)


def startup_errors() -> tuple[type[Exception], ...]:
    """What can stop a command before its first cycle: the config, the state file, the app
    trace ``record.trace`` names, or a session or refresher that cannot be built from them (the
    Kerberos extra missing, no CA bundle). Exit 2, so systemd does not restart a service that
    cannot start."""
    from amtuner.apptrace import TraceError
    from amtuner.executor import ExecutorError
    from amtuner.monitor import ObservationError
    from amtuner.state import StateError

    return (
        ConfigError, StateError, ObservationError, ExecutorError, lock.LockFileError, TraceError
    )  # fmt: skip


def cmd_once(args: argparse.Namespace) -> int:
    errors = startup_errors()
    try:
        cfg = _load(args)
        cycle = build_cycle(cfg)
        if cfg.dry_run:  # writes nothing: no need to wait for another process's cycle
            return _once(cfg, cycle)
        with lock.held(lock.path_for(cfg.state_file)):
            return _once(cfg, cycle)
    except lock.LockUnavailable as exc:
        print(f"error     {exc.label}: {exc}")
        return ExitCode.for_error(exc.label)
    except errors as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.CONFIG


def _once(cfg: Config, cycle: Cycle) -> int:
    """The cycle, under the cycle lock when live: the state is read once the lock is held, so
    it is the one the last cycle of any process (a running daemon included) saved."""
    from amtuner import audit
    from amtuner.state import StateError, load_pending, load_states, save_states, summarize

    states = load_states(cfg.state_file)
    report, new_states = cycle.run(states, load_pending(cfg.state_file))
    print_report(report)
    code = ExitCode.for_error(report.error)
    try:
        audit.record(cfg.audit_log, report, states, unit_mb=cfg.controller.unit_mb)
    except audit.AuditError as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        code = code or ExitCode.RECORD
    if not cfg.dry_run:
        # A paused cycle keeps the controller where it was (a failed one hands its states back
        # as they were, or with an interrupted change settled), but `status` should still say
        # what happened last; a refresh still owed stays recorded.
        kept = states if report.paused else new_states
        try:
            save_states(cfg.state_file, kept, summarize(report, new_states), report.owed)
        except StateError as exc:
            print(f"amtuner: {exc}", file=sys.stderr)
            return code or ExitCode.RECORD
        return code or _publish(cfg, report, states)
    return code


def _publish(cfg: Config, report: CycleReport, before: States) -> ExitCode:
    """In ``mode`` recommend or approve, the cycle's proposal replaces the standing one."""
    from amtuner import proposals

    try:
        standing = proposals.publish(cfg, report, before)
    except proposals.ProposalError as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.RECORD
    if standing is not None and report.proposed is not None:
        how = f": amtuner approve --id {standing.id}" if cfg.mode == "approve" else ""
        print(f"proposal  {proposals.describe(standing)}{how}")
    return ExitCode.OK


def cmd_check(args: argparse.Namespace) -> int:
    """Every problem, not the first: what this host would trip on (paths, state, port, the
    refresh command) is found whether or not the RM answers. The exit status is the first
    blocking problem's (config 2, RM 3, file 4), else 1 for a risk."""
    from amtuner.preflight import live_cycle_problems

    try:
        cfg = _load(args)
    except ConfigError as exc:
        print(f"config    INVALID: {exc}")
        return ExitCode.CONFIG
    print(f"config    ok: {args.config}")
    problems = live_cycle_problems(cfg)
    code, risks = _check_rm_and_file(cfg)
    if cfg.history.urls:
        history_code, history_risks = _check_history(cfg)
        code, risks = code or history_code, [*risks, *history_risks]
    for problem in [*risks, *problems]:
        print(shown(f"risk      {problem}"))  # risks name the RM's queues
    return code or (ExitCode.FAILED if risks or problems else ExitCode.OK)


_RM_FAILURE = {
    "rm-unreachable": "UNREACHABLE",
    "timeout": "UNREACHABLE",
    "standby": "NO ACTIVE RM",
    "unknown-queue": "NO SUCH QUEUE",
}
"""How `check` heads an RM failure: what happened, not "unreachable" for every reason."""


def _check_rm_and_file(cfg: Config) -> tuple[ExitCode, list[str]]:
    """What the RM and the scheduler file say: the exit status of a blocking problem (OK if
    none) and the risks found, each line printed as it is found."""
    from amtuner.executor import ExecutorError, make_refresher
    from amtuner.executor.source import open_config
    from amtuner.kerberos import ADMIN_ACL, admin_acl_verdict, short_name
    from amtuner.monitor import ObservationError, RMClient, make_session
    from amtuner.readback import check_risks
    from amtuner.risks import find_risks, untuned_partitions
    from amtuner.state import StateError, load_pending

    login = kerberos_login(cfg)
    try:
        session = make_session(cfg.rm, login)
    except ObservationError as exc:
        print(f"rm        UNUSABLE ({exc.reason}): {exc}")
        return ExitCode.CONFIG, []
    principal = None
    if login is not None:
        principal = _check_kerberos(login)
        if principal is None:
            return ExitCode.CONFIG, []
    client = RMClient.from_settings(cfg.rm, session=session, scheduler_hint=cfg.scheduler.kind)
    targets = [t for t in cfg.scheduler.targets if t != GLOBAL_TARGET]
    try:
        obs = client.observe(targets)
    except ObservationError as exc:
        print(f"rm        {_RM_FAILURE.get(exc.reason, 'UNUSABLE')} ({exc.reason}): {exc}")
        return ExitCode.for_error(exc.reason), []
    print(f"rm        ok: {describe_observation(obs)}")
    if obs.labelled_partitions:
        print(f"partitions {untuned_partitions(obs.labelled_partitions)}")
    code = ExitCode.OK
    if cfg.scheduler.kind not in ("auto", obs.scheduler):
        print(f"scheduler MISMATCH: config says {cfg.scheduler.kind}, RM runs {obs.scheduler}")
        code = ExitCode.for_error("scheduler-mismatch")
    unusable = refresh_mismatch(obs.scheduler, cfg.refresh.method)
    if unusable is not None:
        print(f"refresh   UNUSABLE: refresh.method: {unusable}")
        code = code or ExitCode.CONFIG
    refresher = make_refresher(
        cfg.refresh, rest_channel(cfg, session),
        environment=None if login is None else login.fresh_environment,
    )  # fmt: skip
    try:
        store, sched_file = open_config(cfg.scheduler.config_file, obs.scheduler, refresher)
        values = {
            t: sched_file.effective_value(t) for t in cfg.scheduler.targets or (GLOBAL_TARGET,)
        }
    except ExecutorError as exc:
        print(f"file      UNUSABLE: {exc}")
        return code or ExitCode.for_error(exc.label), []
    for target, value in values.items():
        print(f"file      {sched_file.path}: {target_name(target)} A = {value:g}")
    obs = _named_from_apps(obs, sched_file, client)
    for target in values:
        _print_waits(obs, target, sched_file)
    try:  # an unusable state file (a FIFO would block the read) is a problem of its own
        pending = load_pending(cfg.state_file) if cfg.state_file.is_file() else None
    except StateError:
        pending = None
    where = None if pending is None else pending.where
    risks = find_risks(sched_file, obs, cfg) + check_risks(
        sched_file, obs, where, fair_reloaded=_older_than_a_reload(sched_file.path)
    )
    if principal is not None and cfg.refresh.method == "command":
        allowed, why = admin_acl_verdict(principal, cfg.scheduler.config_file)
        if allowed is False:
            risks.append(why)
        else:
            print(f"acl       {why}")
    elif principal is not None and store is not None:
        print(
            f"acl       {principal} ({short_name(principal)!r}) may change the store: the RM let "
            f"it GET scheduler-conf, which is for {ADMIN_ACL}'s users"
        )
    print(f"refresh   {shown(refresher.describe())}")
    return code, risks


def _check_history(cfg: Config) -> tuple[ExitCode, list[str]]:
    """Whether ``history.urls`` names a JobHistory server that answers (the recorder asks it:
    `amtuner record`, and the daemon with ``record.trace``): one line. A server down is a risk,
    for recording only (the control cycle never asks it); a URL whose server answers as no
    JobHistory server does is the config's mistake."""
    from amtuner.jobhistory import JobDocumentError, history_client, server_info
    from amtuner.monitor import ObservationError, make_session

    where = ", ".join(cfg.history.urls)
    try:
        session = make_session(cfg.rm, kerberos_login(cfg))
        client = history_client(cfg.rm, cfg.history.urls, session)
        info = server_info(client)
    except ObservationError as exc:
        if exc.reason == "bad-response" or getattr(exc.__cause__, "status", None) == 404:
            print(f"history   NOT A JOBHISTORY SERVER ({exc.reason}): {where}: {exc}")
            return ExitCode.CONFIG, []
        message = str(exc).replace("no ResourceManager answered", "no JobHistory server answered")
        print(f"history   {_RM_FAILURE.get(exc.reason, 'UNUSABLE')} ({exc.reason}): {message}")
        return ExitCode.OK, [
            f"the JobHistory server ({where}) did not answer: the recorder (`amtuner record`, "
            "record.trace) would record MapReduce apps without their tasks"
        ]
    except JobDocumentError as exc:
        print(f"history   NOT A JOBHISTORY SERVER (bad-response): {where}: {exc}")
        return ExitCode.CONFIG, []
    started = info.get("startedOn")
    since = (
        f", up since {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started / 1000))}"
        if isinstance(started, int) and not isinstance(started, bool) and started > 0
        else ""
    )
    print(f"history   ok: {client.active_url or where}: Hadoop {info['hadoopVersion']}{since}")
    return ExitCode.OK, []


def _named_from_apps(obs: Observation, sched_file: SchedulerFile, client: RMClient) -> Observation:
    """The waits a FairScheduler's users' running-apps limits hold and the idle AMs named, as a
    cycle names them (`amtuner.cycle.named_from_apps`: the apps listed once at most, and only
    where either looks); as they were when the RM does not list its apps."""
    from amtuner.cycle import named_from_apps
    from amtuner.monitor import ObservationError

    try:
        return named_from_apps(obs, sched_file, client.unfinished_apps)
    except ObservationError as exc:
        print(f"rm        UNUSABLE ({exc.reason}) for whose apps wait: {exc}")
        return obs


def _print_waits(obs: Observation, target: str, sched_file: SchedulerFile) -> None:
    """A target's waits as `once` prints them, then what the file sets each limit that holds
    them to (what an operator changes when A is not the limit that binds), then its idle AMs
    as `once` prints them (whose cure is no setting of the scheduler's)."""
    from amtuner.cures import settings_in_file
    from amtuner.executor import ExecutorError

    line = waiting(obs, target)
    if line is not None:
        print(shown(line))
        try:
            for setting in settings_in_file(obs, target, sched_file):
                print(f"setting   {setting}")
        except ExecutorError as exc:
            print(f"setting   UNREADABLE: {shown(str(exc))}")
    idle = idle_line(obs, target)
    if idle is not None:
        print(shown(idle))


def _check_kerberos(login: KerberosLogin) -> str | None:
    """Prints who amtuner is, whether its keytab can be read and how long its ticket lasts;
    returns the principal, or None when no ticket can be had."""
    from amtuner.kerberos import KerberosError

    print(f"kerberos  {login.describe()}")
    try:
        creds = login.credentials()
    except KerberosError as exc:
        print(f"kerberos  UNUSABLE: {exc}")
        return None
    print(f"kerberos  ok: {creds.name}, ticket valid for {creds.lifetime} s")
    return str(creds.name)


FAIR_RELOAD_S = 15.0
"""A FairScheduler loads its allocation file 5-15 s after it changes
(``AllocationFileLoaderService``: a 10 s poll, files older than 5 s)."""


def _older_than_a_reload(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime > FAIR_RELOAD_S
    except OSError:
        return False


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", "-c", type=Path, default=DEFAULT_PATH,
        help="YAML config file (default: %(default)s)",
    )  # fmt: skip


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    once = subparsers.add_parser(
        "once",
        help="run one control cycle and print what it saw, decided and did",
        description="Observe the RM, decide with the controller, apply (or show) the change.",
        epilog=decision_names_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_option(once)
    once.add_argument(
        "--dry-run", action="store_true", help="print the diff and the refresh; write nothing"
    )
    once.set_defaults(func=cmd_once)

    check = subparsers.add_parser(
        "check",
        help="validate the config, reach the RM, read the scheduler file, report risks",
        description="Check that the first live cycle can run: the config, the RM, the scheduler "
        "file, the paths amtuner writes, the refresh command and the metrics port. Exit 0 only "
        "when nothing is at risk.",
    )
    add_config_option(check)
    check.set_defaults(func=cmd_check)

    run = subparsers.add_parser(
        "run",
        help="run the control loop as a service (one cycle per controller.period_seconds)",
        description=textwrap.dedent(
            """\
            Run the control cycle every period until SIGTERM. SIGHUP reloads the config,
            SIGUSR1 pauses (monitor only), SIGUSR2 resumes.

            Logs go to stderr, one line per record: on a terminal
            "YYYY-MM-DD HH:MM:SS,mmm LEVEL logger: message"; without one (under systemd)
            "<N>LEVEL logger: message", N the syslog priority journald files it under."""
        ),
        epilog=decision_names_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_option(run)
    run.add_argument("--dry-run", action="store_true", help="decide and log; write nothing")
    run.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    """The daemon (APScheduler, Prometheus) is loaded by `run` alone."""
    from amtuner import daemon

    return daemon.cmd_run(args)
