"""Why the executor refused or failed, each kind carrying the label a cycle report shows.

The label travels with the class so a new kind of refusal (and its label in the audit log and
``amtuner status``) is one class here, not a class here plus a mapping elsewhere.
"""

from __future__ import annotations

from typing import ClassVar


class ExecutorError(Exception):
    """The scheduler file cannot be changed as asked; the message says which file and why."""

    label: ClassVar[str] = "scheduler-file"


class UnsafeXMLError(ExecutorError):
    """The file uses XML that amtuner cannot edit safely: a DOCTYPE or entities (never needed
    by Hadoop), or constructs by which Hadoop's ``Configuration`` would read a value other than
    the one amtuner edits (XInclude, a final or repeated property, name/value attributes)."""

    label: ClassVar[str] = "unsafe-xml"


class NotRegularFileError(ExecutorError):
    """The scheduler file is a FIFO, a device or a directory: never opened, never replaced."""


class ConcurrentEditError(ExecutorError):
    """Someone else changed the file between our read and our write."""

    label: ClassVar[str] = "concurrent-edit"


class WriteError(ExecutorError):
    """The new file could not be written; the original is untouched."""

    label: ClassVar[str] = "write-failed"


class RefreshError(ExecutorError):
    """The RM did not (confirm it did) reload the scheduler configuration."""

    label: ClassVar[str] = "refresh-failed"


class RefreshNotRunError(RefreshError):
    """The refresh never started (its command is missing or not executable): the RM was told
    nothing, so once the file is put back, file and RM agree without a second refresh."""


class Disagree(RefreshError):
    """The scheduler configuration and the RM may disagree: a refresh failed and undoing it
    failed too, or an interrupted change could not be refreshed. The change stays owed
    (`amtuner.cycle.PendingChange`), so the next cycle refreshes again."""


class StoreChanged(RefreshError):
    """The RM's mutable store no longer holds the value amtuner read: someone changed it between
    the read and the PUT. Nothing was PUT; their value is kept."""

    label: ClassVar[str] = "concurrent-edit"
