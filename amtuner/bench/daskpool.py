"""The replays on a Dask cluster the user names, in place of this machine's process pool.

`run_all` is the one seam: the same work units (`amtuner.advise.Replay`), the same function,
the same results by input, whichever runs them; each run is deterministic per seed, so where it
ran does not change a figure. This module only connects (`connect`) and maps (`run`), through
Dask's own client (``distributed.Client``, the ``dask`` extra); it schedules nothing itself.

The address is the scheduler's, as Dask's ``Client(address)`` takes it (``tcp://host:8786``);
none given, Dask's own setting (``DASK_SCHEDULER_ADDRESS``, its config's ``scheduler-address``).
Each worker imports amtuner, which must be installed there at the same version (with the ``fast``
extra its simulator core is compiled on first use); a replay is pure Python holding the GIL, so
a worker per core with one thread each (``dask worker --nthreads 1 --nworkers N``) uses them all.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from distributed import Client

T = TypeVar("T")
R = TypeVar("R")

CONNECT_TIMEOUT_S = 10.0
"""How long to wait for the scheduler before saying it cannot be reached: before any replay."""
INSTALL = "pip install 'amtuner[dask]'"


class EngineError(Exception):
    """The cluster cannot be used: the extra is missing or the scheduler does not answer; the
    message says which and what to do."""


def connect(address: str | None, trace: Path) -> Client:
    """A client of the scheduler at ``address`` (None: Dask's configured one) whose every
    worker can read ``trace``: a replay reads it where it runs."""
    try:
        import dask.config
        from distributed import Client
    except ImportError:
        raise EngineError(f"--dask needs the dask extra, not installed: {INSTALL}") from None
    address = address or dask.config.get("scheduler-address", None)
    if not address:
        raise EngineError(
            "--dask: no scheduler address given, and DASK_SCHEDULER_ADDRESS is not set"
        )
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise EngineError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    found: dict[str, bool] = client.run(os.path.isfile, str(trace))
    missing = sorted(worker for worker, ok in found.items() if not ok)
    if found and not missing:
        return client
    client.close()
    if not found:
        raise EngineError(f"the Dask scheduler at {address} has no worker")
    raise EngineError(
        f"{trace} is not a file on the Dask worker(s) {', '.join(missing)}: a replay reads "
        "its trace where it runs (a shared file system, or a copy on each)"
    )


def run(
    client: Client,
    fn: Callable[[T], R],
    todo: Sequence[T],
    progress: Callable[[Iterable[Any], int], Iterable[Any]] | None = None,
) -> dict[T, R]:
    """``fn`` over ``todo`` as one Dask task each, results by input. ``pure=False``: two equal
    inputs are still two runs asked for, as in the local pool."""
    from distributed import as_completed

    futures = client.map(fn, todo, pure=False)
    if progress:
        for _ in progress(as_completed(futures, loop=client.loop), len(todo)):
            pass
    results = client.gather(futures)
    return dict(zip(todo, results, strict=True))
