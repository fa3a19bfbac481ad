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
  ``0 <= a_min < a_max <= 1``, each with at most 4 decimals (as A is written);
  ``0 < step <= a_max - a_min``; ``t1``, ``t2``, ``t3`` in
  (0, 1] with ``t3 < t1`` (otherwise the paper's over-allocation case 2, which needs
  ``T3 < M_used/M_total < T1``, can never fire).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final, get_args

if TYPE_CHECKING:
    import yaml

from amtuner.config.checks import (
    _INVALID,
    Check,
    KeyPath,
    _as_str,
    _boolean,
    _Checker,
    _choice,
    _file_path,
    _format_path,
    _integer,
    _list_of,
    _number,
    _optional,
    _queue_path,
    _share,
    _show,
    _string,
    _url,
    _verify,
)
from amtuner.config.settings import (
    REST_SUFFIX,
    Config,
    ConfigError,
    ControllerSettings,
    GuardSettings,
    HistorySettings,
    MetricsSettings,
    Mode,
    PolicyName,
    Problem,
    RecordSettings,
    RefreshMethod,
    RefreshSettings,
    RMEndpoint,
    RMSettings,
    SchedulerKindSetting,
    SchedulerSettings,
    TimelineSettings,
)


def _section(cls: type, checks: Mapping[str, Check]) -> Check:
    def check(c: _Checker, path: KeyPath, value: object) -> object:
        values = _read_mapping(c, path, value, checks)
        return _INVALID if values is None else cls(**values)

    return check


DEFAULT_PATH: Final = Path("/etc/amtuner/amtuner.yaml")
"""Where the deploy guide installs the config and the unit's ExecStart reads it: the commands'
``--config`` when none is given, so an operator on the host types less."""

MAX_SECONDS: Final = 86400.0
"""Upper bound of every duration key (timeouts, period, hold-off). A day is longer than any of
them needs; far larger numbers overflow the C time types underneath (a socket timeout, a
``timedelta`` in the scheduler), which failed at start-up or mid-cycle with a traceback."""
MAX_UNIT_MB: Final = 1 << 20
"""One container of 1 TB: larger is a typo (YARN's default maximum allocation is 8 GB)."""
MAX_BACKUPS: Final = 10_000
MAX_RECORD_LIMIT: Final = 1_000_000
"""Apps asked for in one answer of the RM's apps API (``record.limit``): a thousand times the
RM's default ``max-completed-applications`` is a typo, and so large an answer would be over the
monitor's cap on a body anyway."""

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
            "principal": _optional(_string),
            "keytab": _optional(_file_path),
            "ticket_cache": _optional(_file_path),
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
            "a_min": _share(high_open=True),
            "a_max": _share(low_open=True),
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
    "history": _section(
        HistorySettings, {"urls": _list_of(_url, what="JobHistory server URLs", non_empty=False)}
    ),
    "timeline": _section(
        TimelineSettings, {"urls": _list_of(_url, what="timeline server URLs", non_empty=False)}
    ),
    "record": _section(
        RecordSettings,
        {
            "trace": _optional(_file_path),
            "interval_seconds": _number(0, MAX_SECONDS, low_open=True),
            "history_wait_seconds": _number(0, MAX_SECONDS),
            "limit": _integer(1, MAX_RECORD_LIMIT),
            "max_bytes": _integer(1),
        },
    ),
}

_TOP_LEVEL: Final[dict[str, Check]] = {
    **_SECTIONS,
    "dry_run": _boolean,
    "mode": _choice(get_args(Mode)),
    "proposal_ttl_seconds": _optional(_number(0, MAX_SECONDS, low_open=True)),
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


def check_url(value: str) -> str:
    """A URL given on the command line, held to the rule of the config's URLs (``rm.urls``);
    ValueError with the reason."""
    c = _Checker(Path.cwd(), {})
    url = _url(c, (), value)
    if c.problems:
        raise ValueError(c.problems[0].reason)
    return str(url)


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
    for key in ("principal", "keytab", "ticket_cache"):
        if getattr(cfg.rm, key) is not None and not cfg.rm.kerberos:
            c.fail(("rm", key), "is used only with rm.kerberos: true")


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


MAX_VALUES: Final = 100_000
"""More keys and list items than any real config has. YAML aliases let a few lines stand for
billions of values (a "billion laughs" document); counting them as they expand refuses such a
file at once instead of walking it for hours."""


def _line_map(node: yaml.Node | None, problems: list[Problem], source: str) -> dict[KeyPath, int]:
    """Line of every key and list item; records duplicate keys, which PyYAML silently merges."""
    import yaml

    lines: dict[KeyPath, int] = {}
    budget = [MAX_VALUES]

    def walk(n: yaml.Node, path: KeyPath) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise ConfigError(
                f"{source}: more than {MAX_VALUES:,} keys and items once YAML aliases are "
                "expanded; refused"
            )
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


def _parse_yaml(text: str, source: str) -> tuple[yaml.Node | None, object]:
    """The document's node tree (for line numbers) and its value; ConfigError on bad YAML."""
    import yaml  # only when a config is read: most commands' start-up does not need it

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
    return node, data


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
    node, data = _parse_yaml(text, source)
    problems: list[Problem] = []
    lines = _line_map(node, problems, source)
    config = _build(data, file.absolute().parent, lines, problems)
    if config is None:
        raise _error(source, problems)
    return dataclasses.replace(config, source=file.absolute())
