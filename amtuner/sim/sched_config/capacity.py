"""The CapacityScheduler's ``capacity-scheduler.xml`` read into a queue tree of plain values.

Read as `CapacitySchedulerConfiguration` does for the default partition (yarn-facts §1): capacities
are percentages of the parent that add up to 100 among siblings, a queue's
``maximum-am-resource-percent`` falls back to the global one, and ``maximum-applications`` to
``global-queue-max-application`` or the system maximum × the queue's absolute capacity. Every
queue's ``max-parallel-apps`` (root's and each parent's too) falls back to the cluster-wide
``yarn.scheduler.capacity.max-parallel-apps`` (``getMaxParallelAppsForQueue``), each user's to
``yarn.scheduler.capacity.user.max-parallel-apps`` (``getMaxParallelAppsForUser``); unset, there
is no limit (``DEFAULT_MAX_PARALLEL_APPLICATIONS``, Integer.MAX_VALUE), 3.4+ (YARN-9930).

Node-label partitions: for each label any ``accessible-node-labels.<label>.*`` key names, each
queue's capacity and maximum capacity there (``getLabeledQueueCapacity``: 0 unless set, but
root's, which has all of it; ``getLabeledQueueMaximumCapacity``: 100) as a share of its
parent's, and its AM percent there (``getMaximumAMResourcePercentPerPartition``: the queue's
own unless set); and ``default-node-label-expression``, inherited from the parent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from amtuner.sim.sched_config import (
    CS_DEFAULT_AM_PERCENT,
    CS_GLOBAL_AM_KEY,
    CS_PREFIX,
    UNLIMITED,
    SchedulerConfigError,
    parse_hadoop_properties,
)

DEFAULT_MAX_SYSTEM_APPS = 10000
MAX_PARALLEL_APPS = "max-parallel-apps"
USER_PREFIX = CS_PREFIX + "user."


@dataclass(frozen=True, slots=True)
class CSQueueConf:
    path: str
    children: tuple[str, ...]
    capacity: float
    """Fraction of the parent (0..1)."""
    maximum_capacity: float
    absolute_capacity: float
    absolute_max_capacity: float
    am_percent: float
    max_apps: int
    user_limit_percent: float
    user_limit_factor: float
    max_parallel_apps: int = UNLIMITED
    """Its apps (and its children's) that may be runnable at once."""
    label_capacities: tuple[tuple[str, float, float, float], ...] = ()
    """Per node label the file names: (label, absolute capacity, absolute maximum capacity,
    AM percent) in that partition (`parse_capacity_config`)."""
    default_label: str = ""
    """``default-node-label-expression``, its parent's where unset: the partition of the
    requests of its apps that name none."""

    def in_partition(self, label: str) -> tuple[float, float, float]:
        """(absolute capacity, absolute maximum capacity, AM percent) in partition ``label``
        ("": the default one)."""
        if label:
            for name, cap, max_cap, am in self.label_capacities:
                if name == label:
                    return cap, max_cap, am
            return 0.0, 0.0, self.am_percent
        return self.absolute_capacity, self.absolute_max_capacity, self.am_percent


@dataclass(frozen=True, slots=True)
class CSConf:
    queues: tuple[CSQueueConf, ...]
    """Pre-order, root first."""
    global_am_percent: float
    max_system_apps: int
    user_max_parallel_apps_default: int = UNLIMITED
    user_max_parallel_apps: tuple[tuple[str, int], ...] = ()
    """(user, limit) where ``yarn.scheduler.capacity.user.<user>.max-parallel-apps`` is set."""

    def user_max_parallel_apps_of(self, user: str) -> int:
        for name, limit in self.user_max_parallel_apps:
            if name == user:
                return limit
        return self.user_max_parallel_apps_default


def _float(props: Mapping[str, str], key: str, default: float) -> float:
    raw = props.get(key)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        if raw.startswith("["):
            raise SchedulerConfigError(
                f"{key}: absolute resource capacities ({raw}) are not supported by the simulator"
            ) from None
        raise SchedulerConfigError(f"{key}: {raw!r} is not a number") from None


def parse_capacity_config(data: bytes) -> CSConf:
    props = parse_hadoop_properties(data)
    global_pct = _float(props, CS_GLOBAL_AM_KEY, CS_DEFAULT_AM_PERCENT)
    if not 0.0 <= global_pct <= 1.0:
        raise SchedulerConfigError(f"{CS_GLOBAL_AM_KEY}: {global_pct} is not within [0, 1]")
    max_system = int(_float(props, CS_PREFIX + "maximum-applications", DEFAULT_MAX_SYSTEM_APPS))
    global_queue_max = int(_float(props, CS_PREFIX + "global-queue-max-application", -1))
    parallel_default = _parallel(props, CS_PREFIX + MAX_PARALLEL_APPS, UNLIMITED)
    user_default = _parallel(props, USER_PREFIX + MAX_PARALLEL_APPS, UNLIMITED)
    per_user = tuple(
        (key[len(USER_PREFIX) : -len("." + MAX_PARALLEL_APPS)], _parallel(props, key, 0))
        for key in props
        if key.startswith(USER_PREFIX) and key.endswith("." + MAX_PARALLEL_APPS)
    )
    queues: list[CSQueueConf] = []
    labels = sorted(
        {m.group(1) for key in props if (m := _LABEL_KEY.fullmatch(key)) is not None}
    )

    def walk(
        path: str,
        abs_cap: float,
        abs_max: float,
        cap: float,
        max_cap: float,
        parent_labels: Mapping[str, tuple[float, float]],
        parent_default: str,
    ) -> None:
        names = [n.strip() for n in props.get(f"{CS_PREFIX}{path}.queues", "").split(",")]
        names = [n for n in names if n]
        key = f"{CS_PREFIX}{path}."
        pct = _float(props, key + "maximum-am-resource-percent", global_pct)
        if not 0.0 <= pct <= 1.0:
            raise SchedulerConfigError(f"{key}maximum-am-resource-percent: {pct} not in [0, 1]")
        in_labels: dict[str, tuple[float, float]] = {}
        label_caps = []
        for label in labels:
            lkey = f"{key}accessible-node-labels.{label}."
            # Root is given all of each partition; another queue none unless the file says.
            lcap = _float(props, lkey + "capacity", 100.0 if path == "root" else 0.0) / 100.0
            lmax = _float(props, lkey + "maximum-capacity", 100.0) / 100.0
            lpct = _float(props, lkey + "maximum-am-resource-percent", pct)
            if not 0.0 <= lcap <= lmax <= 1.0 or not 0.0 <= lpct <= 1.0:
                raise SchedulerConfigError(
                    f"{lkey}capacity/maximum-capacity/maximum-am-resource-percent: need 0 <= "
                    f"{lcap * 100:g} <= {lmax * 100:g} <= 100 and {lpct:g} in [0, 1]"
                )
            above = parent_labels.get(label, (1.0, 1.0))
            in_labels[label] = (above[0] * lcap, above[1] * lmax)
            label_caps.append((label, above[0] * lcap, above[1] * lmax, lpct))
        default_label = props.get(key + "default-node-label-expression", parent_default).strip()
        max_apps = int(_float(props, key + "maximum-applications", -1))
        if max_apps < 0:
            max_apps = global_queue_max if global_queue_max > 0 else int(max_system * abs_cap)
        queues.append(
            CSQueueConf(
                path=path,
                children=tuple(f"{path}.{n}" for n in names),
                capacity=cap,
                maximum_capacity=max_cap,
                absolute_capacity=abs_cap,
                absolute_max_capacity=abs_max,
                am_percent=pct,
                max_apps=max_apps,
                user_limit_percent=_float(props, key + "minimum-user-limit-percent", 100.0),
                user_limit_factor=_float(props, key + "user-limit-factor", 1.0),
                max_parallel_apps=_parallel(props, key + MAX_PARALLEL_APPS, parallel_default),
                label_capacities=tuple(label_caps),
                default_label=default_label,
            )
        )
        total = 0.0
        for name in names:
            child = f"{path}.{name}"
            ckey = f"{CS_PREFIX}{child}."
            c = _float(props, ckey + "capacity", 0.0)
            m = _float(props, ckey + "maximum-capacity", 100.0)
            if m < 0:
                m = 100.0
            if not 0.0 <= c <= 100.0 or not 0.0 < m <= 100.0 or m < c:
                raise SchedulerConfigError(
                    f"{ckey}capacity/maximum-capacity: need 0 <= capacity {c:g} <= "
                    f"maximum-capacity {m:g} <= 100"
                )
            total += c
            walk(
                child, abs_cap * c / 100.0, abs_max * m / 100.0, c / 100.0, m / 100.0,
                in_labels, default_label,
            )  # fmt: skip
        if names and abs(total - 100.0) > 1e-3:
            raise SchedulerConfigError(
                f"{CS_PREFIX}{path}.queues: capacities of the children of {path} add up to "
                f"{total:g}, not 100"
            )

    walk("root", 1.0, 1.0, 1.0, 1.0, {}, "")
    if len(queues) == 1:
        raise SchedulerConfigError(f"{CS_PREFIX}root.queues: root has no child queues")
    return CSConf(
        tuple(queues), global_pct, max_system, user_default, tuple(u for u in per_user if u[0])
    )


_LABEL_KEY = re.compile(
    re.escape(CS_PREFIX) + r"root(?:\.[^.]+)*\.accessible-node-labels\.([^.]+)\.[a-z-]+"
)
"""A queue's setting in one node-label partition (``getNodeLabelPrefix``)."""


def _parallel(props: Mapping[str, str], key: str, default: int) -> int:
    """A ``max-parallel-apps``: a whole number, as ``getInt`` reads it (0 or less: no app of
    the queue or user is ever runnable)."""
    raw = props.get(key, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SchedulerConfigError(f"{key}: {raw!r} is not a whole number") from None
