"""One control cycle: observe the RM, decide per target, apply (or, in dry-run, show) the change.

`amtuner once`, the daemon and the in-process simulator all run this same cycle; only the
collaborators they hand in differ.
"""

from __future__ import annotations

from dataclasses import dataclass

from amtuner.model import ControllerState, Decision, Observation


@dataclass(frozen=True, slots=True)
class CycleReport:
    """Everything an operator (or the metrics) may want to know about one cycle."""

    started: float
    """Clock time the cycle started (seconds since the epoch, or simulated seconds)."""
    duration_s: float
    observation: Observation | None
    decisions: tuple[Decision, ...] = ()
    """One per target, including holds."""
    applied: bool = False
    """A change was written and the RM told to reload it."""
    dry_run: bool = False
    paused: bool = False
    diff: str = ""
    """Unified diff of the scheduler file (written, or that would be written in dry-run)."""
    refresh: str = ""
    """The refresh that ran (or would run), e.g. ``yarn rmadmin -refreshQueues``."""
    error: str | None = None
    """Short reason label when the cycle failed (``rm-unreachable``, ``refresh-failed`` …)."""
    message: str = ""
    """Human sentence for the error or the outcome."""

    @property
    def ok(self) -> bool:
        return self.error is None


States = dict[str, ControllerState]
"""Controller state per target key (``GLOBAL_TARGET`` for the scheduler-wide value)."""
