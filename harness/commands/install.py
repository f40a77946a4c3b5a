"""`harness install`: the agents targets need, installed into the tool folder up front."""

from __future__ import annotations

import argparse

from harness.commands.common import EXIT_OK


def add_parser(sub) -> None:
    install = sub.add_parser("install", help="install the agents targets need into the tool folder (default: the pinned Claude Code and code-puppy versions)")
    install.add_argument("targets", nargs="*", metavar="T", help="targets whose agents to install, e.g. claude-code@2.1.300 or code-puppy@latest")


def run(args: argparse.Namespace, command: list[str]) -> int:
    """Install up front (CI, `make run`) what a run would otherwise install on first use."""
    from harness.targets import registry, resolve_target

    specs = args.targets or registry.install_defaults()
    for spec in specs:
        for target in resolve_target(spec):
            runs = target.executor.describe(target.commands)
            print(f"{target.name}: {runs}")
    return EXIT_OK
