"""The event loop and virtual clock of the simulated cluster.

A heap of events ordered by ``(time, seq)``: the sequence number breaks ties in scheduling order,
so two runs with the same inputs and seed process events in the same order. An event is an
object whose `Event.fire` says what runs; no generator processes, because the controller must be
stepped synchronously inside simulated time and a call is the cheapest way to do that.

The heap is this module's own, not `heapq`'s: compiled, it compares two events on their unboxed
time and sequence number, where `heapq` compares tuples through the generic comparison of each
element (most of a pop's cost). The hot events (a node's next finish, a scheduling pass, a task's
start and the AM hearing of its end) are subclasses that call their handler directly; `at` wraps
any callable for everything else.

Four additions to a textbook loop, none of which changes the order events run in. `settle`: work
that only the end state of an instant needs (a node's next finish time, after its tasks have come
and gone) is done once when every event of that instant has run, instead of after each of them,
so the queue holds no entries that a later event of the same instant would supersede. An event
queued again before it fired *moves* (each knows its place in the heap), where a textbook loop
would leave a stale entry to be popped and ignored: a node's next finish moves whenever a task
starts on it. `soon`: an event due now (the scheduling pass asked for by a task's end) waits in
a slot beside the heap, compared with the heap's first by the same ``(time, seq)`` it would have
had inside. The *line*: events asked for one fixed delay ahead (``line_s``, an AM's heartbeat)
come due in the order they were asked for, so they wait in a first-in, first-out list beside the
heap instead of going through it. A slot and a line are compared with the heap's first by
``(time, seq)`` too, so every event runs where it would have run from the heap.
"""

from __future__ import annotations

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


class Event:
    """An entry of the queue; the engine sets `time` and `seq` when it is queued. One object
    may be queued again once it has fired (a scheduling pass reuses its own), or before (it
    moves: a node's next finish)."""

    __slots__ = ("pos", "seq", "time")

    def __init__(self) -> None:
        self.time = 0.0
        self.seq = 0
        self.pos = -1
        """Its index in the heap; -1 while it is not there (not queued, in the slot or the line)."""

    def fire(self) -> None:
        raise NotImplementedError


class _Call(Event):
    __slots__ = ("arg", "fn")

    def __init__(self, fn: Callback, arg: Any) -> None:
        super().__init__()
        self.fn = fn
        self.arg = arg

    def fire(self) -> None:
        self.fn(self.arg)


class _Each(Event):
    """``fn(args[i])`` at ``times[i]`` for every i, queued one at a time (see `Engine.at_each`)."""

    __slots__ = ("args", "engine", "first", "fn", "i", "times")

    def __init__(
        self, engine: Engine, times: Sequence[float], fn: Callback, args: Sequence[Any], first: int
    ) -> None:
        super().__init__()
        self.engine = engine
        self.times = times
        self.fn = fn
        self.args = args
        self.first = first
        self.i = 0

    def fire(self) -> None:
        i = self.i
        if i + 1 < len(self.times):
            self.i = i + 1
            engine = self.engine
            self.time = max(self.times[i + 1], engine.now)
            self.seq = self.first + i + 1
            engine.push(self)
        self.fn(self.args[i])


class Engine:
    __slots__ = (
        "_heap", "_line", "_line_head", "_seq", "_settle", "_soon", "events", "halted", "line_s",
        "now",
    )  # fmt: skip

    def __init__(self, line_s: float = 0.0) -> None:
        self.now = 0.0
        self.events = 0
        """Events run so far (`settle` work is part of the events that asked for it)."""
        self.halted = False
        """Set by a callback to make `run_until` return after that event (all jobs done)."""
        self.line_s = line_s
        """The delay `after` queues in the line rather than the heap (0: no line)."""
        self._heap: list[Event] = []
        self._soon: Event | None = None
        self._line: list[Event] = []
        self._line_head = 0
        self._seq = 0
        self._settle: list[Event] = []

    def at(self, time: float, fn: Callback, arg: Any = None) -> Event:
        """Run ``fn(arg)`` at simulated ``time`` (never in the past); the event, which
        `schedule` can move."""
        event = _Call(fn, arg)
        self.schedule(event, time)
        return event

    def after(self, delay: float, fn: Callback, arg: Any = None) -> None:
        self.queue(_Call(fn, arg), delay)

    def queue(self, event: Event, delay: float) -> None:
        """Fire ``event`` ``delay`` seconds from now: in the line if that is its delay."""
        if delay == self.line_s and delay > 0:
            self._seq += 1
            event.time = self.now + delay
            event.seq = self._seq
            self._line.append(event)
            return
        self.schedule(event, self.now + delay)

    def schedule(self, event: Event, time: float) -> None:
        """Fire ``event`` at simulated ``time`` (never in the past). If it is queued already it
        moves there, as if it had been taken out and queued anew."""
        self._seq += 1
        event.time = max(time, self.now)
        event.seq = self._seq
        if event.pos < 0:
            self.push(event)
            return
        i = event.pos
        if i > 0 and _before(event, self._heap[(i - 1) >> 1]):
            self._sift_up(event, i)
        else:
            self._sift_down(event, i)

    def soon(self, event: Event) -> None:
        """Fire ``event`` now, after the events already due now: as ``schedule(event, now)``."""
        if self._soon is not None:
            self.schedule(event, self.now)
            return
        self._seq += 1
        event.time = self.now
        event.seq = self._seq
        self._soon = event

    def at_each(self, times: Sequence[float], fn: Callback, args: Sequence[Any]) -> Event | None:
        """Run ``fn(args[i])`` at ``times[i]`` (in ascending order) for every i. Only the next of
        them is ever queued, under the sequence number it would have had queued now, so the
        order of events is the same as from `at` for each, and a day of 25,000 submissions
        does not make every other event's trip through the heap longer. The one event that
        stands for them all (None for no times), which `schedule` can move."""
        if not times:
            return None
        each = _Each(self, times, fn, args, self._seq + 1)
        self._seq += len(times)
        each.time = max(times[0], self.now)
        each.seq = each.first
        self.push(each)
        return each

    def settle(self, hook: Event) -> None:
        """Fire ``hook`` once the events due now have all run, before the clock moves on; it may
        schedule events, at this instant too. Hooks fire in the order they were asked for and
        are not events: they neither count in `events` nor take a sequence number."""
        self._settle.append(hook)

    def peek(self) -> float | None:
        """Time of the next event, or None when nothing is scheduled."""
        nxt = self._next()
        return nxt.time if nxt is not None else None

    def _next(self) -> Event | None:
        """The first of the heap's first, the slot and the line's first, by ``(time, seq)``."""
        best = self._soon
        heap = self._heap
        if heap:
            first = heap[0]
            if best is None or _before(first, best):
                best = first
        line = self._line
        if self._line_head < len(line):
            first = line[self._line_head]
            if best is None or _before(first, best):
                best = first
        return best

    def _take(self, event: Event) -> None:
        """Out of wherever `_next` found it."""
        if event is self._soon:
            self._soon = None
        elif event.pos == 0:
            self._pop()
        else:
            head = self._line_head + 1
            line = self._line
            if head == len(line):
                line.clear()
                head = 0
            elif head >= 1024 and 2 * head >= len(line):
                del line[:head]
                head = 0
            self._line_head = head

    def push(self, event: Event) -> None:
        """Into the heap as queued (`time` and `seq` set)."""
        heap = self._heap
        heap.append(event)
        self._sift_up(event, len(heap) - 1)

    def _sift_up(self, event: Event, i: int) -> None:
        """``event`` into the hole at ``i``, or above it."""
        heap = self._heap
        time, seq = event.time, event.seq
        while i > 0:
            up = (i - 1) >> 1
            parent = heap[up]
            if time < parent.time or (time == parent.time and seq < parent.seq):
                heap[i] = parent
                parent.pos = i
                i = up
            else:
                break
        heap[i] = event
        event.pos = i

    def _sift_down(self, event: Event, i: int) -> None:
        """``event`` into the hole at ``i``, or below it."""
        heap = self._heap
        n = len(heap)
        time, seq = event.time, event.seq
        child = 2 * i + 1
        while child < n:
            low = heap[child]
            right = child + 1
            if right < n:
                other = heap[right]
                if other.time < low.time or (other.time == low.time and other.seq < low.seq):
                    child = right
                    low = other
            if low.time < time or (low.time == time and low.seq < seq):
                heap[i] = low
                low.pos = i
                i = child
                child = 2 * i + 1
            else:
                break
        heap[i] = event
        event.pos = i

    def _pop(self) -> None:
        """Drop the heap's first: its last entry sifted down from the top."""
        heap = self._heap
        heap[0].pos = -1
        last = heap.pop()
        if heap:
            self._sift_down(last, 0)

    def run_until(self, until: float, *, stop_when_halted: bool = True) -> None:
        """Run every event due at or before ``until``. The clock ends at ``until``, unless
        ``stop_when_halted`` and a callback set `halted`: then it stays at that event's time."""
        settle = self._settle
        while True:
            nxt = self._next()
            if settle and (nxt is None or nxt.time > self.now):
                while settle:  # in the order asked for; a hook may ask for another
                    settle.pop(0).fire()
                continue
            if nxt is None or nxt.time > until:
                break
            if stop_when_halted and self.halted:
                return
            self._take(nxt)
            self.now = nxt.time
            self.events += 1
            nxt.fire()
        if stop_when_halted and self.halted:
            return
        if until != math.inf:
            self.now = max(self.now, until)


def _before(a: Event, b: Event) -> bool:
    return a.time < b.time or (a.time == b.time and a.seq < b.seq)
