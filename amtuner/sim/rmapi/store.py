"""The CapacityScheduler's mutable configuration store: the ``scheduler-conf`` API (§3.5).

``GET /ws/v1/cluster/scheduler-conf`` answers JSON unless the client accepts only XML. ``PUT``
takes the documented XML body (``sched-conf``), applied in the RM's order: remove-queue,
add-queue, update-queue, global-updates.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable

from amtuner.sim.rmapi.face import XML_TYPE, Response, json_response
from amtuner.sim.sched_config import CS_PREFIX


class ConfUpdateError(ValueError):
    """An invalid ``sched-conf`` body or change; the message is what the RM's 400 says."""


def _parse_xml(data: bytes, what: str) -> ET.Element:
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise ConfUpdateError(f"{what}: DOCTYPE/ENTITY declarations are not accepted")
    try:
        return ET.fromstring(data)
    except ET.ParseError as e:
        raise ConfUpdateError(f"{what}: malformed XML: {e}") from e


def conf_properties(config: bytes) -> list[tuple[str, str]]:
    """``(name, value)`` of each ``<property>`` of a Hadoop configuration file, in file order."""
    root = _parse_xml(config, "scheduler configuration")
    return [
        ((p.findtext("name") or "").strip(), (p.findtext("value") or "").strip())
        for p in root.iter("property")
    ]


def conf_document(props: list[tuple[str, str]], accept: str) -> Response:
    """The GET answer: ``{"property": [{name, value}]}`` or ``<configuration>`` XML."""
    if "xml" in accept and "json" not in accept:
        root = ET.Element("configuration")
        for name, value in props:
            p = ET.SubElement(root, "property")
            ET.SubElement(p, "name").text = name
            ET.SubElement(p, "value").text = value
        ET.indent(root)
        body = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n' + ET.tostring(root)
        return Response(200, {"Content-Type": XML_TYPE}, body)
    doc = {"property": [{"name": n, "value": v} for n, v in props]}
    return json_response(200, doc)


def _entries(parent: ET.Element | None) -> list[tuple[str, str | None]]:
    """JAXB map entries; an empty ``<value/>`` removes the key, as in the RM."""
    if parent is None:
        return []
    out: list[tuple[str, str | None]] = []
    for e in parent.iter("entry"):
        key = (e.findtext("key") or "").strip()
        if not key:
            raise ConfUpdateError("entry without a key")
        value = e.findtext("value")
        out.append((key, value.strip() if value and value.strip() else None))
    return out


def _queue_name(el: ET.Element) -> str:
    name = (el.findtext("queue-name") or "").strip()
    if not name.startswith("root"):
        raise ConfUpdateError(f"queue-name must be a full queue path, got {name!r}")
    return name


class _CSProperties:
    """The ``<property>`` elements of a capacity-scheduler.xml by name, edited in place."""

    def __init__(self, conf: ET.Element) -> None:
        self.conf = conf
        self.props = {(p.findtext("name") or "").strip(): p for p in conf.iter("property")}

    def get(self, key: str) -> str | None:
        p = self.props.get(key)
        return None if p is None else (p.findtext("value") or "").strip()

    def put(self, key: str, value: str | None) -> None:
        """Set ``key``; None removes it, as an empty ``<value/>`` does in the RM."""
        p = self.props.get(key)
        if value is None:
            if p is not None:
                self.conf.remove(p)
                del self.props[key]
            return
        if p is None:
            p = ET.SubElement(self.conf, "property")
            ET.SubElement(p, "name").text = key
            ET.SubElement(p, "value")
            self.props[key] = p
        v = p.find("value")
        if v is None:
            v = ET.SubElement(p, "value")
        v.text = value

    def children(self, parent: str) -> list[str]:
        raw = self.get(f"{CS_PREFIX}{parent}.queues") or ""
        return [c.strip() for c in raw.split(",") if c.strip()]

    def exists(self, path: str) -> bool:
        parent, _, leaf = path.rpartition(".")
        return path == "root" or (bool(parent) and leaf in self.children(parent))


def _remove_queue(conf: _CSProperties, el: ET.Element) -> None:
    path = (el.text or "").strip()
    if path == "root" or not conf.exists(path):
        raise ConfUpdateError(f"Queue {path} not found or cannot be removed")
    parent, _, leaf = path.rpartition(".")
    conf.put(f"{CS_PREFIX}{parent}.queues", ",".join(c for c in conf.children(parent) if c != leaf))
    for key in [k for k in conf.props if k.startswith(f"{CS_PREFIX}{path}.")]:
        conf.put(key, None)


def _add_queue(conf: _CSProperties, el: ET.Element) -> None:
    path = _queue_name(el)
    parent, _, leaf = path.rpartition(".")
    if conf.exists(path):
        raise ConfUpdateError(f"Can't add existing queue {path}")
    if not conf.exists(parent):
        raise ConfUpdateError(f"Can't add queue {path}: parent {parent} does not exist")
    conf.put(f"{CS_PREFIX}{parent}.queues", ",".join([*conf.children(parent), leaf]))
    for key, value in _entries(el.find("params")):
        conf.put(f"{CS_PREFIX}{path}.{key}", value)


def _update_queue(conf: _CSProperties, el: ET.Element) -> None:
    path = _queue_name(el)
    if not conf.exists(path):
        raise ConfUpdateError(f"Queue {path} not found")
    for key, value in _entries(el.find("params")):
        conf.put(f"{CS_PREFIX}{path}.{key}", value)


def _global_updates(conf: _CSProperties, el: ET.Element) -> None:
    for key, value in _entries(el):
        conf.put(key, value)


_UPDATES: tuple[tuple[str, Callable[[_CSProperties, ET.Element], None]], ...] = (
    ("remove-queue", _remove_queue),
    ("add-queue", _add_queue),
    ("update-queue", _update_queue),
    ("global-updates", _global_updates),
)
"""The parts of a ``sched-conf`` body, in the order the RM applies them."""


def apply_sched_conf(config: bytes, body: bytes) -> bytes:
    """A ``sched-conf`` update applied to a capacity-scheduler.xml, in the RM's order:
    remove-queue, add-queue, update-queue, global-updates. Queue keys are relative to
    ``yarn.scheduler.capacity.<queue>.``; global keys are full."""
    update = _parse_xml(body, "sched-conf")
    if update.tag != "sched-conf":
        raise ConfUpdateError(f"root element must be sched-conf, got {update.tag}")
    conf = _parse_xml(config, "scheduler configuration")
    props = _CSProperties(conf)
    for tag, apply in _UPDATES:
        for el in update.findall(tag):
            apply(props, el)
    ET.indent(conf)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(conf) + b"\n"
