"""Experiments as commands (`amtuner bench …`): the paper's grid, the suite, Hadoop's own RM, the
soak and the cost of a cycle. What their parsers need lives here, so building the command line
loads no simulator."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[2] / "tests" / "data" / "shared"
"""The fixtures copied into the repository (tests/data/shared, each with its source and licence)."""

SUITE_SEEDS = 10
"""Seeds per generated workload of the suite (each seed jitters job and task durations), as the
paper bench's; traces run once, since they are the data. Fewer seeds let a row's mean move
with the seeds drawn as much as the differences the suite is read for (measured:
docs/policies.md, "Each generated workload runs 10 seeds")."""


REAL_RUNS = 3
"""Real runs per row, compared by their mean: one real run of the batch differs from the next
by as much as the simulator differs from either. The FairScheduler's `paper` row took 66.7,
70.9 and 76.4 s in three runs (10 AMs at once in the first, 11 in the others), fixed 0.6 67.0
and 71.9 s, where the simulated seeds' mean is 74.0 and 71.6 s."""


ZOO_DEVELOPMENT_SEEDS = range(0, 1000)
"""Case seeds of `amtuner bench zoo` for developing a policy: run it on these as often as you
like, and judge it on seeds from `ZOO_JUDGING_FIRST_SEED` up, which no one tuned it on."""
ZOO_JUDGING_FIRST_SEED = 10_000
ZOO_RUN_SEEDS = 3
"""Run seeds per zoo case, each jittering task durations: three give a standard error of the
paired ratio to judge a difference from the default by."""


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number of at least ``minimum`` (seeds, counts, nodes),
    refused with what it is not."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}")
        return value

    return parse


def am_share(text: str) -> float:
    """An argparse ``type`` for an AM share, in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not an AM share in (0, 1]")
    return value


def plot_file(text: str) -> Path:
    """An argparse ``type`` for ``--plot``: refused before hours of simulation if the chart
    could not be drawn, or not written there (`output_file`)."""
    if importlib.util.find_spec("matplotlib") is None:
        raise argparse.ArgumentTypeError(
            "needs matplotlib, which is not installed: pip install 'amtuner[plot]'"
        )
    return output_file(text)


def output_file(text: str) -> Path:
    """An argparse ``type`` for ``--json`` and ``--plot``: refused before hours of
    simulation where nothing could be written (a directory, no such directory, one this user
    cannot write in)."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory")
    where = path.parent
    if not where.is_dir():
        raise argparse.ArgumentTypeError(f"no directory {where} to write {path.name} in")
    if not os.access(where, os.W_OK | os.X_OK):
        raise argparse.ArgumentTypeError(f"cannot write in {where}")
    return path


def add_json_argument(p: argparse.ArgumentParser) -> None:
    """Every bench's ``--json``: its summary, the document docs/ records."""
    p.add_argument(
        "--json", type=output_file, metavar="FILE", help="write the results as JSON here"
    )


def write_json(path: Path, doc: Any) -> bool:
    """``doc`` written to ``path`` whole or not at all (`replace_file`: a disk that fills
    mid-write leaves the last run's results as they were); False, the reason on stderr, when
    the disk refuses, so the caller can exit non-zero after a run whose table it printed.
    Imported here: the executor package brings requests, which building the parser must not."""
    from amtuner.executor.errors import ExecutorError
    from amtuner.executor.files import replace_file

    try:
        replace_file(path, (json.dumps(doc, indent=2) + "\n").encode(), durable=False)
    except ExecutorError as exc:  # the disk refused, or a FIFO or device is in the way
        print(f"amtuner bench: {exc}", file=sys.stderr)
        return False
    print(f"wrote {path}")
    return True
