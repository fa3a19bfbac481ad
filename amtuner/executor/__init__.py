"""Apply an AM-share change to the scheduler file and make the RM load it, safely."""

from amtuner.executor.errors import (
    ConcurrentEditError,
    Disagree,
    ExecutorError,
    NotRegularFileError,
    RefreshError,
    StoreChanged,
    UnsafeXMLError,
    WriteError,
)
from amtuner.executor.files import restore, write_atomically
from amtuner.executor.refresh import (
    CommandRefresher,
    NoRefresh,
    Refresher,
    RestRefresher,
    apply_edit,
    make_refresher,
)
from amtuner.executor.xmledit import Edit, SchedulerFile, capacity_key, format_value

__all__ = [
    "CommandRefresher",
    "ConcurrentEditError",
    "Disagree",
    "Edit",
    "ExecutorError",
    "NoRefresh",
    "NotRegularFileError",
    "RefreshError",
    "Refresher",
    "RestRefresher",
    "SchedulerFile",
    "StoreChanged",
    "UnsafeXMLError",
    "WriteError",
    "apply_edit",
    "capacity_key",
    "format_value",
    "make_refresher",
    "restore",
    "write_atomically",
]
