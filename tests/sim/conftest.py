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


def fair_reloads(writes: list[float], phase: float) -> list[float]:
    """When a FairScheduler loads the allocation file written at ``writes``, its 10 s polls
    falling at ``phase`` + 10 k: at the first poll more than 5 s after each write (yarn-facts
    §2.3), unless a newer write has replaced the file by then (a cycle and a poll at the same
    instant: the cycle writes first), to the millisecond as `SimResult.a_trace` has them."""
    polls = [phase + 10 * ((w + 5 - phase) // 10 + 1) for w in writes]
    later = [*writes[1:], float("inf")]
    return sorted({round(p, 3) for p, nxt in zip(polls, later, strict=True) if nxt > p})
