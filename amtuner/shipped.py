"""`amtuner deploy-files DIR`: what the deploy guide installs, from the installed package.

A host that got amtuner as a wheel has no checkout: the example config, the systemd unit, the
Prometheus scrape job and alert rules, the Grafana dashboard and the guide itself travel in the
wheel (``amtuner/deployfiles``, links to their place in the repository that the build copies in)
and this command writes them out, so every step of deploy/README.md works from the wheel alone.
"""

from __future__ import annotations

import argparse
import sys
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from amtuner.exitcodes import ExitCode

PACKAGE_DIR = "deployfiles"


def shipped() -> dict[str, bytes]:
    """Every shipped file by its path under DIR ("prometheus/alerts.yml"), with its bytes."""
    found: dict[str, bytes] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.is_file() and not child.name.startswith((".", "__")):
                found[prefix + child.name] = child.read_bytes()

    walk(files("amtuner") / PACKAGE_DIR, "")
    return found


def cmd_deploy_files(args: argparse.Namespace) -> int:
    out: Path = args.directory
    contents = shipped()
    existing = [name for name in contents if (out / name).exists()]
    if existing and not args.force:
        print(
            f"amtuner deploy-files: {', '.join(str(out / n) for n in existing)} already "
            "exist; nothing written (--force replaces them)",
            file=sys.stderr,
        )
        return ExitCode.FAILED
    for name, data in contents.items():
        path = out / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        except OSError as exc:
            print(f"amtuner deploy-files: cannot write {path}: {exc.strerror or exc}",
                  file=sys.stderr)  # fmt: skip
            return ExitCode.FAILED
        print(path)
    return ExitCode.OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "deploy-files",
        help="write the example config, the systemd unit, alert rules and dashboard to DIR",
        description="Write what deploy/README.md installs, as this version ships it: "
        "config.example.yaml, amtuner.service, prometheus/{scrape,alerts}.yml, "
        "grafana/amtuner-dashboard.json and the guide (README.md).",
    )
    p.add_argument("directory", type=Path, metavar="DIR", help="where to write them (created)")
    p.add_argument("--force", action="store_true", help="replace files already in DIR")
    p.set_defaults(func=cmd_deploy_files)
