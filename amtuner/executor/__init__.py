"""Apply an AM-share change to the scheduler file and make the RM load it, safely."""

from amtuner.executor.xmledit import (
    ConcurrentEditError,
    Edit,
    ExecutorError,
    RefreshError,
    SchedulerFile,
    UnsafeXMLError,
    WriteError,
    format_value,
)

__all__ = [
    "ConcurrentEditError",
    "Edit",
    "ExecutorError",
    "RefreshError",
    "SchedulerFile",
    "UnsafeXMLError",
    "WriteError",
    "format_value",
]
