"""Hadoop SLS's synthetic workloads (``-tracetype SYNTH``), drawn as `SynthTraceJobProducer` does.

A SYNTH file does not list jobs: it describes how to draw them (``syn.json``, ``syn_generic.json``
and ``syn_stream.json`` in hadoop-sls's test resources). This reader draws them the way the
classes of ``org.apache.hadoop.yarn.sls.synthetic`` do, from a `random.Random` seeded with the
file's ``rand_seed`` (or the spec's ``seed=``):

* **jobs**: ``num_jobs`` times, a workload picked by ``workload_weight``
  (`SynthUtils.getWeighted`: the first index whose running sum of weights exceeds a uniform
  draw times their total), its submission time from its ``time_distribution``
  (`Workload.generateSubmissionTime`: a bucket picked by ``weight``, then a whole second
  uniform in [its ``time``, the next bucket's ``time``), or its ``time`` for the last bucket),
  its queue ``queue_name``, a job class picked by ``class_weight``, the user its ``user_name``;
* **a job** (`SynthJob`): per task definition a count (`Sample.getInt`, rounded half up), one
  memory and vcores for all its tasks (rounded, at least 1024 MB and 1 vcore: `SynthJob`'s
  ``MIN_MEMORY``, ``MIN_VCORES``) and a time per task, rounded to a whole millisecond: SLS
  hands it unchanged to the container as its lifetime (`AMDefinitionSynth.getTaskContainers`),
  which SLS counts in milliseconds (``syn_stream.json``'s 60000 is a minute) while ``duration``
  and the submission times are seconds (`SynthJob` converts them with ``SECONDS``);
* **a value** (`SynthTraceJobProducer.Sample`): ``{"val"}`` a constant; ``{"val", "std"}`` a
  draw from ``dist`` ``LOGNORM`` (the default: log-normal with that mean and standard
  deviation, σ² = ln(1 + std²/val²), μ = ln(val) − σ²/2, `SynthUtils.getLogNormalDist`) or
  ``NORM``, with a ``std`` of 0 taken as val/6; ``{"discrete", "weights"}`` one of the listed
  values, picked by weight (uniform without weights);
* the old flat form (``mtasks_avg``, ``mtime_stddev``, ``map_max_memory_avg`` …, as
  ``syn.json``) is converted as `SynthTraceJobProducer.validateJobDef` converts it: maps and
  reduces from the ``*_avg``/``*_stddev`` pairs as log-normal draws;
* the cluster: ``num_nodes`` nodes of SLS's default 10240 MB and 10 vcores; AMs of SLS's
  default 1024 MB and 1 vcore; submissions shifted so that the first is at 0, as
  `AMDefinitionSynth` subtracts the first job's start.

Jobs of ``type`` ``mapreduce`` are MapReduce jobs as `load_sls` replays SLS's (`MRAMSimulator`:
reduces once every map is done; task lengths as drawn, with no CPU or disk demand, so node
sharing never stretches them). A ``stream`` job (`StreamAMSimulator`) keeps its containers
running for its drawn ``duration`` from its start, asking again for each one that ends: it is
modelled as one task per stream lasting that ``duration``, which leaves out the heartbeat or two
a stream waits to be placed again, and holds a stream that started late past the AM's end.

Not modelled, and why:

* **reservations**: a job that draws a deadline (``reservation``/``chance_of_reservation``,
  ``deadline_factor``) is submitted by SLS with a reservation, when the RM has a reservation
  system; the simulated RM has none, so every job is submitted as one without. The values are
  still checked, as Hadoop reads them;
* the draws themselves: Hadoop's come from ``java.util.Random`` and commons-math's Well19937c
  streams, so the same seed draws other jobs here, from the same distributions;
* ``priority``, ``execution_type`` (an ``OPPORTUNISTIC`` task is refused), ``params``,
  ``nodes_per_rack`` and the racks and hosts SLS picks for each container.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from amtuner.model import queue_path
from amtuner.sim.spec import NO_USER, JobSpec, TaskGroup, TaskKind, Workload
from amtuner.sim.workload.costs import AM_STARTUP_S, AM_TEARDOWN_S, PAPER_NODE_DISK_MBPS
from amtuner.sim.workload.sls import (
    SLS_AM_MEMORY_MB,
    SLS_AM_VCORES,
    SLS_NODE_MEMORY_MB,
    SLS_NODE_VCORES,
    SLS_SLOWSTART,
)
from amtuner.sim.workload.tracefile import WorkloadError, integer, json_objects, number

SYNTH_MIN_MEMORY_MB = 1024
"""`SynthJob.MIN_MEMORY`: a task asks for at least this."""
SYNTH_MIN_VCORES = 1
"""`SynthJob.MIN_VCORES`."""
SYNTH_OPTIONS = ("seed", "jobs", "nodes")
"""What a ``synth:PATH@KEY=N,…`` spec may set in place of the file's ``rand_seed``,
``num_jobs`` and ``num_nodes``."""
_OLD_TASKS = (
    ("map", "mtasks", "mtime", "map_max_memory", "map_max_vcores", "map_execution_type"),
    ("reduce", "rtasks", "rtime", "reduce_max_memory", "reduce_max_vcores",
     "reduce_execution_type"),
)  # fmt: skip
"""The old flat form's fields per task type, as `validateJobDef` converts them."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One `SynthTraceJobProducer.Sample`: a constant, a distribution or a discrete choice."""

    val: float | None = None
    std: float | None = None
    dist: str = "LOGNORM"
    discrete: tuple[float, ...] = ()
    weights: tuple[float, ...] = ()

    def draw(self, rng: random.Random) -> float:
        if self.discrete:
            return self.discrete[weighted(self.weights, rng)]
        assert self.val is not None
        if self.std is None:
            return self.val
        std = self.std or self.val / 6  # SynthUtils: a missing (0) std is the mean's sixth
        if self.dist == "NORM":
            return rng.normalvariate(self.val, std)
        sigma2 = math.log1p(std * std / (self.val * self.val))
        return rng.lognormvariate(math.log(self.val) - sigma2 / 2, math.sqrt(sigma2))

    def draw_long(self, rng: random.Random) -> int:
        """`Sample.getLong`: Java's ``Math.round``, half up."""
        return math.floor(self.draw(rng) + 0.5)


@dataclass(frozen=True, slots=True)
class TaskDef:
    kind: str
    count: Sample
    time: Sample
    memory: Sample
    vcores: Sample


@dataclass(frozen=True, slots=True)
class JobClass:
    name: str
    user: str
    weight: float
    am_type: str
    duration: Sample
    tasks: tuple[TaskDef, ...]


@dataclass(frozen=True, slots=True)
class SynthWorkload:
    queue: str
    weight: float
    classes: tuple[JobClass, ...]
    times: tuple[int, ...]
    time_weights: tuple[float, ...]


def weighted(weights: tuple[float, ...], rng: random.Random) -> int:
    """`SynthUtils.getWeighted`: the first index whose running sum exceeds a uniform draw
    over the total (the weights are checked to have a positive total)."""
    target = rng.random() * sum(weights)
    running = 0.0
    for i, w in enumerate(weights):
        running += w
        if running > target:
            return i
    return len(weights) - 1  # only by rounding: the draw is below the total


def parse_synth_spec(spec: str) -> tuple[str, dict[str, int]]:
    """(path, options) of the ``PATH[@KEY=N,…]`` part of a ``synth:`` spec."""
    path, at, opts = spec.rpartition("@")
    if not at or "=" not in opts:
        return spec, {}
    options: dict[str, int] = {}
    for item in opts.split(","):
        key, _, value = item.partition("=")
        if key not in SYNTH_OPTIONS or not (value.isascii() and value.isdigit()):
            raise WorkloadError(
                f"workload spec 'synth:{spec}': {item!r} is not one of "
                f"{', '.join(k + '=N' for k in SYNTH_OPTIONS)} (N a decimal integer)"
            )
        if key in options:
            raise WorkloadError(f"workload spec 'synth:{spec}': {key} given twice")
        options[key] = int(value)
    if options.get("jobs", 1) < 1 or options.get("nodes", 1) < 1:
        raise WorkloadError(f"workload spec 'synth:{spec}': jobs and nodes must be >= 1")
    return path, options


def load_synth(spec: str) -> Workload:
    """The jobs a SYNTH file draws (module docstring), with ``@seed=``, ``jobs=``, ``nodes=``
    in place of its ``rand_seed``, ``num_jobs`` and ``num_nodes``. The spec is the data: the
    same spec always draws the same jobs."""
    path, options = parse_synth_spec(spec)
    objects = list(json_objects(path))
    if len(objects) != 1 or not isinstance(objects[0][1], dict):
        raise WorkloadError(f"{path}: expected one JSON object, an SLS SYNTH description")
    line, top = objects[0]
    where = f"{path}:{line}"
    if "workloads" not in top:
        raise WorkloadError(f"{where}: no workloads: not an SLS SYNTH description")
    workloads = _workloads(top["workloads"], where)
    seed = options.get("seed", integer(top, "rand_seed", 0, where, minimum=-(2**63)))
    n_jobs = options.get("jobs", integer(top, "num_jobs", None, where, minimum=1))
    nodes = options.get("nodes", integer(top, "num_nodes", None, where, minimum=1))
    rng = random.Random(seed)
    workload_weights = tuple(w.weight for w in workloads)
    drawn = []
    for _ in range(n_jobs):
        wl = workloads[weighted(workload_weights, rng)]
        submit_s = _submission_s(wl, rng)
        drawn.append((submit_s, wl, wl.classes[weighted(tuple(c.weight for c in wl.classes), rng)]))
    drawn.sort(key=lambda d: d[0])  # stable: SynthTraceJobProducer's queue by start time
    first = drawn[0][0]
    jobs = tuple(
        _job(f"{jc.name}_{i:06d}", t - first, wl.queue, jc, rng, where)
        for i, (t, wl, jc) in enumerate(drawn)
    )
    name = f"synth:{Path(path).name}@seed={seed},jobs={n_jobs},nodes={nodes}"
    return Workload(
        name=name,
        jobs=jobs,
        nodes=nodes,
        node_memory_mb=SLS_NODE_MEMORY_MB,
        node_vcores=SLS_NODE_VCORES,
        node_disk_mbps=PAPER_NODE_DISK_MBPS,
        queues=tuple(dict.fromkeys(queue_path(w.queue) for w in workloads)),
    )


def _submission_s(wl: SynthWorkload, rng: random.Random) -> int:
    i = weighted(wl.time_weights, rng)
    start = wl.times[i]
    end = wl.times[min(i + 1, len(wl.times) - 1)]
    return start + (rng.randrange(end - start) if end > start else 0)


def _job(
    job_id: str, submit_s: float, queue: str, jc: JobClass, rng: random.Random, where: str
) -> JobSpec:
    duration_s = jc.duration.draw_long(rng)
    groups: dict[TaskKind, list[TaskGroup]] = {"map": [], "reduce": []}
    for t in jc.tasks:
        count = t.count.draw_long(rng)
        memory = max(t.memory.draw_long(rng), SYNTH_MIN_MEMORY_MB)
        vcores = max(t.vcores.draw_long(rng), SYNTH_MIN_VCORES)
        if count <= 0:
            continue
        if jc.am_type == "stream":  # each stream held for the job's duration (module docstring)
            times_s = {max(duration_s, 1) * 1.0: count}
        else:
            times_s = {}
            for _ in range(count):
                ms = max(t.time.draw_long(rng), 1)  # a non-positive NORM draw: the shortest
                times_s[ms / 1000] = times_s.get(ms / 1000, 0) + 1
        kind: TaskKind = "reduce" if t.kind == "reduce" else "map"
        groups[kind] += [
            TaskGroup(kind=kind, count=n, memory_mb=memory, vcores=vcores, duration_s=s,
                      cpu_cores=0.0, disk_mbps=0.0)
            for s, n in times_s.items()
        ]  # fmt: skip
    if not groups["map"]:
        if not groups["reduce"]:
            raise WorkloadError(
                f"{where}: job class {jc.name!r} drew no task for {job_id} (every count "
                "rounded to 0): raise its task counts"
            )
        # No maps: MRAMSimulator asks for the reduces at once, as this model does for maps.
        groups["map"] = [_as_kind(g, "map") for g in groups["reduce"]]
        groups["reduce"] = []
    return JobSpec(
        job_id=job_id,
        submit_s=float(submit_s),
        queue=queue,
        maps=tuple(groups["map"]),
        reduces=tuple(groups["reduce"]),
        user=jc.user,
        profile="synth",
        am_memory_mb=SLS_AM_MEMORY_MB,
        am_vcores=SLS_AM_VCORES,
        am_startup_s=AM_STARTUP_S,
        am_teardown_s=AM_TEARDOWN_S,
        slowstart=SLS_SLOWSTART,
    )


def _as_kind(g: TaskGroup, kind: TaskKind) -> TaskGroup:
    return TaskGroup(kind, g.count, g.memory_mb, g.vcores, g.duration_s, g.cpu_cores, g.disk_mbps)


# ---------------------------------------------------------------------------- reading the file


def _list(obj: dict[str, Any], key: str, where: str) -> list[Any]:
    value = obj.get(key)
    if not isinstance(value, list) or not value:
        raise WorkloadError(f"{where}: {key} must be a non-empty list")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WorkloadError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _weight(obj: dict[str, Any], key: str, where: str) -> float:
    w = number(obj, key, 0.0, where)  # Jackson leaves a missing double at 0
    if w < 0:
        raise WorkloadError(f"{where}: {key} must be >= 0, got {w:g}")
    return w


def _check_total(weights: tuple[float, ...], what: str, where: str) -> None:
    if sum(weights) <= 0:
        raise WorkloadError(f"{where}: the {what} weights sum to 0: nothing can be picked")


def _workloads(value: Any, where: str) -> tuple[SynthWorkload, ...]:
    if not isinstance(value, list) or not value:
        raise WorkloadError(f"{where}: workloads must be a non-empty list")
    out = []
    for i, raw in enumerate(value):
        w_where = f"{where}: workloads[{i}]"
        wl = _object(raw, w_where)
        queue = wl.get("queue_name")
        if not isinstance(queue, str) or not queue:
            raise WorkloadError(f"{w_where}: queue_name must be a non-empty string")
        classes = tuple(
            _job_class(_object(c, f"{w_where}.job_classes[{k}]"), f"{w_where}.job_classes[{k}]")
            for k, c in enumerate(_list(wl, "job_classes", w_where))
        )
        buckets = [
            _object(b, f"{w_where}.time_distribution[{k}]")
            for k, b in enumerate(_list(wl, "time_distribution", w_where))
        ]
        times = tuple(
            integer(b, "time", None, f"{w_where}.time_distribution[{k}]", minimum=0)
            for k, b in enumerate(buckets)
        )
        time_weights = tuple(
            _weight(b, "weight", f"{w_where}.time_distribution[{k}]") for k, b in enumerate(buckets)
        )
        _check_total(time_weights, "time_distribution", w_where)
        _check_total(tuple(c.weight for c in classes), "class", w_where)
        out.append(
            SynthWorkload(queue, _weight(wl, "workload_weight", w_where), classes, times,
                          time_weights)
        )  # fmt: skip
    _check_total(tuple(w.weight for w in out), "workload", where)
    return tuple(out)


def _job_class(jc: dict[str, Any], where: str) -> JobClass:
    name = jc.get("class_name")
    if not isinstance(name, str) or not name:
        raise WorkloadError(f"{where}: class_name must be a non-empty string")
    user = jc.get("user_name") or NO_USER
    if not isinstance(user, str):
        raise WorkloadError(f"{where}: user_name must be a string")
    if "tasks" not in jc:  # the old flat form, converted as validateJobDef does
        am_type = "mapreduce"
        duration = _old_sample(jc, "dur", where)
        _old_sample(jc, "deadline_factor", where)
        _chance(Sample(number(jc, "chance_of_reservation", 0.0, where)), where)
        tasks = tuple(
            TaskDef(kind, _old_sample(jc, n, where), _old_sample(jc, t, where),
                    _old_sample(jc, m, where), _old_sample(jc, v, where))
            for kind, n, t, m, v, e in _OLD_TASKS
            if _guaranteed(jc.get(e), f"{where}: {e}")
        )  # fmt: skip
    else:
        raw_type = jc.get("type")
        if raw_type not in ("mapreduce", "stream"):
            raise WorkloadError(
                f"{where}: type {raw_type!r} not supported (mapreduce or stream: the AM "
                "simulators SLS runs for synthetic jobs)"
            )
        am_type = str(raw_type)
        duration = _sample(jc, "duration", where)
        _sample(jc, "deadline_factor", where)
        _chance(_sample(jc, "reservation", where), where)
        tasks = tuple(
            _task(_object(t, f"{where}.tasks[{k}]"), am_type, f"{where}.tasks[{k}]")
            for k, t in enumerate(_list(jc, "tasks", where))
        )
    return JobClass(name, user, _weight(jc, "class_weight", where), am_type, duration, tasks)


def _task(t: dict[str, Any], am_type: str, where: str) -> TaskDef:
    kind = t.get("type")
    kinds = ("map", "reduce") if am_type == "mapreduce" else ("stream",)
    if kind not in kinds:
        raise WorkloadError(
            f"{where}: task type {kind!r}: a {am_type} job's tasks are {' or '.join(kinds)}"
        )
    _guaranteed(t.get("execution_type"), f"{where}: execution_type")
    return TaskDef(
        str(kind), _sample(t, "count", where), _sample(t, "time", where),
        _sample(t, "max_memory", where), _sample(t, "max_vcores", where),
    )  # fmt: skip


def _guaranteed(value: Any, where: str) -> bool:
    if value not in (None, "GUARANTEED"):
        raise WorkloadError(f"{where} {value!r}: only GUARANTEED containers are modelled")
    return True


def _chance(s: Sample, where: str) -> None:
    if s.discrete or s.std is not None or s.val is None or not 0 <= s.val <= 1:
        raise WorkloadError(f"{where}: the chance of a reservation must be a constant in [0, 1]")


def _old_sample(jc: dict[str, Any], stem: str, where: str) -> Sample:
    """An old-form ``STEM_avg``/``STEM_stddev`` pair: a log-normal draw, whose mean must be
    positive (SynthUtils makes no distribution for a mean <= 0, and SLS fails on its first
    draw)."""
    avg = number(jc, f"{stem}_avg", None, where)
    if avg <= 0:
        raise WorkloadError(f"{where}: {stem}_avg must be > 0, got {avg:g}")
    return Sample(avg, _non_negative(number(jc, f"{stem}_stddev", 0.0, where), stem, where))


def _non_negative(std: float, what: str, where: str) -> float:
    if std < 0:
        raise WorkloadError(f"{where}: {what}: std must be >= 0, got {std:g}")
    return std


def _sample(obj: dict[str, Any], key: str, where: str) -> Sample:
    """A `Sample` object, with the checks its constructor makes and the ones its first draw
    would fail on (a distribution of mean <= 0 is never made: SynthUtils returns null)."""
    raw = obj.get(key)
    where = f"{where}: {key}"
    if not isinstance(raw, dict):
        raise WorkloadError(f'{where}: expected a sample object ({{"val": …}}, got {raw!r})')
    has = {k for k in ("val", "std", "dist", "discrete", "weights") if raw.get(k) is not None}
    if "val" in has:
        val = number(raw, "val", None, where)
        if "std" not in has:
            if has - {"val"}:
                raise WorkloadError(f"{where}: a constant (val without std) takes nothing else")
            return Sample(val)
        if has & {"discrete", "weights"}:
            raise WorkloadError(f"{where}: a distribution (val, std) takes no discrete/weights")
        dist = raw.get("dist", "LOGNORM")
        if dist not in ("LOGNORM", "NORM"):
            raise WorkloadError(f"{where}: dist {dist!r} is neither LOGNORM nor NORM")
        if val <= 0:
            raise WorkloadError(f"{where}: a distribution's val must be > 0, got {val:g}")
        return Sample(val, _non_negative(number(raw, "std", None, where), key, where), dist)
    discrete = raw.get("discrete")
    if not isinstance(discrete, list) or not discrete:
        raise WorkloadError(f"{where}: needs val, or a non-empty discrete list")
    values = tuple(number({"v": v}, "v", None, f"{where}.discrete") for v in discrete)
    weights = raw.get("weights") or [1.0] * len(values)
    if not isinstance(weights, list) or len(weights) != len(values):
        raise WorkloadError(f"{where}: weights must list one weight per discrete value")
    ws = tuple(_weight({"w": w}, "w", f"{where}.weights") for w in weights)
    _check_total(ws, "discrete", where)
    return Sample(discrete=values, weights=ws)
