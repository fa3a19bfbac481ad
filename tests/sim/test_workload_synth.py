"""`synth:`: Hadoop SLS's synthetic workloads, drawn as `SynthTraceJobProducer`, `SynthJob` and
`SynthUtils` draw them. Each test checks a distribution over many drawn jobs against the spec
(means, spreads, proportions), not one job; bad descriptions are refused naming what is wrong."""

from __future__ import annotations

import copy
import json
import math
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from amtuner.sim.workload import WorkloadError, load_workload
from amtuner.sim.workload.sls import SLS_AM_MEMORY_MB, SLS_NODE_MEMORY_MB, SLS_NODE_VCORES

SLS_DIR = Path(__file__).resolve().parents[1] / "data" / "shared" / "fixtures" / "sls"
SYN = SLS_DIR / "syn.json"
SYN_GENERIC = SLS_DIR / "syn_generic.json"
SYN_STREAM = SLS_DIR / "syn_stream.json"


def each(groups: tuple[TaskGroup, ...], what: str) -> list[float]:
    """One value per task of ``groups``: its duration or its memory."""
    return [
        (g.duration_s if what == "time" else g.memory_mb if what == "memory" else g.vcores)
        for g in groups
        for _ in range(g.count)
    ]


def skewness(xs: list[float]) -> float:
    mean, sd = statistics.mean(xs), statistics.pstdev(xs)
    return sum((x - mean) ** 3 for x in xs) / len(xs) / sd**3


def count(groups: tuple[TaskGroup, ...]) -> int:
    return sum(g.count for g in groups)


def write(tmp_path: Path, desc: dict[str, Any]) -> Path:
    path = tmp_path / "synth.json"
    path.write_text(json.dumps(desc))
    return path


def generic() -> dict[str, Any]:
    """``syn_generic.json`` as a value, to vary."""
    desc: dict[str, Any] = json.loads(SYN_GENERIC.read_text())
    return desc


def test_syn_json_draws_what_it_describes() -> None:
    """syn.json (the old flat form): 5 ± 1 maps of 10 ± 2 ms and 1024 MB, 5 ± 1 reduces of
    20 ± 4 ms, 2048 MB and 2 vcores, submitted at whole seconds uniform over [1, 60), on 20
    SLS nodes; task times are milliseconds, as SLS hands them to its containers."""
    w = load_workload(f"synth:{SYN}@jobs=3000")
    assert w.name == "synth:syn.json@seed=2,jobs=3000,nodes=20"
    assert (w.nodes, w.node_memory_mb, w.node_vcores) == (20, SLS_NODE_MEMORY_MB, SLS_NODE_VCORES)
    assert w.queues == ("root.sls_queue_1",) and len(w.jobs) == 3000
    assert {(j.queue, j.user, j.am_memory_mb, j.am_vcores) for j in w.jobs} == {
        ("sls_queue_1", "foobar", SLS_AM_MEMORY_MB, 1)
    }
    maps = [count(j.maps) for j in w.jobs]
    reduces = [count(j.reduces) for j in w.jobs]
    for counts in (maps, reduces):  # log-normal of mean 5, sd 1, rounded half up
        assert statistics.mean(counts) == pytest.approx(5.0, abs=0.06)
        assert statistics.stdev(counts) == pytest.approx(1.04, abs=0.06)
        assert min(counts) >= 2  # a log-normal this narrow stays well above 0
    map_ms = [t * 1000 for j in w.jobs for t in each(j.maps, "time")]
    reduce_ms = [t * 1000 for j in w.jobs for t in each(j.reduces, "time")]
    assert statistics.mean(map_ms) == pytest.approx(10.0, abs=0.1)
    assert statistics.stdev(map_ms) == pytest.approx(2.0, rel=0.08)
    assert statistics.mean(reduce_ms) == pytest.approx(20.0, abs=0.15)
    assert statistics.stdev(reduce_ms) == pytest.approx(4.0, rel=0.08)
    assert all(ms == round(ms) for ms in map_ms)  # whole milliseconds (Sample.getLong)
    # Log-normal, not normal: skewed right, 3 CV + CV³ = 0.61 for a CV of 0.2.
    assert skewness(map_ms) == pytest.approx(0.61, abs=0.15)
    assert {m for j in w.jobs for m in each(j.maps, "memory")} == {1024}
    assert {m for j in w.jobs for m in each(j.reduces, "memory")} == {2048}
    assert {v for j in w.jobs for v in each(j.reduces, "vcores")} == {2}
    # Arrivals: the first bucket, [1, 60), whole seconds; shifted so that the first is at 0.
    submits = [j.submit_s for j in w.jobs]
    assert submits == sorted(submits) and submits[0] == 0.0
    per_second = Counter(submits)
    assert sorted(per_second) == [float(s) for s in range(59)]
    expected = len(submits) / 59
    chi2 = sum((n - expected) ** 2 / expected for n in per_second.values())
    assert chi2 < 100  # 58 degrees of freedom: p ≈ 0.0005 past 100
    assert all(j.slowstart == 1.0 and j.profile == "synth" for j in w.jobs)


def test_both_forms_of_the_same_workload_draw_alike() -> None:
    """syn.json and syn_generic.json describe one workload in the old and the new form (the
    conversion of `SynthTraceJobProducer.validateJobDef`): their drawn jobs agree in
    distribution, though not draw for draw (a constant takes no draw, a sd of 0.001 does)."""
    old = load_workload(f"synth:{SYN}@jobs=2000,seed=7")
    new = load_workload(f"synth:{SYN_GENERIC}@jobs=2000,seed=7")
    assert [j.job_id for j in old.jobs[:2]] == ["class_1_000000", "class_1_000001"]
    for pick in (
        lambda j: count(j.maps),
        lambda j: count(j.reduces),
        lambda j: statistics.mean(each(j.maps, "time")) * 1000,
        lambda j: statistics.mean(each(j.reduces, "time")) * 1000,
        lambda j: j.submit_s,
    ):
        a, b = [pick(j) for j in old.jobs], [pick(j) for j in new.jobs]
        assert statistics.mean(a) == pytest.approx(statistics.mean(b), rel=0.03)
        assert statistics.stdev(a) == pytest.approx(statistics.stdev(b), rel=0.1)
    assert old.jobs != new.jobs


def test_the_spec_is_the_data_and_its_seed_draws_anew() -> None:
    a = load_workload(f"synth:{SYN_GENERIC}")
    assert a == load_workload(f"synth:{SYN_GENERIC}")
    assert a.name.endswith("@seed=2,jobs=10,nodes=20")  # the file's rand_seed, num_jobs, nodes
    assert a == load_workload(f"synth:{SYN_GENERIC}@seed=2")
    b = load_workload(f"synth:{SYN_GENERIC}@nodes=6,seed=3")
    assert b.nodes == 6 and b.jobs != a.jobs and len(b.jobs) == 10


def test_time_distribution_buckets_as_generate_submission_time(tmp_path: Path) -> None:
    """`TestSynthJobGeneration.testWorkloadGenerateTime`'s buckets: weights 1, 0, 2, 1 at 0,
    30, 60 and 90 s. A bucket spans to the next one's time; the last is its time exactly."""
    desc = generic()
    desc["workloads"][0]["time_distribution"] = [
        {"time": 0, "weight": 1}, {"time": 30, "weight": 0},
        {"time": 60, "weight": 2}, {"time": 90, "weight": 1},
    ]  # fmt: skip
    w = load_workload(f"synth:{write(tmp_path, desc)}@jobs=4000")
    first = min(j.submit_s for j in w.jobs)
    assert first == 0.0  # a job drew second 0, so no shift
    buckets = Counter(min(int(j.submit_s // 30), 3) for j in w.jobs)
    assert buckets[1] == 0
    assert buckets[0] / 4000 == pytest.approx(0.25, abs=0.025)
    assert buckets[2] / 4000 == pytest.approx(0.50, abs=0.025)
    assert {j.submit_s for j in w.jobs if j.submit_s >= 90} == {90.0}
    assert buckets[3] / 4000 == pytest.approx(0.25, abs=0.025)


def test_weights_of_workloads_classes_and_discrete_values(tmp_path: Path) -> None:
    """Workloads picked by workload_weight (each with its queue), classes by class_weight
    (each with its user), discrete values by their weights; NORM draws are normal."""
    desc = generic()
    second = copy.deepcopy(desc["workloads"][0])
    second["queue_name"] = "etl"
    second["workload_weight"] = 1.5  # against the first's 0.5: 3 jobs in 4
    big = copy.deepcopy(second["job_classes"][0])
    big |= {"class_name": "big", "user_name": "etl", "class_weight": 3.0}
    big["tasks"][0]["count"] = {"discrete": [2, 40], "weights": [1, 3]}
    big["tasks"][0]["time"] = {"val": 5000, "std": 500, "dist": "NORM"}
    big["tasks"][1]["max_memory"] = {"discrete": ["3072"]}
    second["job_classes"].append(big)
    desc["workloads"].append(second)
    w = load_workload(f"synth:{write(tmp_path, desc)}@jobs=4000")
    assert w.queues == ("root.sls_queue_1", "root.etl")
    queues = Counter(j.queue for j in w.jobs)
    assert queues["etl"] / 4000 == pytest.approx(0.75, abs=0.025)
    etl = [j for j in w.jobs if j.queue == "etl"]
    bigs = [j for j in etl if j.job_id.startswith("big_")]
    assert len(bigs) / len(etl) == pytest.approx(0.75, abs=0.03)
    assert {j.user for j in bigs} == {"etl"}
    assert Counter(count(j.maps) for j in bigs).keys() == {2, 40}
    assert sum(count(j.maps) == 40 for j in bigs) / len(bigs) == pytest.approx(0.75, abs=0.03)
    times = [t for j in bigs for t in each(j.maps, "time")]
    assert statistics.mean(times) == pytest.approx(5.0, abs=0.02)
    assert statistics.stdev(times) == pytest.approx(0.5, rel=0.05)
    assert skewness(times) == pytest.approx(0.0, abs=0.15)  # normal, not log-normal
    assert {m for j in bigs for m in each(j.reduces, "memory")} == {3072}


def test_a_missing_std_is_a_sixth_of_the_mean(tmp_path: Path) -> None:
    """`SynthUtils`: a std of 0 is taken as val / 6 (here 600 ± 100 ms)."""
    desc = generic()
    desc["workloads"][0]["job_classes"][0]["tasks"][0]["time"] = {"val": 600, "std": 0}
    w = load_workload(f"synth:{write(tmp_path, desc)}@jobs=2000")
    ms = [t * 1000 for j in w.jobs for t in each(j.maps, "time")]
    assert statistics.mean(ms) == pytest.approx(600, rel=0.01)
    assert statistics.stdev(ms) == pytest.approx(100, rel=0.06)


def test_memory_and_vcores_below_synthjobs_minimum_are_raised(tmp_path: Path) -> None:
    desc = generic()
    task = desc["workloads"][0]["job_classes"][0]["tasks"][0]
    task["max_memory"], task["max_vcores"] = {"val": 100}, {"val": 0}
    w = load_workload(f"synth:{write(tmp_path, desc)}")
    assert {(g.memory_mb, g.vcores) for j in w.jobs for g in j.maps} == {(1024, 1)}


def test_stream_jobs_hold_their_streams_for_the_drawn_duration() -> None:
    """syn_stream.json: 2 streams of 4096 MB and 4 vcores a job, kept for the job's duration
    (log-normal 30 ± 5 s, whole seconds), not the 60 s of one stream's run."""
    w = load_workload(f"synth:{SYN_STREAM}@jobs=2000")
    assert {(count(j.maps), j.reduces) for j in w.jobs} == {(2, ())}
    assert {(g.memory_mb, g.vcores) for j in w.jobs for g in j.maps} == {(4096, 4)}
    durations = [only.duration_s for j in w.jobs for only in j.maps]
    assert statistics.mean(durations) == pytest.approx(30, abs=0.3)
    assert statistics.stdev(durations) == pytest.approx(5, rel=0.08)
    assert all(d == math.floor(d) for d in durations)
    assert {j.submit_s for j in w.jobs} == {0.0}  # every job in the one-second bucket at 1 s


def test_a_drawn_workload_runs_in_the_simulator() -> None:
    from amtuner.bench.common import simulate
    from amtuner.model import SchedulerKind

    w: Workload = load_workload(f"synth:{SYN_GENERIC}@jobs=40")
    r = simulate(w, SchedulerKind.CAPACITY, 0.3, 1, max_sim_seconds=3600)
    assert r.finished and len(r.jcts_s) == 40


def mutate(path: list[Any], value: Any) -> dict[str, Any]:
    desc = generic()
    obj: Any = desc
    for key in path[:-1]:
        obj = obj[key]
    if value is KeyError:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return desc


CLASS = ["workloads", 0, "job_classes", 0]
MAP = [*CLASS, "tasks", 0]


@pytest.mark.parametrize(
    ("desc", "reason"),
    [
        (mutate(["num_jobs"], KeyError), "missing num_jobs"),
        (mutate(["num_nodes"], 0), "num_nodes must be an integer >= 1"),
        (mutate(["workloads"], []), "workloads must be a non-empty list"),
        (mutate(["workloads", 0, "workload_weight"], 0), "workload weights sum to 0"),
        (mutate(["workloads", 0, "queue_name"], KeyError), "queue_name"),
        (
            mutate(["workloads", 0, "time_distribution"], [{"time": 1, "weight": 0}]),
            "time_distribution weights sum to 0",
        ),
        (mutate(["workloads", 0, "time_distribution", 0, "time"], 1.5), "time must be an integer"),
        (mutate([*CLASS, "class_weight"], -1), "class_weight must be >= 0"),
        (mutate([*CLASS, "type"], "dag"), "type 'dag' not supported"),
        (mutate([*CLASS, "duration"], KeyError), "duration: expected a sample object"),
        (mutate([*CLASS, "reservation"], {"val": 2}), "chance of a reservation"),
        (mutate([*MAP, "type"], "shuffle"), "task type 'shuffle'"),
        (mutate([*MAP, "execution_type"], "OPPORTUNISTIC"), "only GUARANTEED"),
        (mutate([*MAP, "count"], {"val": 5, "std": 1, "dist": "INVALID"}), "dist 'INVALID'"),
        (mutate([*MAP, "count"], {"val": 5, "discrete": [1, 2]}), "a constant"),
        (mutate([*MAP, "count"], {"val": 0, "std": 1}), "val must be > 0"),
        (mutate([*MAP, "count"], {"std": 1}), "needs val, or a non-empty discrete"),
        (mutate([*MAP, "count"], {"discrete": [1, 2], "weights": [1]}), "one weight per"),
        (mutate([*MAP, "time"], {"val": 10, "std": -1}), "std must be >= 0"),
        (mutate([*MAP, "max_memory"], {"val": "lots"}), "val is not a number"),
    ],
)
def test_bad_descriptions_are_refused_with_the_reason(
    tmp_path: Path, desc: dict[str, Any], reason: str
) -> None:
    path = write(tmp_path, desc)
    with pytest.raises(WorkloadError, match=reason) as e:
        load_workload(f"synth:{path}")
    assert str(e.value).startswith((f"{path}:1", "workload spec"))


def test_old_form_needs_every_mean(tmp_path: Path) -> None:
    """`validateJobDef` leaves a missing ``*_avg`` at 0, and SLS fails on its first draw."""
    desc = json.loads(SYN.read_text())
    del desc["workloads"][0]["job_classes"][0]["rtasks_avg"]
    with pytest.raises(WorkloadError, match="rtasks_avg"):
        load_workload(f"synth:{write(tmp_path, desc)}")


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        (f"synth:{SYN}@jobs=0", "jobs and nodes must be >= 1"),
        (f"synth:{SYN}@maps=3", "'maps=3' is not one of seed=N, jobs=N, nodes=N"),
        (f"synth:{SYN}@jobs=3,jobs=4", "jobs given twice"),
        (f"synth:{SYN}@seed=-1", "is not one of"),
        (f"synth:{SLS_DIR / 'inputsls.json'}", "expected one JSON object"),
        ("synth:/nonexistent/syn.json", "no such file"),
    ],
)
def test_bad_specs_and_other_files_are_refused(spec: str, reason: str) -> None:
    with pytest.raises(WorkloadError, match=reason):
        load_workload(spec)


def test_a_single_object_without_workloads_is_not_synth(tmp_path: Path) -> None:
    path = write(tmp_path, {"rack": "default-rack", "nodes": [{"node": "node1"}]})
    with pytest.raises(WorkloadError, match="no workloads: not an SLS SYNTH description"):
        load_workload(f"synth:{path}")


def test_sls_reader_points_a_synth_file_here() -> None:
    with pytest.raises(WorkloadError, match="load it as synth:PATH"):
        load_workload(f"sls:{SYN}")


def test_jobs_keep_their_class_names_in_submission_order() -> None:
    w = load_workload(f"synth:{SYN}@jobs=50")
    assert [j.job_id for j in w.jobs] == [f"class_1_{i:06d}" for i in range(50)]
    assert all(isinstance(j, JobSpec) for j in w.jobs)
