"""`harness minimize`: a failing scenario shrunk to the fewest steps and shortest replies that still fail the same check."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.commands.common import EXIT_INTERRUPTED, EXIT_OK, one_target


def add_parser(sub) -> None:
    minimize = sub.add_parser("minimize", help="shrink a failing scenario to the fewest steps and shortest replies that still fail the same check")
    minimize.add_argument("scenario", type=Path, metavar="SCENARIO", help="the scenario file; the result is written beside it as NAME.min.yaml")
    minimize.add_argument("--target", "-t", required=True, metavar="T", help="the target it fails on (one)")
    minimize.add_argument("--check", metavar="C", help="the check that must keep failing (default: the first that fails)")
    minimize.add_argument("--quiet", "-q", action="store_true", help="no line per candidate run")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness.explore.minimize import minimize

    target = one_target(args.target, "--target")
    report = (lambda line: None) if args.quiet else (lambda line: print(line, flush=True))
    try:
        done = minimize(args.scenario, target, args.check, report)
    except KeyboardInterrupt:
        print("harness minimize: interrupted; nothing was written", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"{done.check} still fails on {target.name} with {done.steps_after} of {done.steps_before} steps "
          f"({done.runs} runs of the target)")
    for change in done.changes:
        print(f"  {change}")
    print(f"written: {done.path}")
    return EXIT_OK
