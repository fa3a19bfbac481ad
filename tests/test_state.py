"""The state file: values the controller would act on wrongly are refused, not used."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from amtuner.model import ControllerState
from amtuner.state import StateError, load_states, save_states


def _write(path: Path, **fields: Any) -> Path:
    state: dict[str, Any] = {"a": 0.3, "n": 2, "prev_pending": 4, "prev_running": 3, "extra": {}}
    state.update(fields)
    # json writes NaN / Infinity literals, as a hand-edited or foreign file may hold them.
    path.write_text(json.dumps({"version": 1, "targets": {"root.default": state}}))
    return path


def test_valid_state_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    states = {"root.default": ControllerState(a=1.0, n=0, extra={"last_move": -1.0})}
    save_states(path, states)
    assert load_states(path) == states


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"a": float("nan")}, "a is nan, not a finite number"),
        ({"a": float("inf")}, "a is inf, not a finite number"),
        ({"a": -0.1}, r"a is -0.1, not in \[0, 1\]"),
        ({"a": 1.5}, r"a is 1.5, not in \[0, 1\]"),
        ({"a": "0.3"}, "a is '0.3', not a number"),
        ({"n": -1}, "n is -1, not a whole number >= 0"),
        ({"n": float("inf")}, "n is inf, not a finite number"),
        ({"n": 1.5}, "n is 1.5, not a whole number"),
        ({"prev_pending": -3}, "prev_pending is -3, not a whole number >= 0"),
        ({"prev_running": float("nan")}, "prev_running is nan, not a finite number"),
        ({"extra": {"am_seen": float("-inf")}}, "extra.am_seen is -inf, not a finite number"),
    ],
)
def test_bad_values_are_refused(tmp_path: Path, fields: dict[str, Any], reason: str) -> None:
    path = _write(tmp_path / "state.json", **fields)
    with pytest.raises(StateError, match=rf"state file .*target 'root.default': {reason}"):
        load_states(path)
