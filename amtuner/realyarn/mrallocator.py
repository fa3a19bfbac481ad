"""MapReduce's own reduce scheduling, asked case by case: the oracle for the simulator's model
of it (`amtuner.sim.mrallocator`).

The Java side (``realyarn/mr-allocator``) runs the reduce part of Hadoop 3.5.0's
``RMContainerAllocator.heartbeat`` (``preemptReducesIfNeeded``, then ``scheduleReduces``) on a
mock allocator whose state each case sets, as Hadoop's own ``TestRMContainerAllocator`` does,
and prints what the real methods did. One JVM answers every case of a call.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

from amtuner.realyarn.build import MR_ALLOCATOR_DIR, Build, Unavailable, ensure_built
from amtuner.sim.mrallocator import RAMPUP_LIMIT, Move, Resource, Tasks

MAIN_CLASS = "io.amtuner.realyarn.mr.Heartbeat"
TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class Case:
    """What one heartbeat reads: the AM's counts, its asks, the headroom the RM last reported,
    whether the scheduler counts vcores, and how long its waiting maps have waited (a job's maps
    are asked for at once)."""

    tasks: Tasks
    started: bool
    slowstart: float
    map_ask: Resource
    reduce_ask: Resource
    headroom: Resource
    vcores_count: bool
    maps_waited_s: float

    def line(self) -> str:
        t = self.tasks
        fields = (
            t.total_maps, t.completed_maps, t.scheduled_maps, t.scheduled_reduces,
            t.assigned_maps, t.assigned_reduces, *self.map_ask, *self.reduce_ask,
            t.pending_reduces, RAMPUP_LIMIT, self.slowstart, int(self.started),
            *self.headroom, int(self.vcores_count), round(self.maps_waited_s * 1000),
        )  # fmt: skip
        return " ".join(str(f) for f in fields)


def _move(case: Case, answer: str) -> Move:
    """Hadoop's answer as the model's `Move`. ``all`` asks for every reduce kept back; a
    preemption withdraws every reduce ask (``rampDownReduces(Integer.MAX_VALUE)``) and kills at
    most the reduces held (``AssignedRequests.preemptReduce`` runs out of them)."""
    started, *act = answer.split()
    now_started = started == "started=1"
    t = case.tasks
    match act:
        case ["none"]:
            return Move(0, 0, now_started)
        case ["all"]:
            return Move(t.pending_reduces, 0, now_started)
        case ["up", n]:
            return Move(int(n), 0, now_started)
        case ["down", n]:
            return Move(-int(n), 0, now_started)
        case ["preempt", n, "down", "2147483647"]:
            return Move(-t.scheduled_reduces, min(int(n), t.assigned_reduces), now_started)
    raise ValueError(f"unexpected answer from {MAIN_CLASS}: {answer!r}")


def heartbeat(cases: Sequence[Case], build: Build | None = None) -> list[Move]:
    """What Hadoop's AM does with its reduces at a heartbeat in each case (raises `Unavailable`
    where Java, Maven or Maven Central is missing)."""
    build = build or ensure_built(MR_ALLOCATOR_DIR)
    try:
        done = subprocess.run(
            # -Xshare:off: Mockito's agent extends the boot class path, which class sharing
            # would warn about on every run.
            [build.java, "-Xshare:off", "-cp", build.classpath(), MAIN_CLASS],
            input="".join(c.line() + "\n" for c in cases),
            capture_output=True, text=True, timeout=TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired as e:
        raise Unavailable(f"{MAIN_CLASS} took over {TIMEOUT_S:.0f} s") from e
    if done.returncode != 0:
        tail = "\n".join(done.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{MAIN_CLASS} failed (exit {done.returncode}):\n{tail}")
    answers = done.stdout.splitlines()
    if len(answers) != len(cases):
        raise RuntimeError(f"{MAIN_CLASS} answered {len(answers)} of {len(cases)} cases")
    return [_move(c, a) for c, a in zip(cases, answers, strict=True)]
