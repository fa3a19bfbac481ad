"""Text amtuner shows or records, made safe to show: credentials out, control characters escaped.

One home for both, used wherever text leaves the process (the log and journal, the terminal, the
audit log, the state file):

* `redact`: ``http://user:secret@rm:8088`` is a valid ``rm.urls`` entry (requests sends the
  user information as HTTP Basic auth), so any URL amtuner renders (in an observation's source,
  an error, a refresh's description) has its user information replaced by ``***``.
* `printable`: text from the RM (an error body, a queue name, a diagnostic) is the RM's to
  choose: an ANSI escape sequence could rewrite the operator's terminal, and a newline could
  forge a log line in the journal. C0 and C1 control characters and Unicode's bidirectional
  overrides are shown as ``\\x..``/``\\u....`` escapes; newlines and tabs only where the text is
  amtuner's own multi-line output.
"""

from __future__ import annotations

import logging
import re

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s@]*@")
"""The user information of a URL (RFC 3986 ``userinfo@`` after ``scheme://``), in any text."""

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_CONTROL_ALL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def redact(text: str) -> str:
    """``text`` with the user information of every URL in it replaced by ``***``."""
    return _USERINFO.sub(r"\1***@", text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` with control characters escaped; ``lines`` keeps newlines and tabs."""
    return (_CONTROL if lines else _CONTROL_ALL).sub(_escape, text)


def shown(text: str, *, lines: bool = False) -> str:
    """Redacted and printable: what every sink applies."""
    return printable(redact(text), lines=lines)


class SafeFormatter(logging.Formatter):
    """Every log record, redacted and printable (its own newlines kept: tracebacks)."""

    def format(self, record: logging.LogRecord) -> str:
        return shown(super().format(record), lines=True)
