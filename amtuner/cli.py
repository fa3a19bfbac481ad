"""The `amtuner` command: parses arguments and hands them to the module that owns the subcommand.

Each module in COMMANDS provides ``register(subparsers) -> None`` (adds its parsers and sets
``func``, where ``func(args) -> int`` is the exit code). Every invocation builds every parser, so
those modules import only what their parsers need; what a command talks to (requests, the
simulator, APScheduler, Prometheus) is imported when it runs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterator, Sequence

from amtuner import __version__, advise, approve, commands, demo, recorder, shipped, status
from amtuner.bench import cli as bench_cli
from amtuner.exitcodes import ExitCode
from amtuner.safetext import SafeFormatter
from amtuner.sim import cli as sim_cli
from amtuner.sim import serve

COMMANDS = (commands, status, approve, recorder, advise, shipped, demo, sim_cli, serve, bench_cli)
"""Modules whose ``register`` adds subcommands, in the order `--help` lists them."""

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def _add_log_level(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--log-level", default=default, choices=LOG_LEVELS, type=str.upper,
        help="log verbosity (default: INFO)",
    )  # fmt: skip


def subcommands(
    parser: argparse.ArgumentParser, path: str = "amtuner"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser under ``parser`` with its command line (`bench` has subcommands)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{path} {name}", sub
                yield from subcommands(sub, f"{path} {name}")


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="amtuner",
        description="Keep a YARN cluster's ApplicationMaster share right while it runs.",
    )
    parser.add_argument("--version", action="version", version=f"amtuner {__version__}")
    _add_log_level(parser, "INFO")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(subparsers)
    # Also after the subcommand (`amtuner run --log-level DEBUG`), as operators type it; left
    # unset there unless given, so it does not undo one given before the subcommand.
    for _, sub in subcommands(parser):
        _add_log_level(sub, argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = get_parser().parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SafeFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=args.log_level, handlers=[handler])
    if getattr(args, "compiled_core", False):  # commands that simulate a lot
        from amtuner.sim import native

        native.ensure_built()
    try:
        code = int(args.func(args))
        sys.stdout.flush()
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`amtuner status | head -1`): what it did not read is nobody's,
        # so no traceback. Python flushes stdout again at exit: point it at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.BROKEN_PIPE
    return code
