"""Record what a real RM answers, as test data: ``python -m amtuner.realyarn.capture DIR``.

For each scheduler: a cluster of two 8 GB / 8-vcore NodeManagers, A set so exactly three 1 GB AMs
fit, five apps submitted (three run, two wait behind the AM limit); then the REST responses and
the ``/cluster`` page the monitor reads are saved byte for byte, so the monitor's tests meet what
Hadoop really emits even where no Java runs.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import requests

from amtuner.model import SchedulerKind
from amtuner.realyarn import apps
from amtuner.realyarn.cluster import ClusterSpec, RealRM

PAGES = {
    "info.json": "/ws/v1/cluster/info",
    "metrics.json": "/ws/v1/cluster/metrics",
    "scheduler.json": "/ws/v1/cluster/scheduler",
    "cluster.html": "/cluster",
}
RUNNING, WAITING = 3, 2


def capture(kind: SchedulerKind, out: Path) -> None:
    spec = ClusterSpec(kind, am_share=RUNNING * 1024 / (2 * 8192))
    with tempfile.TemporaryDirectory() as work, RealRM(spec, Path(work)) as rm:
        session = requests.Session()
        for _ in range(RUNNING + WAITING):
            apps.submit(session, rm.url, apps.RealJob(), str(rm.markers))
        deadline = time.monotonic() + 60
        while True:
            m = session.get(f"{rm.url}/ws/v1/cluster/metrics", timeout=10).json()
            counts = (m["clusterMetrics"]["appsRunning"], m["clusterMetrics"]["appsPending"])
            if counts == (RUNNING, WAITING):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"not {RUNNING} running and {WAITING} waiting in 60 s: {m}")
            time.sleep(0.5)
        out.mkdir(parents=True, exist_ok=True)
        for name, path in PAGES.items():
            r = session.get(f"{rm.url}{path}", timeout=10)
            r.raise_for_status()
            (out / name).write_bytes(r.content)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m amtuner.realyarn.capture DIR", file=sys.stderr)
        return 2
    for kind in SchedulerKind:
        capture(kind, Path(argv[0]) / str(kind))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
