"""`harness diff`: the same scenarios through a baseline and a candidate; regressions fail the gate."""

from __future__ import annotations

import argparse
import json
import sys

from harness.commands.common import (
    EXIT_DIFFERS, EXIT_INTERRUPTED, EXIT_OK, add_target_file_option, load_library, one_target,
)
from harness.commands.sharding import ShardPlan, add_shard_options
from harness.errors import InputError
from harness.report import DIFF_REPORTERS
from harness.report.files import ReportWriteError
from harness.report.reporter import add_option


def add_parser(sub) -> None:
    diff = sub.add_parser("diff", help="run scenarios through a baseline and a candidate; fail on regressions")
    diff.add_argument("paths", nargs="*", metavar="SCENARIO_OR_DIR",
                      help="scenario files or folders (default: the configured `scenarios`, else scenarios/)")
    diff.add_argument("--baseline", "-b", required=True, metavar="T1",
                      help="the target as it is: any --target spec of harness run, e.g. agent.yaml@main for a target "
                           "file's agent at the branch main, or claude-code@2.1.236+append-every-launch")
    diff.add_argument("--candidate", "-c", required=True, metavar="T2",
                      help="the target with the change, e.g. agent.yaml@my-branch")
    diff.add_argument("--fail-on-unchanged-fail", action="store_true",
                      help="also fail when a check fails on both sides (default: only regressions and errors fail)")
    diff.add_argument("--require-fix", action="append", default=[], metavar="SCENARIO",
                      help="this scenario must fail on the baseline and pass on the candidate; repeatable")
    diff.add_argument("--report-dir", metavar="DIR",
                      help="where report.html, summary.md, junit.xml, comparison.json and journals go (default: "
                           "<report_dir>/diff-<time>; report_dir is configured, else reports)")
    diff.add_argument("--quiet", "-q", action="store_true", help="no per-step progress")
    add_target_file_option(diff)
    add_option(diff, DIFF_REPORTERS)
    add_shard_options(diff, "scenarios (each scenario's baseline and candidate runs stay together)")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness.run.differential import compare
    from harness.report import console, files, folder
    from harness.report import comparison as report
    from harness.report.reporter import ReportContext, choose, fan_out, files_of
    from harness.run.runner import Interrupted
    from harness.shards import record as shard_record

    from harness import config

    project = config.current()
    reporters = choose(args.reporter, DIFF_REPORTERS, "diff")

    scenarios = load_library(args.paths or project.scenario_paths(), project)
    names = {s.name for s in scenarios}
    for name in args.require_fix:
        if name not in names:
            raise InputError(f"--require-fix {name!r}: no such scenario among the {len(scenarios)} loaded ({', '.join(sorted(names))})")
    from_tree = args.target_file_from_working_tree
    baseline, candidate = one_target(args.baseline, "--baseline", from_tree), one_target(args.candidate, "--candidate", from_tree)
    # A scenario is the unit: its cells compare both sides, so its two runs go to one shard, named as the pytest
    # plugin names the comparison item (scenario, "BASELINE → CANDIDATE").
    matrix = [(s.name, f"{baseline.name} → {candidate.name}") for s in scenarios]
    shard = ShardPlan(args, matrix)
    mine = scenarios if shard.owned is None else [s for s, run in zip(scenarios, matrix) if run in shard.owned]
    own_files = files_of(reporters) + ((shard_record.RECORD_NAME,) if shard.shard else ())
    report_dir = folder.prepare(args.report_dir, "diff", own_files, project.place(project.report_dir))
    progress = None if args.quiet else console.ConsoleProgress()
    try:
        comparison = compare(mine, baseline, candidate, report_dir / "journal", progress,
                             args.fail_on_unchanged_fail, [n for n in args.require_fix if n in {s.name for s in mine}])
    except Interrupted as stop:
        from harness.redaction import redact, redact_json

        from harness.isolation import stopping
        who = stopping.stop_message()
        note = (f"harness diff: INTERRUPTED during {stop.result.scenario} on {stop.result.target}"
                f"{f' ({who})' if who else ''}; no comparison was made\n")
        # Whole or not at all, as every report file (harness/report/files.py).
        files.write_text(report_dir / "summary.md", redact(f"# {note}\nJournals of the runs so far: `{report_dir / 'journal'}`\n"))
        files.write_text(report_dir / "comparison.json",
                         json.dumps(redact_json({"interrupted": True, "error": stop.result.error})) + "\n")
        print(note + f"journals so far: {report_dir / 'journal'}/", file=sys.stderr)
        return EXIT_INTERRUPTED
    options = {"fail_on_unchanged_fail": args.fail_on_unchanged_fail, "required_fixes": list(args.require_fix)}
    record = shard.record(shard_record.DIFF, command, (), report_dir, (scenarios, [baseline, candidate], matrix), options,
                          comparison=comparison)
    try:
        if record is not None:
            shard_record.write(report_dir, record)
        fan_out(reporters, comparison, report_dir, ReportContext(tuple(command)))
    except ReportWriteError as exc:
        print(report.table(comparison))
        print(f"harness: error: {exc}; the comparison above is in no report", file=sys.stderr)
        return EXIT_DIFFERS
    return EXIT_DIFFERS if comparison.gate_failures() else EXIT_OK
