"""The command line as an operator meets it: every subcommand explains itself in --help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from amtuner.cli import get_parser, subcommands
from amtuner.config import DEFAULT_PATH
from amtuner.exitcodes import ExitCode


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


def test_every_option_has_help() -> None:
    parsers = [("amtuner", get_parser()), *subcommands(get_parser())]
    missing = [
        f"{name} {action.option_strings[0]}"
        for name, parser in parsers
        for action in parser._actions
        if action.option_strings and not (action.help or "").strip()
    ]
    assert not missing, missing


def amtuner(*argv: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amtuner", *argv], capture_output=True, text=True, timeout=60,
        **kw,  # type: ignore[call-overload]
    )  # fmt: skip


def test_log_level_is_taken_before_or_after_the_subcommand(tmp_path: Path) -> None:
    """Operators type it after the subcommand too; given only before, the subcommand does not
    reset it to the default."""
    for argv in (["--log-level", "DEBUG", "check"], ["check", "--log-level", "debug"]):
        args = get_parser().parse_args(argv)
        assert args.log_level == "DEBUG", argv
    assert get_parser().parse_args(["check"]).log_level == "INFO"
    proc = amtuner("status", "--config", str(tmp_path / "none.yaml"), "--log-level", "ERROR")
    assert proc.returncode == ExitCode.CONFIG, proc.stderr
    assert "unrecognized arguments" not in proc.stderr


def test_the_config_defaults_to_where_the_deploy_guide_puts_it() -> None:
    root = Path(__file__).resolve().parents[1]
    unit = (root / "deploy" / "amtuner.service").read_text()
    assert f"ExecStart=/usr/local/bin/amtuner run --config {DEFAULT_PATH}\n" in unit
    for command in ("once", "check", "run", "status"):
        assert get_parser().parse_args([command]).config == DEFAULT_PATH, command
    if not DEFAULT_PATH.exists():
        proc = amtuner("check")
        assert proc.returncode == ExitCode.CONFIG
        assert f"{DEFAULT_PATH}: cannot read the config file" in proc.stdout
