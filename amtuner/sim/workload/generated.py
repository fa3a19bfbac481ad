"""A generated day of Facebook-like jobs, as heavy as SWIM's FB-2010 traces.

The FB-2009 day shipped with the tests is 5,894 jobs and about 206,000 maps; the FB-2010 traces
SWIM describes are about 25,000 jobs and 8 million maps a day (Chen, Alspaugh, Katz, "Interactive
Analytical Processing in Big Data Systems: A Cross-Industry Study of MapReduce Workloads",
VLDB 2012), but their per-job rows are not public. This module draws a day of that class so
that the simulator's speed can be measured on it (`amtuner bench speed`).

Spec: ``day:JOBS,MAPS`` or ``day:JOBS,MAPS,SEED`` (plain decimal integers, SEED 0 when left out),
e.g. ``day:25000,8000000``. The same spec always gives the same jobs: the spec is the data, like
a trace file, so `load_workload`'s ``seed`` (which jitters the paper groups) does not change it;
a simulation's own seed still varies task durations as for any workload.

How a day is drawn (one `random.Random` seeded from the spec):

* sizes: every job has one map, and the other ``MAPS - JOBS`` maps are shared out in proportion
  to a log-normal weight per job (σ = `DAY_SIZE_SIGMA`, clipped at `DAY_SIZE_CLIP` σ) by largest
  remainder, so the day has exactly MAPS maps. For ``day:25000,8000000`` that is a third of the
  jobs with one map, half with at most three, the largest about 250,000, and three quarters of
  the maps in the largest 1 % of the jobs: the heavy tail Chen et al. report (most jobs small,
  most bytes in a few large ones);
* input bytes: what gives that many 128 MB splits, the last split a uniform fraction of a block;
* shuffle: none for `DAY_MAP_ONLY` of the jobs (three quarters of the FB-2009 day's jobs shuffle
  nothing), else a log-normal multiple of the input (median `DAY_SHUFFLE_RATIO`); output a
  log-normal multiple of the shuffle, or of the input for a map-only job (median
  `DAY_OUTPUT_RATIO`). These ratios are chosen, not fitted;
* submissions uniform over 24 hours, job ids ``day00000`` … in submission order;
* every task quantity from the byte counts by `swim_job`, the rules of the SWIM reader, on SWIM's
  600-node cluster (`swim_workload`).
"""

from __future__ import annotations

import math
import random

from amtuner.sim.spec import Workload
from amtuner.sim.workload.swim import SWIM_BLOCK_BYTES, swim_job, swim_workload
from amtuner.sim.workload.tracefile import WorkloadError

DAY_S = 86_400.0
DAY_SIZE_SIGMA = 3.4
"""σ of the log-normal job weights: exp(σ²/2) ≈ 320, FB-2010's mean maps a job, so the median
weight gets a map or two beyond the job's first."""
DAY_SIZE_CLIP = 3.5
"""The weights' normal deviates are clipped at 3.5: unclipped, the largest of 25,000 draws can
take most of the day's maps by itself, and the day would measure one job instead of a mix."""
DAY_MAP_ONLY = 0.75
DAY_SHUFFLE_RATIO = 0.5
DAY_OUTPUT_RATIO = 0.3
RATIO_SIGMA = 1.0
"""Spread (log-normal σ) of the shuffle and output ratios around their medians."""


def parse_day(spec: str) -> tuple[int, int, int]:
    """(jobs, maps, seed) of the ``JOBS,MAPS[,SEED]`` part of a ``day:`` spec."""
    parts = spec.split(",")
    if len(parts) not in (2, 3) or not all(p.isdigit() and p.isascii() for p in parts):
        raise WorkloadError(
            f"workload spec 'day:{spec}': expected day:JOBS,MAPS[,SEED] (decimal integers), "
            "e.g. day:25000,8000000"
        )
    jobs, maps = int(parts[0]), int(parts[1])
    seed = int(parts[2]) if len(parts) == 3 else 0
    if jobs < 1:
        raise WorkloadError(f"workload spec 'day:{spec}': at least one job")
    if maps < jobs:
        raise WorkloadError(
            f"workload spec 'day:{spec}': {maps} maps for {jobs} jobs; every job has one map"
        )
    return jobs, maps, seed


def load_day(spec: str) -> Workload:
    """The generated day of a ``JOBS,MAPS[,SEED]`` spec (see the module docstring)."""
    n_jobs, n_maps, seed = parse_day(spec)
    jobs = tuple(swim_job(*row) for row in day_rows(n_jobs, n_maps, seed))
    return swim_workload(f"day:{n_jobs},{n_maps},{seed}", jobs)


def day_rows(n_jobs: int, n_maps: int, seed: int) -> list[tuple[str, float, int, int, int]]:
    """The day as a SWIM trace has it: (job id, submit s, input, shuffle, output bytes) per job,
    in submission order; `load_day` turns each row into a job exactly as `load_swim` would."""
    rng = random.Random(f"day:{n_jobs},{n_maps},{seed}")
    weights = [math.exp(DAY_SIZE_SIGMA * min(rng.gauss(), DAY_SIZE_CLIP)) for _ in range(n_jobs)]
    sizes = _shares(n_maps - n_jobs, weights)
    submits = sorted(rng.random() * DAY_S for _ in range(n_jobs))
    rows = []
    for i, (extra, submit_s) in enumerate(zip(sizes, submits, strict=True)):
        input_b = extra * SWIM_BLOCK_BYTES + 1 + int(rng.random() * SWIM_BLOCK_BYTES)
        if rng.random() < DAY_MAP_ONLY:
            shuffle_b = 0
            output_b = int(input_b * rng.lognormvariate(math.log(DAY_OUTPUT_RATIO), RATIO_SIGMA))
        else:
            ratio = rng.lognormvariate(math.log(DAY_SHUFFLE_RATIO), RATIO_SIGMA)
            shuffle_b = max(1, int(input_b * ratio))
            output_b = int(shuffle_b * rng.lognormvariate(math.log(DAY_OUTPUT_RATIO), RATIO_SIGMA))
        rows.append((f"day{i:05d}", round(submit_s, 3), input_b, shuffle_b, output_b))
    return rows


def _shares(total: int, weights: list[float]) -> list[int]:
    """``total`` split in proportion to ``weights`` by largest remainder: sums to ``total``
    exactly; ties go to the earlier index."""
    scale = total / math.fsum(weights)
    quotas = [w * scale for w in weights]
    shares = [int(q) for q in quotas]
    left = total - sum(shares)
    by_remainder = sorted(range(len(quotas)), key=lambda i: shares[i] - quotas[i])
    for i in by_remainder[:left]:
        shares[i] += 1
    return shares
