"""Whether the RM holds the A that the scheduler configuration says: the read-back after a
refresh, and `amtuner check`'s comparison.

A refresh that succeeds does not prove the RM read the file amtuner wrote: where Ambari or
Cloudera Manager owns the configuration, the RM reads a copy they regenerate elsewhere, and
``yarn rmadmin -refreshQueues`` reloads that copy without complaint. Only the RM's own figures
tell. A CapacityScheduler reports the share each leaf runs with
(``CapacitySchedulerLeafQueueInfo.configuredMaxAMResourceLimit``, or the default partition's
``maxAMLimitPercentage``), set by ``-refreshQueues`` before the call returns, so it is compared
at once. A FairScheduler reports no maxAMShare at all, only ``amMaxResources``, which
``FSLeafQueue.canRunAppAM`` recomputes when an app is checked for its AM (stale while none waits)
and which follows a file that it reloads by itself 5-15 s after the write: nothing it shows right
after a change can say the change did not take, so a change is never undone for it; `check`
judges it once the file is older than the reload and while apps wait for their AM.

Pure: the parsed file and an observation in, the disagreements out.
"""

from __future__ import annotations

import math
from collections.abc import Collection

from amtuner.executor import ExecutorError, SchedulerFile
from amtuner.model import GLOBAL_TARGET, Observation, QueueStats, SchedulerKind

TOLERANCE = 1e-4
"""The RM holds A as a Java float (``Float.parseFloat``): 0.15 comes back as 0.150000006."""


def _expected(sched_file: SchedulerFile, queue: str) -> float | None:
    """The A the file gives ``queue``; None where the file does not declare it."""
    try:
        return sched_file.effective_value(queue)
    except ExecutorError:
        return None


def disagreements(
    sched_file: SchedulerFile,
    obs: Observation,
    targets: Collection[str] | None = None,
    *,
    fair_reloaded: bool = False,
) -> list[str]:
    """One line per leaf queue whose A in the RM is not the file's, among the leaves
    ``targets`` set (all leaves when None); empty when they agree or the RM does not say.

    A FairScheduler is judged only when the caller knows the file is older than its reload
    (``fair_reloaded``), and only in a leaf where apps wait for their AM, so that
    ``canRunAppAM`` has just recomputed ``amMaxResources``: it must then be the leaf's fair
    share times the file's maxAMShare, rounded up (``Resources.multiplyAndRoundUp``), within
    `FAIR_TOLERANCE` of the share."""
    if sched_file.kind is not obs.scheduler:
        return []
    if obs.scheduler is SchedulerKind.FAIR and not fair_reloaded:
        return []
    found = []
    for queue in obs.queues:
        if targets is not None and not (
            queue.name in targets
            or (GLOBAL_TARGET in targets and _own(sched_file, queue.name) is None)
        ):
            continue
        expected = _expected(sched_file, queue.name)
        if expected is None:
            continue
        judge = _cs_line if queue.am_share is not None else _fs_line
        line = judge(queue, expected)
        if line:
            found.append(line)
    return found


FAIR_TOLERANCE = 0.01
"""How far a FairScheduler's amMaxResources / fair share may stray from the file's A: the fair
share moves as apps come and go between the RM's last AM check and the observation."""


def _cs_line(queue: QueueStats, expected: float) -> str | None:
    assert queue.am_share is not None
    if abs(queue.am_share - expected) <= TOLERANCE:
        return None
    return f"{queue.name} runs with {queue.am_share:.4g}, the file says {expected:g}"


def _fs_line(queue: QueueStats, expected: float) -> str | None:
    limit, share = queue.am_memory_limit_mb, queue.memory_share_mb
    if expected < 0 or not queue.pending_apps or not limit or not share:
        return None  # -1: no limit; no app waits, or no figure to judge by
    if abs(limit - math.ceil(share * expected)) <= max(1.0, FAIR_TOLERANCE * share):
        return None
    return (
        f"{queue.name} admits AMs up to {limit} MB of its {share} MB fair share "
        f"(maxAMShare {limit / share:.3g}), the file says {expected:g}"
    )


def _own(sched_file: SchedulerFile, queue: str) -> float | None:
    try:
        return sched_file.current_value(queue)
    except ExecutorError:
        return None


def check_risks(
    sched_file: SchedulerFile, obs: Observation, pending: str | None, *, fair_reloaded: bool
) -> list[str]:
    """What `amtuner check` says about file and RM: each leaf they disagree on, and a change
    a stopped process left to refresh (``pending``: where it was written)."""
    found = [
        f"file and RM DISAGREE: {line}: {not_read_hint(sched_file.path)}, or the file was edited "
        "and not refreshed"
        for line in disagreements(sched_file, obs, fair_reloaded=fair_reloaded)
    ]
    if pending is not None:
        found.append(
            f"a change to {pending} was written by an amtuner process stopped before its "
            "refresh; the next cycle refreshes it"
        )
    return found


def not_read_hint(path: object) -> str:
    """What a disagreement most likely means, for messages and `check`."""
    return (
        f"the RM does not load {path} (a configuration owned by Ambari or Cloudera Manager is "
        "regenerated elsewhere: tune the copy the RM reads, or through its manager)"
    )
