"""The command line as an operator meets it: every subcommand explains itself in --help."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from amtuner.cli import get_parser
from amtuner.exitcodes import ExitCode


def subcommands(
    parser: argparse.ArgumentParser, path: str = "amtuner"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{path} {name}", sub
                yield from subcommands(sub, f"{path} {name}")


def test_every_subcommand_has_a_description() -> None:
    found = dict(subcommands(get_parser()))
    assert {"amtuner once", "amtuner run", "amtuner bench paper", "amtuner sim-admin"} <= set(found)
    missing = sorted(name for name, sub in found.items() if not (sub.description or "").strip())
    assert not missing, f"no description: {missing}"


def test_plot_without_matplotlib_is_refused_before_any_work(tmp_path: Path) -> None:
    """Hours of simulation must not end in an ImportError: the option itself is refused."""
    hide = "import sys; sys.modules['matplotlib'] = None; from amtuner.cli import main; "
    proc = subprocess.run(
        [sys.executable, "-c", hide + "sys.exit(main(sys.argv[1:]))",
         "bench", "paper", "--plot", str(tmp_path / "out.png")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == ExitCode.CONFIG
    assert "needs matplotlib, which is not installed: pip install 'amtuner[plot]'" in proc.stderr
    assert proc.stdout == ""
    assert not (tmp_path / "out.png").exists()


def test_controller_tables_say_the_guard_was_off(capsys: pytest.CaptureFixture[str]) -> None:
    from amtuner.bench.cli import GUARD_NOTE
    from amtuner.cli import main

    argv = ["bench", "paper", "--scheduler", "capacity", "--seeds", "1", "--workers", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert GUARD_NOTE in out.splitlines()


HEAVY = (
    "requests", "bs4", "apscheduler", "prometheus_client", "yaml", "matplotlib",
    "amtuner.cycle", "amtuner.daemon", "amtuner.sim.simulation", "amtuner.monitor",
)  # fmt: skip
"""What only a running command needs: building the parser (every invocation, `--help` included)
must not pay for them (`python -X importtime -m amtuner once --help` shows the cost)."""


def test_building_the_parser_imports_nothing_heavy() -> None:
    code = (
        "import sys; from amtuner.cli import get_parser; get_parser(); "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_once_help_explains_every_rule_and_case(capsys: pytest.CaptureFixture[str]) -> None:
    from amtuner.controller.adaptive import Case
    from amtuner.model import Rule

    with pytest.raises(SystemExit):
        get_parser().parse_args(["once", "--help"])
    out = capsys.readouterr().out
    for name in [*Rule, *Case]:
        assert f"  {name.value} " in out and name.meaning in out, name
