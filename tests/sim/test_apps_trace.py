"""The app trace format read back, and its apps turned into jobs by the documented estimate."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from amtuner.apptrace import AppRecord, TraceError, header_line, read_trace
from amtuner.jobhistory import conf_figures, job_figures
from amtuner.sim.rmapi import FaceOptions, app_info, job_conf, job_info
from amtuner.sim.simulation import SimResult, build_simulation
from amtuner.sim.spec import Workload
from amtuner.sim.workload import WorkloadError, load_workload
from amtuner.sim.workload.apps import apps_jobs, load_apps


def app(i: int, **kw: object) -> AppRecord:
    fields: dict = {
        "id": f"application_1_{i:04d}", "queue": "default", "user": "u", "type": "MAPREDUCE",
        "state": "FINISHED", "submit_ms": 1_000_000 + 1000 * i, "launch_ms": 1_002_000 + 1000 * i,
        "finish_ms": 1_069_000 + 1000 * i, "memory_mb_s": None, "vcore_s": None,
    }  # fmt: skip
    fields.update(kw)
    return AppRecord(**fields)


def write(path: Path, apps: list[AppRecord], **cluster: int) -> Path:
    path.write_text(header_line(cluster, "http://rm:8088") + "".join(a.line() for a in apps))
    return path


def test_tasks_are_the_memory_seconds_left_after_the_am(tmp_path: Path) -> None:
    # Run 67 s: tasks 60 s (5 s start-up, 2 s tear-down); AM 2048 MB x 67 s; 4 x 1024 MB x 60 s.
    rec = app(0, memory_mb_s=2048 * 67 + 4 * 1024 * 60)
    path = write(tmp_path / "t.jsonl", [rec, app(1, launch_ms=0)], nodes=3, node_memory_mb=4096)
    w = load_workload(f"trace:{path}")
    assert (w.nodes, w.node_memory_mb, w.queues) == (3, 4096, ("root.default",))
    (job,) = w.jobs  # the app whose AM never started did no work
    (maps,) = job.maps
    assert (maps.count, maps.memory_mb, maps.duration_s) == (4, 1024, 60.0)
    assert job.am_memory_mb == 1536 and job.submit_s == 0.0


def test_without_memory_seconds_an_app_is_one_task(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [app(0), app(3)], nodes=2)
    jobs = load_workload(f"trace:{path}").jobs
    assert [j.maps[0].count for j in jobs] == [1, 1]
    assert [j.submit_s for j in jobs] == [0.0, 3.0]


def test_the_cluster_comes_from_the_header_or_the_caller(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [app(0)])
    with pytest.raises(WorkloadError, match="names no cluster"):
        load_workload(f"trace:{path}")
    assert load_apps(path, nodes=7, node_memory_mb=2048).nodes == 7


def test_a_torn_last_line_is_left_out_and_other_versions_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "t.jsonl", [app(0), app(1)], nodes=1)
    path.write_text(path.read_text()[:-20])
    _, apps = read_trace(path)
    assert [a.id for a in apps] == ["application_1_0000"]
    other = tmp_path / "v4.jsonl"
    other.write_text('{"format": "amtuner-apps", "version": 4}\n')
    with pytest.raises(TraceError, match="version 4; this amtuner reads versions 1, 2, 3: a newer"):
        read_trace(other)
    sls = tmp_path / "sls.json"
    sls.write_text('{"job.start.ms": 0}\n')
    with pytest.raises(WorkloadError, match="not an amtuner-apps trace"):
        load_workload(f"trace:{sls}")
    bad = write(tmp_path / "bad.jsonl", [app(0)], nodes=1)
    bad.write_text(bad.read_text() + '{"id": 1}\n' + app(2).line())
    with pytest.raises(TraceError, match=r"bad.jsonl:3: not an app record"):
        read_trace(bad)


def test_a_version_1_file_still_loads_without_the_jobhistory_fields(tmp_path: Path) -> None:
    rec = app(0, memory_mb_s=2048 * 67 + 4 * 1024 * 60)
    path = tmp_path / "v1.jsonl"
    header = header_line({"nodes": 3}, "http://rm:8088").replace('"version":3', '"version":1')
    path.write_text(header + rec.line(version=1))
    assert '"maps"' not in path.read_text()
    header_doc, (back,) = read_trace(path)
    assert header_doc["version"] == 1 and back == rec and back.maps is None
    (job,) = load_workload(f"trace:{path}").jobs
    assert job.maps[0].count == 4 and job.reduces == ()


def test_a_version_2_file_still_loads_without_the_task_sizes(tmp_path: Path) -> None:
    rec = app(0, maps=12, reduces=0, map_ms=2638, shuffle_ms=0, merge_ms=0, reduce_ms=0)
    path = tmp_path / "v2.jsonl"
    header = header_line({"nodes": 3}, "http://rm:8088").replace('"version":3', '"version":2')
    path.write_text(header + rec.line(version=2))
    assert '"maps"' in path.read_text() and '"map_mb"' not in path.read_text()
    assert '"tasks"' not in path.read_text()
    header_doc, (back,) = read_trace(path)
    assert header_doc["version"] == 2 and back == rec and back.map_mb is back.tasks is None
    (job,) = load_workload(f"trace:{path}").jobs
    assert (job.maps[0].count, job.maps[0].memory_mb, job.maps[0].vcores) == (12, 1024, 1)


def test_the_timeline_servers_containers_replace_the_estimate(tmp_path: Path) -> None:
    """Any framework's task containers as the timeline server told them: their count, mean size
    and mean life, asked for together, the AM held for the rest of the recorded run; an app
    that ran in its AM alone holds its AM for its run; the JobHistory server's figures, where
    both told, win."""
    spark = app(0, type="SPARK", memory_mb_s=2048 * 67, tasks=9, task_mb=3072, task_vcores=2,
                task_ms=41_500, am_memory_mb=1024)  # fmt: skip
    alone = app(1, type="TEZ", memory_mb_s=2048 * 67, tasks=0)
    both = app(2, maps=12, map_ms=2638, tasks=12, task_mb=1024, task_vcores=1, task_ms=3000)
    path = write(tmp_path / "t.jsonl", [spark, alone, both], nodes=3)
    jobs = {j.job_id: j for j in load_workload(f"trace:{path}").jobs}
    (maps,) = jobs[spark.id].maps
    assert (maps.count, maps.memory_mb, maps.vcores, maps.duration_s) == (9, 3072, 2, 41.5)
    assert jobs[spark.id].am_memory_mb == 1024 and jobs[spark.id].reduces == ()
    assert jobs[spark.id].linger_s == 67.0 - 5.0 - 2.0 - 41.5  # its AM outlived its tasks
    assert jobs[alone.id].maps == () and jobs[alone.id].linger_s == 67.0 - 5.0 - 2.0
    assert jobs[both.id].maps[0].duration_s == 2.638


def test_recorded_task_counts_and_durations_replace_the_estimate(tmp_path: Path) -> None:
    """The JobHistory server's figures are replayed as they are: maps of the average map time,
    reduces of the shuffle, merge and reduce phases one after another, asked for once the maps
    are done; an app it told nothing of keeps the estimate."""
    told = app(
        0, memory_mb_s=2048 * 67 + 4 * 1024 * 60, maps=12, reduces=3, map_ms=2638,
        shuffle_ms=2540, merge_ms=49, reduce_ms=124961,
    )  # fmt: skip
    map_only = app(1, maps=5, reduces=0, map_ms=400, shuffle_ms=0, merge_ms=0, reduce_ms=0)
    untold = app(2, memory_mb_s=2048 * 67 + 4 * 1024 * 60)
    path = write(tmp_path / "t.jsonl", [told, map_only, untold], nodes=3)
    assert read_trace(path)[1] == [told, map_only, untold]
    jobs = {j.job_id: j for j in load_workload(f"trace:{path}").jobs}
    job = jobs[told.id]
    ((maps,), (reduces,)) = job.maps, job.reduces
    assert (maps.count, maps.duration_s) == (12, 2.638)
    assert (reduces.count, reduces.duration_s) == (3, 127.55)
    assert job.slowstart == 1.0
    job = jobs[map_only.id]
    assert (job.maps[0].count, job.maps[0].duration_s, job.reduces) == (5, 1.0, ())
    assert jobs[untold.id].maps[0].count == 4 and jobs[untold.id].reduces == ()


def test_recorded_task_sizes_replace_the_default_size(tmp_path: Path) -> None:
    """The job configuration's sizes are the replay's asks; an app told the sizes but not the
    tasks gets the estimate's count worked out in its own map size."""
    sized = app(
        0, maps=12, reduces=3, map_ms=2638, shuffle_ms=2540, merge_ms=49, reduce_ms=124961,
        map_mb=2048, map_vcores=1, reduce_mb=4096, reduce_vcores=2, am_memory_mb=3072,
    )  # fmt: skip
    # 67 s run: AM 3072 MB x 67 s, then 4 maps of 2048 MB x 60 s.
    sizes_only = app(1, memory_mb_s=3072 * 67 + 4 * 2048 * 60, map_mb=2048, map_vcores=2,
                     am_memory_mb=3072)  # fmt: skip
    path = write(tmp_path / "t.jsonl", [sized, sizes_only], nodes=3)
    assert read_trace(path)[1] == [sized, sizes_only]
    jobs = {j.job_id: j for j in load_workload(f"trace:{path}").jobs}
    job = jobs[sized.id]
    ((maps,), (reduces,)) = job.maps, job.reduces
    assert (maps.count, maps.memory_mb, maps.vcores) == (12, 2048, 1)
    assert (reduces.count, reduces.memory_mb, reduces.vcores) == (3, 4096, 2)
    assert job.am_memory_mb == 3072
    (maps,) = jobs[sizes_only.id].maps
    assert (maps.count, maps.memory_mb, maps.vcores, maps.duration_s) == (4, 2048, 2, 60.0)


def recorded_replays(kind: str, workload: Workload) -> dict[str, SimResult]:
    """``workload`` run on the simulator (``run``), its apps recorded as the simulated RM's apps
    API and JobHistory face render them, and replayed three ways: with the job documents'
    figures and the job configurations' sizes (``sized``), with the figures alone (``told``,
    trace version 2) and with neither (``bare``, the estimate). The zoo's Spark and Tez apps get
    no JobHistory figures, as a JobHistory server knows MapReduce jobs only."""
    profile = {j.job_id: j.profile for j in workload.jobs}
    sim = build_simulation(kind, workload)
    out = {"run": sim.run()}
    view, options = sim.view(), FaceOptions()
    records: dict[str, list[AppRecord]] = {"sized": [], "told": [], "bare": []}
    for a in sim.app_views(("FINISHED",)):
        rec = AppRecord.from_app_info(app_info(a, view, options))
        records["bare"].append(rec)
        if profile[a.name] in ("spark", "tez"):
            records["told"].append(rec)
            records["sized"].append(rec)
            continue
        figures = job_figures(job_info(a, options), "job_" + a.app_id.removeprefix("application_"))
        assert figures is not None
        told = dataclasses.replace(rec, **figures)
        records["told"].append(told)
        records["sized"].append(dataclasses.replace(told, **conf_figures(job_conf(a, options))))
    assert len(records["bare"]) == len(workload.jobs)
    for name, recs in records.items():
        replay = dataclasses.replace(workload, name=name, jobs=apps_jobs(recs))
        out[name] = build_simulation(kind, replay).run()
    return out


def docs_row(label: str) -> list[str]:
    page = (Path(__file__).resolve().parents[2] / "docs" / "advise.md").read_text()
    (row,) = [line for line in page.splitlines() if line.startswith(f"| {label} |")]
    return [c.strip() for c in row.strip("|").split("|")][1:]


def cells(results: dict[str, SimResult], *names: str) -> list[str]:
    """The run's makespan and mean JCT, and each replay's with its difference to the run's."""
    run = results["run"]
    assert run.makespan_s is not None and run.mean_jct_s is not None
    out = [f"{run.makespan_s:.0f} s, {run.mean_jct_s:.1f} s"]
    for name in names:
        r = results[name]
        assert r.makespan_s is not None and r.mean_jct_s is not None
        out.append(
            f"{r.makespan_s:.0f} s ({r.makespan_s / run.makespan_s - 1:+.0%}), "
            f"{r.mean_jct_s:.1f} s ({r.mean_jct_s / run.mean_jct_s - 1:+.0%})"
        )
    return out


def off(results: dict[str, SimResult], name: str, figure: str) -> float:
    got, real = getattr(results[name], figure), getattr(results["run"], figure)
    return abs(got - real)


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_a_replay_with_the_jobhistory_figures_is_closer_to_the_run_than_the_estimate(
    kind: str,
) -> None:
    """The paper's mixed batch: the recorded tasks come closer to the run's makespan and mean
    JCT than the one-wave estimate, which misses tasks that ran in waves; every task asks the
    default size, so the sizes change nothing. The figures are docs/advise.md's
    ("Replaying")."""
    results = recorded_replays(kind, load_workload("paper:mixed"))
    for figure in ("makespan_s", "mean_jct_s"):
        assert off(results, "told", figure) < off(results, "bare", figure), figure
        assert getattr(results["sized"], figure) == getattr(results["told"], figure)
    assert docs_row(f"{kind}, mixed") == cells(results, "told", "bare")


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_the_recorded_task_sizes_bring_the_replay_closer_where_tasks_are_large(
    kind: str,
) -> None:
    """The MapReduce jobs of the zoo's case 16 (tasks of 1 to 4 GB on 8 GB nodes, AMs of 1 to
    2 GB): replayed with their sizes, the run's makespan and mean JCT are met more closely than
    with 1024 MB tasks and the default AM; docs/advise.md's row."""
    workload = load_workload("zoo:16")
    workload = dataclasses.replace(
        workload, jobs=tuple(j for j in workload.jobs if j.profile == "mapreduce")
    )
    results = recorded_replays(kind, workload)
    for figure in ("makespan_s", "mean_jct_s"):
        assert off(results, "sized", figure) < off(results, "told", figure), figure
    assert docs_row(f"{kind}, zoo 16") == cells(results, "sized", "told", "bare")


@pytest.mark.parametrize("spec", ["sessions:8", "drivers:8"])
def test_a_replay_with_the_timeline_figures_is_closer_to_the_run_than_the_estimate(
    spec: str,
) -> None:
    """Tez sessions and Spark drivers run on a CapacityScheduler, their apps recorded as the
    simulated RM's apps API and timeline face render them, replayed with and without the
    timeline's task containers: the recorded tasks, with the AM held for its recorded run, come
    closer to the run's makespan and mean JCT than the estimate, which spreads the AM's life
    over tasks; the figures are docs/advise.md's ("Replaying")."""
    from amtuner.sim.rmapi.apphistory import attempt_ids, containers_info
    from amtuner.timeline import task_figures

    workload = load_workload(spec)
    sim = build_simulation("capacity", workload)
    results = {"run": sim.run()}
    view, options = sim.view(), FaceOptions()
    records: dict[str, list[AppRecord]] = {"told": [], "bare": []}
    for a in sim.app_views(("FINISHED",)):
        rec = AppRecord.from_app_info(app_info(a, view, options))
        records["bare"].append(rec)
        figures = task_figures(containers_info(a, options), attempt_ids(a)[1])
        records["told"].append(dataclasses.replace(rec, **figures))  # type: ignore[arg-type]
    assert len(records["told"]) == len(workload.jobs) and all(r.tasks for r in records["told"])
    for name, recs in records.items():
        replay = dataclasses.replace(workload, name=name, jobs=apps_jobs(recs))
        results[name] = build_simulation("capacity", replay).run()
    for figure in ("makespan_s", "mean_jct_s"):
        assert off(results, "told", figure) < off(results, "bare", figure), figure
    assert docs_row(f"capacity, {spec}") == cells(results, "told", "bare")
