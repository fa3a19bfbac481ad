"""The `Recorder`: one app trace appended to as the RM reports apps finished, by `amtuner record`
in a loop of its own and by `amtuner run` beside its control cycle (``record:``); and the
`amtuner record` command. What one poll asks and writes: `amtuner.record`."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from amtuner.config.settings import RecordSettings
from amtuner.exitcodes import ExitCode
from amtuner.record import Held, TraceFull, append, open_trace, poll, poll_running

if TYPE_CHECKING:
    from amtuner.config import Config
    from amtuner.monitor import RMClient

log = logging.getLogger(__name__)

DEFAULTS = RecordSettings()
"""``record:``'s defaults, which `amtuner record`'s options share."""


class Recorder:
    """One trace being appended to, and what is kept between polls: the cursor, the AM sizes
    seen, the apps held for the JobHistory server. `amtuner record` polls it in a loop;
    `amtuner run` as a job of its own beside the control cycle (`amtuner.daemon`). One poll at
    a time: it is not shared between threads.

    The trace is opened at the first poll (a new file's header needs the RM's cluster shape),
    and again after a poll that failed to write: the file, its torn last line cut off, is then
    the cursor again, and the apps held or not written are read again from the RM."""

    def __init__(
        self,
        settings: RecordSettings,
        client: RMClient,
        rm: str,
        history: RMClient | None = None,
        timeline: RMClient | None = None,
    ) -> None:
        from amtuner.apptrace import VERSION

        assert settings.trace is not None, "a Recorder needs a trace file"
        self.path: Path = settings.trace
        self.settings = settings
        self.client = client
        self.rm = rm
        self.history = history
        self.timeline = timeline
        self.held = Held()
        self.version = VERSION
        self._since: tuple[int, frozenset[str]] | None = None
        self._am_sizes: dict[str, int | None] = {}

    @classmethod
    def for_config(cls, cfg: Config) -> Recorder:
        """Through a session of its own (the RM's TLS, Kerberos and ``user.name``), so it can
        run on a thread beside the control cycle's; the JobHistory and timeline servers of
        ``history.urls`` and ``timeline.urls``."""
        from amtuner.commands import kerberos_login
        from amtuner.jobhistory import history_client
        from amtuner.monitor import RMClient, make_session

        session = make_session(cfg.rm, kerberos_login(cfg))
        client = RMClient.from_settings(cfg.rm, session=session)
        history = history_client(cfg.rm, cfg.history.urls, session) if cfg.history.urls else None
        timeline = (
            history_client(cfg.rm, cfg.timeline.urls, session) if cfg.timeline.urls else None
        )
        return cls(cfg.record, client, ",".join(cfg.rm.urls), history, timeline)

    def poll(self) -> int:
        """One poll (`poll_running`, then `poll`); how many apps were written. Raises
        ObservationError (the RM: nothing changed, the next poll asks again), TraceError or
        OSError (the file: the next poll opens it again), and TraceFull."""
        from amtuner.apptrace import TraceError

        s = self.settings
        if self._since is None:
            self._open()
        assert self._since is not None
        try:
            poll_running(self.client, self._am_sizes, s.limit)
            self._since, n = poll(
                self.path, self.client, self._since, s.limit, s.max_bytes, self._am_sizes,
                self.history, self.version, self.held, s.history_wait_seconds,
                timeline=self.timeline,
            )  # fmt: skip
        except (TraceError, OSError):
            self._since, self.held = None, Held()
            raise
        log.info(
            "%d apps recorded%s; cursor finishedTimeBegin=%d", n,
            f", {len(self.held.apps)} waiting for the JobHistory server" if self.held.apps else "",
            self._since[0],
        )  # fmt: skip
        return n

    def _open(self) -> None:
        """`open_trace`, asking of the servers only what the file's version has a place for."""
        from amtuner.apptrace import VERSION

        self._since, self.version = open_trace(self.path, self.client, self.rm)
        if self.history is not None and self.version < VERSION:
            log.warning(
                "%s is a version %d trace, which has %s: start a new file to record them",
                self.path, self.version, "no JobHistory fields: the JobHistory server is not "
                "asked" if self.version < 2 else "no task sizes: they are not asked",
            )  # fmt: skip
            self.history = None if self.version < 2 else self.history
        if self.timeline is not None and self.version < 3:
            log.warning(
                "%s is a version %d trace, which has no timeline fields: the timeline server "
                "is not asked; start a new file to record them", self.path, self.version,
            )  # fmt: skip
            self.timeline = None

    def flush(self) -> int:
        """Write the apps still held as they are, when recording stops: no app read from the
        RM is left out of the trace for want of its JobHistory figures. How many; raises
        TraceFull, TraceError and OSError as `append` does."""
        n = len(self.held.apps)
        if n:
            append(self.path, self.held.apps, self.version, self.settings.max_bytes, self.held)
            log.info("stopping: %d apps held for the JobHistory server written", n)
            self.held.apps = []
        return n

    def cancel(self) -> None:
        """End the requests in flight and refuse new ones: recording is stopping."""
        for client in (self.client, self.history, self.timeline):
            if client is not None:
                client.cancel()


def cmd_record(args: argparse.Namespace) -> int:
    from amtuner.apptrace import TraceError
    from amtuner.commands import startup_errors
    from amtuner.config import load_config
    from amtuner.monitor import ObservationError

    try:
        cfg = load_config(args.config)
        settings = RecordSettings(
            args.out, args.interval, 0.0 if args.once else args.history_wait, args.limit,
            args.max_bytes,
        )  # fmt: skip
        cfg = dataclasses.replace(
            cfg, record=settings,
            history=dataclasses.replace(cfg.history, urls=tuple(args.history) or cfg.history.urls),
            timeline=dataclasses.replace(
                cfg.timeline, urls=tuple(args.timeline) or cfg.timeline.urls
            ),
        )  # fmt: skip
        recorder = Recorder.for_config(cfg)
    except startup_errors() as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.CONFIG
    stop = threading.Event()
    if not args.once:
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
    code = ExitCode.OK
    try:
        while True:
            recorder.poll()
            if args.once or stop.wait(args.interval):
                break
    except TraceFull as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.FAILED  # nor would the apps held fit: the next recorder reads them again
    except (TraceError, OSError) as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        code = ExitCode.FILE
    except ObservationError as exc:
        print(f"amtuner: {exc.reason}: {exc}", file=sys.stderr)
        code = ExitCode.for_error(exc.reason)
    except KeyboardInterrupt:
        code = ExitCode.INTERRUPTED
    return flush(recorder) or code


def flush(recorder: Recorder) -> ExitCode:
    """`Recorder.flush`, its failure said and told as an exit code."""
    from amtuner.apptrace import TraceError

    try:
        recorder.flush()
    except TraceFull as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    except (TraceError, OSError) as exc:
        print(f"amtuner: {exc}", file=sys.stderr)
        return ExitCode.FILE
    return ExitCode.OK


def _url_option(text: str) -> str:
    from amtuner.config import check_url

    try:
        return check_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from amtuner.commands import add_config_option

    p = subparsers.add_parser(
        "record",
        help="append the apps the RM reports finished to a trace file, for `amtuner advise`",
        description="Poll the RM's apps API (the config's rm section: URLs, TLS, Kerberos) and "
        "append every app that finished to OUT, a versioned JSON-lines trace (docs/advise.md). "
        "A restart resumes from the file. SIGTERM stops it between polls.",
    )
    add_config_option(p)
    p.add_argument("--out", "-o", type=Path, required=True, help="the trace file to append to")
    p.add_argument(
        "--interval", type=float, default=DEFAULTS.interval_seconds,
        help="seconds between polls (default: %(default)s)",
    )  # fmt: skip
    p.add_argument("--once", action="store_true", help="poll once and exit")
    p.add_argument(
        "--history", action="append", default=[], metavar="URL", type=_url_option,
        help="the MapReduce JobHistory server to ask for each MapReduce app's tasks "
        "(repeatable; instead of the config's history.urls)",
    )  # fmt: skip
    p.add_argument(
        "--timeline", action="append", default=[], metavar="URL", type=_url_option,
        help="the timeline server (YARN's generic application history) to ask for each "
        "other app's task containers (repeatable; instead of the config's timeline.urls)",
    )  # fmt: skip
    p.add_argument(
        "--history-wait", type=float, default=DEFAULTS.history_wait_seconds, metavar="SECONDS",
        help="how long an app the JobHistory server does not know yet is asked about again "
        "before it is recorded without its tasks (default: %(default)s; --once does not wait)",
    )  # fmt: skip
    p.add_argument(
        "--limit", type=int, default=DEFAULTS.limit,
        help="most apps asked for per poll (default: %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--max-bytes", type=int, default=DEFAULTS.max_bytes,
        help="stop (exit 1) rather than grow the file past this size (default: %(default)s)",
    )  # fmt: skip
    p.set_defaults(func=cmd_record)
