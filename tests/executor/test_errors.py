"""Each executor error names its own label, so a cycle report needs no mapping to show it."""

from __future__ import annotations

import pytest

from amtuner.executor import (
    ConcurrentEditError,
    ExecutorError,
    RefreshError,
    UnsafeXMLError,
    WriteError,
)


@pytest.mark.parametrize(
    ("cls", "label"),
    [
        (ExecutorError, "scheduler-file"),
        (UnsafeXMLError, "unsafe-xml"),
        (ConcurrentEditError, "concurrent-edit"),
        (WriteError, "write-failed"),
        (RefreshError, "refresh-failed"),
    ],
)
def test_label_travels_with_the_error(cls: type[ExecutorError], label: str) -> None:
    exc = cls("x")
    assert isinstance(exc, ExecutorError)
    assert exc.label == label
