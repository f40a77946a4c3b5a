"""What several subcommands share: exit codes, the target and report-folder options, and how an outcome is printed."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from harness.errors import InputError

EXIT_OK, EXIT_DIFFERS, EXIT_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130  # as a shell reports Ctrl-C: the reports written say the run is incomplete
DEFAULT_SCENARIOS = "scenarios"


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


def prepare_report_dir(given: str | None, prefix: str = "run") -> Path:
    """Create, check and lock the report folder before any agent runs (harness/report/folder.py)."""
    from harness.report import folder as report_folder
    return report_folder.prepare(given, prefix, report_folder.RUN_FILES if prefix == "run" else report_folder.DIFF_FILES)


def print_outcome(table: str, details: str, written: list[Path], report_dir: Path, both_sides: str = "") -> None:
    """The verdict table, the caller's text from both sides, the evidence for what went wrong, where the reports are."""
    print(table)
    if both_sides:
        print()
        print(both_sides)
    if details:
        print()
        print(details)
    print()
    print("reports: " + ", ".join(str(p) for p in written) + f", {report_dir / 'journal'}/")
