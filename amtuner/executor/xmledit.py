"""Change the AM share in a scheduler file by splicing only the bytes of the value.

Operators' scheduler files carry licence headers, comments, CRLF line endings, odd indentation
and sometimes an ISO-8859-1 declaration; Ambari/Puppet diff them. A DOM round trip rewrites all of
that, so this module parses the bytes with expat only to learn *where* each element sits
(``CurrentByteIndex``) and then replaces just the value's text, or inserts one new line (a
property block for CapacityScheduler). The result is re-parsed and compared with the original so
that nothing but the intended values can change.

Hardening: expat 2.5 is exposed to entity-expansion attacks, and Hadoop never needs a DTD in
these files, so any DOCTYPE or entity declaration is refused before anything is expanded.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from amtuner.executor.errors import ExecutorError, UnsafeXMLError
from amtuner.executor.reading import read_regular
from amtuner.executor.xmlnodes import (
    MAX_FILE_BYTES,
    Node,
    Splice,
    indent_unit,
    insert_lines,
    line_of,
    parse,
    replace_text,
)
from amtuner.model import GLOBAL_TARGET, SchedulerKind, format_a, queue_path, split_target

CS_PREFIX = "yarn.scheduler.capacity."
CS_GLOBAL_KEY = CS_PREFIX + "maximum-am-resource-percent"
CS_QUEUE_SUFFIX = ".maximum-am-resource-percent"
CS_LABEL_INFIX = ".accessible-node-labels."
CS_DEFAULT = 0.1
"""``DEFAULT_MAXIMUM_APPLICATIONMASTERS_RESOURCE_PERCENT`` (2.x to 3.4)."""
CS_RESOURCE_CALCULATOR = CS_PREFIX + "resource-calculator"
FS_GLOBAL_TAG = "queueMaxAMShareDefault"
FS_QUEUE_TAG = "maxAMShare"
FS_DEFAULT = 0.5
"""FairScheduler's built-in ``queueMaxAMShareDefault``."""
FS_QUEUE_TAGS = ("queue", "pool")
"""FS accepts ``<pool>`` (MR1 name) wherever ``<queue>`` is allowed."""
CS_PROPERTY_ATTRS = ("name", "value", "final")
"""``<property>`` attributes that Hadoop's ``Configuration`` (2.x and later) reads as it reads
the child elements of the same names."""


format_value = format_a


def capacity_key(target: str) -> str:
    """The property a CapacityScheduler target's A is: the global one, a leaf's, or a leaf's in
    one node-label partition (``leaf@label``, ``CapacitySchedulerConfiguration``'s
    ``getMaximumAMResourcePercentPerPartition``)."""
    if target == GLOBAL_TARGET:
        return CS_GLOBAL_KEY
    queue, label = split_target(target)
    if label:
        return f"{CS_PREFIX}{queue_path(queue)}{CS_LABEL_INFIX}{label}{CS_QUEUE_SUFFIX}"
    return CS_PREFIX + queue_path(target) + CS_QUEUE_SUFFIX


def _fair_segments(target: str) -> list[str]:
    parts = target.split(".")
    if parts[0] == "root":
        parts = parts[1:]
    if not parts or any(not p for p in parts):
        raise ExecutorError(f"{target!r} is not a leaf queue path (e.g. root.default)")
    return parts


def _as_float(node: Node, where: str) -> float:
    try:
        value = float(node.text)
    except ValueError:
        raise ExecutorError(f"{where}: <{node.tag}> holds {node.text!r}, not a number") from None
    if not math.isfinite(value):
        raise ExecutorError(f"{where}: <{node.tag}> holds {node.text!r}, not a finite number")
    return value


@dataclass(frozen=True)
class Edit:
    """A proposed change to one file: both byte strings, so writing can check for drift."""

    path: Path
    old_data: bytes
    new_data: bytes
    diff: str
    """Unified diff of the file, for dry-run output and the audit log."""
    changed: bool
    targets: dict[str, tuple[float | None, float | None]]
    """target -> (value in the file before, or None when unset; value after, None only in a
    `reverted` edit that takes a value back out)."""

    def reverted(self) -> Edit:
        """The edit that undoes this one (what a restore wrote), for making the RM load the
        previous configuration again; it is never shown, so it carries no diff."""
        return Edit(
            path=self.path,
            old_data=self.new_data,
            new_data=self.old_data,
            diff="",
            changed=self.changed,
            targets={t: (new, old) for t, (old, new) in self.targets.items()},
        )


class SchedulerFile:
    """A parsed fair-scheduler.xml or capacity-scheduler.xml that can produce byte-minimal edits."""

    def __init__(self, path: Path, kind: SchedulerKind | str, data: bytes) -> None:
        self.path = Path(path)
        self.kind = SchedulerKind(kind)
        self.data = data
        self._root, self._encoding = parse(data, str(self.path))
        self._by_name: dict[str, list[Node]] | None = None
        expected = "allocations" if self.kind is SchedulerKind.FAIR else "configuration"
        if self._root.tag != expected:
            raise ExecutorError(
                f"{self.path}: top-level element is <{self._root.tag}>, a {self.kind} scheduler "
                f"file has <{expected}>"
            )
        if self.kind is SchedulerKind.CAPACITY:
            self._refuse_unreadable_layout()

    def _where(self, node: Node) -> str:
        return f"{self.path}:{line_of(self.data, node.start)}"

    def _refuse_unreadable_layout(self) -> None:
        """Refuse CapacityScheduler files whose properties Hadoop's ``Configuration`` may take
        from where amtuner neither reads nor writes: it honours XInclude (the property may live
        in the included file), and reads a ``<property>`` nested in another element (a nested
        ``<configuration>`` in 2.x, any depth with the 3.x streaming ``Parser``)."""
        for node in self._root.iter():
            if node.tag.rpartition(":")[2] == "include":
                raise UnsafeXMLError(
                    f"{self._where(node)}: XInclude (<{node.tag}>) is not supported: Hadoop's "
                    "Configuration reads the included file, where the property amtuner edits "
                    "may really be set; inline the included properties"
                )
            if node.tag == "property" and node.parent is not self._root:
                outer = node.parent.tag if node.parent is not None else ""
                raise UnsafeXMLError(
                    f"{self._where(node)}: <property> inside <{outer}> is not supported: Hadoop's "
                    "Configuration reads it, amtuner only edits properties directly under "
                    "<configuration>; move it there"
                )

    @classmethod
    def read(cls, path: str | Path, kind: SchedulerKind | str) -> SchedulerFile:
        path = Path(path)
        try:
            data = read_regular(path, MAX_FILE_BYTES)  # never more, whatever the file claims
        except OSError as e:
            raise ExecutorError(f"cannot read {path}: {e.strerror or e}") from None
        if len(data) > MAX_FILE_BYTES:
            raise ExecutorError(f"{path}: larger than {MAX_FILE_BYTES} bytes; not a scheduler file")
        return cls(path, kind, data)

    # --- lookup -----------------------------------------------------------------------------

    def _fair_queue(self, target: str, leaf: bool = True) -> Node:
        """The ``<queue>`` of ``target``; ``leaf``: refuse a parent, which maxAMShare does not
        limit (a parent's ``maxRunningApps`` binds its leaves: `setting` reads those)."""
        parent = self._root
        tops = [c for c in parent.children if c.tag in FS_QUEUE_TAGS]
        declared_root = len(tops) == 1 and tops[0].attrs.get("name", "").strip() == "root"
        if declared_root:
            parent = tops[0]
        if target == "root" and not leaf:
            if not declared_root:
                raise ExecutorError(f"{self.path}: queue 'root' is not declared in the file")
            return parent
        for name in _fair_segments(target):
            found = [
                c
                for c in parent.children
                if c.tag in FS_QUEUE_TAGS and c.attrs.get("name", "").strip() == name
            ]
            if not found:
                raise ExecutorError(
                    f"{self.path}: queue {target!r} is not declared in the file (no <queue "
                    f'name="{name}">); amtuner does not create queues'
                )
            parent = found[-1]
        if leaf and (
            parent.attrs.get("type") == "parent"
            or any(c.tag in FS_QUEUE_TAGS for c in parent.children)
        ):
            raise ExecutorError(
                f"{self.path}: {target!r} is a parent queue; maxAMShare only limits leaf queues"
            )
        return parent

    def declares(self, queue: str) -> bool:
        """Whether a FairScheduler file declares the leaf ``queue`` (a full path), as `edit`
        finds it: a queue the scheduler made for apps (root.<user>) is not declared."""
        try:
            self._fair_queue(queue)
        except ExecutorError:
            return False
        return True

    def _fair_value_node(self, target: str) -> tuple[Node, Node | None]:
        """(element that holds or would hold the value, value element if present)."""
        if split_target(target)[1]:
            raise ExecutorError(
                f"{target!r}: a FairScheduler has no node-label partitions to set an AM share in"
            )
        if target == GLOBAL_TARGET:
            holder, tag = self._root, FS_GLOBAL_TAG
        else:
            holder, tag = self._fair_queue(target), FS_QUEUE_TAG
        values = [c for c in holder.children if c.tag == tag]
        return holder, values[-1] if values else None  # FS lets the last one win

    def _properties(self) -> dict[str, list[Node]]:
        """property name -> every <property> defining it, in file order. A ``<name>`` child
        overrides a ``name`` attribute, as in ``Configuration``'s parser. Indexed once: the
        parsed file never changes, and a cycle looks several properties up."""
        if self._by_name is None:
            self._by_name = self._index_properties()
        return self._by_name

    def _index_properties(self) -> dict[str, list[Node]]:
        found: dict[str, list[Node]] = {}
        for prop in self._root.children:
            if prop.tag != "property":
                continue
            names = [c.text for c in prop.children if c.tag == "name"]
            name = names[-1] if names else prop.attrs.get("name", "").strip()
            if name:
                found.setdefault(name, []).append(prop)
        return found

    def _property(self, key: str) -> Node | None:
        """The one <property> that sets ``key``, refusing the layouts where editing it could
        leave the RM on another value. ``Configuration`` keeps the last of several definitions
        unless an earlier one is final, so picking one to edit is a guess; and a value given as
        an attribute is not a ``<value>`` element this module can splice."""
        found = self._properties().get(key, [])
        if len(found) > 1:
            lines = " and ".join(str(line_of(self.data, p.start)) for p in found)
            raise UnsafeXMLError(
                f"{self.path}: {key} is defined {len(found)} times (lines {lines}); Hadoop's "
                "Configuration uses the last one (or an earlier final one): keep one definition"
            )
        if not found:
            return None
        prop = found[0]
        attrs = [a for a in CS_PROPERTY_ATTRS if a in prop.attrs]
        if attrs:
            raise UnsafeXMLError(
                f"{self._where(prop)}: {key} is set with attributes ({', '.join(attrs)}) on "
                "<property>; amtuner edits only <name>/<value>/<final> child elements: write it "
                "in that form"
            )
        return prop

    def _check_capacity_queue(self, target: str) -> None:
        parts = queue_path(split_target(target)[0]).split(".")
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            key = f"{CS_PREFIX}{parent}.queues"
            value = _value_child(self._property(key))
            declared = value.text if value is not None else ("default" if depth == 1 else "")
            children = [q.strip() for q in declared.split(",")]
            if parts[depth] not in children:
                raise ExecutorError(
                    f"{self.path}: queue {queue_path(target)!r} is not declared "
                    f"({key} = {declared!r}); amtuner does not create queues"
                )
        if self._property(f"{CS_PREFIX}{'.'.join(parts)}.queues") is not None:
            raise ExecutorError(
                f"{self.path}: {'.'.join(parts)!r} is a parent queue; "
                "maximum-am-resource-percent only limits leaf queues"
            )

    def _capacity_value_node(self, target: str) -> Node | None:
        if target != GLOBAL_TARGET:
            self._check_capacity_queue(target)
        return _value_child(self._property(capacity_key(target)))

    def _value_node(self, target: str) -> Node | None:
        if self.kind is SchedulerKind.FAIR:
            return self._fair_value_node(target)[1]
        return self._capacity_value_node(target)

    # --- reading ----------------------------------------------------------------------------

    def current_value(self, target: str) -> float | None:
        """The value written in the file for ``target``; None when the file does not set it.

        A CapacityScheduler's ``maximum-am-resource-percent`` is a fraction (0.1 is 10 %,
        ``CapacitySchedulerConfiguration.getMaximumApplicationMasterResourcePercent``): a value
        outside [0, 1] is a typo (10 for 10 %) that the controller must not start from."""
        node = self._value_node(target)
        if node is None:
            return None
        value = _as_float(node, str(self.path))
        if self.kind is SchedulerKind.CAPACITY and not 0.0 <= value <= 1.0:
            raise ExecutorError(
                f"{self.path}: {capacity_key(target)} is {node.text}, not a fraction in "
                "[0, 1] (0.1 is 10 %)"
            )
        return value

    @property
    def schedules_vcores(self) -> bool:
        """Whether the scheduler counts vcores when it places containers and admits AMs. A
        FairScheduler always does (``fitsIn``); a CapacityScheduler only with a resource
        calculator other than the default one, which compares memory alone."""
        if self.kind is SchedulerKind.FAIR:
            return True
        value = _value_child(self._property(CS_RESOURCE_CALCULATOR))
        name = value.text.strip() if value is not None else ""
        return bool(name) and not name.endswith(".DefaultResourceCalculator")

    def setting(self, key: str, queue: str = GLOBAL_TARGET) -> str | None:
        """The text the file gives a setting amtuner only reads, None when it sets none: a
        CapacityScheduler property (``key`` its full name), or a FairScheduler element ``key``
        of the queue ``queue``, a leaf or a parent (``<allocations>``' own for the global
        target; a queue the file does not declare sets nothing)."""
        if self.kind is SchedulerKind.CAPACITY:
            node = _value_child(self._property(key))
        else:
            try:
                holder = self._root if queue == GLOBAL_TARGET else self._fair_queue(queue, False)
            except ExecutorError:
                return None
            node = next((c for c in reversed(holder.children) if c.tag == key), None)
        return None if node is None else node.text.strip()

    def effective_value(self, target: str) -> float:
        """What the scheduler applies: the queue's own value (in a partition: the partition's,
        else the queue's), else the file-wide default."""
        value = self.current_value(target)
        queue, label = split_target(target)
        if value is None and label:
            value = self.current_value(queue)
        if value is None and target != GLOBAL_TARGET:
            value = self.current_value(GLOBAL_TARGET)
        if value is not None:
            return value
        return FS_DEFAULT if self.kind is SchedulerKind.FAIR else CS_DEFAULT

    # --- editing ----------------------------------------------------------------------------

    def _splice_for(self, target: str, text: bytes) -> Splice:
        data, root = self.data, self._root
        if self.kind is SchedulerKind.FAIR:
            holder, node = self._fair_value_node(target)
            if node is not None:
                return replace_text(data, node, text)
            tag = (FS_QUEUE_TAG if target != GLOBAL_TARGET else FS_GLOBAL_TAG).encode()
            element = b"<" + tag + b">" + text + b"</" + tag + b">"
            return insert_lines(data, root, holder, [element])
        node = self._capacity_value_node(target)
        if node is not None:
            assert node.parent is not None
            if _is_final(node.parent):
                raise UnsafeXMLError(
                    f"{self._where(node.parent)}: {capacity_key(target)} is final; Hadoop's "
                    "Configuration ignores any later definition and an operator marked it not "
                    "to be changed: remove <final>true</final> to let amtuner tune it"
                )
            return replace_text(data, node, text)
        unit = indent_unit(data, root)
        name = self._encode(capacity_key(target))
        lines = [
            b"<property>",
            unit + b"<name>" + name + b"</name>",
            unit + b"<value>" + text + b"</value>",
            b"</property>",
        ]
        return insert_lines(data, root, root, lines)

    def _canonical(self, target: str) -> str:
        if target == GLOBAL_TARGET:
            return target
        if self.kind is SchedulerKind.FAIR:
            return ".".join(_fair_segments(target))
        queue, label = split_target(target)
        return queue_path(queue) + (f"@{label}" if label else "")

    def _encode(self, text: str) -> bytes:
        try:
            return text.encode(self._encoding)
        except (LookupError, UnicodeEncodeError) as e:
            raise ExecutorError(f"{self.path}: cannot write {text!r} as {self._encoding}") from e

    def edit(self, values: Mapping[str, float]) -> Edit:
        """Build (not write) the change that sets each target to its value.

        Targets are spliced one at a time, re-parsing in between, so two insertions into the
        same element (even a self-closing one) cannot overlap.
        """
        targets: dict[str, tuple[float | None, float | None]] = {}
        seen: dict[str, str] = {}
        current = self
        for target, value in values.items():
            key = self._canonical(target)
            if key in seen:
                raise ExecutorError(f"targets {seen[key]!r} and {target!r} name the same queue")
            seen[key] = target
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise ExecutorError(f"{target or 'global'}: AM share {value} is not in [0, 1]")
            text = format_value(value)
            if value > 0 and float(text) == 0:
                raise ExecutorError(f"{target or 'global'}: AM share {value} would be written as 0")
            old = self.current_value(target)
            targets[target] = (old, float(text))
            if old is not None and old == float(text):
                continue  # keep the operator's spelling ("0.50") when the value is the same
            splice = current._splice_for(target, text.encode("ascii"))
            data = current.data[: splice.start] + splice.text + current.data[splice.end :]
            current = self._reparse(data)
        if current is not self:
            self._verify(current, targets)
        return Edit(
            path=self.path,
            old_data=self.data,
            new_data=current.data,
            diff=self._diff(current.data),
            changed=current.data != self.data,
            targets=targets,
        )

    def _reparse(self, data: bytes) -> SchedulerFile:
        try:
            return SchedulerFile(self.path, self.kind, data)
        except ExecutorError as e:
            raise ExecutorError(f"internal error, the edit would break the file: {e}") from e

    def _verify(
        self, after: SchedulerFile, targets: Mapping[str, tuple[float | None, float | None]]
    ) -> None:
        """Compare the re-parsed result: only the targets' values may differ, nothing else."""
        old_values, new_values, added = set(), set(), set()
        for target, (_old, value) in targets.items():
            if after.current_value(target) != value:
                raise ExecutorError(f"{self.path}: internal error, {target!r} not set to {value}")
            before_node, after_node = self._value_node(target), after._value_node(target)
            assert after_node is not None
            new_values.add(after_node.order)
            if before_node is not None:
                old_values.add(before_node.order)
            elif self.kind is SchedulerKind.FAIR:
                added.add(after_node.order)
            else:
                assert after_node.parent is not None
                added.update(n.order for n in after_node.parent.iter())
        if _flatten(self._root, old_values, set()) != _flatten(after._root, new_values, added):
            raise ExecutorError(f"{self.path}: internal error, the edit changed other content")

    def _diff(self, new_data: bytes) -> str:
        encoding = self._encoding
        try:
            old_text = self.data.decode(encoding)
            new_text = new_data.decode(encoding)
        except (LookupError, UnicodeDecodeError):
            old_text = self.data.decode("utf-8", "replace")
            new_text = new_data.decode("utf-8", "replace")
        lines = difflib.unified_diff(
            old_text.splitlines(),
            new_text.splitlines(),
            f"a/{self.path.name}",
            f"b/{self.path.name}",
            lineterm="",
        )
        return "".join(line + "\n" for line in lines)


def _is_final(prop: Node) -> bool:
    """``Configuration`` compares with "true"; any spelling of it is refused, to be safe."""
    return any(c.tag == "final" and c.text.lower() == "true" for c in prop.children)


def _value_child(prop: Node | None) -> Node | None:
    if prop is None:
        return None
    values = [c for c in prop.children if c.tag == "value"]
    return values[-1] if values else None


def _flatten(root: Node, masked: set[int], skipped: set[int]) -> list[tuple[object, ...]]:
    """Tree as comparable rows; ``masked`` elements' text is ignored, ``skipped`` ones dropped."""
    rows: list[tuple[object, ...]] = []
    for depth, node in root.walk():
        if node.order in skipped:
            continue
        text = None if node.order in masked else node.text
        rows.append((depth, node.tag, sorted(node.attrs.items()), text))
    return rows
