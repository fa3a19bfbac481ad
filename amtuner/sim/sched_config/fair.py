"""The FairScheduler's allocation file (``fair-scheduler.xml``) read into plain values.

Read as `AllocationFileLoaderService` does (yarn-facts §2): queues nest (``<queue>`` or the old
``<pool>``), root is implied unless it is the one top-level queue, and a queue with children or
``type="parent"`` is a parent. Each element the simulator uses has one small reader in a table
(`_QUEUE_ELEMENTS` for a queue's, `_DEFAULTS` for the top-level defaults); elements not in a table
are ignored, as the rest of what the RM reads (ACLs, reservations) is not modelled. The
``<queuePlacementPolicy>`` is read by `amtuner.sim.placement`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

from amtuner.sim.placement import PlacementRule, parse_policy
from amtuner.sim.sched_config import (
    FS_DEFAULT_AM_SHARE,
    UNLIMITED,
    SchedulerConfigError,
    parse_xml,
)

POLICIES = ("fair", "fifo", "drf")


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    """A minResources/maxResources value; percentages resolve against the cluster."""

    memory_mb: float | None = None
    vcores: float | None = None
    memory_pct: float | None = None
    vcores_pct: float | None = None

    def resolve(self, total_mb: int, total_vcores: int, unset: int) -> tuple[int, int]:
        def one(absolute: float | None, pct: float | None, total: int) -> int:
            if absolute is not None:
                return int(absolute)
            if pct is not None:
                return int(total * pct / 100.0)
            return unset

        return (
            one(self.memory_mb, self.memory_pct, total_mb),
            one(self.vcores, self.vcores_pct, total_vcores),
        )


_OLD_STYLE = re.compile(r"^\s*(?P<v>[0-9.]+)\s*(?P<u>mb|vcores)\s*$", re.IGNORECASE)
_PCT = re.compile(r"^\s*(?P<v>[0-9.]+)\s*%\s*(?P<u>memory|cpu)?\s*$", re.IGNORECASE)


def parse_resource(text: str, where: str) -> ResourceSpec:
    """The three documented syntaxes: ``"1024 mb, 2 vcores"``, ``"50%"`` /
    ``"40% memory, 60% cpu"`` and ``"vcores=2, memory-mb=1024"`` (values may end in %)."""
    raw = text.strip()
    bad = SchedulerConfigError(f"{where}: cannot parse resource value {text!r}")
    if "=" in raw:
        out: dict[str, float] = {}
        for part in raw.split(","):
            key, _, value = part.partition("=")
            key, value = key.strip().lower(), value.strip()
            if key not in ("memory-mb", "vcores") or not value:
                raise bad
            pct = value.endswith("%")
            try:
                number = float(value.rstrip("%").strip())
            except ValueError:
                raise bad from None
            out[("p" if pct else "a") + key] = number
        return ResourceSpec(
            memory_mb=out.get("amemory-mb"),
            vcores=out.get("avcores"),
            memory_pct=out.get("pmemory-mb"),
            vcores_pct=out.get("pvcores"),
        )
    parts = [p for p in raw.split(",") if p.strip()]
    if "%" in raw:
        if len(parts) == 1:
            m = _PCT.match(parts[0])
            if not m or m["u"]:
                raise bad
            v = float(m["v"])
            return ResourceSpec(memory_pct=v, vcores_pct=v)
        pcts: dict[str, float] = {}
        for part in parts:
            m = _PCT.match(part)
            if not m or not m["u"]:
                raise bad
            pcts[m["u"].lower()] = float(m["v"])
        if set(pcts) != {"memory", "cpu"}:
            raise bad
        return ResourceSpec(memory_pct=pcts["memory"], vcores_pct=pcts["cpu"])
    olds: dict[str, float] = {}
    for part in parts:
        m = _OLD_STYLE.match(part)
        if not m:
            raise bad
        olds[m["u"].lower()] = float(m["v"])
    if set(olds) != {"mb", "vcores"}:
        raise bad
    return ResourceSpec(memory_mb=olds["mb"], vcores=olds["vcores"])


@dataclass(frozen=True, slots=True)
class FSQueueConf:
    path: str
    children: tuple[str, ...] = ()
    parent_type: bool = False
    weight: float = 1.0
    min_resources: ResourceSpec | None = None
    max_resources: ResourceSpec | None = None
    max_running_apps: int | None = None
    max_am_share: float | None = None
    policy: str | None = None


@dataclass(frozen=True, slots=True)
class FSConf:
    queues: tuple[FSQueueConf, ...]
    """Pre-order, root first."""
    queue_max_am_share_default: float = FS_DEFAULT_AM_SHARE
    queue_max_apps_default: int = UNLIMITED
    user_max_apps_default: int = UNLIMITED
    user_max_apps: dict[str, int] = field(default_factory=dict)
    default_policy: str = "fair"
    queue_max_resources_default: ResourceSpec | None = None
    placement: tuple[PlacementRule, ...] | None = None
    """The file's ``<queuePlacementPolicy>``; None: the rules come from yarn-site.xml."""


def _text(el: Element, where: str) -> str:
    text = (el.text or "").strip()
    if not text:
        raise SchedulerConfigError(f"{where}: <{el.tag}> is empty")
    return text


def _num(el: Element, where: str, cast: Callable[[str], float] = float) -> float:
    try:
        return cast(_text(el, where))
    except ValueError:
        raise SchedulerConfigError(f"{where}: <{el.tag}> {el.text!r} is not a number") from None


def _policy(el: Element, where: str) -> str:
    value = _text(el, where).lower()
    if value not in POLICIES:
        raise SchedulerConfigError(f"{where}: <{el.tag}> {value!r} is not one of {POLICIES}")
    return value


def _resources(el: Element, where: str) -> ResourceSpec:
    return parse_resource(_text(el, where), where)


def _count(el: Element, where: str) -> int:
    return int(_num(el, where, int))


def _share(el: Element, where: str) -> float:
    """maxAMShare values above 1 mean the whole share, as the loader caps them."""
    return min(_num(el, where), 1.0)


def _default_policy(el: Element, where: str) -> str:
    policy = _policy(el, where)
    if policy == "fifo":
        raise SchedulerConfigError(
            "defaultQueueSchedulingPolicy or defaultQueueSchedulingMode can't be FIFO"
        )
    return policy


_Reader = Callable[[Element, str], object]

_QUEUE_ELEMENTS: dict[str, tuple[str, _Reader]] = {
    "weight": ("weight", _num),
    "minResources": ("min_resources", _resources),
    "maxResources": ("max_resources", _resources),
    "maxRunningApps": ("max_running_apps", _count),
    "maxAMShare": ("max_am_share", _share),
    "schedulingPolicy": ("policy", _policy),
    "schedulingMode": ("policy", _policy),
}
"""Element of a ``<queue>`` -> (`FSQueueConf` field, reader)."""

_DEFAULTS: dict[str, tuple[str, _Reader]] = {
    "queueMaxAMShareDefault": ("queue_max_am_share_default", _share),
    "queueMaxAppsDefault": ("queue_max_apps_default", _count),
    "userMaxAppsDefault": ("user_max_apps_default", _count),
    "queueMaxResourcesDefault": ("queue_max_resources_default", _resources),
    "defaultQueueSchedulingPolicy": ("default_policy", _default_policy),
    "defaultQueueSchedulingMode": ("default_policy", _default_policy),
}
"""Top-level element of ``<allocations>`` -> (`FSConf` field, reader)."""


def parse_allocation_file(data: bytes) -> FSConf:
    root = parse_xml(data, "allocation file")
    if root.tag != "allocations":
        raise SchedulerConfigError(
            "Bad fair scheduler config file: top-level element not <allocations>"
        )
    queues: list[FSQueueConf] = []
    _read_queue(_root_queue(root), "root", queues)
    defaults: dict[str, object] = {}
    user_max: dict[str, int] = {}
    for el in root:
        if el.tag == "user":
            _read_user(el, user_max)
        elif el.tag in _DEFAULTS:
            key, read = _DEFAULTS[el.tag]
            defaults[key] = read(el, "allocations")
        elif el.tag == "queuePlacementPolicy":
            defaults["placement"] = parse_policy(el)
    return FSConf(tuple(queues), user_max_apps=user_max, **defaults)  # type: ignore[arg-type]


def _root_queue(root: Element) -> Element:
    """The root ``<queue>``: the file's, when root is its one top-level queue, else one made up
    around the top-level queues."""
    top = [el for el in root if el.tag in ("queue", "pool")]
    declared_root = len(top) == 1 and top[0].get("name") == "root"
    if any(el.get("name") == "root" for el in top) and not declared_root:
        raise SchedulerConfigError("allocation file: root must be the only top-level queue")
    if declared_root:
        return top[0]
    fake = Element("queue", {"name": "root"})
    fake.extend(top)
    return fake


def _read_queue(el: Element, path: str, queues: list[FSQueueConf]) -> None:
    """Append the queue at ``path`` and then its subtree to ``queues`` (pre-order)."""
    settings: dict[str, object] = {}
    subs: list[Element] = []
    where = f"queue {path}"
    for child in el:
        if child.tag in ("queue", "pool"):
            subs.append(child)
        elif child.tag in _QUEUE_ELEMENTS:
            key, read = _QUEUE_ELEMENTS[child.tag]
            settings[key] = read(child, where)
    names = [_child_path(sub, path) for sub in subs]
    is_parent = bool(subs) or el.get("type") == "parent"
    queues.append(
        FSQueueConf(
            path=path,
            children=tuple(names),
            parent_type=is_parent or path == "root",
            **settings,  # type: ignore[arg-type]
        )
    )
    for sub, name in zip(subs, names, strict=True):
        _read_queue(sub, name, queues)


def _child_path(sub: Element, parent: str) -> str:
    name = (sub.get("name") or "").strip()
    if not name or "." in name:
        raise SchedulerConfigError(f"queue under {parent}: name {name!r} is empty or contains '.'")
    return f"{parent}.{name}"


def _read_user(el: Element, user_max: dict[str, int]) -> None:
    limit = el.find("maxRunningApps")
    if limit is not None:
        user_max[el.get("name", "")] = _count(limit, f"user {el.get('name')}")
