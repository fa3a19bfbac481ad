"""Reading one figure of the RM's JSON answers, or refusing the answer with a reason: the
checks every document the monitor reads goes through (`amtuner.monitor.rest`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from amtuner.safetext import shown

REASONS: tuple[str, ...] = (
    "rm-unreachable",
    "timeout",
    "standby",
    "http-error",
    "bad-response",
    "zero-total",
    "auth",
    "unknown-queue",
)
"""Every `ObservationError.reason` label (also used as a metric label, so the set is closed)."""


class ObservationError(Exception):
    """The RM could not be observed; no observation, hence no decision, this cycle."""

    def __init__(self, reason: str, message: str) -> None:
        if reason not in REASONS:
            raise ValueError(f"unknown ObservationError reason {reason!r}")
        # It quotes the RM (bodies, queue names) and names URLs: safe to show from here on.
        message = shown(message)
        super().__init__(message)
        self.reason = reason
        self.message = message


def _bad(message: str) -> ObservationError:
    return ObservationError("bad-response", message)


def _obj(parent: Any, key: str, where: str) -> Mapping[str, Any]:
    if not isinstance(parent, Mapping):
        raise _bad(f"{where}: expected a JSON object, got {type(parent).__name__}")
    value = parent.get(key)
    if not isinstance(value, Mapping):
        raise _bad(f"{where}: missing object {key!r}")
    return value


MAX_FIGURE = 2**53
"""Larger than any count or MB figure an RM reports (a JSON number up to it is exact as a double,
as the RM's own Jackson/JAXB writes it): anything above is garbage, and would overflow the
float figures (ratios, metrics) made from it."""


def _number(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(f"{where}: expected a number, got {value!r}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise _bad(f"{where}: expected a whole number, got {value!r}")
    if value < 0:
        raise _bad(f"{where}: negative value {value!r}")
    if value > MAX_FIGURE:
        raise _bad(f"{where}: {_short(value)} is more than any RM reports")
    return int(value)


def _short(value: int | float) -> str:
    """A number for a message: a 4,000-digit one is not printed whole."""
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"


def _count(obj: Mapping[str, Any], key: str, where: str) -> int:
    if key not in obj:
        raise _bad(f"{where}: missing field {key!r}")
    value = obj[key]
    if type(value) is int and 0 <= value <= MAX_FIGURE:  # the common case, no name built
        return value
    return _number(value, f"{where}.{key}")


def _opt_count(obj: Mapping[str, Any], key: str, where: str) -> int | None:
    return None if obj.get(key) is None else _count(obj, key, where)


def _resource(obj: Mapping[str, Any], key: str, where: str) -> tuple[int, int] | None:
    """A ``{"memory": MB, "vCores": n}`` field as (memory, vcores); None when absent."""
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _bad(f"{where}.{key}: expected a resource object, got {value!r}")
    memory = _count(value, "memory", f"{where}.{key}")
    vcores = _opt_count(value, "vCores", f"{where}.{key}") or 0
    return memory, vcores


def percentage(value: Any, where: str) -> float:
    """A CS queue's percentage of the cluster as the RM reports it, in its REST document or on
    its web page, or the answer refused in the same words whichever it came in. Not NaN nor
    infinite: Python's JSON reader takes both, and the MB made from them would not be a
    number."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < 0
    ):
        raise _bad(f"{where}: expected a percentage, got {value!r}")
    return float(value)


def _percent(queue: Mapping[str, Any], key: str, where: str) -> float | None:
    """A percentage of the cluster (a CS queue's ``absoluteCapacity``, ``absoluteMaxCapacity``),
    or None where the RM does not report it."""
    value = queue.get(key)
    return None if value is None else percentage(value, f"{where}.{key}")


def share_of(total: int, percent: float) -> int:
    """``percent`` of the cluster's ``total`` (MB or vcores), to the nearest whole unit: what a
    queue's share is where the RM gives only its percentage."""
    return round(total * percent / 100)
