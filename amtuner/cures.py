"""The setting that cures each `WaitCause`, named as an operator finds it in the scheduler's
file (the keys' home is the executor, which writes them)."""

from __future__ import annotations

from amtuner.executor.xmledit import CS_PREFIX, capacity_key
from amtuner.model import SchedulerKind, Wait, WaitCause


def knob(cause: WaitCause, scheduler: SchedulerKind, queue: str) -> str:
    """The setting that cures a wait, as an operator finds it in the scheduler's file."""
    if cause is WaitCause.CLUSTER_FULL or not queue:
        return "cluster capacity (more nodes, or fewer running tasks)"
    if scheduler is SchedulerKind.FAIR:
        tag = "maxAMShare" if cause is WaitCause.QUEUE_AM_LIMIT else "maxRunningApps"
        return f"{tag} of queue {queue}"
    if cause is WaitCause.QUEUE_AM_LIMIT:
        return capacity_key(queue)
    suffix = "user-limit-factor" if cause is WaitCause.USER_AM_LIMIT else "max-parallel-apps"
    return f"{CS_PREFIX}{queue}.{suffix}"


def describe(waits: tuple[Wait, ...], scheduler: SchedulerKind) -> str:
    """One line for `once`, `status` and the log: ``2 queue-am-limit (cure: <knob>)``, ..."""
    if not waits:
        return "none"
    return "; ".join(
        f"{w.apps} {w.cause} in {w.queue or 'the cluster'} "
        f"(cure: {knob(w.cause, scheduler, w.queue)})"
        for w in waits
    )
