"""`harness merge-reports DIR...`: the shard folders of `harness run --shard i/n` (or `harness diff`) as one report.

Playwright's merge-reports, for this harness: each shard folder holds its
shard.json (harness/shards/record.py), the merge checks the folders are one
complete set of one matrix (harness/shards/merge.py), and the command's own
reporters render the merged results, so results.json, junit.xml, summary.md
and report.html are what a single run of the whole matrix writes, timings
aside. The exit code is the one that single run would give.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.commands.common import EXIT_DIFFERS, EXIT_OK
from harness.commands.run import exit_code
from harness.report import DIFF_REPORTERS, RUN_REPORTERS
from harness.report.files import ReportWriteError
from harness.report.reporter import add_option


def add_parser(sub) -> None:
    merge = sub.add_parser("merge-reports", help="merge the report folders of `--shard i/n` runs into one report")
    merge.add_argument("shards", nargs="+", metavar="DIR",
                       help="every shard's report folder (each holds a shard.json), in any order")
    merge.add_argument("--report-dir", metavar="DIR",
                       help="where the merged results.json (comparison.json for diff shards), summary.md, junit.xml, "
                            "report.html and journals go (default: <report_dir>/merged-<time>; report_dir is "
                            "configured, else reports)")
    add_option(merge, RUN_REPORTERS)
    merge.add_argument("--allow-flaky", action="store_true",
                       help="exit 0 when the only runs not as expected are flaky ones, as `harness run --allow-flaky`")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness import config
    from harness.report import folder
    from harness.errors import InputError
    from harness.report.reporter import ReportContext, choose, files_of
    from harness.shards import merge
    from harness.shards.record import DIFF, single_run_command

    project = config.current()
    loaded = merge.load([Path(d) for d in args.shards])
    first = loaded[0][1]
    available = DIFF_REPORTERS if first.kind == DIFF else RUN_REPORTERS
    reporters = choose(args.reporter, available, "diff" if first.kind == DIFF else "run")
    if args.report_dir and any(Path(args.report_dir).resolve() == shard.resolve() for shard, _ in loaded):
        raise InputError("is one of the shard folders: write the merged report into a folder of its own", args.report_dir)
    report_dir = folder.prepare(args.report_dir, "merged", files_of(reporters), project.place(project.report_dir))
    context = ReportContext(tuple(single_run_command(first.command, report_dir)), tuple(first.notes))
    if first.kind == DIFF:
        comparison = merge.merged_comparison(loaded, report_dir)
        if not _reported(reporters, comparison, report_dir, context):
            return EXIT_DIFFERS
        return EXIT_DIFFERS if comparison.gate_failures() else EXIT_OK
    results = merge.merged_runs(loaded, report_dir)
    if not _reported(reporters, results, report_dir, context):
        return EXIT_DIFFERS
    return exit_code(results, args.allow_flaky)


def _reported(reporters, merged, report_dir: Path, context) -> bool:
    from harness.report.reporter import fan_out

    try:
        fan_out(reporters, merged, report_dir, context)
    except ReportWriteError as exc:
        print(f"harness: error: {exc}; the merged verdicts are in no report", file=sys.stderr)
        return False
    return True
