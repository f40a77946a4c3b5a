"""`harness run`: scenarios against targets, the verdicts reported, exit 0 only when each is as expected."""

from __future__ import annotations

import argparse
import sys

from harness.commands.common import (
    DEFAULT_SCENARIOS, EXIT_DIFFERS, EXIT_INTERRUPTED, EXIT_OK, add_target_file_option, workers,
)
from harness.report import RUN_REPORTERS
from harness.report.files import ReportWriteError
from harness.report.reporter import add_option

DEFAULT_TARGET_NOTE = "no --target given: these runs judge the built-in reference agent, not an agent of yours"


def add_parser(sub) -> None:
    run = sub.add_parser("run", help="run scenarios against targets and report the verdicts")
    run.add_argument("paths", nargs="*", metavar="SCENARIO_OR_DIR", help=f"scenario files or folders (default: {DEFAULT_SCENARIOS}/)")
    run.add_argument("--target", "-t", action="append", default=[], metavar="T",
                     help="reference[:DEFECT|:*], claude-code[@VERSION][+POLICY|+*] or a target file; repeatable (default: reference)")
    run.add_argument("--report-dir", metavar="DIR",
                     help="where results.json, summary.md, junit.xml and journals go (default: reports/<time>, linked as reports/latest)")
    run.add_argument("--keep-workspace", action="store_true", help="keep each run's HOME and working folder for inspection")
    add_target_file_option(run)
    add_option(run, RUN_REPORTERS)
    run.add_argument("--quiet", "-q", action="store_true", help="no per-step progress")
    run.add_argument("-n", "--workers", type=workers, default=1, metavar="N",
                     help="run the matrix on N worker processes, each run with its own fake API, port and HOME; "
                          "'auto': one per CPU (default: 1, one run after another)")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness.report import console, folder
    from harness.report.reporter import ReportContext, choose, fan_out, files_of
    from harness.run.runner import run_matrix
    from harness.scenario.reader import load_scenarios
    from harness.targets import resolve_targets

    reporters = choose(args.reporter, RUN_REPORTERS, "run")
    paths = args.paths or [DEFAULT_SCENARIOS]
    scenarios = load_scenarios(paths)
    specs = args.target or ["reference"]
    targets = resolve_targets(specs, target_file_from_working_tree=args.target_file_from_working_tree)
    report_dir = folder.prepare(args.report_dir, "run", files_of(reporters))
    notes = [] if args.target else [DEFAULT_TARGET_NOTE]  # said on the console and in every report written
    for note in notes:
        print(f"harness: {note}", file=sys.stderr)
    progress = None if args.quiet else console.ConsoleProgress(concurrent=args.workers > 1)
    if args.workers > 1:
        from harness.run.pool import run_matrix_parallel

        results = run_matrix_parallel(scenarios, targets, specs, report_dir / "journal", progress, args.keep_workspace,
                                      args.workers, args.target_file_from_working_tree)
    else:
        results = run_matrix(scenarios, targets, report_dir / "journal", progress, args.keep_workspace)
    try:
        fan_out(reporters, results, report_dir, ReportContext(tuple(command), tuple(notes)))
    except ReportWriteError as exc:
        print(console.table(results))
        print(f"harness: error: {exc}; the verdicts above are in no report", file=sys.stderr)
        return EXIT_DIFFERS
    _say_harness_failure(results)
    if any(r.interrupted for r in results):
        return EXIT_INTERRUPTED
    return EXIT_OK if all(r.as_expected for r in results) else EXIT_DIFFERS


def _say_harness_failure(results) -> None:
    """The harness's own failure (a journal the disk refused) as the last line: the agent is not the one to look at."""
    failed = next((r for r in results if r.harness_failure), None)
    if failed is not None:
        later = sum(1 for r in results if r.error and r.error.startswith("not run: the harness could not go on"))
        rest = f"; {later} later run(s) were not run" if later else ""
        print(f"harness: error: {failed.harness_failure} (in {failed.scenario} on {failed.target}){rest}", file=sys.stderr)
