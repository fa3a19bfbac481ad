"""The settings amtuner runs with: one frozen dataclass per section of the YAML file, each key
with its default and why. `amtuner.config.load_config` builds them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

SchedulerKindSetting = Literal["auto", "capacity", "fair"]
RefreshMethod = Literal["command", "rest", "none"]
PolicyName = Literal["paper", "adaptive"]
"""Must list exactly the names `amtuner.controller.get_policy` knows (a test ties the two)."""
Mode = Literal["auto", "recommend", "approve"]
"""Who writes a change the loop decides: amtuner itself, nobody (it is published as a
proposal), or an operator approving the proposal (`amtuner approve`)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a config: where (key path, line) and why."""

    path: str
    """``controller.t2``, ``scheduler.targets[0]``; empty for the document itself."""
    reason: str
    line: int | None = None
    """1-based line in the YAML file, when the config came from one."""


class ConfigError(ValueError):
    """A config file that cannot be used; the message names the file, key path and reason.

    Every problem found is reported at once (one per line), so an operator fixes a file in one
    round; ``problems`` holds them for callers that want them separately.
    """

    def __init__(self, message: str, problems: tuple[Problem, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


REST_SUFFIX = "/ws/v1"
"""Where an RM serves its REST API below its web address (``RMWebApp``, Hadoop 2.x-3.x)."""


def _place(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def names_path(target: str, base: str, path: str) -> bool:
    """Whether a redirect target is ``base + path`` (same scheme, host, port and path): the one
    test by which a standby's redirect is followed, and only to a configured RM, so no request
    (and no credential) ever leaves the configured RMs. ``path`` may carry a query, as
    `RMClient.get_json`'s do."""
    return (
        _place(target) == _place(base)
        and urlsplit(target).path.rstrip("/") == urlsplit(base + path).path
    )


@dataclass(frozen=True, slots=True)
class RMEndpoint:
    """Where one entry of ``rm.urls`` serves the REST API and the web UI.

    An entry is either the RM (or a proxy path in front of it): ``http://rm1:8088``, REST at
    ``…/ws/v1``, web UI at ``…/cluster``; or, when its path ends in ``/v1``, the REST base
    itself: ``http://rm1:8088/ws/v1`` (web UI at ``http://rm1:8088``), or a gateway's path for
    the RM's ``/ws/v1`` such as Apache Knox's RESOURCEMANAGER service,
    ``https://knox:8443/gateway/default/resourcemanager/v1`` (which Knox maps to
    ``/ws/v1``), whose web UI lives elsewhere (``rm.web_ui_urls``).
    """

    url: str
    """The entry as configured (no trailing ``/``): what messages and sources name."""
    rest: str
    """The base that ``/cluster/info``, ``/cluster/metrics`` and ``/cluster/scheduler`` follow."""
    web: str | None
    """The base that ``/cluster`` follows; None when the entry names a gateway's REST path."""

    @classmethod
    def of(cls, url: str) -> RMEndpoint:
        url = url.rstrip("/")
        path = urlsplit(url).path
        if path.endswith(REST_SUFFIX):
            return cls(url, url, url[: -len(REST_SUFFIX)])
        if path.endswith("/v1"):
            return cls(url, url, None)
        return cls(url, url + REST_SUFFIX, url)


@dataclass(frozen=True, slots=True)
class RMSettings:
    urls: tuple[str, ...] = ("http://127.0.0.1:8088",)
    """Every RM of an HA pair; the active one is found through its REST ``/cluster/info``.
    Each is an RM or a REST base (`RMEndpoint`). Redirects are followed only among these."""
    web_ui_urls: tuple[str, ...] = ()
    """Web UI bases for the fallback (``/cluster`` follows) where ``urls`` name a gateway's
    REST path (Knox's YARNUI service: ``https://knox:8443/gateway/default/yarn``); empty = the
    RMs of ``urls`` themselves."""
    connect_timeout_seconds: float = 2.0
    read_timeout_seconds: float = 4.0
    """With the refresh's timeout, what a cycle may wait: the defaults' 2 + 4 + 8 s fit the
    default 15 s period, so `amtuner run` does not warn about its own defaults."""
    verify: bool | str = True
    """TLS: True, or the path of the cluster's CA bundle."""
    insecure_skip_verify: bool = False
    client_cert: str | None = None
    client_key: str | None = None
    kerberos: bool = False
    """SPNEGO through the optional ``requests-gssapi`` (pip install 'amtuner[kerberos]'); the
    refresh command acts as the same principal (`amtuner.kerberos`)."""
    principal: str | None = None
    """amtuner's Kerberos principal (``amtuner/rm1.example.com@EXAMPLE.COM``); None: the
    keytab's first, or the ticket cache's. Its short name must be in ``yarn.admin.acl``."""
    keytab: Path | None = None
    """The client keytab amtuner gets and renews its tickets from; None: the environment's
    ``KRB5_CLIENT_KTNAME``, else a ticket cache kept by others (``KRB5CCNAME``)."""
    ticket_cache: Path | None = None
    """Where amtuner keeps the tickets it gets from the keytab; None: ``krb5cc`` beside
    ``state_file``."""
    user_name: str | None = None
    """``?user.name=`` for RMs with simple (pseudo) authentication."""
    web_ui_fallback: bool = True


@dataclass(frozen=True, slots=True)
class HistorySettings:
    urls: tuple[str, ...] = ()
    """The MapReduce JobHistory server (``mapreduce.jobhistory.webapp.address``, port 19888 by
    default; or a REST base as in ``rm.urls``), asked by the recorder (`amtuner record`,
    ``record.trace``) for each finished MapReduce app's task counts, durations and sizes, and
    probed by `amtuner check`, through the ``rm`` section's TLS, Kerberos and ``user.name``.
    More than one: tried in order. Empty: not asked."""


@dataclass(frozen=True, slots=True)
class TimelineSettings:
    urls: tuple[str, ...] = ()
    """The timeline server's generic application history (``yarn.timeline-service.webapp.address``,
    port 8188 by default; or a REST base as in ``rm.urls``), asked by the recorder (`amtuner
    record`, ``record.trace``) for each finished app's task containers (`amtuner.timeline`),
    through the ``rm`` section's TLS, Kerberos and ``user.name``. More than one: tried in
    order. Empty: not asked."""


@dataclass(frozen=True, slots=True)
class RecordSettings:
    """What `amtuner run` records of the apps that finish as it runs (`amtuner.record`), so
    `amtuner advise` has the period to replay without a recorder beside the daemon; and the
    defaults of `amtuner record`'s options of the same names."""

    trace: Path | None = None
    """The app trace (`amtuner.apptrace`) appended to, as `amtuner record --out`; None: the
    daemon records nothing."""
    interval_seconds: float = 60.0
    """Between polls of the RM's apps API: a job of its own beside the control cycle, so a slow
    JobHistory server never delays a cycle. The RM keeps only its last
    ``yarn.resourcemanager.max-completed-applications`` finished apps (1000 in Hadoop 3): a
    minute is far less than that many apps take to finish on most clusters."""
    history_wait_seconds: float = 2 * 180.0
    """How long an app whose job the JobHistory server does not know (404) is asked about again,
    from its first 404, before it is written without its figures. A job's history file reaches
    the server's intermediate done directory as its AM ends; the server's move thread
    (``HistoryFileManager``, every ``mapreduce.jobhistory.move.interval-ms``, 180,000 ms by
    default) scans that directory and moves the file to its done directory, so within one
    interval of the job's end the server holds it; two intervals leave room for a scan already
    under way and a slow move. A server configured with a longer interval wants this raised
    with it."""
    limit: int = 1000
    """Most apps asked for per poll (``limit=``): the RM's own default of
    ``max-completed-applications``."""
    max_bytes: int = 64 * 1024 * 1024
    """Recording stops rather than grow the trace past this: about 200,000 apps at some 300
    bytes a line."""


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    kind: SchedulerKindSetting = "auto"
    config_file: Path | None = None
    """fair-scheduler.xml or capacity-scheduler.xml. Required in a config file; None only in
    the bare dataclass default."""
    targets: tuple[str, ...] = ()
    """Leaf queues to tune (``root.default``); empty = the scheduler-wide value."""


@dataclass(frozen=True, slots=True)
class RefreshSettings:
    method: RefreshMethod = "command"
    command: tuple[str, ...] = ("yarn", "rmadmin", "-refreshQueues")
    """Run without a shell; the first word is looked up on PATH."""
    timeout_seconds: float = 8.0
    """`yarn rmadmin` is a JVM: a few seconds to start. Longer ones need a longer period."""


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    policy: PolicyName = "adaptive"
    """`adaptive` unless told otherwise: on drawn clusters it never ran on it stays near each
    one's best fixed value, where `paper` (the paper's loop as published, kept for comparison)
    can admit AMs until tasks starve (docs/zoo.md)."""
    t1: float = 1.0
    t2: float = 0.5
    t3: float = 0.8
    step: float = 0.05
    a_min: float = 0.05
    a_max: float = 0.95
    period_seconds: float = 15.0
    """The paper's experiment's period, which every benchmark runs: long enough for a
    FairScheduler to load a write (its poll, 5-15 s) before the next period reads its effect,
    short enough to see a batch several times before it drains (measured: docs/results.md,
    "Control period" and "The daemon's defaults were not what the benchmarks ran"). Two small
    REST documents a period (`amtuner.monitor.rest`)."""
    unit_mb: int = 1024
    """The paper's Unit: one container's memory, for its estimate M_AMs = R x Unit x 2."""

    @property
    def widest_step(self) -> float:
        """The widest move either policy makes by design: half the way from one bound to the
        other (the paper's first alpha/2^n from a bound; `adaptive`'s start-up 1 - T2 from a_min
        with the default T2)."""
        return (self.a_max - self.a_min) / 2


@dataclass(frozen=True, slots=True)
class GuardSettings:
    """What an operator expects around any automatic change (issue: daemon guard rails)."""

    max_change_per_cycle: float = 0.5
    """Largest |new A - old A| applied in one cycle; larger decisions are clipped. The default
    is just over `ControllerSettings.widest_step` (0.45 with the defaults; `adaptive`'s start-up
    from a CapacityScheduler's 0.1 is 0.4), so it stops what no policy means and lets the
    policies run as benchmarked. A smaller clip cuts the first raise from a CapacityScheduler's
    0.1 short, and the paper's loop, whose step only shrinks, never catches up (measured:
    docs/results.md, "The daemon's defaults were not what the benchmarks ran")."""
    hold_off_seconds: float = 10.0
    """No new change sooner than this after the last, by any process on the same state (`amtuner
    once` beside `run`, a restart). Under the period, so the daemon's next cycle may act: the
    policies wait for a raise to show themselves (a FairScheduler loads its file 5-15 s after
    the write), and a hold-off longer than the period holds every other move (measured:
    docs/results.md, "The daemon's defaults were not what the benchmarks ran")."""
    pause_file: Path | None = None
    """While this file exists amtuner keeps monitoring but writes nothing (also SIGUSR1/SIGUSR2)."""


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    enabled: bool = True
    address: str = "127.0.0.1"
    port: int = 9108
    """0 lets the OS pick a free port (tests)."""


PROPOSAL_PERIODS = 4
"""A proposal's default life in control periods: a daemon that misses a few cycles (an RM
restart) does not void it, one stopped for longer does."""


@dataclass(frozen=True, slots=True)
class Config:
    rm: RMSettings = field(default_factory=RMSettings)
    history: HistorySettings = field(default_factory=HistorySettings)
    timeline: TimelineSettings = field(default_factory=TimelineSettings)
    record: RecordSettings = field(default_factory=RecordSettings)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    refresh: RefreshSettings = field(default_factory=RefreshSettings)
    controller: ControllerSettings = field(default_factory=ControllerSettings)
    guard: GuardSettings = field(default_factory=GuardSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    dry_run: bool = False
    mode: Mode = "auto"
    """``recommend`` and ``approve`` publish each change as a proposal instead of writing it
    (`amtuner.proposals`), as Kubernetes' VPA recommends with ``updateMode: Off`` and Strimzi's
    rebalance waits for an ``approve`` annotation: how an operator lets a loop earn trust."""
    proposal_ttl_seconds: float | None = None
    """A proposal older than this is refused by `amtuner approve`: the figures it was decided
    from no longer describe the cluster. None: `PROPOSAL_PERIODS` control periods; a running
    daemon makes each proposal again every period while it still stands."""
    backup_dir: Path = Path("/var/lib/amtuner/backups")
    keep_backups: int = 10
    """Backups older than the newest K are deleted; 0 keeps none."""
    state_file: Path = Path("/var/lib/amtuner/state.json")
    audit_log: Path | None = None
    """One line per applied change; None = the log only."""
    source: Path | None = None
    """The file this was loaded from (for messages); not a key."""

    @property
    def proposal_ttl_s(self) -> float:
        if self.proposal_ttl_seconds is not None:
            return self.proposal_ttl_seconds
        return PROPOSAL_PERIODS * self.controller.period_seconds

    def with_dry_run(self, dry_run: bool) -> Config:
        """The CLI's ``--dry-run`` overrides the file without re-validating it."""
        return dataclasses.replace(self, dry_run=dry_run)
