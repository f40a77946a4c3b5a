"""What several subcommands share: exit codes, loading the scenarios the project configured, the target options."""

from __future__ import annotations

import argparse
import os

from harness.errors import InputError

EXIT_OK, EXIT_DIFFERS, EXIT_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130  # as a shell reports Ctrl-C: the reports written say the run is incomplete


def add_target_file_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target-file-from-working-tree", action="store_true",
                        help="for FILE@REV targets, read the target file from the working tree instead of as it is at REV "
                             "(only the agent's code is then taken from REV)")


def workers(value: str) -> int:
    """`-n N`: a whole number of at least 1, or 'auto' (one per CPU)."""
    if value == "auto":
        return os.cpu_count() or 1
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of worker processes, at least 1, or 'auto'; got {value!r}")
    return int(value)


def one_target(spec: str, option: str, target_file_from_working_tree: bool = False):
    from harness.targets import resolve_target

    targets = resolve_target(spec, target_file_from_working_tree=target_file_from_working_tree)
    if len(targets) != 1:
        raise InputError(f"{option} {spec!r} stands for {len(targets)} targets ({', '.join(t.name for t in targets)}); name one")
    return targets[0]


def load_library(paths: list[str], project) -> list:
    """The scenarios under `paths`, without explore's configured inbox unless a path named lies in it.

    The reader leaves out folders named `found` itself; a team's inbox may have another name (`explore_inbox`),
    and its findings are replayed when named and otherwise kept out of the library's runs, unread.
    """
    from pathlib import Path

    from harness.scenario.reader import load_scenarios

    inbox = project.inbox()
    named = any(Path(p).resolve() == inbox or Path(p).resolve().is_relative_to(inbox) for p in paths)
    return load_scenarios(paths, skip=() if named else (inbox,))
