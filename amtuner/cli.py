"""The `amtuner` command: parses arguments and hands them to the module that owns the subcommand.

Each subcommand lives in the module named in COMMANDS, which provides
``register(subparsers) -> None`` (adds its parser and sets ``func``) where ``func(args) -> int``
is the exit code. This file only wires them together.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from amtuner import __version__

COMMANDS: tuple[str, ...] = (
    "amtuner.commands",
    "amtuner.daemon",
    "amtuner.status",
    "amtuner.demo",
    "amtuner.sim.cli",
    "amtuner.sim.serve",
    "amtuner.bench.cli",
)
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
    for name in COMMANDS:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = get_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        return 130
