"""Exit codes are an interface: one enum, documented once in the README, every executor error
mapped to a file or refresh code (never the RM's)."""

from __future__ import annotations

import re
from pathlib import Path

from amtuner.executor import errors
from amtuner.exitcodes import ExitCode

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_documents_every_exit_code_and_no_other() -> None:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("### Exit codes") :]
    table = table[: table.index("\n\n", table.index("| code"))]
    documented = {int(m) for m in re.findall(r"^\| (\d+) \|", table, flags=re.M)}
    assert documented == {int(code) for code in ExitCode}


def test_every_executor_error_is_a_file_or_refresh_failure() -> None:
    classes = [
        cls
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.ExecutorError)
    ]
    assert len(classes) >= 5
    for cls in classes:
        assert ExitCode.for_error(cls.label) in (ExitCode.FILE, ExitCode.REFRESH), cls


def test_no_error_is_ok_and_an_unknown_label_is_the_rms() -> None:
    assert ExitCode.for_error(None) is ExitCode.OK
    assert ExitCode.for_error("rm-unreachable") is ExitCode.RM
    assert ExitCode.for_error("refresh-unusable") is ExitCode.CONFIG
