"""What the simulator's tests share."""

from __future__ import annotations

from typing import Any

from amtuner.sim.simulation import Simulation, build_simulation
from amtuner.sim.spec import IMMEDIATE


def build_at_once(*args: Any, **kwargs: Any) -> Simulation:
    """`build_simulation` with every container placed the instant it fits: for tests of a
    scheduler's placement rules at the instant room appears, not of the heartbeats that pace
    them (those are tests/sim/test_heartbeats.py's)."""
    return build_simulation(*args, heartbeats=IMMEDIATE, **kwargs)
