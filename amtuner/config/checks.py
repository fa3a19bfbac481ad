"""The checks the config loader applies to each key: small functions of (checker, key path,
raw value) returning the value or recording a problem, so one pass reports every problem with its
key path and line."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from amtuner.config.settings import Problem
from amtuner.model import A_DECIMALS, GLOBAL_TARGET, PARTITION_MARK, round_a
from amtuner.safetext import shown

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
    if isinstance(value, str) and _looks_numeric(value):
        return f"the string {value!r} (a number in quotes is text in YAML: remove the quotes)"
    return shown(repr(value))


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


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


def _share(*, low_open: bool = False, high_open: bool = False) -> Check:
    """A bound on A: a number in [0, 1] that A can hold. A is written with `A_DECIMALS`
    decimals, so a bound with more is one the scheduler file never shows and the controller's
    clamp never lands on."""
    number = _number(0, 1, low_open=low_open, high_open=high_open)

    def check(c: _Checker, path: KeyPath, value: object) -> object:
        share = number(c, path, value)
        if isinstance(share, float) and round_a(share) != share:
            return c.fail(
                path, f"must have at most {A_DECIMALS} decimals, as A is written, got {share!r}"
            )
        return share

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
    """A leaf's path, or '' for the scheduler-wide value: tuned beside leaves, it covers the
    queues that set none (a FairScheduler's queues made for users among them). A
    CapacityScheduler leaf's AM share in one node-label partition is ``leaf@label``."""
    if value == GLOBAL_TARGET:
        return value
    if isinstance(value, str):
        queue, mark, label = value.partition(PARTITION_MARK)
        parts = queue.split(".")
        if (
            len(parts) >= 2
            and parts[0] == "root"
            and all(p and p.strip() == p for p in parts)
            and (not mark or _LABEL.fullmatch(label))
        ):
            return value
    return c.fail(
        path,
        f"must be a queue path like 'root.default', a leaf in a node-label partition like "
        f"'root.default@core', or '' for the global value, got {_show(value)}",
    )


_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
"""A node label as ``CommonNodeLabelsManager.checkAndThrowLabelName`` accepts it."""


def _verify(c: _Checker, path: KeyPath, value: object) -> object:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip():
        return str(c.path(value))
    return c.fail(path, f"must be true, false or the path of a CA bundle, got {_show(value)}")
