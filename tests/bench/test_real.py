"""`amtuner bench real`: the batch, its translation for the real RM's AM host, and the figures
read back from the RM's app records."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from amtuner.bench import real
from amtuner.bench.common import DEFAULT_A
from amtuner.model import SchedulerKind
from amtuner.sim.workload.frameworks import drivers, services, sessions
from amtuner.sim.workload.launchers import launchers
from tests.e2e.conftest import amtuner


def test_the_batch_interleaves_the_profiles_all_at_once() -> None:
    jobs = real.workload().jobs
    assert len(jobs) == sum(n for _, n, _, _ in real.PROFILES) == 16
    assert [j.profile for j in jobs[:4]] == ["small", "medium", "large", "small"]
    assert {j.submit_s for j in jobs} == {0.0}
    # The paper's AM of two task units; no CPU or disk contention, so only scheduling differs.
    assert all(j.am_memory_mb == 2 * j.maps[0].memory_mb for j in jobs)
    assert all(g.cpu_cores == g.disk_mbps == 0.0 for j in jobs for g in (*j.maps, *j.reduces))


def test_a_job_keeps_its_work_on_the_real_rm() -> None:
    spec = real.workload().jobs[2]
    job = real.apps.real_job(spec)
    assert (job.name, job.queue, job.am_memory_mb) == (spec.job_id, "default", 2048)
    assert job.maps == real.apps.Tasks(8, 1024, 1, 8.0)
    assert job.reduces == real.apps.Tasks(2, 1024, 1, 6.0)
    assert (job.am_startup_s, job.am_teardown_s, job.slowstart) == (3.0, 1.0, 0.05)
    assert "amtuner.maps=8x1024x1x8" in job.tags() and "amtuner.am=3x1x0.05" in job.tags()


def test_each_job_goes_to_the_real_rm_as_its_user_at_its_time() -> None:
    """A job's user submits it, the launcher's own where the workload names none (the
    simulator runs those as one user); each job keeps its submission time, a launcher's child
    none of its own (its launcher's AM submits it)."""
    spec = real.workload().jobs[0]
    assert real.apps.real_job(spec).user == real.apps.USER
    assert real.apps.real_job(dataclasses.replace(spec, user="alice")).user == "alice"
    timed = real.apps.timed_jobs(services(2, jobs=1))
    assert [(at, job.name) for at, job in timed] == [
        (0.0, "service-00"), (0.0, "service-01"), (1.0, "job-00"),
    ]  # fmt: skip
    assert [job.name for _, job in real.apps.timed_jobs(launchers(2))] == [
        "launcher-00", "launcher-01",
    ]  # fmt: skip


def test_a_launcher_carries_its_child_for_the_am_host() -> None:
    """Each launcher is submitted with its child's work in its tags (`RealJob.child`), which
    the AM host reads back to submit the child; a child is not submitted by itself."""
    batch = launchers(2)
    jobs = real.apps.real_jobs(batch)
    assert [j.name for j in jobs] == ["launcher-00", "launcher-01"]
    child = jobs[0].child
    assert child is not None and child.name == "child-00" and child.maps is not None
    tags = jobs[0].tags()
    assert len(tags) <= 10 and all(len(t) <= 100 for t in tags)  # YARN's default tag limits
    assert "amtuner.child.name=child-00" in tags and "amtuner.child.resource=1024x1" in tags
    assert "amtuner.child.maps=2x1024x1x4" in tags and "amtuner.child.am=1x1x0.05" in tags
    second = dataclasses.replace(batch.jobs[3], job_id="child-xx", launched_by="launcher-00")
    with pytest.raises(ValueError, match="launcher-00 launches more than one child"):
        real.apps.real_jobs(dataclasses.replace(batch, jobs=(*batch.jobs, second)))


def test_sessions_drivers_and_services_keep_their_runs_on_the_real_rm() -> None:
    """A session's DAGs, a driver's jobs and a service's life reach the AM host in a ``runs``
    tag (RUNSxIDLE_SxLINGER_S); an app that runs once and lingers not has none, and a
    launcher's child cannot have one."""
    (session,) = real.apps.real_jobs(sessions(1, dags=3, gap_s=6.0, timeout_s=10.0))
    assert "amtuner.runs=3x6x10" in session.tags()
    (service, job) = real.apps.real_jobs(services(1, life_s=60.0))
    assert "amtuner.runs=1x0x60" in service.tags() and service.maps is None
    assert not [t for t in job.tags() if t.startswith("amtuner.runs")]
    (driver,) = real.apps.real_jobs(drivers(1, jobs=2, work_s=5.0))
    assert "amtuner.runs=2x5x0" in driver.tags() and "amtuner.am=6x1x0.05" in driver.tags()
    batch = launchers(1)
    child = dataclasses.replace(batch.jobs[1], runs=2)
    with pytest.raises(ValueError, match="children run once"):
        real.apps.real_jobs(dataclasses.replace(batch, jobs=(batch.jobs[0], child)))[0].tags()


def test_figures_come_from_the_rms_own_times() -> None:
    records = [
        {"startedTime": 1_000, "launchTime": 2_000, "finishedTime": 31_000},
        {"startedTime": 1_500, "launchTime": 31_000, "finishedTime": 61_500},
        {"startedTime": 1_500, "launchTime": 30_000, "finishedTime": 41_500},
    ]
    # The second AM starts as the first ends: two AMs at once (the third's with either), not 3.
    assert real.figures_of(records) == real.Figures(
        makespan_s=60.5, mean_jct_s=round((30_000 + 60_000 + 40_000) / 3 / 1000, 3),
        ams_at_once=2,
    )  # fmt: skip


def test_every_scheduler_runs_its_default_the_fixed_values_and_both_controllers() -> None:
    cases = real.cases([SchedulerKind.CAPACITY])
    assert cases[0] == (SchedulerKind.CAPACITY, DEFAULT_A[SchedulerKind.CAPACITY], "default")
    assert [label for _, _, label in cases] == ["default", "fixed:0.3", "fixed:0.6", "paper",
                                                "adaptive"]  # fmt: skip
    assert [a for _, a, _ in cases][-2:] == [None, None]


def test_the_simulated_side_uses_the_real_clusters_heartbeats() -> None:
    hb = real.HADOOP_HEARTBEATS
    assert (hb.node_s, hb.am_s) == (real.HEARTBEAT_MS / 1000,) * 2
    assert hb.maps_off_switch, "the AM host asks for any host, so no map is node-local"
    spec = real.cluster_spec(SchedulerKind.FAIR, 0.5)
    assert (spec.nodes, spec.node_memory_mb, spec.node_vcores, spec.min_alloc_mb) == (
        real.NODES, real.NODE_MB, real.NODE_VCORES, real.MIN_ALLOC_MB)
    assert dataclasses.replace(spec, am_share=None).nm_heartbeat_ms == real.HEARTBEAT_MS


def test_a_row_reports_the_simulators_error_against_the_mean_of_the_real_runs() -> None:
    runs = [
        real.RealRun(real.Figures(96.0, 48.0, 6), [[0.0, 0.1], [1.4, 0.525]], "3.5.0"),
        real.RealRun(real.Figures(104.0, 52.0, 6), [[0.0, 0.1]], "3.5.0", "app_1 stuck"),
        real.RealRun(real.Figures(100.0, 50.0, 7), [[0.0, 0.1]], "3.5.0"),
    ]
    row = real.row_of(
        SchedulerKind.CAPACITY, "adaptive", runs, real.Figures(90.0, 55.0, 5),
        real.Figures(80.0, 40.0, 7), 123.45,
    )  # fmt: skip
    assert (row["scheduler"], row["policy"], row["hadoop_version"]) == (
        "capacity", "adaptive", "3.5.0")  # fmt: skip
    assert (row["real_makespan_s"], row["sim_makespan_s"], row["sim_at_once_makespan_s"]) == (
        100.0, 90.0, 80.0)  # fmt: skip
    assert (row["real_mean_jct_s"], row["sim_mean_jct_s"]) == (50.0, 55.0)
    # Negative: the simulator finishes sooner than the real RM.
    assert (row["makespan_diff"], row["mean_jct_diff"]) == (-0.1, 0.1)
    # The AM count most real runs reached, not their mean, and how the runs split.
    assert (row["real_ams_at_once"], row["sim_ams_at_once"]) == (6, 5)
    assert (row["real_ams_split"], row["sim_ams_split"]) == ([[6, 2], [7, 1]], [])
    assert row["wall_seconds"] == 123.5
    assert [r["makespan_s"] for r in row["real_runs"]] == [96.0, 104.0, 100.0]
    assert row["real_runs"][0]["a_trace"][1] == [1.4, 0.525]
    assert [r["retried"] for r in row["real_runs"]] == [None, "app_1 stuck", None]
    line = real.format_row(row)
    assert "-10.0% / +10.0%" in line and " 6 /  5 (real 6 x2, 7 x1)" in line
    assert "96.0 104.0 100.0" in line


def test_seeds_that_split_on_the_am_count_say_so() -> None:
    """Half the seeds load a value the other half never see (the FairScheduler's poll): the
    count reported is the first seed's, and the split stands beside it."""
    seeds = [real.Figures(68.0, 43.0, ams) for ams in (8, 9, 8, 9)]
    figures = real.typical(seeds)
    assert (figures.ams_at_once, figures.ams_split) == (8, ((8, 2), (9, 2)))
    assert real.typical(seeds[:1]).ams_split == ()


def test_the_header_names_the_hadoop_version_the_cluster_and_the_batch() -> None:
    head = real.parameters(["3.5.0", "3.5.0"], {"cpus": 2, "memory_gb": 23.5})
    assert head["hadoop_version"] == "3.5.0" and head["host"]["cpus"] == 2
    assert head["cluster"] == "4 nodes x 8192 MB x 8 vcores, minimum allocation 1024 MB"
    assert head["heartbeats"]["node_ms"] == head["heartbeats"]["am_ms"] == real.HEARTBEAT_MS
    assert sum(p["jobs"] for p in head["workload"]) == len(real.workload().jobs)
    assert head["control_period_s"] == real.PERIOD_S


def test_an_app_holding_its_am_container_while_accepted_is_timed_from_when_first_seen() -> None:
    records = [
        {"id": "app_1", "state": "ACCEPTED", "runningContainers": 1},
        {"id": "app_2", "state": "ACCEPTED", "runningContainers": 0},
        {"id": "app_3", "state": "RUNNING", "runningContainers": 3},
    ]
    since = real.holding_am(records, {}, 10.0)
    assert since == {"app_1": 10.0}, "waiting for an AM container is not holding one"
    assert real.holding_am(records, since, 75.0) == {"app_1": 10.0}
    records[0]["state"] = "RUNNING"
    assert real.holding_am(records, since, 80.0) == {}, "it ran: forgotten"


def test_recorded_real_runs_are_simulated_again(tmp_path: Path) -> None:
    """``--resimulate``: a row's real runs stay as recorded, its simulated side is the
    simulator's now (the seeded mean `run_sim` gives), the header names today's heartbeats."""
    row = {
        "scheduler": "capacity", "policy": "fixed:0.3", "hadoop_version": "3.5.0",
        "sim_makespan_s": 1.0, "wall_seconds": 800.0,
        "real_runs": [
            {"makespan_s": m, "mean_jct_s": 40.0, "ams_at_once": 5, "a_trace": [[0.0, 0.3]],
             "retried": None}
            for m in (75.0, 77.0)
        ],
    }  # fmt: skip
    recorded = {"parameters": {"heartbeats": {"node_ms": 1000}}, "rows": [row], "wall_seconds": 1}
    (tmp_path / "real.json").write_text(json.dumps(recorded))
    run = amtuner(
        "bench", "real", "--resimulate", str(tmp_path / "real.json"),
        "--json", str(tmp_path / "again.json"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    (again,) = json.loads((tmp_path / "again.json").read_text())["rows"]
    sim = real.run_sim(SchedulerKind.CAPACITY, 0.3, "paper", real.HADOOP_HEARTBEATS)
    assert (again["real_makespan_s"], again["sim_makespan_s"]) == (76.0, sim.makespan_s)
    assert again["makespan_diff"] == round((sim.makespan_s - 76.0) / 76.0, 4)
    assert again["real_runs"] == row["real_runs"] and again["wall_seconds"] == 800.0
    assert json.loads((tmp_path / "again.json").read_text())["wall_seconds"] == 800.0
    header = json.loads((tmp_path / "again.json").read_text())["parameters"]["heartbeats"]
    assert header == {"node_ms": 1000, "simulated": dataclasses.asdict(real.HADOOP_HEARTBEATS)}


def test_a_recording_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real.json").write_text('{"rows": [{"scheduler": "capacity"}]}')
    run = amtuner("bench", "real", "--resimulate", str(tmp_path / "real.json"))
    assert run.returncode == 2
    assert "cannot resimulate" in run.stderr and "KeyError" in run.stderr
    missing = amtuner("bench", "real", "--resimulate", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "No such file" in missing.stderr


def test_rows_to_run_again_must_be_rows_of_the_recording(tmp_path: Path) -> None:
    recorded = {"parameters": {"heartbeats": {}}, "rows": [], "wall_seconds": 0}
    (tmp_path / "real.json").write_text(json.dumps(recorded))
    alone = amtuner("bench", "real", "--rerun", "capacity:adaptive")
    assert alone.returncode == 2 and "--resimulate" in alone.stderr
    unknown = amtuner(
        "bench", "real", "--resimulate", str(tmp_path / "real.json"), "--rerun", "capacity:nope"
    )
    assert unknown.returncode == 2
    assert "no such rows to run again: capacity:nope" in unknown.stderr


def test_advise_real_refuses_fixed_rows_it_cannot_read_before_any_real_run(
    tmp_path: Path,
) -> None:
    """``bench advise-real --fixed-from``: a file that is not there, or holds no fixed row of a
    scheduler asked for, is refused (exit 2, naming it) before a cluster starts; the recorded
    rows give each fixed value's real mean JCT."""
    from amtuner.bench import advise_real

    missing = amtuner("bench", "advise-real", "--fixed-from", str(tmp_path / "none.json"),
                      "--work", str(tmp_path / "w"))  # fmt: skip
    assert missing.returncode == 2 and "none.json" in missing.stderr
    rows = [{"scheduler": "capacity", "policy": "fixed:0.3", "real_mean_jct_s": 43.4},
            {"scheduler": "capacity", "policy": "default", "real_mean_jct_s": 87.7}]  # fmt: skip
    (tmp_path / "cs.json").write_text(json.dumps({"rows": rows}))
    no_fair = amtuner("bench", "advise-real", "--scheduler", "fair", "--fixed-from",
                      str(tmp_path / "cs.json"), "--work", str(tmp_path / "w"))  # fmt: skip
    assert no_fair.returncode == 2 and "no fair fixed rows" in no_fair.stderr
    assert not (tmp_path / "w").exists()
    assert advise_real.bench_fixed_rows({"rows": rows}, SchedulerKind.CAPACITY) == {"0.3": 43.4}
