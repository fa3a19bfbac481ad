"""`--stagger`: controllers start before the first job, at a different point of their period."""

from __future__ import annotations

import json
from pathlib import Path

from amtuner.bench import suite
from amtuner.bench.common import simulate, staggered_lead
from amtuner.bench.suite import Bench
from amtuner.model import SchedulerKind
from tests.e2e.conftest import amtuner

PERIOD = 15.0


def test_leads_are_more_than_a_period_and_spread_over_one() -> None:
    leads = [staggered_lead(PERIOD, seed, 10) for seed in range(10)]
    assert leads == sorted(set(leads))
    assert leads[0] > PERIOD and leads[-1] < 2 * PERIOD


def test_the_daemon_sees_the_cluster_idle_before_the_first_job() -> None:
    # CapacityScheduler: reloads on refresh, so the a_trace shows when each cycle's write landed.
    kind = SchedulerKind.CAPACITY
    lead = staggered_lead(PERIOD, 0, 3)
    run = simulate("paper:grep", kind, None, 0, max_sim_seconds=3600, policy="adaptive",
                   lead_s=lead)  # fmt: skip
    assert run.finished
    # Idle at start-up: 1 - T2 = 0.5, 8 AMs of 2 GB on 32 GB; the first look commits half of
    # the 7 beyond the one 0.1 admits (4 AMs); the first cycle that sees the batch waiting,
    # its jobs no larger than the step assumed, adds the rest.
    (idle_t, idle_a), (seen_t, seen_a) = run.a_trace[1:3]
    assert idle_t < lead and idle_a == 0.2499
    assert lead < seen_t <= lead + PERIOD and seen_a >= 0.4999


def test_a_fixed_share_ignores_the_lead() -> None:
    kind = SchedulerKind.FAIR
    plain = simulate("paper:grep", kind, 0.5, 1, max_sim_seconds=3600)
    led = simulate("paper:grep", kind, 0.5, 1, max_sim_seconds=3600, lead_s=20.0)
    assert (plain.makespan_s, plain.mean_jct_s) == (led.makespan_s, led.mean_jct_s)


def test_paper_bench_records_the_stagger(tmp_path: Path) -> None:
    out = tmp_path / "paper.json"
    run = amtuner("bench", "paper", "--scheduler", "capacity", "--seeds", "1", "--workers", "1",
                  "--policies", "adaptive", "--stagger", "--json", str(out))  # fmt: skip
    assert run.returncode == 0, run.stderr
    summary = json.loads(out.read_text())
    assert summary["parameters"]["stagger"] is True
    assert summary["capacity"]["grep"]["policy_makespan_s"]["adaptive"] is not None


def test_suite_staggers_controllers_only() -> None:
    cases = suite.cases([Bench("b", "phase:small", "")], [SchedulerKind.FAIR], 2, stagger=True)
    assert all((c.lead_s > 0) == (c.a is None) for c in cases)
    assert len({c.lead_s for c in cases if c.a is None}) == 2
