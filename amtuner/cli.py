"""The `amtuner` command: parses arguments and hands them to the module that owns the subcommand.

Each module in COMMANDS provides ``register(subparsers) -> None`` (adds its parsers and sets
``func``, where ``func(args) -> int`` is the exit code). Every invocation builds every parser, so
those modules import only what their parsers need; what a command talks to (requests, the
simulator, APScheduler, Prometheus) is imported when it runs.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from amtuner import __version__, commands, demo, status
from amtuner.bench import cli as bench_cli
from amtuner.sim import cli as sim_cli
from amtuner.sim import serve

COMMANDS = (commands, status, demo, sim_cli, serve, bench_cli)
"""Modules whose ``register`` adds subcommands, in the order `--help` lists them."""

def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="amtuner",
        description="Keep a YARN cluster's ApplicationMaster share right while it runs.",
    )
    parser.add_argument("--version", action="version", version=f"amtuner {__version__}")
    parser.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log verbosity (default: %(default)s)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = get_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    if getattr(args, "compiled_core", False):  # commands that simulate a lot
        from amtuner.sim import native

        native.ensure_built()
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
