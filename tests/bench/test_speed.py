"""`amtuner bench speed`: its structure, its child processes and their rusage, its errors.

Wall-clock figures are never compared with a bound here (they depend on the machine's load);
only that they are measured, positive and from the right process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from amtuner.bench import SHARED, speed

QUICK_TRACE = SHARED / speed.QUICK_TRACE


def bench_speed(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amtuner", "bench", "speed", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def positive(x: Any) -> bool:
    return isinstance(x, int | float) and x > 0


def test_the_bare_loop_is_timed() -> None:
    assert positive(speed.heapq_ns_per_event(20_000))


def test_quick_bench_measures_both_workloads_in_separate_processes(tmp_path: Path) -> None:
    assert QUICK_TRACE.is_file()
    out = tmp_path / "speed.json"
    proc = bench_speed("--quick", "--json", str(out), "--heapq-events", "20000")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(out.read_text())
    assert summary["skipped"] == []
    assert (summary["heap_size"], summary["heapq_events"]) == (speed.HEAP_SIZE, 20_000)
    assert summary["controller"] == "adaptive"
    rows = summary["rows"]
    assert [(r["workload"], r["scheduler"]) for r in rows] == [
        (f"swim:{QUICK_TRACE.name}", "capacity"),
        ("day:300,6000,0", "capacity"),
    ]
    assert [(r["jobs"], r["maps"]) for r in rows] == [(50, 168), (300, 6000)]
    assert [(r["jobs"], r["maps"]) for r in rows] == [
        (c["jobs"], c["maps"]) for c in summary["check"].values()
    ]
    parent = summary["parent_pid"]
    # The bench is itself a child of this test; each run is a child of the bench.
    assert parent != os.getpid()
    pids = [r["pid"] for r in rows] + [r["controlled"]["pid"] for r in rows]
    assert len(set(pids)) == len(pids) and parent not in pids and os.getpid() not in pids
    for r in rows:
        c = r["controlled"]
        assert r["finished"] and c["finished"]
        assert r["parent_pid"] == c["parent_pid"] == parent
        for x in (r["events"], r["sim_seconds"], r["wall_seconds"], r["ns_per_event"],
                  r["heapq_ns_per_event"], r["event_cost_ratio"], c["wall_seconds"],
                  c["cost_ratio"], c["cycles"], c["us_per_cycle"], r["load_seconds"]):  # fmt: skip
            assert positive(x), r
        assert r["event_cost_ratio"] == round(r["ns_per_event"] / r["heapq_ns_per_event"], 2)
        assert r["ns_per_event"] == round(r["wall_seconds"] / r["events"] * 1e9, 1)
        assert c["policy"] == "adaptive" and c["events"] > 0
        # One control cycle per simulated period, from t = 0 to the end.
        assert c["cycles"] >= r["sim_seconds"] // 15
        # The kernel's peak for each child agrees with what the child saw of itself.
        for run in (r, c):
            assert positive(run["peak_rss_mb"]) and positive(run["own_peak_rss_mb"])
            assert abs(run["peak_rss_mb"] - run["own_peak_rss_mb"]) < 4
    table = proc.stdout.splitlines()
    assert table[0].startswith("| workload | sched | jobs | maps | events |")
    assert any(line.startswith("| day:300,6000,0 | capacity | 300 | 6,000 |") for line in table)
    assert f"wrote {out}" in proc.stdout


def test_a_run_repeats_in_a_fresh_process() -> None:
    """Same spec, same events and simulated time, although each child hashes strings with its
    own PYTHONHASHSEED; the pids differ, and the peak is read for each."""
    a, b = (speed.run_child(["run", "day:40,400", "fair"]) for _ in range(2))
    assert a.pid != b.pid and os.getpid() not in (a.pid, b.pid)
    assert a.data["pid"] == a.pid and a.data["parent_pid"] == os.getpid()
    for key in ("events", "sim_seconds", "jobs", "maps", "finished"):
        assert a.data[key] == b.data[key]
    assert a.data["heapq_ns_per_event"] is None  # no bare loop unless asked
    assert positive(a.peak_rss_mb) and positive(b.peak_rss_mb)


def test_other_workloads_and_missing_fixtures(tmp_path: Path) -> None:
    proc = bench_speed("--day", "paper:grep", "--shared", str(tmp_path),
                       "--scheduler", "both", "--heapq-events", "1000")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"skipped swim fb-2009: {tmp_path / speed.TRACE} not present")
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| paper:grep |")]
    assert [row.split(" | ")[1] for row in rows] == ["capacity", "fair"]


def test_a_bad_workload_fails_before_any_run() -> None:
    proc = bench_speed("--day", "day:10,5")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "amtuner bench speed: workload spec 'day:10,5': 5 maps for 10 jobs; every job has one map"
    ]
    assert proc.stdout == ""


def test_argument_errors() -> None:
    for args in (["--scheduler", "yarn"], ["--heapq-events", "0"], ["--controller", "pid"]):
        proc = bench_speed(*args)
        assert proc.returncode == 2 and "usage:" in proc.stderr, args
