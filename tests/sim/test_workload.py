"""Workload readers: the paper's groups, SLS traces, SWIM traces, and their errors."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amtuner.sim.spec import JobSpec, TaskGroup, Workload
from amtuner.sim.workload import (
    PAPER_GROUPS,
    PROFILES,
    WorkloadError,
    costs,
    describe,
    load_workload,
    nominal_tasks,
    profile_table,
    task_shape,
)
from amtuner.sim.workload.costs import TASK_OVERHEAD_CPU_S, TASK_OVERHEAD_S
from amtuner.sim.workload.paper import PAPER_JITTER
from amtuner.sim.workload.swim import SWIM_MAX_REDUCES, SWIM_NODES

SHARED = Path(__file__).resolve().parents[1] / "data" / "shared"
DATA = Path(__file__).resolve().parents[1] / "data" / "workload"
SLS_DIR = SHARED / "fixtures" / "sls"
TRACES = SHARED / "fixtures" / "traces"


def shared(path: Path) -> Path:
    assert path.is_file(), f"{path} missing (tests/data/shared/README.md lists the files)"
    return path


def only(groups: tuple[TaskGroup, ...]) -> TaskGroup:
    assert len(groups) == 1
    return groups[0]


# ---------------------------------------------------------------------------- paper groups


@pytest.mark.parametrize("group", PAPER_GROUPS)
def test_paper_group_shape(group: str) -> None:
    w = load_workload(f"paper:{group}")
    assert w.name == f"paper:{group}"
    assert (w.nodes, w.node_memory_mb, w.node_vcores) == (4, 8192, 8)
    assert w.queues == ("root.default",)
    assert len(w.jobs) == 30
    assert len({j.job_id for j in w.jobs}) == 30
    for job in w.jobs:
        m, r = only(job.maps), only(job.reduces)
        assert (m.kind, m.count, m.memory_mb, m.vcores) == ("map", 5, 1024, 1)
        assert (r.kind, r.count, r.memory_mb, r.vcores) == ("reduce", 1, 1024, 1)
        assert (job.submit_s, job.queue, job.am_memory_mb, job.slowstart) == (
            0.0,
            "root.default",
            1536,
            0.05,
        )
        assert job.am_startup_s > 0 and job.am_teardown_s > 0
        assert m.duration_s > TASK_OVERHEAD_S and r.duration_s > TASK_OVERHEAD_S * 0.9


def test_single_profile_groups_use_their_profile() -> None:
    for name in PROFILES:
        assert {j.profile for j in load_workload(f"paper:{name}").jobs} == {name}


def test_mixed_is_ten_of_each_interleaved() -> None:
    jobs = load_workload("paper:mixed").jobs
    assert [j.profile for j in jobs[:6]] == ["grep", "terasort", "wordcount"] * 2
    assert sorted(j.profile for j in jobs) == sorted(["grep", "terasort", "wordcount"] * 10)


def nominal(profile: str) -> tuple[TaskGroup, TaskGroup]:
    return nominal_tasks(PROFILES[profile])


def test_paper_durations_follow_the_cost_model_within_jitter() -> None:
    p = PROFILES["wordcount"]
    split = 20.0  # 100 MB over 5 maps
    cpu_s = split / p.map.cpu_mb_per_s
    disk_mb = split * p.map.disk_per_input_mb + split * p.map_output_ratio
    duration, cpu, disk = task_shape(cpu_s, disk_mb, 100.0)
    for job in load_workload("paper:wordcount", seed=7).jobs:
        m = only(job.maps)
        assert abs(m.duration_s / duration - 1) <= PAPER_JITTER + 1e-3
        assert m.cpu_cores == pytest.approx(cpu, abs=1e-4)
        assert m.disk_mbps == pytest.approx(disk, abs=1e-3)


def test_costs_doc_shows_the_current_profile_table() -> None:
    assert profile_table() in (costs.__doc__ or "")


def test_task_shape_conserves_work() -> None:
    duration, cpu, disk = task_shape(cpu_s=4.0, disk_mb=300.0, node_disk_mbps=100.0)
    assert duration == TASK_OVERHEAD_S + 4.0
    assert cpu * duration == pytest.approx(TASK_OVERHEAD_CPU_S + 4.0)
    assert disk * duration == pytest.approx(300.0)
    duration, _, disk = task_shape(cpu_s=1.0, disk_mb=300.0, node_disk_mbps=100.0)
    assert duration == TASK_OVERHEAD_S + 3.0  # disk-bound: the longer of the two
    assert disk == pytest.approx(50.0)


def test_profiles_have_the_papers_character() -> None:
    """Per job, terasort moves the most disk bytes per CPU-second (I/O-bound); the text jobs'
    maps burn the most CPU (CPU-bound); the reduces of wordcount and terasort wait on the disk
    once started."""
    work = {}
    for name in PROFILES:
        m, r = nominal(name)
        cpu = sum(g.count * g.cpu_cores * g.duration_s for g in (m, r))
        disk = sum(g.count * g.disk_mbps * g.duration_s for g in (m, r))
        work[name] = (cpu, disk, m.cpu_cores * m.duration_s)
    ratio = {name: disk / cpu for name, (cpu, disk, _) in work.items()}
    assert ratio["terasort"] > ratio["wordcount"] > ratio["grep"]
    assert work["wordcount"][2] > work["grep"][2] > work["terasort"][2]
    for name in ("wordcount", "terasort"):
        _, reduce = nominal(name)
        disk_s = reduce.disk_mbps * reduce.duration_s / 100.0
        cpu_s = reduce.cpu_cores * reduce.duration_s - TASK_OVERHEAD_CPU_S
        assert disk_s > cpu_s


@pytest.mark.parametrize("group", PAPER_GROUPS)
def test_paper_is_deterministic_per_seed(group: str) -> None:
    assert load_workload(f"paper:{group}", seed=3) == load_workload(f"paper:{group}", seed=3)
    assert load_workload(f"paper:{group}", seed=3) != load_workload(f"paper:{group}", seed=4)


# ---------------------------------------------------------------------------- SLS


def groups_by_key(groups: tuple[TaskGroup, ...]) -> dict[tuple[int, int, float], int]:
    return {(g.memory_mb, g.vcores, g.duration_s): g.count for g in groups}


def test_sls_duration_form_counts_and_job_copies() -> None:
    w = load_workload(f"sls:{DATA / 'duration-form.sls.json'}")
    assert w.nodes == 5  # header object
    assert (w.node_memory_mb, w.node_vcores) == (10240, 10)
    assert w.queues == ("root.analytics", "root.etl")
    first, *copies = w.jobs
    assert (first.job_id, first.submit_s, first.queue, first.user) == (
        "job_dur",
        2.5,
        "root.analytics",
        "alice",
    )
    assert (first.am_memory_mb, first.am_vcores, first.slowstart) == (2048, 2, 1.0)
    # count 4 + an identical single task group together; legacy duration.ms; SLS defaults.
    assert groups_by_key(first.maps) == {(2048, 1, 10.0): 5, (1024, 1, 7.0): 1}
    assert groups_by_key(first.reduces) == {(3072, 1, 20.0): 1}
    assert all(g.cpu_cores == 0 and g.disk_mbps == 0 for g in (*first.maps, *first.reduces))
    assert [j.job_id for j in copies] == ["job_2", "job_3", "job_4"]
    for job in copies:  # the queue as the trace asks for it; the queues to declare have root.
        assert (job.submit_s, job.queue, job.am_memory_mb, job.reduces) == (
            60.0,
            "etl",
            1024,
            (),
        )
        assert groups_by_key(job.maps) == {(1024, 1, 3.0): 2}


SLS_TASK = st.fixed_dictionaries(
    {
        "container.type": st.sampled_from(["map", "reduce"]),
        "container.duration.ms": st.sampled_from([1000, 2500, 7000]),
        "container.memory-mb": st.sampled_from([1024, 2048]),
    },
    optional={"count": st.integers(1, 5), "container.vcores": st.integers(1, 2)},
)


@given(jobs=st.lists(st.lists(SLS_TASK, min_size=1, max_size=8), min_size=1, max_size=4))
def test_sls_grouping_keeps_every_task(
    tmp_path_factory: pytest.TempPathFactory, jobs: list[list[dict[str, Any]]]
) -> None:
    jobs = [[*tasks, {"container.duration.ms": 1}] for tasks in jobs]  # every job needs a map
    text = "\n".join(
        json.dumps({"job.start.ms": 0, "job.queue.name": "q", "job.tasks": tasks}) for tasks in jobs
    )
    path = tmp_path_factory.mktemp("sls") / "t.json"
    path.write_text(text)
    w = load_workload(f"sls:{path}")
    for job, tasks in zip(w.jobs, jobs, strict=True):
        for kind, groups in (("map", job.maps), ("reduce", job.reduces)):
            want: dict[tuple[int, int, float], int] = {}
            for t in tasks:
                if t.get("container.type", "map") == kind:
                    key = (
                        t.get("container.memory-mb", 1024),
                        t.get("container.vcores", 1),
                        t["container.duration.ms"] / 1000,
                    )
                    want[key] = want.get(key, 0) + t.get("count", 1)
            assert groups_by_key(groups) == want
            assert len(groups) == len(want)  # identical tasks are one group


def test_sls_shared_inputsls_start_end_form() -> None:
    w = load_workload(f"sls:{shared(SLS_DIR / 'inputsls.json')}")
    assert [j.job_id for j in w.jobs] == ["job_1", "job_2"]
    assert w.queues == ("root.sls_queue_1", "root.sls_queue_2")
    assert w.nodes == 3  # distinct container.host values
    j1, j2 = w.jobs
    assert (j1.submit_s, j2.submit_s) == (0.0, 105.204)
    assert sorted(g.duration_s for g in j1.maps) == [14.928, 17.043, 17.843]
    assert sorted(g.duration_s for g in j2.maps) == [19.589, 22.163]
    assert j1.reduces == j2.reduces == ()


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("sls_dag.json", "AM type 'dag' not supported"),
        ("2jobs2min-rumen-jh.json", "rumen job history"),
        ("syn.json", "SYNTH"),
        ("syn_generic.json", "SYNTH"),
        ("syn_stream.json", "SYNTH"),
        ("nodes.json", "topology"),
        ("nodes-with-resources.json", "topology"),
    ],
)
def test_sls_refuses_other_shared_formats(name: str, reason: str) -> None:
    path = shared(SLS_DIR / name)
    with pytest.raises(WorkloadError, match=reason) as e:
        load_workload(f"sls:{path}")
    assert str(e.value).startswith(f"{path}:1:")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


JOB = '{"job.start.ms": 0, "job.queue.name": "q", "job.tasks": [%s]}'


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        (JOB % '{"container.duration.ms": 5}' + "\n\n" + '{"job.start.ms": 1,', ":3:", "malformed"),
        (JOB % '{"container.duration.ms": 5}' + "\n" + JOB % "", ":2:", "non-empty"),
        (JOB % '{"container.start.ms": 9, "container.end.ms": 9}', ":1:", "must be > 0"),
        (JOB % "{}", ":1:", "no duration"),
        (JOB % '{"duration.ms": 5, "container.type": "shuffle"}', ":1:", "neither map"),
        (JOB % '{"duration.ms": 5, "count": 0}', ":1:", "count must be an integer >= 1"),
        (JOB % '{"duration.ms": 5, "container.type": "reduce"}', ":1:", "no map task"),
        (
            '{"job.start.ms": "soon", "job.queue.name": "q", "job.tasks": [{"duration.ms": 1}]}',
            ":1:",
            "not a number",
        ),
        ('{"job.start.ms": 0, "job.tasks": [{"duration.ms": 1}]}', ":1:", "job.queue.name"),
        ("[1, 2]", ":1:", "expected a JSON object"),
        ("", "", "no jobs"),
    ],
)
def test_sls_errors_name_file_and_line(tmp_path: Path, text: str, where: str, reason: str) -> None:
    path = write(tmp_path, "t.json", text)
    with pytest.raises(WorkloadError, match=reason) as e:
        load_workload(f"sls:{path}")
    assert str(e.value).startswith(f"{path}{where}")


# ---------------------------------------------------------------------------- rumen


def test_rumen_shared_job_history() -> None:
    w = load_workload(f"rumen:{shared(SLS_DIR / '2jobs2min-rumen-jh.json')}")
    assert [j.job_id for j in w.jobs] == ["job_1369942127770_1205", "job_1369942127770_1206"]
    assert [j.submit_s for j in w.jobs] == [0.0, 105.204]  # rebased to the first submitTime
    assert w.queues == ("root.sls_queue_1",)
    for job in w.jobs:
        assert sum(g.count for g in job.maps) == 96 and job.reduces == ()
        assert job.user == "jenkins" and job.am_memory_mb == 1536  # from jobProperties
        assert {g.memory_mb for g in job.maps} == {1024}
    # SLS's inputsls.json was cut from this history: its task durations are among these.
    assert {17.043, 14.928} <= {g.duration_s for g in w.jobs[0].maps}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"submitTime": 5, "queue": "q", "mapTasks": [{"attempts": []}]}', "no attempts"),
        ('{"job.start.ms": 0, "job.queue.name": "q", "job.tasks": []}', "not a rumen job"),
        (
            '{"submitTime": 5, "queue": "q", "mapTasks": [{"attempts": '
            '[{"startTime": 9, "finishTime": 4}]}]}',
            "must be > 0",
        ),
    ],
)
def test_rumen_errors(tmp_path: Path, text: str, reason: str) -> None:
    path = write(tmp_path, "jh.json", "\n" + text)
    with pytest.raises(WorkloadError, match=reason) as e:
        load_workload(f"rumen:{path}")
    assert str(e.value).startswith(f"{path}:2")


# ---------------------------------------------------------------------------- SWIM


def test_swim_small_trace_derivations() -> None:
    w = load_workload(f"swim:{DATA / 'small.swim.tsv'}")
    assert (w.nodes, w.queues) == (600, ("root.default",))
    tiny, two_blocks, big = w.jobs
    assert [j.job_id for j in w.jobs] == ["job0", "job1", "job2"]
    assert [j.submit_s for j in w.jobs] == [0.0, 30.0, 45.0]
    # 1 byte: one map that only pays the task overhead; map-only (no shuffle).
    assert only(tiny.maps).count == 1 and tiny.reduces == ()
    assert only(tiny.maps).duration_s == pytest.approx(TASK_OVERHEAD_S, abs=0.01)
    assert only(two_blocks.maps).count == 2 and two_blocks.reduces == ()
    # 256 MB + 1 byte: 3 blocks; 3 GB shuffle: 3 reduces of 1 GB each.
    assert only(big.maps).count == 3
    r = only(big.reduces)
    assert r.count == 3
    assert r.duration_s > only(big.maps).duration_s  # 1 GB in vs 85 MB in
    # The reduce's disk work: merge + read back 1 GB, write its third of 1 GB output x 3.
    assert r.disk_mbps * r.duration_s == pytest.approx(2 * 1024 + 1024 / 3 * 3, rel=1e-3)


def test_swim_caps_reduces(tmp_path: Path) -> None:
    path = write(tmp_path, "big.tsv", f"j\t0\t0\t{2**40}\t{8 * 2**40}\t{2**30}\n")
    job = load_workload(f"swim:{path}").jobs[0]
    assert only(job.reduces).count == SWIM_MAX_REDUCES
    assert only(job.maps).count == 2**40 // (128 * 2**20)


def test_swim_on_fewer_nodes_keeps_the_bytes_and_caps_reduces_for_that_cluster(
    tmp_path: Path,
) -> None:
    """``@NODES``: the same jobs, reduces capped at 0.95 x 2 reduce slots of NODES nodes."""
    rows = f"big\t0\t0\t{2**40}\t{8 * 2**40}\t{2**30}\nsmall\t5\t5\t{2**27}\t{2**30}\t1\n"
    path = write(tmp_path, "day.tsv", rows)
    full, small = load_workload(f"swim:{path}"), load_workload(f"swim:{path}@25")
    assert (full.nodes, small.nodes) == (SWIM_NODES, 25)
    assert small.name == "swim:day.tsv@25"
    assert only(small.jobs[0].reduces).count == math.floor(0.95 * 25 * 2) == 47
    assert only(full.jobs[0].reduces).count == SWIM_MAX_REDUCES
    assert small.jobs[0].maps == full.jobs[0].maps  # the bytes are not scaled
    assert small.jobs[1] == full.jobs[1]  # under the cap nothing changes
    # Fewer, longer reduces: the same bytes through each.
    assert only(small.jobs[0].reduces).duration_s > only(full.jobs[0].reduces).duration_s
    with pytest.raises(WorkloadError, match="at least one node"):
        load_workload(f"swim:{path}@0")


def test_swim_path_with_an_at_sign_is_a_path(tmp_path: Path) -> None:
    path = write(tmp_path, "day@home.tsv", "j\t0\t0\t1\t0\t1\n")
    assert load_workload(f"swim:{path}").nodes == SWIM_NODES


def test_swim_shared_first50() -> None:
    path = shared(TRACES / "FB-2009_samples_24_times_1hr_0_first50jobs.tsv")
    w = load_workload(f"swim:{path}")
    rows = [line.split("\t") for line in path.read_text().splitlines()]
    assert len(w.jobs) == len(rows) == 50
    for job, row in zip(w.jobs, rows, strict=True):
        assert job.job_id == row[0] and job.submit_s == float(row[1])
        assert only(job.maps).count == max(1, math.ceil(int(row[3]) / (128 * 2**20)))
        assert bool(job.reduces) == (int(row[4]) > 0)


def test_swim_shared_full_day(benchmark: Any) -> None:
    """Also the load-time benchmark: ``pytest --benchmark-enable -k full_day``."""
    spec = f"swim:{shared(TRACES / 'FB-2009_samples_24_times_1hr_0.tsv')}"
    w = benchmark(load_workload, spec)
    assert len(w.jobs) == 5894
    assert sum(g.count for j in w.jobs for g in j.maps) == 205713
    assert all(a.submit_s <= b.submit_s for a, b in zip(w.jobs, w.jobs[1:], strict=False))


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        ("j0\t0\t0\t1\t0\t0\nj1\t5\t5\t1\t0\n", 2, "at least 6"),
        ("j0\t0\t0\t1\t0\t0\n\nj1\tsoon\t5\t1\t0\t0\n", 3, "not a number"),
        ("j0\t0\t0\t-1\t0\t0\n", 1, "negative"),
    ],
)
def test_swim_errors_name_file_and_line(tmp_path: Path, text: str, line: int, reason: str) -> None:
    path = write(tmp_path, "t.tsv", text)
    with pytest.raises(WorkloadError, match=reason) as e:
        load_workload(f"swim:{path}")
    assert str(e.value).startswith(f"{path}:{line}:")


# ---------------------------------------------------------------------------- specs, describe


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("paper", "expected paper:GROUP"),
        ("paper:", "expected paper:GROUP"),
        ("paper:sort", "unknown paper group"),
        ("synthetic:x.json", "unknown kind 'synthetic'"),
        ("rumen:/nonexistent/jh.json", "no such file"),
        ("sls:/nonexistent/trace.json", "no such file"),
        ("swim:/nonexistent/day.tsv", "no such file"),
    ],
)
def test_bad_specs(spec: str, reason: str) -> None:
    with pytest.raises(WorkloadError, match=reason):
        load_workload(spec)


def test_describe_counts_jobs_tasks_and_container_seconds() -> None:
    job = JobSpec(
        job_id="j",
        submit_s=10.0,
        queue="root.a",
        maps=(TaskGroup("map", 3, 1024, 1, 10.0, 1.0, 0.0),),
        reduces=(TaskGroup("reduce", 2, 1024, 1, 5.0, 1.0, 0.0),),
    )
    text = describe(Workload(name="t", jobs=(job, job), nodes=2, queues=("root.a",)))
    assert "2 jobs, 6 maps + 4 reduces, 80 task container-seconds" in text
    assert "2 nodes" in text
