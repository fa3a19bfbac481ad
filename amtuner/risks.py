"""Settings that make the AM share meaningless or dangerous to tune, found before the daemon runs.

Each finding is a sentence an operator can act on. These are the traps that cost real clusters
hours: a FairScheduler `queueMaxAppsDefault` that silently caps the root queue too (yarn-facts
§2.2), a `maxAMShare` of -1 that turns the limit off (so writing a value turns it back on), and a
range [a_min, a_max] whose low end cannot fit a single AM container (the message names the smallest
a_min that fits one), apps in FairScheduler queues made for them (root.<user>) while only declared
queues are tuned, leaves that set their own AM share (which the global value never reaches) while
the global value is tuned, and a guard tighter than the policies' own moves. What would stop the
first live cycle on this host (paths, state, port, refresh command) is `amtuner.preflight`'s.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from amtuner.config import Config
from amtuner.executor import ExecutorError, SchedulerFile
from amtuner.executor.xmledit import (
    CS_GLOBAL_KEY,
    CS_PREFIX,
    CS_QUEUE_SUFFIX,
    FS_GLOBAL_TAG,
    FS_QUEUE_TAG,
    FS_QUEUE_TAGS,
)
from amtuner.model import GLOBAL_TARGET, Observation, SchedulerKind


def find_risks(sched_file: SchedulerFile, obs: Observation, cfg: Config) -> list[str]:
    # SchedulerFile.read has already refused DOCTYPE and entity declarations.
    root = ET.fromstring(sched_file.data)
    risks = _leaves_out_of_reach(sched_file, obs, cfg.scheduler.targets)
    if sched_file.kind == SchedulerKind.FAIR:
        risks += _fair_structure_risks(root)
        risks += _made_queues_untuned(sched_file, obs, cfg.scheduler.targets)
    am_mb = cfg.controller.unit_mb * 2
    for target in cfg.scheduler.targets or (GLOBAL_TARGET,):
        name = target or "global value"
        value = sched_file.effective_value(target)
        if sched_file.kind == SchedulerKind.FAIR and value < 0:
            risks.append(
                f"{name}: maxAMShare is {value:g}, which disables the AM limit; the first change "
                "amtuner writes will turn the limit back on"
            )
            continue
        queue = obs.queue(target) if target else None
        share = (queue.memory_share_mb if queue else None) or obs.memory_total_mb
        lowest = cfg.controller.a_min * share
        if lowest < am_mb:
            consequence = (
                "no job could start (FairScheduler admits no AM over the limit)"
                if sched_file.kind == SchedulerKind.FAIR
                else "only one job at a time could run (the first AM is always admitted)"
            )
            risks.append(
                f"{name}: at controller.a_min {cfg.controller.a_min:g} the AM limit is "
                f"{lowest:.0f} MB of {share} MB, less than one AM ({am_mb} MB): {consequence}; "
                f"{_smallest_a_min(am_mb, share, cfg.controller.a_max)}"
            )
    return risks + _guard_risks(cfg) + _tls_risks(cfg)


def _tls_risks(cfg: Config) -> list[str]:
    """TLS verification off: anyone on the path can pose as the RM, feed the controller the
    figures they like, and read what amtuner sends (a SPNEGO token, a ``user.name``, a client
    certificate's handshake, the credentials of an ``https://user:pass@`` URL)."""
    rm = cfg.rm
    if rm.verify is not False and not rm.insecure_skip_verify:
        return []
    key = "rm.insecure_skip_verify: true" if rm.insecure_skip_verify else "rm.verify: false"
    return [
        f"{key}: the RM's TLS certificate is not checked, so anyone between amtuner and the RM "
        "can answer in its place; give rm.verify the cluster's CA bundle"
    ]


def _guard_risks(cfg: Config) -> list[str]:
    """A guard that holds or clips what the policies do by design, which is not what was
    measured (the benchmarks run them with no guard): a small clip cuts a policy's first raise
    short (measured: docs/results.md, "The daemon's defaults were not what the benchmarks
    ran")."""
    ctl, guard = cfg.controller, cfg.guard
    risks = []
    if guard.hold_off_seconds >= ctl.period_seconds:
        risks.append(
            f"guard.hold_off_seconds {guard.hold_off_seconds:g} is not under "
            f"controller.period_seconds {ctl.period_seconds:g}: the cycle after each change "
            "cannot act, so every other change waits a period"
        )
    widest = ctl.widest_step
    if guard.max_change_per_cycle < widest:
        risks.append(
            f"guard.max_change_per_cycle {guard.max_change_per_cycle:g} is under the widest step "
            f"the policies take, {widest:g} (half of a_max - a_min): their first moves from a "
            "CapacityScheduler's 0.1 are cut short"
        )
    return risks


def _smallest_a_min(am_mb: int, share_mb: int, a_max: float) -> str:
    """The advice: the smallest a_min (two decimals, rounded up) whose limit holds one AM."""
    need = math.ceil(am_mb / share_mb * 100) / 100 if share_mb else math.inf
    if need > a_max:
        return (
            f"even controller.a_max {a_max:g} cannot hold one AM here: the share is too small "
            "to tune"
        )
    return f"raise controller.a_min to at least {need:g}"


def _fair_structure_risks(root: ET.Element) -> list[str]:
    default = root.findtext("queueMaxAppsDefault")
    if default is None:
        return []
    declared_root = next(
        (q for q in root if q.tag in FS_QUEUE_TAGS and q.get("name") == "root"), None
    )
    if declared_root is not None and declared_root.find("maxRunningApps") is not None:
        return []
    return [
        f"queueMaxAppsDefault {default.strip()} also applies to the root queue, so the whole "
        f"cluster runs at most {default.strip()} apps whatever maxAMShare says; declare "
        '<queue name="root"> with an explicit <maxRunningApps> (and on parent queues)'
    ]


def _made_queues_untuned(
    sched_file: SchedulerFile, obs: Observation, targets: Sequence[str]
) -> list[str]:
    """Apps in leaves the file does not declare, while only declared queues are tuned: the
    FairScheduler made those leaves for the apps (by default an app that names no queue goes to
    root.<user>: ``QueuePlacementPolicy`` with ``user-as-default-queue``), and their AM limit is
    queueMaxAMShareDefault, which per-queue targets leave alone."""
    if not targets or GLOBAL_TARGET in targets:
        return []
    made = sorted(
        q.name
        for q in obs.queues
        if q.pending_apps + q.running_apps and not sched_file.declares(q.name)
    )
    if not made:
        return []
    return [
        f"apps run in {', '.join(made)}, which the allocation file does not declare: the "
        "FairScheduler made these queues for them (an app that names no queue goes to "
        "root.<user> unless yarn.scheduler.fair.user-as-default-queue is false), and their AM "
        "limit is queueMaxAMShareDefault, which scheduler.targets "
        f"[{', '.join(targets)}] leaves alone; add the global value ('') to scheduler.targets "
        "or declare the queues"
    ]


def _leaves_out_of_reach(
    sched_file: SchedulerFile, obs: Observation, targets: Sequence[str]
) -> list[str]:
    """Leaves that set their own AM share while the global value is tuned: the scheduler
    gives a leaf the global value only when it sets none
    (``CapacitySchedulerConfiguration.getMaximumApplicationMasterResourcePerQueuePercent``,
    ``AllocationConfiguration.getQueueMaxAMShare``), so a change reaches none of their apps.
    First among the risks, and its headline when they hold most of the cluster's apps now (a
    CapacityScheduler's apps over max-parallel-apps are pending for the cluster, in no leaf's
    pending: `QueueStats.held_apps`)."""
    if targets and GLOBAL_TARGET not in targets:
        return []
    own = [q for q in obs.queues if q.name not in targets and _sets_own(sched_file, q.name)]
    if not own:
        return []
    names = ", ".join(q.name for q in own)
    held = sum(q.pending_apps + q.running_apps + (q.held_apps or 0) for q in own)
    apps = max(obs.pending_apps + obs.running_apps, held)  # the RM's figures are not one instant
    if sched_file.kind is SchedulerKind.FAIR:
        how = f"each sets its own <{FS_QUEUE_TAG}>, amtuner tunes <{FS_GLOBAL_TAG}>"
    else:
        how = f"each sets its own {CS_PREFIX}<leaf>{CS_QUEUE_SUFFIX}, amtuner tunes {CS_GLOBAL_KEY}"
    if 2 * held > apps:
        return [
            f"the global value reaches none of {names}, which hold {held} of {apps} apps: tune "
            f"them as targets (scheduler.targets; {how})"
        ]
    return [
        f"the global value does not reach {names} ({held} of {apps} apps now): {how}; add them "
        "to scheduler.targets should they get busy"
    ]


def _sets_own(sched_file: SchedulerFile, leaf: str) -> bool:
    """Whether the file gives ``leaf`` its own AM share (a leaf it does not declare, or whose
    value it cannot read, has none amtuner could tune)."""
    try:
        return sched_file.current_value(leaf) is not None
    except ExecutorError:
        return False


def untuned_partitions(names: Sequence[str]) -> str:
    """What `check` and `status` say when the RM reports node-label partitions."""
    return (
        f"labelled partitions {', '.join(names)} exist: their AM shares are tuned only as "
        "targets <leaf>@<label> (CapacityScheduler's "
        "<leaf>.accessible-node-labels.<label>.maximum-am-resource-percent)"
    )
