"""Scheduler configuration files as the simulated RM reads and writes them.

The simulation keeps the configuration as the bytes of a real ``capacity-scheduler.xml`` or
``fair-scheduler.xml``, so the executor edits exactly what it would edit on a cluster.

Modules:

* this module — what both readers share (`SchedulerConfigError`, XML and Hadoop properties
  parsing, the defaults) and the writers: `default_scheduler_config`, `with_global_am_share`
  and `with_capacity_properties`;
* `capacity` — ``capacity-scheduler.xml`` read into `CSConf`, the CapacityScheduler's queue tree;
* `fair` — the FairScheduler's allocation file read into `FSConf`.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from xml.sax.saxutils import escape

from amtuner.model import SchedulerKind

CS_PREFIX = "yarn.scheduler.capacity."
CS_GLOBAL_AM_KEY = CS_PREFIX + "maximum-am-resource-percent"
CS_DEFAULT_AM_PERCENT = 0.1
FS_DEFAULT_AM_SHARE = 0.5
UNLIMITED = 2**31 - 1
"""Integer.MAX_VALUE: what the RM shows for no limit on running apps (FS ``maxRunningApps``, CS
``max-parallel-apps``)."""


class SchedulerConfigError(ValueError):
    """The scheduler file cannot be used; the message names the element or key and why."""


def parse_xml(data: bytes, what: str) -> ET.Element:
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        raise SchedulerConfigError(f"{what}: not well-formed XML: {exc}") from exc


def parse_hadoop_properties(data: bytes) -> dict[str, str]:
    """``<configuration><property><name>…</name><value>…</value></property>…`` as a dict;
    a later property with the same name wins, as Hadoop's Configuration does."""
    root = parse_xml(data, "capacity-scheduler.xml")
    if root.tag != "configuration":
        raise SchedulerConfigError(
            f"capacity-scheduler.xml: top-level element is <{root.tag}>, not <configuration>"
        )
    props: dict[str, str] = {}
    for prop in root.iter("property"):
        name = prop.findtext("name")
        if name is None or not name.strip():
            raise SchedulerConfigError("capacity-scheduler.xml: a <property> has no <name>")
        props[name.strip()] = (prop.findtext("value") or "").strip()
    return props


def _queue_tree(queues: Sequence[str]) -> dict[str, list[str]]:
    """Parent path -> child names, from leaf paths (``root.a.b``), in first-seen order."""
    tree: dict[str, list[str]] = {"root": []}
    for leaf in queues:
        parts = leaf.split(".")
        if parts[0] != "root" or len(parts) < 2 or not all(parts):
            raise SchedulerConfigError(f"queue {leaf!r}: expected a leaf path like root.default")
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            children = tree.setdefault(parent, [])
            if parts[depth] not in children:
                children.append(parts[depth])
    return tree


def _percentages(weights: Sequence[float]) -> list[str]:
    """Capacities in proportion to ``weights`` that add up to exactly 100 as the scheduler sums
    them: each rounded to a thousandth, the last taking what the others leave."""
    total = math.fsum(weights)
    values = [round(100.0 * w / total, 3) for w in weights[:-1]]
    values.append(round(100.0 - math.fsum(values), 3))
    return [f"{v:g}" for v in values]


def _subtree_weights(queues: Sequence[str], weights: Sequence[float]) -> dict[str, float]:
    """Path -> weight for every queue of the tree: a leaf's own, a parent's the sum of its
    leaves', so siblings share their parent as their leaves ask; every queue 1 when ``weights``
    is empty (equal siblings, whatever lies below them)."""
    if weights and len(weights) != len(queues):
        raise SchedulerConfigError(
            f"{len(weights)} queue weights for {len(queues)} queues: one weight per queue"
        )
    if any(not (w > 0 and math.isfinite(w)) for w in weights):
        raise SchedulerConfigError(f"queue weights {list(weights)}: each must be a positive number")
    out: dict[str, float] = {}
    for i, leaf in enumerate(queues):
        parts = leaf.split(".")
        for depth in range(2, len(parts) + 1):
            path = ".".join(parts[:depth])
            out[path] = out.get(path, 0.0) + weights[i] if weights else 1.0
    return out


def default_scheduler_config(
    scheduler: SchedulerKind | str,
    queues: Sequence[str],
    am_share: float | None = None,
    *,
    weights: Sequence[float] = (),
) -> bytes:
    """A scheduler file giving ``queues`` shares in proportion to ``weights`` (one per queue;
    empty: equal shares); ``am_share`` sets the global AM share (CS
    ``maximum-am-resource-percent``, FS ``queueMaxAMShareDefault``), else the default holds.

    A CapacityScheduler gets each queue's ``capacity`` in proportion to its weight among its
    siblings (``maximum-capacity`` 100, so an idle queue's share can be borrowed); a
    FairScheduler gets the weights as they are (``<weight>``), a parent the sum of its leaves'."""
    kind = SchedulerKind(scheduler)
    queues = queues or ("root.default",)
    tree = _queue_tree(queues)
    weight = _subtree_weights(queues, weights)
    if kind is SchedulerKind.CAPACITY:
        props: list[tuple[str, str]] = []
        if am_share is not None:
            props.append((CS_GLOBAL_AM_KEY, f"{am_share:g}"))
        for parent, children in tree.items():
            props.append((f"{CS_PREFIX}{parent}.queues", ",".join(children)))
            shares = _percentages([weight[f"{parent}.{child}"] for child in children])
            for child, pct in zip(children, shares, strict=True):
                props.append((f"{CS_PREFIX}{parent}.{child}.capacity", pct))
                props.append((f"{CS_PREFIX}{parent}.{child}.maximum-capacity", "100"))
        lines = ['<?xml version="1.0"?>', "<configuration>"]
        for name, value in props:
            lines += [
                "  <property>",
                f"    <name>{escape(name)}</name>",
                f"    <value>{escape(value)}</value>",
                "  </property>",
            ]
        lines.append("</configuration>")
        return ("\n".join(lines) + "\n").encode()

    def emit(path: str, indent: str) -> list[str]:
        out: list[str] = []
        for child in tree.get(path, []):
            sub = f"{path}.{child}"
            if sub in tree:
                out.append(f'{indent}<queue name="{escape(child)}" type="parent">')
                if weights:
                    out.append(f"{indent}  <weight>{weight[sub]:g}</weight>")
                out += emit(sub, indent + "  ")
            else:
                out.append(f'{indent}<queue name="{escape(child)}">')
                value = f"{weight[sub]:g}" if weights else "1.0"
                out.append(f"{indent}  <weight>{value}</weight>")
            out.append(f"{indent}</queue>")
        return out

    lines = ['<?xml version="1.0"?>', "<allocations>"]
    if am_share is not None:
        lines.append(f"  <queueMaxAMShareDefault>{am_share:g}</queueMaxAMShareDefault>")
    lines += emit("root", "  ")
    lines.append("</allocations>")
    return ("\n".join(lines) + "\n").encode()


def with_global_am_share(scheduler: SchedulerKind | str, data: bytes, am_share: float) -> bytes:
    """``data`` with its global AM share set to ``am_share`` (CS global
    ``maximum-am-resource-percent``, FS ``queueMaxAMShareDefault``); per-queue values stay."""
    kind = SchedulerKind(scheduler)
    value = f"{am_share:g}"
    if kind is SchedulerKind.CAPACITY:
        return with_capacity_properties(data, {CS_GLOBAL_AM_KEY: value})
    root = parse_xml(data, "allocation file")
    el = root.find("queueMaxAMShareDefault")
    if el is None:
        el = ET.Element("queueMaxAMShareDefault")
        root.insert(0, el)
    el.text = value
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def with_capacity_properties(data: bytes, props: Mapping[str, str]) -> bytes:
    """``capacity-scheduler.xml`` ``data`` with each of ``props`` set (its first ``<property>``
    of that name changed, else one added); the other properties stay as they are."""
    root = parse_xml(data, "capacity-scheduler.xml")
    left = dict(props)
    for prop in root.iter("property"):
        name = (prop.findtext("name") or "").strip()
        if name in left:
            value_el = prop.find("value")
            if value_el is None:
                value_el = ET.SubElement(prop, "value")
            value_el.text = left.pop(name)
    for name, value in left.items():
        prop = ET.SubElement(root, "property")
        ET.SubElement(prop, "name").text = name
        ET.SubElement(prop, "value").text = value
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
