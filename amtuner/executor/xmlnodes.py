"""Where each element of a scheduler file sits, in bytes, and how to splice around it.

expat parses the bytes only to learn the offsets (``CurrentByteIndex``) of every element and its
text; `amtuner.executor.xmledit` then replaces just a value's text or inserts one line, so
comments, CRLF line endings, indentation and the encoding declaration survive. Any DOCTYPE or
entity declaration is refused before anything is expanded (expat is exposed to entity-expansion
attacks, and Hadoop never needs a DTD in these files).
"""

from __future__ import annotations

import re
import xml.parsers.expat
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NoReturn

from amtuner.executor.errors import ExecutorError, UnsafeXMLError

MAX_FILE_BYTES = 10 * 1024 * 1024
"""Real scheduler files are a few hundred KB at most; a larger one is refused unread."""


@dataclass(eq=False)
class Node:
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
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    chunks: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.chunks).strip()

    def iter(self) -> Iterator[Node]:
        """This element and every one under it, in document order."""
        for _, node in self.walk():
            yield node

    def walk(self) -> Iterator[tuple[int, Node]]:
        """(depth below this element, element) in document order, with a stack of its own
        rather than recursion: a file nested deeper than Python's recursion limit is read, or
        refused, like any other."""
        stack: list[tuple[int, Node]] = [(0, self)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, child) for child in reversed(node.children))


def tag_end_of(data: bytes, start: int) -> int:
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


def refuse_doctype(*_args: object) -> NoReturn:
    raise UnsafeXMLError("DOCTYPE/entity declarations are not allowed in scheduler files")


def parse(data: bytes, where: str) -> tuple[Node, str]:
    """Return the root element and the declared encoding, refusing any DTD."""
    if len(data) > MAX_FILE_BYTES:
        raise ExecutorError(f"{where}: {len(data)} bytes is larger than {MAX_FILE_BYTES}")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data[:4]:
        raise ExecutorError(f"{where}: UTF-16/32 files are not supported")
    parser = xml.parsers.expat.ParserCreate()
    parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_doctype
    parser.UnparsedEntityDeclHandler = refuse_doctype
    parser.ExternalEntityRefHandler = refuse_doctype
    encoding = ["utf-8"]
    stack: list[Node] = []
    roots: list[Node] = []
    count = [0]

    def xml_decl(_version: str | None, enc: str | None, _standalone: int) -> None:
        if enc:
            encoding[0] = enc

    def start(tag: str, attrs: dict[str, str]) -> None:
        at = parser.CurrentByteIndex
        tag_end = tag_end_of(data, at)
        node = Node(tag, attrs, at, tag_end, count[0], parent=stack[-1] if stack else None)
        count[0] += 1
        if data[tag_end - 2 : tag_end] == b"/>":
            node.content_end = node.end = tag_end
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)

    def end(_tag: str) -> None:
        node = stack.pop()
        if node.end < 0:
            node.content_end = parser.CurrentByteIndex
            node.end = tag_end_of(data, node.content_end)

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


def line_of(data: bytes, at: int) -> int:
    return data.count(b"\n", 0, at) + 1


def line_start(data: bytes, at: int) -> int:
    return data.rfind(b"\n", 0, at) + 1


def indent_of(data: bytes, node: Node) -> bytes | None:
    """The whitespace before ``node`` on its line, or None when it does not start its line."""
    prefix = data[line_start(data, node.start) : node.start]
    return prefix if not prefix.strip() else None


def newline(data: bytes, at: int) -> bytes:
    """The line ending used around ``at`` (so CRLF files stay CRLF)."""
    nl = data.find(b"\n", at)
    if nl < 0:
        nl = data.rfind(b"\n", 0, at)
    return b"\r\n" if nl > 0 and data[nl - 1 : nl] == b"\r" else b"\n"


def indent_unit(data: bytes, root: Node) -> bytes:
    for parent in root.iter():
        outer = indent_of(data, parent) if parent is not root else b""
        for child in parent.children:
            inner = indent_of(data, child)
            if outer is not None and inner is not None and len(inner) > len(outer):
                return inner[len(outer) :] if inner.startswith(outer) else inner
    return b"  "


@dataclass(frozen=True)
class Splice:
    start: int
    end: int
    text: bytes


def insert_lines(data: bytes, root: Node, parent: Node, lines: list[bytes]) -> Splice:
    """Insert ``lines`` as the parent's last children, each on its own line, siblings' indent."""
    nl = newline(data, parent.start)
    unit = indent_unit(data, root)
    parent_indent = indent_of(data, parent)
    if parent_indent is None:
        parent_indent = b""
    if parent.content_start == parent.end:  # <queue name="a"/>: open it up
        slash = data.rindex(b"/", parent.start, parent.end)
        while data[slash - 1 : slash].isspace():
            slash -= 1
        body = b"".join(nl + parent_indent + unit + line for line in lines)
        closing = nl + parent_indent + b"</" + parent.tag.encode() + b">"
        return Splice(slash, parent.end, b">" + body + closing)
    last = parent.children[-1] if parent.children else None
    if last is not None:
        indent = indent_of(data, last)
        eol = data.find(b"\n", last.end, parent.content_end)
        if indent is not None and eol >= 0 and not data[last.end : eol].strip():
            text = b"".join(indent + line + nl for line in lines)
            return Splice(eol + 1, eol + 1, text)
    closing_indent = data[line_start(data, parent.content_end) : parent.content_end]
    if not closing_indent.strip() and line_start(data, parent.content_end) > parent.content_start:
        indent = closing_indent + unit
        if last is not None and indent_of(data, last) is not None:
            indent = indent_of(data, last) or indent
        at = line_start(data, parent.content_end)
        return Splice(at, at, b"".join(indent + line + nl for line in lines))
    # Everything on one line: stay on it rather than reflow the operator's layout.
    return Splice(parent.content_end, parent.content_end, b"".join(ln.strip() for ln in lines))


_MARKUP = re.compile(rb"<!--.*?-->|<\?.*?\?>|(<!\[CDATA\[.*?\]\]>)", re.DOTALL)
"""What may sit in a value's content beside its text: comments and processing instructions,
which are kept; a CDATA section is the value's text, and is replaced with it."""


def replace_text(data: bytes, node: Node, text: bytes) -> Splice:
    """Replace the value text, keeping the whitespace around it and any comment or processing
    instruction beside it (``<value><!-- managed by puppet -->0.1</value>``): from the first
    byte of text to the last, in the element's own content."""
    raw = data[node.content_start : node.content_end]
    runs: list[tuple[int, int]] = []  # spans of text (and CDATA) between the kept markup
    pos = 0
    for markup in _MARKUP.finditer(raw):
        runs.append((pos, markup.start()))
        if markup[1]:
            runs.append(markup.span())
        pos = markup.end()
    runs.append((pos, len(raw)))
    filled = [(a, b) for a, b in runs if raw[a:b].strip()]
    if not filled:  # no text yet: after any comment, or in place of the whitespace
        at = node.content_end if pos else node.content_start
        return Splice(at, node.content_end, text)
    first, last = filled[0][0], filled[-1][1]
    lead = len(raw[first:last]) - len(raw[first:last].lstrip())
    trail = len(raw[first:last]) - len(raw[first:last].rstrip())
    return Splice(node.content_start + first + lead, node.content_start + last - trail, text)
