"""What a MapReduce AM decides about its reduces at each heartbeat, as Hadoop 3.x's
``RMContainerAllocator`` decides it: values in, a move out.

A MapReduce AM asks for its maps at once and keeps its reduces back. Once ``slowstart`` of the
maps are done it ramps reduces up, asking for them at a higher priority than maps (reduces 10,
maps 20: the RM serves an app's reduce asks first), but only as many as a share of its *resource
limit* (the headroom the RM last reported plus what it holds) allows: the share grows with the
fraction of maps done, up to ``yarn.app.mapreduce.am.job.reduce.rampup.limit`` (0.5), and takes
whatever its maps leave unused. When every map is placed it asks for every reduce left. It ramps
down (withdraws asks) when the limit shrinks. And when it holds no running map, has maps waiting
and the headroom (less its reduce asks) has no room for one map, it withdraws every reduce ask and
kills held reduces to make room (``preemptReducesIfNeeded``): without that, AMs and reduces waiting
for their maps could hold a cluster for good.

Resources are (MB, vcores) pairs as the AM sees them: the sizes it asked for, not the RM's
normalised ones. Whether vcores count is the scheduler's answer at registration
(``getSchedulingResourceTypes``: the FairScheduler's are memory and CPU, a CapacityScheduler with
the default resource calculator's memory only).
"""

from __future__ import annotations

import math
import struct
from typing import NamedTuple

Resource = tuple[int, int]
"""(MB, vcores)."""

RAMPUP_LIMIT = 0.5
"""``yarn.app.mapreduce.am.job.reduce.rampup.limit``."""
PREEMPTION_LIMIT = 0.5
"""``yarn.app.mapreduce.am.job.reduce.preemption.limit``."""
UNCONDITIONAL_PREEMPT_S = 300.0
"""``mapreduce.job.reducer.unconditional-preempt.delay.sec``: maps waiting this long with none
running have reduces killed for them whatever the headroom says."""
HEARTBEAT_S = 1.0
"""``yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms``."""

_MAX_INT = 2**31 - 1


class Tasks(NamedTuple):
    """One AM's count of its tasks at a heartbeat."""

    total_maps: int
    completed_maps: int
    scheduled_maps: int
    """Maps asked for and not yet given a container."""
    assigned_maps: int
    """Maps holding a container (running)."""
    pending_reduces: int
    """Reduces kept back, not yet asked for."""
    scheduled_reduces: int
    assigned_reduces: int


class Move(NamedTuple):
    ramp: int
    """Reduce asks to add (> 0) or withdraw (< 0)."""
    preempt: int = 0
    """Held reduces to kill, their tasks kept back to be asked for again."""
    started: bool = True
    """Slow start is past: reduces may be asked for."""



def _java_float(x: float) -> float:
    """``x`` as a Java ``float``: the fraction of maps done and the slow-start product are
    single precision in ``scheduleReduces``, and 7 of 40 maps done, as a float, puts 40 vcores'
    ramp share at 6.9999999 (6 whole vcores) where a double gives 7."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _ratio(numerator: int, denominator: int) -> int:
    """Java's truncating ``long`` division, as ``ResourceCalculatorUtils`` divides."""
    if denominator == 0:
        return _MAX_INT
    quotient = abs(numerator) // denominator
    return quotient if numerator >= 0 else -quotient


def containers(available: Resource, required: Resource, vcores_count: bool) -> int:
    """How many ``required`` fit in ``available`` (``computeAvailableContainers``)."""
    fit = _ratio(available[0], required[0])
    return min(fit, _ratio(available[1], required[1])) if vcores_count else fit


def containers_ceil(required: Resource, factor: Resource, vcores_count: bool) -> int:
    """How many ``factor`` it takes to cover ``required`` (``divideAndCeilContainers``)."""

    def ceil(a: int, b: int) -> int:
        return 0 if b == 0 else (a + b - 1) // b

    n = ceil(required[0], factor[0])
    return max(n, ceil(required[1], factor[1])) if vcores_count else n


def _times(res: Resource, by: float) -> Resource:
    """``Resources.multiply``: each component scaled and truncated."""
    return int(res[0] * by), int(res[1] * by)


def _plus(a: Resource, b: Resource) -> Resource:
    return a[0] + b[0], a[1] + b[1]


def _minus(a: Resource, b: Resource) -> Resource:
    return a[0] - b[0], a[1] - b[1]


def heartbeat(
    tasks: Tasks,
    *,
    started: bool,
    slowstart: float,
    headroom: Resource,
    map_ask: Resource,
    reduce_ask: Resource,
    vcores_count: bool,
    maps_waited_s: float,
) -> Move:
    """The reduce part of ``RMContainerAllocator.heartbeat``: preempt if its maps need it, else
    schedule reduces. ``maps_waited_s``: how long its oldest waiting map has been asked for."""
    limit = _plus(
        headroom,
        _plus(_times(map_ask, tasks.assigned_maps), _times(reduce_ask, tasks.assigned_reduces)),
    )
    preempt = _preemption(tasks, headroom, limit, map_ask, reduce_ask, vcores_count, maps_waited_s)
    if preempt is not None:
        return Move(-tasks.scheduled_reduces, preempt, started)
    return _schedule(tasks, started, slowstart, limit, map_ask, reduce_ask, vcores_count)


def _preemption(
    tasks: Tasks,
    headroom: Resource,
    limit: Resource,
    map_ask: Resource,
    reduce_ask: Resource,
    vcores_count: bool,
    maps_waited_s: float,
) -> int | None:
    """Reduces to kill (``preemptReducesIfNeeded``), or None when it does not preempt. It
    preempts only with maps waiting and none running; after ``UNCONDITIONAL_PREEMPT_S`` at once,
    else when the headroom less its reduce asks has no room for one map
    (``mapreduce.job.reducer.preempt.delay.sec`` 0: at the first heartbeat that sees it)."""
    if tasks.assigned_maps > 0 or tasks.scheduled_maps <= 0:
        return None
    if maps_waited_s <= UNCONDITIONAL_PREEMPT_S:
        for_map = _minus(headroom, _times(reduce_ask, tasks.scheduled_reduces))
        if containers(for_map, map_ask, vcores_count) > 0:
            return None
    for_one_map = containers_ceil(map_ask, reduce_ask, vcores_count)
    for_limit = containers_ceil(_times(limit, PREEMPTION_LIMIT), reduce_ask, vcores_count)
    for_all_maps = containers_ceil(_times(map_ask, tasks.scheduled_maps), reduce_ask, vcores_count)
    return min(min(max(for_one_map, for_limit), for_all_maps), tasks.assigned_reduces)


def _schedule(
    tasks: Tasks,
    started: bool,
    slowstart: float,
    limit: Resource,
    map_ask: Resource,
    reduce_ask: Resource,
    vcores_count: bool,
) -> Move:
    """``scheduleReduces``: how many reduce asks to add or withdraw."""
    if tasks.pending_reduces == 0:
        return Move(0, 0, started)
    needed = math.ceil(_java_float(_java_float(slowstart) * tasks.total_maps))
    if not started and tasks.completed_maps < needed:
        return Move(0, 0, False)
    if tasks.scheduled_maps == 0:
        return Move(tasks.pending_reduces)
    done = _java_float(tasks.completed_maps / tasks.total_maps) if tasks.total_maps else 1.0
    maps_held = tasks.scheduled_maps + tasks.assigned_maps
    ideal_reduce = _times(limit, min(done, RAMPUP_LIMIT))
    ideal_map = _minus(limit, ideal_reduce)
    final_reduce = ideal_reduce
    if containers(ideal_map, map_ask, vcores_count) >= maps_held:
        # its maps need less than their share: what they leave goes to reduces
        final_reduce = _plus(ideal_reduce, _minus(ideal_map, _times(map_ask, maps_held)))
    reduces_held = _times(reduce_ask, tasks.scheduled_reduces + tasks.assigned_reduces)
    ramp = containers(_minus(final_reduce, reduces_held), reduce_ask, vcores_count)
    if ramp > 0:
        return Move(min(ramp, tasks.pending_reduces))
    return Move(-min(-ramp, tasks.scheduled_reduces))
