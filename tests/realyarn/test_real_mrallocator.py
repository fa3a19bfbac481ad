"""The simulator's MapReduce reduce scheduling decides as Hadoop's own code does.

`amtuner.sim.mrallocator.heartbeat` models the reduce part of ``RMContainerAllocator.heartbeat``
(Hadoop 3.x): reduces killed for maps that cannot run (``preemptReducesIfNeeded``), else slow
start, every reduce once every map is placed, and the ramp up or down within a share of the
resource limit that grows with the maps done (``scheduleReduces``). Here Hadoop 3.5.0's methods
themselves (`amtuner.realyarn.mrallocator`) answer the same cases, drawn at random over job
shapes, asks, headrooms, resource types and how long maps have waited, and the model must make
the very same move in each.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from amtuner.realyarn.build import Build
from amtuner.realyarn.mrallocator import Case, heartbeat
from amtuner.sim import mrallocator
from amtuner.sim.mrallocator import Move, Tasks

pytestmark = pytest.mark.realyarn

CASES = 5000


def random_case(rng: random.Random) -> Case:
    """Mostly where the ramp is computed (reduces kept back, maps asked for, slow start past, a
    headroom of a few containers) or preemption is weighed (no map running); the early returns
    now and then."""
    total = rng.choice([0, 1, 3, 7, 10, 20, 33, 40, 97, 250])
    completed = rng.randint(0, total // 2 if rng.random() < 0.7 else total)
    assigned_maps = rng.randint(0, total - completed) if rng.random() < 0.6 else 0
    left = total - completed - assigned_maps
    scheduled_maps = rng.randint(min(1, left), left) if rng.random() < 0.9 else 0
    pending = rng.randint(1, 12) if rng.random() < 0.9 else 0
    scheduled, assigned = (rng.randint(0, rng.choice([2, 4, 12])) for _ in range(2))
    unit = rng.choice([512, 1024])
    headroom_mb = rng.randint(0, 24) * unit if rng.random() < 0.8 else rng.randint(0, 300_000)
    return Case(
        tasks=Tasks(total, completed, scheduled_maps, assigned_maps, pending, scheduled, assigned),
        started=rng.random() < 0.8,
        slowstart=rng.choice([0.05, 0.05, 0.0, 0.3, 0.8, 1.0, round(rng.random(), 3)]),
        map_ask=(rng.choice([512, 1024, 1536, 2048, 3072]), rng.choice([1, 1, 2])),
        reduce_ask=(rng.choice([1024, 2048, 3072, 4096, 6144]), rng.choice([1, 1, 2, 4])),
        headroom=(headroom_mb, rng.randint(0, 24)),
        vcores_count=rng.random() < 0.5,
        maps_waited_s=rng.choice([0.0, 299.999, 300.0, 300.001, rng.uniform(0, 900)]),
    )


def model(case: Case) -> Move:
    return mrallocator.heartbeat(
        case.tasks, started=case.started, slowstart=case.slowstart, headroom=case.headroom,
        map_ask=case.map_ask, reduce_ask=case.reduce_ask, vcores_count=case.vcores_count,
        maps_waited_s=case.maps_waited_s,
    )  # fmt: skip


def test_the_model_handles_reduces_as_hadoops_allocator_does(
    mr_allocator_build: Build,
) -> None:
    rng = random.Random(14)
    cases = [random_case(rng) for _ in range(CASES)]
    hadoop = heartbeat(cases, mr_allocator_build)
    reached = Counter(_branch(c, h) for c, h in zip(cases, hadoop, strict=True))
    assert len(reached) == len(BRANCHES), f"the cases must reach every branch: {reached}"
    wrong = [(c, h, model(c)) for c, h in zip(cases, hadoop, strict=True) if model(c) != h]
    shown = "\n".join(f"{c}\n  hadoop {h}\n  model  {m}" for c, h, m in wrong[:5])
    assert not wrong, f"{len(wrong)} of {CASES} cases differ from Hadoop's:\n{shown}"


BRANCHES = (
    "preempt", "no reduce kept back", "slow start", "every reduce", "ramp up", "ramp down", "hold"
)


def _branch(case: Case, hadoop: Move) -> str:
    """Which way out of the heartbeat's reduce scheduling Hadoop took."""
    if hadoop.preempt:
        return BRANCHES[0]
    if case.tasks.pending_reduces == 0:
        return BRANCHES[1]
    if not hadoop.started:
        return BRANCHES[2]
    if case.tasks.scheduled_maps == 0:
        return BRANCHES[3]
    return BRANCHES[4] if hadoop.ramp > 0 else BRANCHES[5] if hadoop.ramp < 0 else BRANCHES[6]
