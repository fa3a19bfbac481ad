"""The simulated CapacityScheduler's queues as its REST face shows them, partition by partition.

Hadoop 3.x reports a leaf's figures once per node-label partition
(``CapacitySchedulerLeafQueueInfo``: ``PartitionQueueCapacitiesInfo``,
``PartitionResourcesInfo``, and each ``UserInfo``'s entries); its top-level figures
(``resourcesUsed``, ``AMResourceLimit``, ``usedAMResource``) and the cluster's metrics
(``totalMB``, ``allocatedMB``) are the default partition's alone. So a leaf whose AMs go to a
labelled partition shows no AM used where the monitor first looks, as on Hadoop 3.5.0's RM
(recorded in ``tests/data/monitor/hadoop-3.5.0/capacity-partition-am-limit``), and the
partition's own entry carries its AM limit and use. Runs once per observation, never per
event, so it is not part of the compiled core.
"""

from __future__ import annotations

from dataclasses import dataclass

from amtuner.sim.cluster import Cluster
from amtuner.sim.csqueue import CSQueue
from amtuner.sim.view import PartitionView, QueueView, Res, UserPartitionView, UserView


@dataclass(frozen=True, slots=True)
class Limits:
    """A leaf's limits in one partition, in MB (`CapacityScheduler.limits_in`)."""

    am: int
    """The queue's AM limit (``getAMResourceLimitPerPartition``)."""
    user_am: int
    """A user's AM limit (``getUserAMResourceLimitPerPartition``)."""
    user: int
    """The user limit (``computeUserLimit``)."""


def one_vcore(memory_mb: int) -> Res:
    """A limit computed from memory alone, as the RM reports it: one vcore, none at 0 MB (the
    default resource calculator's normalisation; seen in Hadoop 3.5.0's ``amLimit``)."""
    return Res(memory_mb, 1 if memory_mb > 0 else 0)


def default_partition(cluster: Cluster) -> tuple[Res, Res, int]:
    """The default partition's memory, allocation and containers: what Hadoop 3.5.0's
    ``totalMB``, ``allocatedMB`` and ``containersAllocated`` count on a labelled cluster."""
    nodes = [n for n in cluster.nodes if n.part == 0]
    return (
        Res(cluster.part_mb[0], sum(n.vcores for n in nodes)),
        Res(cluster.part_used_mb[0], sum(n.vcores - n.free_vcores for n in nodes)),
        sum(n.containers for n in nodes),
    )


def queue_view(
    q: CSQueue, total_mb: int, default: Limits | None, labelled: tuple[str, Limits] | None
) -> QueueView:
    """One queue: its figures in the default partition (``default``: a leaf's limits there),
    and a leaf's in the labelled partition its containers use (``labelled``)."""
    c = q.conf
    am_there = labelled is not None and q.am_part > 0
    am_used = Res(0, 0) if am_there else Res(q.am_used_mb, q.am_used_vcores)
    limits = default or Limits(0, 0, 0)
    return QueueView(
        path=c.path,
        is_leaf=q.is_leaf,
        children=c.children,
        used=Res(q.used_mb, q.used_vcores),
        am_used=am_used,
        am_limit=one_vcore(limits.am),
        num_pending_apps=len(q.pending),
        num_active_apps=q.active,
        num_nonrunnable_apps=len(q.nonrunnable),
        max_apps=c.max_apps,
        max_parallel_apps=c.max_parallel_apps,
        pending_containers=q.pending_containers,
        allocated_containers=q.allocated_containers,
        demand=Res(q.used_mb + q.pending_mb - q.label_pending_mb, q.used_vcores + q.pending_vcores),
        capacity=c.capacity,
        maximum_capacity=c.maximum_capacity,
        absolute_capacity=c.absolute_capacity,
        absolute_max_capacity=c.absolute_max_capacity,
        max_am_percent=c.am_percent,
        min_resources=Res(int(c.absolute_capacity * total_mb), 0),
        max_resources=Res(int(c.absolute_max_capacity * total_mb), 0),
        users=_users(q, limits, labelled) if q.is_leaf else (),
        user_am_limit=one_vcore(0 if am_there else limits.user_am),
        user_limit_percent=c.user_limit_percent,
        user_limit_factor=c.user_limit_factor,
        partitions=(_partition(q, *labelled),) if labelled else (),
        default_label=c.default_label,
    )


def _partition(q: CSQueue, label: str, limits: Limits) -> PartitionView:
    cap, max_cap, am_percent = q.conf.in_partition(label)
    parent = q.parent.conf.in_partition(label)[0] if q.parent is not None else 1.0
    parent_max = q.parent.conf.in_partition(label)[1] if q.parent is not None else 1.0
    am_used = Res(q.am_used_mb, q.am_used_vcores) if q.am_part else Res()
    return PartitionView(
        label=label,
        capacity=cap / parent if parent else 0.0,
        maximum_capacity=max_cap / parent_max if parent_max else 0.0,
        absolute_capacity=cap,
        absolute_max_capacity=max_cap,
        max_am_percent=am_percent,
        guaranteed=Res(q.label_guarantee_mb, 0),
        maximum=Res(q.label_max_mb, 0),
        used=Res(q.label_used_mb, q.label_used_vcores),
        pending=Res(q.label_pending_mb, 0),
        am_used=am_used,
        am_limit=one_vcore(limits.am),
        user_am_limit=one_vcore(limits.user_am),
    )


def _users(q: CSQueue, limits: Limits, labelled: tuple[str, Limits] | None) -> tuple[UserView, ...]:
    """The leaf's users, as ``UsersManager`` lists them: each with apps in the queue. Where
    the leaf's AMs go to a labelled partition, a user's AM figures are that partition's, and
    the default one's are 0 (as Hadoop 3.5.0 reports them)."""
    pending: dict[str, int] = {}
    for app in q.pending:
        pending[app.user] = pending.get(app.user, 0) + 1
    am_there = labelled is not None and q.am_part > 0
    views = []
    for user in sorted(pending.keys() | q.user_active.keys()):
        am_used = q.user_am_used.get(user, 0)
        part = None
        if labelled is not None:
            label, there = labelled
            part = UserPartitionView(
                label=label,
                used=Res(q.label_user_used.get(user, 0), 0),
                am_used=Res(am_used if am_there else 0, 0),
                am_limit=one_vcore(there.user_am),
                resource_limit=one_vcore(there.user),
            )
        views.append(
            UserView(
                name=user,
                used=Res(q.user_used.get(user, 0), 0),
                am_used=Res(0 if am_there else am_used, 0),
                am_limit=one_vcore(0 if am_there else limits.user_am),
                resource_limit=one_vcore(limits.user),
                pending_apps=pending.get(user, 0),
                active_apps=q.user_active.get(user, 0),
                partition=part,
            )
        )
    return tuple(views)
