"""How fast the simulator runs a production day: the FB-2009 SWIM day on 600 nodes.

The bar is sim_seconds / wall_seconds >= 1000 (goal 5000) and peak RSS < 1 GB. The ratio is
recorded in the benchmark's extra_info, not asserted: wall time depends on the machine's load.
Run with ``pytest tests/bench --benchmark-enable`` to get timing statistics.
"""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from amtuner.sim.simulation import SimResult, build_simulation, default_scheduler_config
from amtuner.sim.workload import load_workload

SHARED = Path(__file__).resolve().parents[1] / "data" / "shared"
TRACE = SHARED / "fixtures" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"


@pytest.mark.parametrize("kind", ["fair", "capacity"])
def test_a_production_day_on_600_nodes(benchmark, kind: str) -> None:  # type: ignore[no-untyped-def]
    workload = load_workload(f"swim:{TRACE}", seed=0)
    config = default_scheduler_config(kind, workload.queues, 0.5)

    def run() -> SimResult:
        return build_simulation(kind, workload, config, nodes=600, seed=0).run()

    result = benchmark.pedantic(run, rounds=1, iterations=1)
    assert result.finished and result.jobs_completed == result.jobs_total == len(workload.jobs)
    assert result.sim_seconds > 86_000  # the trace spans a day
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert peak_rss_mb < 1024
    benchmark.extra_info["sim_seconds"] = result.sim_seconds
    benchmark.extra_info["events"] = result.events
    benchmark.extra_info["speed_ratio"] = round(result.sim_seconds / result.wall_seconds)
    benchmark.extra_info["peak_rss_mb"] = round(peak_rss_mb)
