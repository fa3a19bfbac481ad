"""Reading trace files: the error every reader raises, text, concatenated JSON, typed fields.

Every message names the file and line, so a bad trace is fixed where it is broken.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class WorkloadError(ValueError):
    """A workload spec or file that cannot be turned into jobs; the message names file:line."""


def read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WorkloadError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise WorkloadError(f"{path}: cannot read: {e}") from None


def number(obj: dict[str, Any], key: str, default: float | None, where: str) -> float:
    value = obj.get(key, default)
    if value is None:
        raise WorkloadError(f"{where}: missing {key}")
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise WorkloadError(f"{where}: {key} is not a number: {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WorkloadError(f"{where}: {key} is not a number: {value!r}")
    return float(value)


def integer(obj: dict[str, Any], key: str, default: int | None, where: str, *, minimum: int) -> int:
    value = number(obj, key, default, where)
    if value != int(value) or value < minimum:
        raise WorkloadError(f"{where}: {key} must be an integer >= {minimum}, got {value:g}")
    return int(value)


def json_objects(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line where it starts, value) of each top-level JSON value in a concatenated stream."""
    text = read_text(path)
    decoder = json.JSONDecoder()
    pos, line, end = 0, 1, len(text)
    while True:
        start = pos
        while pos < end and text[pos] in " \t\r\n":
            pos += 1
        line += text.count("\n", start, pos)
        if pos >= end:
            return
        try:
            value, nxt = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise WorkloadError(f"{path}:{e.lineno}:{e.colno}: malformed JSON: {e.msg}") from None
        yield line, value
        line += text.count("\n", pos, nxt)
        pos = nxt
