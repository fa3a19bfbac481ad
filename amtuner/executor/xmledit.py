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
import xml.parsers.expat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from amtuner.executor.errors import ExecutorError, UnsafeXMLError
from amtuner.executor.reading import read_regular
from amtuner.model import GLOBAL_TARGET, SchedulerKind, format_a

MAX_FILE_BYTES = 10 * 1024 * 1024
"""Real scheduler files are a few hundred KB at most; a larger one is refused unread."""

CS_PREFIX = "yarn.scheduler.capacity."
CS_GLOBAL_KEY = CS_PREFIX + "maximum-am-resource-percent"
CS_QUEUE_SUFFIX = ".maximum-am-resource-percent"
CS_DEFAULT = 0.1
"""``DEFAULT_MAXIMUM_APPLICATIONMASTERS_RESOURCE_PERCENT`` (2.x to 3.4)."""
CS_RESOURCE_CALCULATOR = CS_PREFIX + "resource-calculator"
FS_DEFAULT = 0.5
"""FairScheduler's built-in ``queueMaxAMShareDefault``."""
FS_QUEUE_TAGS = ("queue", "pool")
"""FS accepts ``<pool>`` (MR1 name) wherever ``<queue>`` is allowed."""
CS_PROPERTY_ATTRS = ("name", "value", "final")
"""``<property>`` attributes that Hadoop's ``Configuration`` (2.x and later) reads as it reads
the child elements of the same names."""


format_value = format_a


def capacity_queue_path(target: str) -> str:
    """CS keys use full queue paths; accept ``default`` as shorthand for ``root.default``."""
    if target == "root" or target.startswith("root."):
        return target
    return "root." + target


def capacity_key(target: str) -> str:
    if target == GLOBAL_TARGET:
        return CS_GLOBAL_KEY
    return CS_PREFIX + capacity_queue_path(target) + CS_QUEUE_SUFFIX


def _fair_segments(target: str) -> list[str]:
    parts = target.split(".")
    if parts[0] == "root":
        parts = parts[1:]
    if not parts or any(not p for p in parts):
        raise ExecutorError(f"{target!r} is not a leaf queue path (e.g. root.default)")
    return parts


@dataclass(eq=False)
class _Node:
    """One element with the byte offsets needed to splice around it."""

    tag: str
    attrs: dict[str, str]
    start: int
    """Offset of its ``<``."""
    content_start: int
    """Offset just after the start tag's ``>``."""
    order: int
    """Position in document order (used to compare two parses)."""
    content_end: int = -1
    """Offset of the end tag's ``<`` (== content_start for ``<x/>``)."""
    end: int = -1
    """Offset just after the end tag."""
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.chunks).strip()

    def iter(self) -> Iterator[_Node]:
        yield self
        for child in self.children:
            yield from child.iter()


def _tag_end(data: bytes, start: int) -> int:
    """Offset just after the ``>`` closing the tag that begins at ``start`` (quotes respected)."""
    quote = 0
    for i in range(start + 1, len(data)):
        c = data[i]
        if quote:
            if c == quote:
                quote = 0
        elif c in b"\"'":
            quote = c
        elif c == 0x3E:  # '>'
            return i + 1
    raise ExecutorError("unterminated tag")  # expat would have refused first


def _refuse_doctype(*_args: object) -> NoReturn:
    raise UnsafeXMLError("DOCTYPE/entity declarations are not allowed in scheduler files")


def _parse(data: bytes, where: str) -> tuple[_Node, str]:
    """Return the root element and the declared encoding, refusing any DTD."""
    if len(data) > MAX_FILE_BYTES:
        raise ExecutorError(f"{where}: {len(data)} bytes is larger than {MAX_FILE_BYTES}")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data[:4]:
        raise ExecutorError(f"{where}: UTF-16/32 files are not supported")
    parser = xml.parsers.expat.ParserCreate()
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = _refuse_doctype
    parser.EntityDeclHandler = _refuse_doctype
    parser.UnparsedEntityDeclHandler = _refuse_doctype
    parser.ExternalEntityRefHandler = _refuse_doctype
    encoding = ["utf-8"]
    stack: list[_Node] = []
    roots: list[_Node] = []
    count = [0]

    def xml_decl(_version: str | None, enc: str | None, _standalone: int) -> None:
        if enc:
            encoding[0] = enc

    def start(tag: str, attrs: dict[str, str]) -> None:
        at = parser.CurrentByteIndex
        tag_end = _tag_end(data, at)
        node = _Node(tag, attrs, at, tag_end, count[0], parent=stack[-1] if stack else None)
        count[0] += 1
        if data[tag_end - 2 : tag_end] == b"/>":
            node.content_end = node.end = tag_end
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)

    def end(_tag: str) -> None:
        node = stack.pop()
        if node.end < 0:
            node.content_end = parser.CurrentByteIndex
            node.end = _tag_end(data, node.content_end)

    def chars(text: str) -> None:
        if stack:
            stack[-1].chunks.append(text)

    parser.XmlDeclHandler = xml_decl
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as e:
        raise ExecutorError(f"{where}: not well-formed XML: {e}") from None
    except UnsafeXMLError as e:
        raise UnsafeXMLError(f"{where}: {e}") from None
    return roots[0], encoding[0]


def _line_of(data: bytes, at: int) -> int:
    return data.count(b"\n", 0, at) + 1


def _line_start(data: bytes, at: int) -> int:
    return data.rfind(b"\n", 0, at) + 1


def _indent_of(data: bytes, node: _Node) -> bytes | None:
    """The whitespace before ``node`` on its line, or None when it does not start its line."""
    prefix = data[_line_start(data, node.start) : node.start]
    return prefix if not prefix.strip() else None


def _newline(data: bytes, at: int) -> bytes:
    """The line ending used around ``at`` (so CRLF files stay CRLF)."""
    nl = data.find(b"\n", at)
    if nl < 0:
        nl = data.rfind(b"\n", 0, at)
    return b"\r\n" if nl > 0 and data[nl - 1 : nl] == b"\r" else b"\n"


def _indent_unit(data: bytes, root: _Node) -> bytes:
    for parent in root.iter():
        outer = _indent_of(data, parent) if parent is not root else b""
        for child in parent.children:
            inner = _indent_of(data, child)
            if outer is not None and inner is not None and len(inner) > len(outer):
                return inner[len(outer) :] if inner.startswith(outer) else inner
    return b"  "


@dataclass(frozen=True)
class _Splice:
    start: int
    end: int
    text: bytes


def _insert_lines(data: bytes, root: _Node, parent: _Node, lines: list[bytes]) -> _Splice:
    """Insert ``lines`` as the parent's last children, each on its own line, siblings' indent."""
    nl = _newline(data, parent.start)
    unit = _indent_unit(data, root)
    parent_indent = _indent_of(data, parent)
    if parent_indent is None:
        parent_indent = b""
    if parent.content_start == parent.end:  # <queue name="a"/>: open it up
        slash = data.rindex(b"/", parent.start, parent.end)
        while data[slash - 1 : slash].isspace():
            slash -= 1
        body = b"".join(nl + parent_indent + unit + line for line in lines)
        closing = nl + parent_indent + b"</" + parent.tag.encode() + b">"
        return _Splice(slash, parent.end, b">" + body + closing)
    last = parent.children[-1] if parent.children else None
    if last is not None:
        indent = _indent_of(data, last)
        eol = data.find(b"\n", last.end, parent.content_end)
        if indent is not None and eol >= 0 and not data[last.end : eol].strip():
            text = b"".join(indent + line + nl for line in lines)
            return _Splice(eol + 1, eol + 1, text)
    closing_indent = data[_line_start(data, parent.content_end) : parent.content_end]
    if not closing_indent.strip() and _line_start(data, parent.content_end) > parent.content_start:
        indent = closing_indent + unit
        if last is not None and _indent_of(data, last) is not None:
            indent = _indent_of(data, last) or indent
        at = _line_start(data, parent.content_end)
        return _Splice(at, at, b"".join(indent + line + nl for line in lines))
    # Everything on one line: stay on it rather than reflow the operator's layout.
    return _Splice(parent.content_end, parent.content_end, b"".join(ln.strip() for ln in lines))


def _replace_text(data: bytes, node: _Node, text: bytes) -> _Splice:
    """Replace the value text, keeping any whitespace around it."""
    raw = data[node.content_start : node.content_end]
    if b"<" in raw or b"&" in raw or not raw.strip():
        return _Splice(node.content_start, node.content_end, text)
    lead = len(raw) - len(raw.lstrip())
    trail = len(raw) - len(raw.rstrip())
    return _Splice(node.content_start + lead, node.content_end - trail, text)


def _as_float(node: _Node, where: str) -> float:
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
        self._root, self._encoding = _parse(data, str(self.path))
        expected = "allocations" if self.kind is SchedulerKind.FAIR else "configuration"
        if self._root.tag != expected:
            raise ExecutorError(
                f"{self.path}: top-level element is <{self._root.tag}>, a {self.kind} scheduler "
                f"file has <{expected}>"
            )
        if self.kind is SchedulerKind.CAPACITY:
            self._refuse_unreadable_layout()

    def _where(self, node: _Node) -> str:
        return f"{self.path}:{_line_of(self.data, node.start)}"

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

    def _fair_queue(self, target: str) -> _Node:
        parent = self._root
        tops = [c for c in parent.children if c.tag in FS_QUEUE_TAGS]
        if len(tops) == 1 and tops[0].attrs.get("name", "").strip() == "root":
            parent = tops[0]
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
        if parent.attrs.get("type") == "parent" or any(
            c.tag in FS_QUEUE_TAGS for c in parent.children
        ):
            raise ExecutorError(
                f"{self.path}: {target!r} is a parent queue; maxAMShare only limits leaf queues"
            )
        return parent

    def _fair_value_node(self, target: str) -> tuple[_Node, _Node | None]:
        """(element that holds or would hold the value, value element if present)."""
        if target == GLOBAL_TARGET:
            holder, tag = self._root, "queueMaxAMShareDefault"
        else:
            holder, tag = self._fair_queue(target), "maxAMShare"
        values = [c for c in holder.children if c.tag == tag]
        return holder, values[-1] if values else None  # FS lets the last one win

    def _properties(self) -> dict[str, list[_Node]]:
        """property name -> every <property> defining it, in file order. A ``<name>`` child
        overrides a ``name`` attribute, as in ``Configuration``'s parser."""
        found: dict[str, list[_Node]] = {}
        for prop in self._root.children:
            if prop.tag != "property":
                continue
            names = [c.text for c in prop.children if c.tag == "name"]
            name = names[-1] if names else prop.attrs.get("name", "").strip()
            if name:
                found.setdefault(name, []).append(prop)
        return found

    def _property(self, key: str) -> _Node | None:
        """The one <property> that sets ``key``, refusing the layouts where editing it could
        leave the RM on another value. ``Configuration`` keeps the last of several definitions
        unless an earlier one is final, so picking one to edit is a guess; and a value given as
        an attribute is not a ``<value>`` element this module can splice."""
        found = self._properties().get(key, [])
        if len(found) > 1:
            lines = " and ".join(str(_line_of(self.data, p.start)) for p in found)
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
        parts = capacity_queue_path(target).split(".")
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            key = f"{CS_PREFIX}{parent}.queues"
            value = _value_child(self._property(key))
            declared = value.text if value is not None else ("default" if depth == 1 else "")
            children = [q.strip() for q in declared.split(",")]
            if parts[depth] not in children:
                raise ExecutorError(
                    f"{self.path}: queue {capacity_queue_path(target)!r} is not declared "
                    f"({key} = {declared!r}); amtuner does not create queues"
                )
        if self._property(f"{CS_PREFIX}{'.'.join(parts)}.queues") is not None:
            raise ExecutorError(
                f"{self.path}: {'.'.join(parts)!r} is a parent queue; "
                "maximum-am-resource-percent only limits leaf queues"
            )

    def _capacity_value_node(self, target: str) -> _Node | None:
        if target != GLOBAL_TARGET:
            self._check_capacity_queue(target)
        return _value_child(self._property(capacity_key(target)))

    def _value_node(self, target: str) -> _Node | None:
        if self.kind is SchedulerKind.FAIR:
            return self._fair_value_node(target)[1]
        return self._capacity_value_node(target)

    # --- reading ----------------------------------------------------------------------------

    def current_value(self, target: str) -> float | None:
        """The value written in the file for ``target``; None when the file does not set it."""
        node = self._value_node(target)
        return None if node is None else _as_float(node, str(self.path))

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

    def effective_value(self, target: str) -> float:
        """What the scheduler applies: the queue's own value, else the file-wide default."""
        value = self.current_value(target)
        if value is None and target != GLOBAL_TARGET:
            value = self.current_value(GLOBAL_TARGET)
        if value is not None:
            return value
        return FS_DEFAULT if self.kind is SchedulerKind.FAIR else CS_DEFAULT

    # --- editing ----------------------------------------------------------------------------

    def _splice_for(self, target: str, text: bytes) -> _Splice:
        data, root = self.data, self._root
        if self.kind is SchedulerKind.FAIR:
            holder, node = self._fair_value_node(target)
            if node is not None:
                return _replace_text(data, node, text)
            tag = b"maxAMShare" if target != GLOBAL_TARGET else b"queueMaxAMShareDefault"
            element = b"<" + tag + b">" + text + b"</" + tag + b">"
            return _insert_lines(data, root, holder, [element])
        node = self._capacity_value_node(target)
        if node is not None:
            assert node.parent is not None
            if _is_final(node.parent):
                raise UnsafeXMLError(
                    f"{self._where(node.parent)}: {capacity_key(target)} is final; Hadoop's "
                    "Configuration ignores any later definition and an operator marked it not "
                    "to be changed: remove <final>true</final> to let amtuner tune it"
                )
            return _replace_text(data, node, text)
        unit = _indent_unit(data, root)
        name = self._encode(capacity_key(target))
        lines = [
            b"<property>",
            unit + b"<name>" + name + b"</name>",
            unit + b"<value>" + text + b"</value>",
            b"</property>",
        ]
        return _insert_lines(data, root, root, lines)

    def _canonical(self, target: str) -> str:
        if target == GLOBAL_TARGET:
            return target
        if self.kind is SchedulerKind.FAIR:
            return ".".join(_fair_segments(target))
        return capacity_queue_path(target)

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


def _is_final(prop: _Node) -> bool:
    """``Configuration`` compares with "true"; any spelling of it is refused, to be safe."""
    return any(c.tag == "final" and c.text.lower() == "true" for c in prop.children)


def _value_child(prop: _Node | None) -> _Node | None:
    if prop is None:
        return None
    values = [c for c in prop.children if c.tag == "value"]
    return values[-1] if values else None


def _flatten(root: _Node, masked: set[int], skipped: set[int]) -> list[tuple[object, ...]]:
    """Tree as comparable rows; ``masked`` elements' text is ignored, ``skipped`` ones dropped."""
    rows: list[tuple[object, ...]] = []
    for node in root.iter():
        if node.order in skipped:
            continue
        depth = 0
        parent = node.parent
        while parent is not None:
            depth += 1
            parent = parent.parent
        text = None if node.order in masked else node.text
        rows.append((depth, node.tag, sorted(node.attrs.items()), text))
    return rows
