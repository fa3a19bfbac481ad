"""The event loop and virtual clock of the simulated cluster.

A heap of ``(time, seq, callback, arg)``: the sequence number breaks ties in scheduling order, so
two runs with the same inputs and seed process events in the same order. Callbacks are plain
bound methods; no generator processes, because the controller must be stepped synchronously
inside simulated time and a callback is the cheapest way to do that.

`settle` is the one addition to a textbook loop: work that only the end state of an instant
needs (a node's next finish time, after its tasks have come and gone) is done once when every
event of that instant has run, instead of after each of them. The queue then holds no entries
that a later event of the same instant would supersede.
"""

from __future__ import annotations

import heapq
import math
import random
import zlib
from collections.abc import Callable, Sequence
from typing import Any

Callback = Callable[[Any], None]


def make_rng(seed: int, stream: str) -> random.Random:
    """One independent random stream per purpose, so adding draws to one stream never shifts
    the numbers another stream produces (and so never changes unrelated results)."""
    return random.Random(seed * 1_000_003 + zlib.crc32(stream.encode()))


class Engine:
    __slots__ = ("_queue", "_seq", "_settle", "events", "halted", "now")

    def __init__(self) -> None:
        self.now = 0.0
        self.events = 0
        """Callbacks run so far (`settle` work is part of the events that asked for it)."""
        self.halted = False
        """Set by a callback to make `run_until` return after that event (all jobs done)."""
        self._queue: list[tuple[float, int, Callback, Any]] = []
        self._seq = 0
        self._settle: list[Callable[[], None]] = []

    def at(self, time: float, fn: Callback, arg: Any = None) -> None:
        """Run ``fn(arg)`` at simulated ``time`` (never in the past)."""
        self._seq += 1
        heapq.heappush(self._queue, (max(time, self.now), self._seq, fn, arg))

    def after(self, delay: float, fn: Callback, arg: Any = None) -> None:
        self.at(self.now + delay, fn, arg)

    def at_each(self, times: Sequence[float], fn: Callback, args: Sequence[Any]) -> None:
        """Run ``fn(args[i])`` at ``times[i]`` (in ascending order) for every i. Only the next of
        them is ever queued, under the sequence number it would have had queued now, so the
        order of events is the same as from `at` for each, and a day of 25,000 submissions
        does not make every other event's trip through the heap longer."""
        if not times:
            return
        first = self._seq + 1
        self._seq += len(times)
        last = len(times) - 1

        def step(i: int) -> None:
            if i < last:
                entry = (max(times[i + 1], self.now), first + i + 1, step, i + 1)
                heapq.heappush(self._queue, entry)
            fn(args[i])

        heapq.heappush(self._queue, (max(times[0], self.now), first, step, 0))

    def settle(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` once the events due now have all run, before the clock moves on; it may
        schedule events, at this instant too. Hooks run in the order they were asked for."""
        self._settle.append(fn)

    def peek(self) -> float | None:
        """Time of the next event, or None when nothing is scheduled."""
        return self._queue[0][0] if self._queue else None

    def run_until(self, until: float, *, stop_when_halted: bool = True) -> None:
        """Run every event due at or before ``until``. The clock ends at ``until``, unless
        ``stop_when_halted`` and a callback set `halted`: then it stays at that event's time."""
        queue = self._queue
        settle = self._settle
        pop = heapq.heappop
        while True:
            if settle and (not queue or queue[0][0] > self.now):
                while settle:  # in the order asked for; a hook may ask for another
                    settle.pop(0)()
                continue
            if not queue or queue[0][0] > until:
                break
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
