"""amtuner's own commands as processes beside a real cluster (`amtuner.bench.real`): the daemon
and the recorder run as an operator runs them, each its own process with its output in a log."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

RECORD_INTERVAL_S = 2.0
"""`amtuner record`'s poll beside a real run: the batch's tasks last seconds, and an app's AM
size can be read only while it runs (`amtuner.record`)."""


def start(log_file: Path, *argv: str) -> subprocess.Popen[bytes]:
    """``amtuner ARGV`` as its own process, its output in ``log_file``."""
    with log_file.open("w") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "amtuner", *argv], stdout=log, stderr=subprocess.STDOUT
        )


def wait_recorded(trace: Path, ids: set[str], recorder: subprocess.Popen[bytes]) -> None:
    """Until the recorder has written every app of ``ids`` (it polls every
    `RECORD_INTERVAL_S`); a recorder that exits or lags by more than ten polls is an error."""
    from amtuner.apptrace import read_trace

    deadline = time.monotonic() + 10 * RECORD_INTERVAL_S
    while True:
        left = ids - ({a.id for a in read_trace(trace)[1]} if trace.exists() else set())
        if not left:
            return
        if recorder.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(
                f"amtuner record did not record {len(left)} of the batch's apps into {trace} "
                f"(exit {recorder.returncode}; its log is beside it)"
            )
        time.sleep(0.5)


def record(log_file: Path, config: Path, trace: Path) -> subprocess.Popen[bytes]:
    """`amtuner record` into ``trace``, polling every `RECORD_INTERVAL_S`."""
    return start(log_file, "record", "--config", str(config), "--out", str(trace),
                 "--interval", str(RECORD_INTERVAL_S))  # fmt: skip
