"""The event loop and virtual clock of the simulated cluster.

A heap of ``(time, seq, callback, arg)``: the sequence number breaks ties in scheduling order, so
two runs with the same inputs and seed process events in the same order. Callbacks are plain
bound methods; no generator processes, because the controller must be stepped synchronously
inside simulated time and a callback is the cheapest way to do that (python-notes §7).
"""

from __future__ import annotations

import heapq
import math
import random
import zlib
from collections.abc import Callable
from typing import Any

Callback = Callable[[Any], None]


def make_rng(seed: int, stream: str) -> random.Random:
    """One independent random stream per purpose, so adding draws to one stream never shifts
    the numbers another stream produces (and so never changes unrelated results)."""
    return random.Random(seed * 1_000_003 + zlib.crc32(stream.encode()))


class Engine:
    __slots__ = ("_queue", "_seq", "events", "halted", "now")

    def __init__(self) -> None:
        self.now = 0.0
        self.events = 0
        """Callbacks run so far."""
        self.halted = False
        """Set by a callback to make `run_until` return after that event (all jobs done)."""
        self._queue: list[tuple[float, int, Callback, Any]] = []
        self._seq = 0

    def at(self, time: float, fn: Callback, arg: Any = None) -> None:
        """Run ``fn(arg)`` at simulated ``time`` (never in the past)."""
        self._seq += 1
        heapq.heappush(self._queue, (max(time, self.now), self._seq, fn, arg))

    def after(self, delay: float, fn: Callback, arg: Any = None) -> None:
        self.at(self.now + delay, fn, arg)

    def peek(self) -> float | None:
        """Time of the next event, or None when nothing is scheduled."""
        return self._queue[0][0] if self._queue else None

    def run_until(self, until: float, *, stop_when_halted: bool = True) -> None:
        """Run every event due at or before ``until``. The clock ends at ``until``, unless
        ``stop_when_halted`` and a callback set `halted`: then it stays at that event's time."""
        queue = self._queue
        pop = heapq.heappop
        while queue and queue[0][0] <= until:
            if stop_when_halted and self.halted:
                return
            time, _, fn, arg = pop(queue)
            self.now = time
            self.events += 1
            fn(arg)
        if stop_when_halted and self.halted:
            return
        if until != math.inf:
            self.now = max(self.now, until)
