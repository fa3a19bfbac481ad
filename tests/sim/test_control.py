"""The daemon's cycle inside a simulation: the path every benchmark of a policy takes."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from amtuner.bench.common import DEFAULT_A
from amtuner.config import ControllerSettings, GuardSettings
from amtuner.model import SchedulerKind
from amtuner.sim.control import UNGUARDED, ControlledRun, allocation_poll_phase
from amtuner.sim.simulation import build_simulation, default_scheduler_config
from amtuner.sim.workload import load_workload
from tests.sim.conftest import fair_reloads


def simulate(
    kind: SchedulerKind,
    a0: float,
    workdir: Path | None,
    period: float = 15.0,
    seed: int = 0,
    *,
    policy: str = "paper",
    guard: GuardSettings = UNGUARDED,
    group: str = "mixed",
):
    workload = load_workload(f"paper:{group}")
    config = default_scheduler_config(kind, workload.queues, a0)
    sim = build_simulation(kind, workload, config, seed=seed)
    controller = ControllerSettings(policy=policy, period_seconds=period)  # type: ignore[arg-type]
    run = None
    if workdir:
        workdir.mkdir(exist_ok=True)
        run = ControlledRun(sim, workdir, controller=controller, guard=guard)
    return sim.run(20_000), run


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_the_controller_moves_a_and_beats_a_too_low_fixed_value(
    tmp_path: Path, kind: SchedulerKind
) -> None:
    fixed, _ = simulate(kind, 0.1, None)
    controlled, run = simulate(kind, 0.1, tmp_path)
    assert run is not None and run.cycles > 2 and not run.errors
    assert len(controlled.a_trace) >= 2, controlled.a_trace
    assert controlled.a_trace[1][1] > 0.1, "under-allocation must raise A first"
    assert controlled.finished and fixed.finished
    assert controlled.makespan_s < 0.6 * fixed.makespan_s
    written = (tmp_path / f"{kind}-scheduler.xml").read_bytes()
    assert sim_value(written) == pytest.approx(run.states[""].a)


def test_a_controlled_run_never_lists_the_apps_for_idle_ams(tmp_path: Path) -> None:
    """The daemon names idle AMs while an AM limit holds apps (one listing of every app a
    cycle); a benchmark's run, which they do not decide, must not pay for it every period."""
    workload = load_workload("paper:mixed")
    kind = SchedulerKind.CAPACITY
    sim = build_simulation(kind, workload, default_scheduler_config(kind, workload.queues, 0.1))
    run = ControlledRun(sim, tmp_path, controller=ControllerSettings(policy="adaptive"))
    listed: list[object] = []
    monitor = run.cycle.monitor
    real = monitor.unfinished_apps
    monitor.unfinished_apps = lambda: listed.append(1) or real()  # type: ignore[method-assign]
    held = 0
    for cycle in range(4):
        sim.run_until(cycle * 15.0)
        report = run.last_report
        assert report is not None and report.observation is not None
        held += any(w.cause.a_cures for w in report.observation.waits)
        assert report.observation.idle_ams is None
    assert held, "an AM limit must hold apps in some cycle"
    assert listed == []


@pytest.mark.parametrize("policy", ["paper", "adaptive"])
@pytest.mark.parametrize("kind", list(SchedulerKind))
@pytest.mark.parametrize("group", ["grep", "terasort", "wordcount", "mixed"])
def test_amtuner_runs_default_guard_lets_the_policies_run_as_benchmarked(
    tmp_path: Path, policy: str, kind: SchedulerKind, group: str
) -> None:
    """The benchmarks run each policy with no guard; `amtuner run` puts its default guard
    around it at its default period. The same A at the same times, so the benchmarks are what an
    operator gets: on a CapacityScheduler, whose 0.1 is furthest from where the policies go, a
    clip of 0.2 cut their first raise short."""
    period = ControllerSettings().period_seconds
    bare, guarded = (
        simulate(kind, DEFAULT_A[kind], tmp_path / name, period, policy=policy, group=group,
                 guard=guard)[0]
        for name, guard in (("bare", UNGUARDED), ("guarded", GuardSettings()))
    )  # fmt: skip
    assert len(bare.a_trace) > 1 and bare.finished
    assert guarded.a_trace == bare.a_trace
    assert guarded.makespan_s == bare.makespan_s


def sim_value(data: bytes) -> float:
    from amtuner.executor import SchedulerFile

    kind = SchedulerKind.FAIR if b"<allocations" in data else SchedulerKind.CAPACITY
    return SchedulerFile(Path("x"), kind, data).effective_value("")


@pytest.mark.parametrize("seeds", [5, 10, 30])
def test_the_first_seeds_put_the_allocation_poll_all_over_its_cycle(seeds: int) -> None:
    """A benchmark's mean over its first N seeds meets every reload delay, 5-15 s, alike: no
    stretch of the 10 s cycle twice as long as an N-th goes without a seed's poll."""
    phases = sorted(allocation_poll_phase(seed) for seed in range(seeds))
    assert all(0 < p <= 10 for p in phases)
    gaps = [b - a for a, b in pairwise(phases)] + [10 - phases[-1] + phases[0]]
    assert max(gaps) <= 2 * 10 / seeds


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_fair_scheduler_picks_the_file_up_on_its_own_poll(tmp_path: Path, seed: int) -> None:
    """Written at a cycle, reloaded at the first 10 s poll more than 5 s later (yarn-facts §2.3),
    the polls at the seed's phase, so a write waits 5-15 s. A write overwritten by the time of
    its poll is never loaded (`fair_reloads`)."""
    result, run = simulate(SchedulerKind.FAIR, 0.1, tmp_path, period=15.0, seed=seed)
    assert run is not None and len(run.applied_at) >= 2
    reloads = [t for t, _a in result.a_trace[1:]]
    expected = fair_reloads(run.applied_at, allocation_poll_phase(seed))
    assert reloads == [t for t in expected if t <= result.sim_seconds][: len(reloads)]


@pytest.mark.parametrize("kind", list(SchedulerKind))
def test_tuning_queues_one_by_one_shows_in_their_own_traces(
    tmp_path: Path, kind: SchedulerKind
) -> None:
    workload = load_workload("twoqueue:small,large")
    sim = build_simulation(kind, workload, default_scheduler_config(kind, workload.queues, 0.3))
    settings = ControllerSettings(policy="adaptive")
    ControlledRun(sim, tmp_path, controller=settings, targets=("root.a", "root.b"))
    result = sim.run(20_000)
    assert result.finished and result.a_trace == [[0.0, 0.3]]
    assert set(result.queue_a_trace) == {"root.a", "root.b"}
    for trace in result.queue_a_trace.values():
        assert trace[0] == [0.0, 0.3] and len(trace) > 1, result.queue_a_trace
