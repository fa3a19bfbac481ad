"""What each `amtuner` exit status means, and which cycle error ends in which.

Operators script against these (systemd's ``RestartPreventExitStatus=2``, cron wrappers, CI jobs
running ``amtuner check``), so each number has one home here and the README's table is read from
it (``tests`` tie the two).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType


class ExitCode(enum.IntEnum):
    OK = 0
    FAILED = 1
    """The command ran but did not get what it was for: `check` found risks, `status` has no
    state yet, a simulation did not finish, `run` stopped on an unexpected error."""
    CONFIG = 2
    """Usage or configuration (argparse's own code too): systemd should not restart on it."""
    RM = 3
    """The ResourceManager could not be read (unreachable, standby only, a garbage answer)."""
    FILE = 4
    """The scheduler configuration could not be read or safely edited; nothing changed."""
    REFRESH = 5
    """The file was written but the RM did not confirm the reload; the old file was restored."""
    RECORD = 6
    """A change was applied but its audit line or the state file could not be written (or, in
    ``mode`` recommend or approve, the proposal file)."""
    LOCKED = 7
    """Another amtuner process was running a cycle on the same state file (`amtuner.lock`);
    nothing changed, and trying again later is safe."""
    REFUSED = 8
    """`amtuner approve` refused the proposal: none stands, another than ``--id``, expired,
    made from a scheduler configuration changed since, or a pause; nothing written."""
    INTERRUPTED = 130
    """Ctrl-C (SIGINT) outside `run`: the shells' 128 + the signal's number."""
    BROKEN_PIPE = 141
    """Whoever read the output closed it first (``| head``): 128 + SIGPIPE, as a shell
    reports a command a closed pipe stopped."""

    @classmethod
    def for_error(cls, label: str | None) -> ExitCode:
        """The exit status of a cycle that ended with error ``label`` (``None``: no error)."""
        return cls.OK if label is None else _BY_ERROR.get(label, cls.RM)


_BY_ERROR: Mapping[str, ExitCode] = MappingProxyType(
    {
        "refresh-failed": ExitCode.REFRESH,
        "refresh-unusable": ExitCode.CONFIG,
        "scheduler-mismatch": ExitCode.CONFIG,
        "unknown-queue": ExitCode.CONFIG,
        "scheduler-file": ExitCode.FILE,
        "unsafe-xml": ExitCode.FILE,
        "concurrent-edit": ExitCode.FILE,
        "write-failed": ExitCode.FILE,
        "locked": ExitCode.LOCKED,
        "proposal-stale": ExitCode.REFUSED,
        "paused": ExitCode.REFUSED,
    }
)
"""Cycle error labels (`CycleReport.error`, the executor errors' ``label``, the monitor's
reasons) that are not the RM's fault; every other label is about reading the RM. A config that
does not fit the RM it finds (another scheduler, a target queue it does not have) is the
config's: as for an invalid one, a restart cannot fix it."""

