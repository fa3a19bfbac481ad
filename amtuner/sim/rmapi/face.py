"""What every answer of the simulated RM shares: how the RM presents itself and the response.

`FaceOptions` changes only the presentation, never the simulation; `Response` is what `handle`
returns to the HTTP server and to the in-process adapter alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from amtuner.sim.simulation import CLUSTER_TIMESTAMP

JSON_TYPE = "application/json;charset=utf-8"
XML_TYPE = "application/xml;charset=utf-8"
TEXT_TYPE = "text/plain;charset=utf-8"
HTML_TYPE = "text/html;charset=utf-8"

DEFAULT_APPS_LIMIT = 1000
"""A real RM returns every app when no limit is given; the sim bounds the answer instead."""

WebUILayout = Literal[2, 3]


@dataclass(frozen=True, slots=True)
class FaceOptions:
    """How this RM presents itself; none of it changes the simulation."""

    web_ui_layout: WebUILayout = 3
    mutable_conf: bool = False
    """CapacityScheduler with a mutable configuration store (scheduler-conf API on)."""
    standby_of: str | None = None
    """Base URL of the active RM; set, this RM is a standby that redirects there."""
    started_on_ms: int = CLUSTER_TIMESTAMP
    """Epoch ms that simulated time 0 stands for (startedOn, app times); by default the
    timestamp in the simulation's application ids, so the cluster id matches them."""
    scheduler_config_path: Path | None = None
    """The file the refresh endpoint re-reads."""
    apps_limit: int = DEFAULT_APPS_LIMIT

    @property
    def rm_version(self) -> str:
        return "3.3.0" if self.web_ui_layout == 2 else "3.4.1"


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def json_response(status: int, doc: object) -> Response:
    return Response(status, {"Content-Type": JSON_TYPE}, json.dumps(doc).encode())


def text_response(status: int, text: str) -> Response:
    return Response(status, {"Content-Type": TEXT_TYPE}, text.encode())


def html_response(page: str) -> Response:
    return Response(200, {"Content-Type": HTML_TYPE}, page.encode())
