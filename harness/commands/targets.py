"""`harness targets`: every registered target family, its options, and the reference agent's defects."""

from __future__ import annotations

import argparse

from harness.commands.common import EXIT_OK


def add_parser(sub) -> None:
    sub.add_parser("targets", help="list the built-in targets, launch policies and the reference agent's defects")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness.targets import registry

    for line in registry.listing():
        print(line)
    return EXIT_OK
