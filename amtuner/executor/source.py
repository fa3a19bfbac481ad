"""Where the scheduler configuration amtuner tunes comes from: a file, or the RM's store.

A CapacityScheduler whose configuration lives in its mutable store
(``yarn.scheduler.configuration.store.class``, YARN-5734) has no file to edit: its
``GET /ws/v1/cluster/scheduler-conf`` answers in the capacity-scheduler.xml shape, so the same
editor reads it and `RestRefresher` PUTs the change back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from amtuner.executor.errors import ExecutorError
from amtuner.executor.refresh import SCHEDULER_CONF_PATH, Refresher, RestRefresher
from amtuner.executor.xmledit import SchedulerFile
from amtuner.model import SchedulerKind

NO_FILE = (
    "scheduler.config_file is not set, and only a CapacityScheduler with refresh.method rest "
    "can be tuned without it"
)


def open_config(
    config_file: Path | None,
    kind: SchedulerKind,
    refresher: Refresher,
    read_file: Callable[[Path, SchedulerKind], SchedulerFile] = SchedulerFile.read,
) -> tuple[RestRefresher | None, SchedulerFile]:
    """The configuration to edit, and the refresher that also holds it when there is no file
    (None: the file is edited and then refreshed)."""
    if config_file is not None:
        return None, read_file(config_file, kind)
    if isinstance(refresher, RestRefresher) and kind is SchedulerKind.CAPACITY:
        return refresher, SchedulerFile(Path(SCHEDULER_CONF_PATH), kind, refresher.fetch())
    raise ExecutorError(NO_FILE)
