"""`harness run`: scenarios against targets, the verdicts reported, exit 0 only when each is as expected."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from harness.commands.common import EXIT_DIFFERS, EXIT_INTERRUPTED, EXIT_OK, add_target_file_option, load_library, workers
from harness.commands.run_attempts import add_attempt_options, attempts_of, last_report, only_last_failed, say_flaky
from harness.commands.sharding import ShardPlan, add_shard_options
from harness.errors import InputError
from harness.report import RUN_REPORTERS
from harness.report.files import ReportWriteError
from harness.report.reporter import add_option

DEFAULT_TARGET_NOTE = "no --target given: these runs judge the built-in reference agent, not an agent of yours"


def add_parser(sub) -> None:
    run = sub.add_parser("run", help="run scenarios against targets and report the verdicts")
    run.add_argument("paths", nargs="*", metavar="SCENARIO_OR_DIR",
                     help="scenario files or folders (default: the configured `scenarios`, else scenarios/)")
    run.add_argument("--target", "-t", action="append", default=[], metavar="T",
                     help="reference[:DEFECT|:*], claude-code[@VERSION][+POLICY|+*], another family's spec (`harness "
                          "targets`), or a target file, FILE or FILE@REV for the agent's code at a git revision; "
                          "repeatable (default: the configured `targets`, else reference)")
    run.add_argument("--suite", action="append", default=[], metavar="NAME",
                     help="run a suite of the configuration ([tool.harness.suites.NAME]); repeatable; `all` runs every "
                          "suite; all of them go into one report")
    run.add_argument("--report-dir", metavar="DIR",
                     help="where results.json, summary.md, junit.xml, report.html and journals go (default: "
                          "<report_dir>/run-<time>, linked as <report_dir>/latest; report_dir is configured, else reports)")
    run.add_argument("--keep-workspace", action="store_true", help="keep each run's HOME and working folder for inspection")
    add_target_file_option(run)
    add_option(run, RUN_REPORTERS)
    run.add_argument("--quiet", "-q", action="store_true", help="no per-step progress")
    run.add_argument("-n", "--workers", type=workers, default=None, metavar="N",
                     help="run the matrix on N worker processes, each run with its own fake API, port and HOME; "
                          "'auto': one per CPU (default: the configured `workers`, else 1, one run after another)")
    add_attempt_options(run)
    add_shard_options(run, "matrix (every suite's runs together with --suite)")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness import config
    from harness.report import console, folder
    from harness.report.reporter import ReportContext, choose, fan_out, files_of
    from harness.run.suites import check_overlap, run_parts
    from harness.shards import record as shard_record

    project = config.current()
    reporters = choose(args.reporter, RUN_REPORTERS, "run")
    parts, notes = _plan(args, project)
    check_overlap(parts)
    if args.last_failed is not None:
        if args.shard:
            raise InputError("--last-failed and --shard: each shard would read its own last report; run the failed "
                             "runs unsharded, or shard the whole matrix")
        parts, said = only_last_failed(parts, last_report(args.last_failed, args.report_dir, project))
        notes.append(said)
    # A shard deals out the whole matrix, every part's runs together, so n shards partition what one run would run.
    shard = ShardPlan(args, [(s.name, t.name) for part in parts for s, t in part.pairs()])
    if shard.owned is not None:
        parts = [replace(part, only=shard.owned) for part in parts]
    own_files = files_of(reporters) + ((shard_record.RECORD_NAME,) if shard.shard else ())
    report_dir = folder.prepare(args.report_dir, "run", own_files, project.place(project.report_dir))
    for note in notes:  # said on the console and in every report written
        print(f"harness: {note}", file=sys.stderr)
    if shard.shard is not None:  # said on the console only: the reports of a shard are a single run's, merged
        print(f"harness: shard {shard.shard}: {len(shard.owned or ())} of {len(shard.matrix)} run(s) of the matrix",
              file=sys.stderr)

    def progress_for(part):
        return None if args.quiet else console.ConsoleProgress(concurrent=part.workers > 1)

    results = run_parts(parts, report_dir / "journal", progress_for, lambda line: print(f"harness: {line}", file=sys.stderr),
                        args.keep_workspace, args.target_file_from_working_tree, attempts_of(args))
    # Everything a single run of the whole matrix would list, in its order: what merge-reports puts back together.
    matrix = [pair for part in parts for pair in replace(part, only=None).pairs()]
    inputs = ([s for s, _ in matrix], [t for _, t in matrix], [(s.name, t.name) for s, t in matrix])
    record = shard.record(shard_record.RUN, command, notes, report_dir, inputs,
                          {"retries": args.retries, "repeat": args.repeat}, runs=results)
    try:
        if record is not None:
            shard_record.write(report_dir, record)
        fan_out(reporters, results, report_dir, ReportContext(tuple(command), tuple(notes)))
    except ReportWriteError as exc:
        print(console.table(results))
        print(f"harness: error: {exc}; the verdicts above are in no report", file=sys.stderr)
        return EXIT_DIFFERS
    _say_harness_failure(results)
    return exit_code(results, args.allow_flaky)


def exit_code(results, allow_flaky: bool = False) -> int:
    """130 when the harness was stopped, else 0 only when every verdict is as expected, flaky runs only where allowed
    (merge-reports' too)."""
    if any(r.interrupted for r in results):
        return EXIT_INTERRUPTED
    say_flaky(results, allow_flaky)
    return EXIT_OK if all(r.passes_gate(allow_flaky) for r in results) else EXIT_DIFFERS


def _plan(args: argparse.Namespace, project) -> tuple[list, list[str]]:
    """The suites to run (every input read and checked here, before any agent starts) and the notes to say."""
    from harness.run.suites import Part
    from harness.targets import resolve_targets

    from_tree = args.target_file_from_working_tree
    if args.suite:
        if args.paths or args.target:
            raise InputError("--suite runs the configured scenarios and targets of each suite; give scenario paths and "
                             "--target, or --suite, not both")
        parts = []
        for suite in project.chosen_suites(args.suite):
            specs = project.target_specs(suite.targets)
            parts.append(Part(suite.name, load_library([project.place(p) for p in suite.scenarios], project),
                              resolve_targets(specs, target_file_from_working_tree=from_tree), specs,
                              args.workers or suite.workers or project.workers))
        return parts, []
    specs, notes = args.target, []
    scenarios = load_library(args.paths or project.scenario_paths(), project)
    parts = []
    if not specs:
        # A catalog entry runs on its own targets (its affected and fixed releases); --target overrides them all.
        for incident in [s for s in scenarios if s.incident is not None]:
            own = list(incident.incident.targets)
            parts.append(Part(None, [incident], resolve_targets(own, target_file_from_working_tree=from_tree), own,
                              args.workers or project.workers))
        scenarios = [s for s in scenarios if s.incident is None]
        if not scenarios:
            return parts, notes
        specs = project.target_specs()
        if not specs:
            specs, notes = ["reference"], [DEFAULT_TARGET_NOTE]
    targets = resolve_targets(specs, target_file_from_working_tree=from_tree)
    return [*parts, Part(None, scenarios, targets, specs, args.workers or project.workers)], notes


def _say_harness_failure(results) -> None:
    """The harness's own failure (a journal the disk refused) as the last line: the agent is not the one to look at."""
    failed = next((r for r in results if r.harness_failure), None)
    if failed is not None:
        later = sum(1 for r in results if r.error and r.error.startswith("not run: the harness could not go on"))
        rest = f"; {later} later run(s) were not run" if later else ""
        print(f"harness: error: {failed.harness_failure} (in {failed.scenario} on {failed.target}){rest}", file=sys.stderr)
