"""Settings: one home for every key of the YAML file, its type, its default and why.

`load_config(path)` turns YAML into these frozen dataclasses; every validation error names the key
path and the reason (``controller.t2: must be a number greater than 0 and at most 1, got 'abc'``)
and, when the config came from a file, the file and line. Unknown keys are errors with a
did-you-mean suggestion, because a misspelt key silently falling back to its default is the worst
failure a tuner of a production scheduler can have.

Choices the loader makes (also in config.example.yaml):

* Types are strict: ``"0.5"`` is not a number and ``true`` is not an integer; an integer is
  accepted where a number is expected. NaN and infinities are rejected.
* A section written with no body (``guard:``) means "all defaults".
* ``scheduler.config_file`` is the one required key, except with ``refresh.method: rest``: a
  CapacityScheduler with a mutable configuration store is then read and changed over REST
  (``/ws/v1/cluster/scheduler-conf``) and no local file is written. Given with ``rest``, the file
  is edited as with the other methods and the same change is PUT to the RM.
* Path keys expand ``~``; a relative path is taken relative to the config file's directory (so a
  config and its scheduler file can travel together), or to the working directory for
  `parse_config` without ``base_dir``. Paths need not exist yet: ``amtuner check`` looks at them.
* ``rm.urls`` lose a trailing ``/``; an entry is an RM (``/ws/v1`` follows) or, with a path ending
  in ``/v1``, a REST base such as a gateway's (`RMEndpoint`).
* Durations (timeouts, period, hold-off) are at most a day (`MAX_SECONDS`). Ranges:
  ``0 <= a_min < a_max <= 1``; ``0 < step <= a_max - a_min``; ``t1``, ``t2``, ``t3`` in
  (0, 1] with ``t3 < t1`` (otherwise the paper's over-allocation case 2, which needs
  ``T3 < M_used/M_total < T1``, can never fire).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, get_args
from urllib.parse import urlsplit

import yaml

SchedulerKindSetting = Literal["auto", "capacity", "fair"]
RefreshMethod = Literal["command", "rest", "none"]
PolicyName = Literal["paper", "adaptive"]
"""Must list exactly the names `amtuner.controller.get_policy` knows (a test ties the two)."""


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
    connect_timeout_seconds: float = 3.0
    read_timeout_seconds: float = 5.0
    verify: bool | str = True
    """TLS: True, or the path of the cluster's CA bundle."""
    insecure_skip_verify: bool = False
    client_cert: str | None = None
    client_key: str | None = None
    kerberos: bool = False
    """SPNEGO through the optional ``requests-gssapi`` (pip install 'amtuner[kerberos]')."""
    user_name: str | None = None
    """``?user.name=`` for RMs with simple (pseudo) authentication."""
    web_ui_fallback: bool = True


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
    timeout_seconds: float = 15.0


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    policy: PolicyName = "paper"
    t1: float = 1.0
    t2: float = 0.5
    t3: float = 0.8
    step: float = 0.05
    a_min: float = 0.05
    a_max: float = 0.95
    period_seconds: float = 30.0
    unit_mb: int = 1024
    """The paper's Unit: one container's memory, for its estimate M_AMs = R x Unit x 2."""


@dataclass(frozen=True, slots=True)
class GuardSettings:
    """What an operator expects around any automatic change (issue: daemon guard rails)."""

    max_change_per_cycle: float = 0.2
    """Largest |new A - old A| applied in one cycle; larger decisions are clipped."""
    hold_off_seconds: float = 25.0
    """No new change until the RM has reloaded the last one and this long has passed."""
    pause_file: Path | None = None
    """While this file exists amtuner keeps monitoring but writes nothing (also SIGUSR1/SIGUSR2)."""


@dataclass(frozen=True, slots=True)
class MetricsSettings:
    enabled: bool = True
    address: str = "127.0.0.1"
    port: int = 9108
    """0 lets the OS pick a free port (tests)."""


@dataclass(frozen=True, slots=True)
class Config:
    rm: RMSettings = field(default_factory=RMSettings)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    refresh: RefreshSettings = field(default_factory=RefreshSettings)
    controller: ControllerSettings = field(default_factory=ControllerSettings)
    guard: GuardSettings = field(default_factory=GuardSettings)
    metrics: MetricsSettings = field(default_factory=MetricsSettings)
    dry_run: bool = False
    backup_dir: Path = Path("/var/lib/amtuner/backups")
    keep_backups: int = 10
    """Backups older than the newest K are deleted; 0 keeps none."""
    state_file: Path = Path("/var/lib/amtuner/state.json")
    audit_log: Path | None = None
    """One line per applied change; None = the log only."""
    source: Path | None = None
    """The file this was loaded from (for messages); not a key."""

    def with_dry_run(self, dry_run: bool) -> Config:
        """The CLI's ``--dry-run`` overrides the file without re-validating it."""
        return dataclasses.replace(self, dry_run=dry_run)


# ---------------------------------------------------------------------------------------------
# Validation machinery: a key path is a tuple of mapping keys and list indices.

KeyPath = tuple[str | int, ...]
_INVALID: Final = object()
"""Returned by a check that has recorded a problem, so checking can go on and report all."""


def _format_path(path: KeyPath) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _show(value: object) -> str:
    """The value as the operator wrote it in YAML, for "got …" in messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


class _Checker:
    """Collects problems while the sections are read."""

    def __init__(self, base_dir: Path, lines: Mapping[KeyPath, int]) -> None:
        self.base_dir = base_dir
        self.lines = lines
        self.problems: list[Problem] = []

    def fail(self, path: KeyPath, reason: str) -> object:
        # A missing key has no line of its own: point at the closest enclosing one.
        line = None
        for end in range(len(path), -1, -1):
            if path[:end] in self.lines:
                line = self.lines[path[:end]]
                break
        self.problems.append(Problem(_format_path(path), reason, line))
        return _INVALID

    def path(self, raw: str) -> Path:
        p = Path(os.path.expanduser(raw))
        return p if p.is_absolute() else self.base_dir / p


Check = Callable[[_Checker, KeyPath, object], object]


def _number(
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
) -> Check:
    bounds = []
    if low is not None:
        bounds.append(f"greater than {low:g}" if low_open else f"at least {low:g}")
    if high is not None:
        bounds.append(f"less than {high:g}" if high_open else f"at most {high:g}")
    wanted = "a number" + (" " + " and ".join(bounds) if bounds else "")

    def check(c: _Checker, path: KeyPath, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return c.fail(path, f"must be {wanted}, got {_show(value)}")
        number = float(value)
        if (
            not math.isfinite(number)
            or (low is not None and (number <= low if low_open else number < low))
            or (high is not None and (number >= high if high_open else number > high))
        ):
            return c.fail(path, f"must be {wanted}, got {_show(value)}")
        return number

    return check


def _integer(low: int, high: int | None = None) -> Check:
    wanted = f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"

    def check(c: _Checker, path: KeyPath, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            return c.fail(path, f"must be {wanted}, got {_show(value)}")
        if value < low or (high is not None and value > high):
            return c.fail(path, f"must be {wanted}, got {_show(value)}")
        return value

    return check


def _boolean(c: _Checker, path: KeyPath, value: object) -> object:
    if not isinstance(value, bool):
        return c.fail(path, f"must be true or false, got {_show(value)}")
    return value


def _choice(options: tuple[str, ...]) -> Check:
    listed = ", ".join(repr(o) for o in options)

    def check(c: _Checker, path: KeyPath, value: object) -> object:
        if not isinstance(value, str) or value not in options:
            return c.fail(path, f"must be one of {listed}, got {_show(value)}")
        return value

    return check


def _string(c: _Checker, path: KeyPath, value: object) -> object:
    if not isinstance(value, str) or not value.strip():
        return c.fail(path, f"must be a non-empty string, got {_show(value)}")
    return value


def _file_path(c: _Checker, path: KeyPath, value: object) -> object:
    if not isinstance(value, str) or not value.strip():
        return c.fail(path, f"must be a file path, got {_show(value)}")
    return c.path(value)


def _optional(check: Check) -> Check:
    def optional(c: _Checker, path: KeyPath, value: object) -> object:
        return None if value is None else check(c, path, value)

    return optional


def _as_str(check: Check) -> Check:
    """For keys that requests wants as ``str`` (certificate paths)."""

    def as_str(c: _Checker, path: KeyPath, value: object) -> object:
        result = check(c, path, value)
        return str(result) if isinstance(result, Path) else result

    return as_str


def _list_of(item: Check, *, what: str, non_empty: bool) -> Check:
    def check(c: _Checker, path: KeyPath, value: object) -> object:
        if not isinstance(value, list):
            return c.fail(path, f"must be a list of {what}, got {_show(value)}")
        if non_empty and not value:
            return c.fail(path, f"must be a non-empty list of {what}")
        items = [item(c, (*path, i), v) for i, v in enumerate(value)]
        if any(v is _INVALID for v in items):
            return _INVALID
        for i, v in enumerate(items):
            if v in items[:i]:
                return c.fail((*path, i), f"duplicate {_show(v)}")
        return tuple(items)

    return check


def _url(c: _Checker, path: KeyPath, value: object) -> object:
    if isinstance(value, str):
        try:
            parts = urlsplit(value.strip())
            port_ok = parts.port is None or parts.port > 0
        except ValueError:  # bad IPv6 literal or port
            parts, port_ok = None, False
        if (
            parts
            and port_ok
            and parts.scheme in ("http", "https")
            and parts.hostname
            and not (parts.query or parts.fragment)
        ):
            return value.strip().rstrip("/")
    return c.fail(
        path, f"must be an http:// or https:// URL like 'http://rm1:8088', got {_show(value)}"
    )


def _queue_path(c: _Checker, path: KeyPath, value: object) -> object:
    if isinstance(value, str):
        parts = value.split(".")
        if len(parts) >= 2 and parts[0] == "root" and all(p and p.strip() == p for p in parts):
            return value
    return c.fail(path, f"must be a queue path like 'root.default', got {_show(value)}")


def _verify(c: _Checker, path: KeyPath, value: object) -> object:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip():
        return str(c.path(value))
    return c.fail(path, f"must be true, false or the path of a CA bundle, got {_show(value)}")


def _section(cls: type, checks: Mapping[str, Check]) -> Check:
    def check(c: _Checker, path: KeyPath, value: object) -> object:
        values = _read_mapping(c, path, value, checks)
        return _INVALID if values is None else cls(**values)

    return check


MAX_SECONDS: Final = 86400.0
"""Upper bound of every duration key (timeouts, period, hold-off). A day is longer than any of
them needs; far larger numbers overflow the C time types underneath (a socket timeout, a
``timedelta`` in the scheduler), which failed at start-up or mid-cycle with a traceback."""
MAX_UNIT_MB: Final = 1 << 20
"""One container of 1 TB: larger is a typo (YARN's default maximum allocation is 8 GB)."""
MAX_BACKUPS: Final = 10_000

_SECTIONS: Final[dict[str, Check]] = {
    "rm": _section(
        RMSettings,
        {
            "urls": _list_of(_url, what="RM URLs", non_empty=True),
            "web_ui_urls": _list_of(_url, what="web UI URLs", non_empty=False),
            "connect_timeout_seconds": _number(0, MAX_SECONDS, low_open=True),
            "read_timeout_seconds": _number(0, MAX_SECONDS, low_open=True),
            "verify": _verify,
            "insecure_skip_verify": _boolean,
            "client_cert": _optional(_as_str(_file_path)),
            "client_key": _optional(_as_str(_file_path)),
            "kerberos": _boolean,
            "user_name": _optional(_string),
            "web_ui_fallback": _boolean,
        },
    ),
    "scheduler": _section(
        SchedulerSettings,
        {
            "kind": _choice(get_args(SchedulerKindSetting)),
            "config_file": _file_path,
            "targets": _list_of(_queue_path, what="queue paths", non_empty=False),
        },
    ),
    "refresh": _section(
        RefreshSettings,
        {
            "method": _choice(get_args(RefreshMethod)),
            "command": _list_of(_string, what="strings (argv, no shell)", non_empty=True),
            "timeout_seconds": _number(0, MAX_SECONDS, low_open=True),
        },
    ),
    "controller": _section(
        ControllerSettings,
        {
            "policy": _choice(get_args(PolicyName)),
            "t1": _number(0, 1, low_open=True),
            "t2": _number(0, 1, low_open=True),
            "t3": _number(0, 1, low_open=True),
            "step": _number(0, 1, low_open=True),
            "a_min": _number(0, 1, high_open=True),
            "a_max": _number(0, 1, low_open=True),
            "period_seconds": _number(0, MAX_SECONDS, low_open=True),
            "unit_mb": _integer(1, MAX_UNIT_MB),
        },
    ),
    "guard": _section(
        GuardSettings,
        {
            "max_change_per_cycle": _number(0, 1, low_open=True),
            "hold_off_seconds": _number(0, MAX_SECONDS),
            "pause_file": _optional(_file_path),
        },
    ),
    "metrics": _section(
        MetricsSettings,
        {
            "enabled": _boolean,
            "address": _string,
            "port": _integer(0, 65535),
        },
    ),
}

_TOP_LEVEL: Final[dict[str, Check]] = {
    **_SECTIONS,
    "dry_run": _boolean,
    "backup_dir": _file_path,
    "keep_backups": _integer(0, MAX_BACKUPS),
    "state_file": _file_path,
    "audit_log": _optional(_file_path),
}

_REQUIRED: Final[frozenset[KeyPath]] = frozenset()
"""Keys that must be present whatever else the file says (scheduler.config_file is required
unless refresh.method is rest: see `_build`)."""


def _read_mapping(
    c: _Checker, path: KeyPath, data: object, checks: Mapping[str, Check]
) -> dict[str, object] | None:
    """Check every key of one mapping; the valid values, or None when it is not a mapping."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        what = "the top level" if not path else "this section"
        c.fail(path, f"{what} must be a mapping of keys, got {_show(data)}")
        return None
    values: dict[str, object] = {}
    for key, raw in data.items():
        if not isinstance(key, str):
            c.fail((*path, str(key)), f"keys must be strings, got {_show(key)}")
            continue
        if key not in checks:
            close = difflib.get_close_matches(key, list(checks), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            c.fail((*path, key), f"unknown key{hint} (known: {', '.join(checks)})")
            continue
        value = checks[key](c, (*path, key), raw)
        if value is not _INVALID:
            values[key] = value
    for key, check in checks.items():
        if key in data:
            continue
        if (*path, key) in _REQUIRED:
            c.fail((*path, key), "required key is missing")
        elif not path and key in _SECTIONS:
            # An absent section still has to satisfy its required keys.
            value = check(c, (key,), None)
            if value is not _INVALID:
                values[key] = value
    return values


def refresh_mismatch(kind: str, method: str) -> str | None:
    """Why ``refresh.method`` cannot make a scheduler of this kind load a change, or None.

    The one home of the rule: config validation applies it where ``scheduler.kind`` names the
    scheduler; with ``auto``, `amtuner check` and the cycle apply it to the one the RM runs.
    A CapacityScheduler reloads its file only when told to (``AdminService.refreshQueues``, i.e.
    ``yarn rmadmin -refreshQueues``); only the FairScheduler's ``AllocationFileLoaderService``
    polls its file. The mutation API (``scheduler-conf``) exists only for the CapacityScheduler.
    """
    if kind == "capacity" and method == "none":
        return (
            "'none' changes nothing on a CapacityScheduler: it never reloads its file by itself "
            "(only on `yarn rmadmin -refreshQueues`); use 'command' or 'rest'"
        )
    if kind == "fair" and method == "rest":
        return (
            "'rest' (PUT /ws/v1/cluster/scheduler-conf) exists only for the CapacityScheduler; "
            "use 'none' (the FairScheduler reloads its file) or 'command'"
        )
    return None


def _cross_checks(c: _Checker, cfg: Config) -> None:
    """Rules between keys; run only when every key passed its own check."""
    ctl = cfg.controller
    if ctl.a_min >= ctl.a_max:
        c.fail(
            ("controller", "a_min"), f"must be less than a_max ({ctl.a_max:g}), got {ctl.a_min:g}"
        )
    elif ctl.step > ctl.a_max - ctl.a_min:
        c.fail(
            ("controller", "step"),
            f"must be at most a_max - a_min ({ctl.a_max - ctl.a_min:g}), got {ctl.step:g}",
        )
    if ctl.t3 >= ctl.t1:
        c.fail(
            ("controller", "t3"),
            f"must be less than t1 ({ctl.t1:g}) or over-allocation case 2 can never fire, "
            f"got {ctl.t3:g}",
        )
    if cfg.scheduler.kind != "auto":
        unusable = refresh_mismatch(cfg.scheduler.kind, cfg.refresh.method)
        if unusable is not None:
            c.fail(("refresh", "method"), unusable)
    if cfg.refresh.method == "rest":
        for i, url in enumerate(cfg.rm.urls):
            if RMEndpoint.of(url).rest != url + REST_SUFFIX:
                c.fail(
                    ("rm", "urls", i),
                    "names a REST base, but refresh.method 'rest' appends "
                    f"{REST_SUFFIX}/cluster/scheduler-conf to the RM's own URL: give the RM",
                )
    if cfg.rm.client_key is not None and cfg.rm.client_cert is None:
        c.fail(("rm", "client_key"), "needs rm.client_cert as well")
    if cfg.rm.insecure_skip_verify and isinstance(cfg.rm.verify, str):
        c.fail(("rm", "insecure_skip_verify"), "contradicts rm.verify, which names a CA bundle")


def _build(
    data: object, base_dir: Path, lines: Mapping[KeyPath, int], problems: list[Problem]
) -> Config | None:
    c = _Checker(base_dir, lines)
    c.problems.extend(problems)
    values = _read_mapping(c, (), data, _TOP_LEVEL)
    if values is not None:
        scheduler, refresh = values.get("scheduler"), values.get("refresh")
        if (
            isinstance(scheduler, SchedulerSettings)
            and scheduler.config_file is None
            and not (isinstance(refresh, RefreshSettings) and refresh.method == "rest")
            and not any(p.path == "scheduler.config_file" for p in c.problems)
        ):
            c.fail(("scheduler", "config_file"), "required key is missing")
    config = Config(**values) if values is not None and not c.problems else None  # type: ignore[arg-type]
    if config is not None:
        _cross_checks(c, config)
    problems[:] = c.problems
    return None if c.problems else config


def _error(source: str, problems: list[Problem]) -> ConfigError:
    lines = []
    for p in problems:
        where = f"{source}:{p.line}" if p.line is not None else source
        lines.append(f"{where}: {p.path}: {p.reason}" if p.path else f"{where}: {p.reason}")
    return ConfigError("\n".join(lines), tuple(problems))


def parse_config(data: object, source: str = "<config>", *, base_dir: Path | None = None) -> Config:
    """Validate already-parsed YAML (a mapping, or None for an empty document).

    Relative paths are resolved against ``base_dir`` (default: the working directory).
    """
    problems: list[Problem] = []
    config = _build(data, (base_dir or Path.cwd()).absolute(), {}, problems)
    if config is None:
        raise _error(source, problems)
    return config


def _line_map(node: yaml.Node | None, problems: list[Problem]) -> dict[KeyPath, int]:
    """Line of every key and list item; records duplicate keys, which PyYAML silently merges."""
    lines: dict[KeyPath, int] = {}

    def walk(n: yaml.Node, path: KeyPath) -> None:
        if isinstance(n, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in n.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue
                key, line = key_node.value, key_node.start_mark.line + 1
                lines[(*path, key)] = line
                if key in seen:
                    problems.append(Problem(_format_path((*path, key)), "duplicate key", line))
                seen.add(key)
                walk(value_node, (*path, key))
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                lines[(*path, i)] = item.start_mark.line + 1
                walk(item, (*path, i))

    if node is not None:
        walk(node, ())
    return lines


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and validate a YAML config file; raises ConfigError naming the key and the reason."""
    file = Path(path).expanduser()
    source = str(file)
    try:
        text = file.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the config file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        raise ConfigError(f"{where}: YAML syntax error: {exc.problem or exc.context}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: YAML error: {exc}") from exc
    finally:
        loader.dispose()
    problems: list[Problem] = []
    lines = _line_map(node, problems)
    config = _build(data, file.absolute().parent, lines, problems)
    if config is None:
        raise _error(source, problems)
    return dataclasses.replace(config, source=file.absolute())
