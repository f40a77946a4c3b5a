"""`harness install`: the agents targets need, installed into the tool folder up front."""

from __future__ import annotations

import argparse

from harness.commands.common import EXIT_OK
from harness.commands.targets import _agent_clis


def add_parser(sub) -> None:
    install = sub.add_parser("install", help="install the agents targets need into the tool folder (default: the pinned Claude Code and code-puppy versions)")
    install.add_argument("targets", nargs="*", metavar="T", help="targets whose agents to install, e.g. claude-code@2.1.300 or code-puppy@latest")


def run(args: argparse.Namespace, command: list[str]) -> int:
    """Install up front (CI, `make run`) what a run would otherwise install on first use."""
    from harness.targets import claude_code, code_puppy, inspect_swe, resolve_target

    specs = args.targets or [
        *(f"claude-code@{v}" for v in (claude_code.PINNED_VERSION, claude_code.OLDER_VERSION)),
        *(f"code-puppy@{v}" for v in (code_puppy.PINNED_VERSION, code_puppy.OLDER_VERSION)),
        f"inspect-swe@{inspect_swe.MEASURED_VERSION}",
        *(f"{family.NAME}@{family.PINNED_VERSION}" for family in _agent_clis()),
    ]
    for spec in specs:
        for target in resolve_target(spec):
            runs = target.executor.describe(target.commands)
            print(f"{target.name}: {runs}")
    return EXIT_OK
