"""`harness run | diff | explore | minimize | serve | targets | install`: the command line, and its exit codes.

0: every verdict matches its expectation. 1: some verdict differs, or a run
errored. 2: bad input or usage (a broken scenario, an unknown target, an
unwritable report folder), reported as one line naming where and what.
130: stopped by Ctrl-C or SIGTERM; the reports written say the run is incomplete.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Sequence

from harness.errors import InputError
from harness.report.files import ReportWriteError
from harness.isolation.process import request_stop

EXIT_OK, EXIT_DIFFERS, EXIT_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130  # as a shell reports Ctrl-C: the reports written say the run is incomplete
DEFAULT_SCENARIOS = "scenarios"
DEFAULT_TARGET_NOTE = "no --target given: these runs judge the built-in reference agent, not an agent of yours"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harness", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run scenarios against targets and report the verdicts")
    run.add_argument("paths", nargs="*", metavar="SCENARIO_OR_DIR", help=f"scenario files or folders (default: {DEFAULT_SCENARIOS}/)")
    run.add_argument("--target", "-t", action="append", default=[], metavar="T",
                     help="reference[:DEFECT|:*], claude-code[@VERSION][+POLICY|+*] or a target file; repeatable (default: reference)")
    run.add_argument("--report-dir", metavar="DIR",
                     help="where results.json, summary.md, junit.xml and journals go (default: reports/<time>, linked as reports/latest)")
    run.add_argument("--keep-workspace", action="store_true", help="keep each run's HOME and working folder for inspection")
    _add_target_file_option(run)
    run.add_argument("--quiet", "-q", action="store_true", help="no per-step progress")
    run.add_argument("-n", "--workers", type=_workers, default=1, metavar="N",
                     help="run the matrix on N worker processes, each run with its own fake API, port and HOME; "
                          "'auto': one per CPU (default: 1, one run after another)")

    diff = sub.add_parser("diff", help="run scenarios through a baseline and a candidate; fail on regressions")
    diff.add_argument("paths", nargs="*", metavar="SCENARIO_OR_DIR", help=f"scenario files or folders (default: {DEFAULT_SCENARIOS}/)")
    diff.add_argument("--baseline", "-b", required=True, metavar="T1", help="the target as it is (e.g. main)")
    diff.add_argument("--candidate", "-c", required=True, metavar="T2", help="the target with the change")
    diff.add_argument("--fail-on-unchanged-fail", action="store_true",
                      help="also fail when a check fails on both sides (default: only regressions and errors fail)")
    diff.add_argument("--require-fix", action="append", default=[], metavar="SCENARIO",
                      help="this scenario must fail on the baseline and pass on the candidate; repeatable")
    diff.add_argument("--report-dir", metavar="DIR",
                      help="where report.html, summary.md, junit.xml, comparison.json and journals go (default: reports/diff-<time>)")
    diff.add_argument("--quiet", "-q", action="store_true", help="no per-step progress")
    _add_target_file_option(diff)

    from harness.commands.explore import add_parser as add_explore_parser  # Hypothesis itself is imported only to explore

    add_explore_parser(sub)

    from harness.commands.importing import add_parser as add_import_parser

    add_import_parser(sub)

    minimize = sub.add_parser("minimize", help="shrink a failing scenario to the fewest steps and shortest replies that still fail the same check")
    minimize.add_argument("scenario", type=Path, metavar="SCENARIO", help="the scenario file; the result is written beside it as NAME.min.yaml")
    minimize.add_argument("--target", "-t", required=True, metavar="T", help="the target it fails on (one)")
    minimize.add_argument("--check", metavar="C", help="the check that must keep failing (default: the first that fails)")
    minimize.add_argument("--quiet", "-q", action="store_true", help="no line per candidate run")

    serve = sub.add_parser("serve", help="run the fake model API in the foreground, journaling every request")
    serve.add_argument("--port", default="0", help="port on 127.0.0.1 (default: any free port)")
    record = serve.add_mutually_exclusive_group()
    record.add_argument("--journal", type=Path, help="append every request to this JSONL file")
    record.add_argument("--record", type=Path, metavar="DIR",
                        help="record an incident by hand: every request to DIR/journal.jsonl, and DIR/session.json "
                             "(base URL, times, request count)")

    sub.add_parser("targets", help="list the built-in targets, launch policies and the reference agent's defects")

    install = sub.add_parser("install", help="install the agents targets need into the tool folder (default: the pinned Claude Code and code-puppy versions)")
    install.add_argument("targets", nargs="*", metavar="T", help="targets whose agents to install, e.g. claude-code@2.1.300 or code-puppy@latest")
    return parser


def _add_target_file_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target-file-from-working-tree", action="store_true",
                        help="for FILE@REV targets, read the target file from the working tree instead of as it is at REV "
                             "(only the agent's code is then taken from REV)")


def _workers(value: str) -> int:
    """`-n N`: a whole number of at least 1, or 'auto' (one per CPU)."""
    if value == "auto":
        return os.cpu_count() or 1
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of worker processes, at least 1, or 'auto'; got {value!r}")
    return int(value)


def _stop_on_signal(signum, frame) -> None:
    request_stop()  # remembered too: a raise that lands inside a gc callback is dropped by Python
    raise KeyboardInterrupt  # Ctrl-C, or a CI job cancelled: the same orderly stop


def main(argv: Sequence[str] | None = None) -> int:
    """Everything the command prints goes through the one redactor: an agent's credentials reach no console."""
    from harness.redaction import redacting_console

    with redacting_console():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in ("run", "diff", "explore", "minimize"):
        from harness.isolation import stopping
        from harness.isolation.workspace import sweep_stale_workspaces

        for stop in (signal.SIGINT, signal.SIGTERM):
            signal.signal(stop, _stop_on_signal)
        stopping.install()  # before any thread starts: a stop's sender is told apart (an agent, not the user)
        sweep_stale_workspaces()  # what the runs of a killed harness left in the temporary folder
    try:
        if args.command == "run":
            return _run(args, list(sys.argv if argv is None else ["harness", *argv]))
        if args.command == "diff":
            return _diff(args, list(sys.argv if argv is None else ["harness", *argv]))
        if args.command == "explore":
            from harness.commands import explore
            return explore.run(args, list(sys.argv if argv is None else ["harness", *argv]))
        if args.command == "minimize":
            return _minimize(args)
        if args.command == "import":
            from harness.commands import importing
            return importing.run(args)
        if args.command == "serve":
            from harness.commands import serve
            return serve.run(args)
        if args.command == "install":
            return _install(args)
        return _targets()
    except InputError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return EXIT_INPUT


def _run(args: argparse.Namespace, command: list[str]) -> int:
    from harness.report import caller_text, console, write_reports
    from harness.run.runner import run_matrix
    from harness.scenario.reader import load_scenarios
    from harness.targets import resolve_targets

    paths = args.paths or [DEFAULT_SCENARIOS]
    scenarios = load_scenarios(paths)
    specs = args.target or ["reference"]
    targets = resolve_targets(specs, target_file_from_working_tree=args.target_file_from_working_tree)
    report_dir = _prepare_report_dir(args.report_dir)
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
        written = write_reports(results, report_dir, command, notes)
    except ReportWriteError as exc:
        print(console.table(results))
        print(f"harness: error: {exc}; the verdicts above are in no report", file=sys.stderr)
        return EXIT_DIFFERS
    _print_outcome(console.table(results), console.failure_details(results), written, report_dir,
                   caller_text.text_section(results))
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


def _print_outcome(table: str, details: str, written: list[Path], report_dir: Path, both_sides: str = "") -> None:
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


def _diff(args: argparse.Namespace, command: list[str]) -> int:
    from harness.run.differential import compare
    from harness.report import comparison as report
    from harness.run.runner import Interrupted
    from harness.report import console
    from harness.scenario.reader import load_scenarios

    scenarios = load_scenarios(args.paths or [DEFAULT_SCENARIOS])
    names = {s.name for s in scenarios}
    for name in args.require_fix:
        if name not in names:
            raise InputError(f"--require-fix {name!r}: no such scenario among the {len(scenarios)} loaded ({', '.join(sorted(names))})")
    from_tree = args.target_file_from_working_tree
    baseline, candidate = _one_target(args.baseline, "--baseline", from_tree), _one_target(args.candidate, "--candidate", from_tree)
    report_dir = _prepare_report_dir(args.report_dir, prefix="diff")
    progress = None if args.quiet else console.ConsoleProgress()
    try:
        comparison = compare(scenarios, baseline, candidate, report_dir / "journal", progress,
                             args.fail_on_unchanged_fail, args.require_fix)
    except Interrupted as stop:
        from harness.redaction import redact, redact_json

        from harness.isolation import stopping
        who = stopping.stop_message()
        note = (f"harness diff: INTERRUPTED during {stop.result.scenario} on {stop.result.target}"
                f"{f' ({who})' if who else ''}; no comparison was made\n")
        (report_dir / "summary.md").write_text(redact(f"# {note}\nJournals of the runs so far: `{report_dir / 'journal'}`\n"))
        (report_dir / "comparison.json").write_text(
            json.dumps(redact_json({"interrupted": True, "error": stop.result.error})) + "\n")
        print(note + f"journals so far: {report_dir / 'journal'}/", file=sys.stderr)
        return EXIT_INTERRUPTED
    try:
        written = report.write_all(comparison, report_dir, command)
        written.append(_write_html(comparison, report_dir, command))
    except ReportWriteError as exc:
        print(report.table(comparison))
        print(f"harness: error: {exc}; the comparison above is in no report", file=sys.stderr)
        return EXIT_DIFFERS
    _print_outcome(report.table(comparison), report.details(comparison), written, report_dir)
    return EXIT_DIFFERS if comparison.gate_failures() else EXIT_OK


def _write_html(comparison, report_dir: Path, command: list[str]) -> Path:
    from harness.report import html

    return html.write_comparison(comparison, report_dir / "report.html", command)


def _one_target(spec: str, option: str, target_file_from_working_tree: bool = False):
    from harness.targets import resolve_target

    targets = resolve_target(spec, target_file_from_working_tree=target_file_from_working_tree)
    if len(targets) != 1:
        raise InputError(f"{option} {spec!r} stands for {len(targets)} targets ({', '.join(t.name for t in targets)}); name one")
    return targets[0]


def _prepare_report_dir(given: str | None, prefix: str = "run") -> Path:
    """Create, check and lock the report folder before any agent runs (harness/report/folder.py)."""
    from harness.report import folder as report_folder
    return report_folder.prepare(given, prefix, report_folder.RUN_FILES if prefix == "run" else report_folder.DIFF_FILES)


def _minimize(args: argparse.Namespace) -> int:
    from harness.explore.minimize import minimize

    target = _one_target(args.target, "--target")
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


def _install(args: argparse.Namespace) -> int:
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
            runs = target.launcher.describe() if target.launcher is not None else target.commands["launch"][0]
            print(f"{target.name}: {runs}")
    return EXIT_OK


def _targets() -> int:
    from harness.reference_agent.defects import DEFECT_DESCRIPTIONS
    from harness.targets import claude_code, code_puppy, inspect_swe

    print("reference                 the clean reference agent (shipped in this package)")
    for name, text in DEFECT_DESCRIPTIONS.items():
        print(f"reference:{name:<34} {text}")
    print("reference:*               the clean agent plus one target per defect")
    print("  +in-process                     after any reference spec: each step in the harness process through respx, not a subprocess")
    print(f"claude-code[@VERSION][+POLICY]  the real Claude Code CLI, installed on first use (pinned: {claude_code.PINNED_VERSION})")
    for policy, text in claude_code.POLICIES.items():
        default = " (default)" if policy == claude_code.DEFAULT_POLICY else ""
        print(f"  +{policy:<30} {text}{default}")
    print("  +*                              one target per policy")
    print(f"code-puppy[@VERSION|@latest][+FORMAT][+MEMORY]  code-puppy from PyPI in its own virtualenv (pinned: {code_puppy.PINNED_VERSION})")
    for variant, text in {**code_puppy.FORMATS, **code_puppy.MEMORY}.items():
        default = " (default)" if variant in (code_puppy.DEFAULT_FORMAT, code_puppy.DEFAULT_MEMORY) else ""
        print(f"  +{variant:<30} {text}{default}")
    print("  +*                              one target per format and memory setting")
    print("pydantic-ai:MODULE:FUNCTION[+FORMAT][+in-process]  your pydantic-ai agent, from a factory returning it")
    print("  +openai-chat (default), +openai-responses, +anthropic, +*   the wire format its model speaks")
    print("  +in-process                     each step in the harness process through respx, not a subprocess")
    print(f"inspect-swe[@VERSION|@latest][+claude-code@X.Y.Z][+PIN][+checkout=PATH[#REV]]  inspect_swe's claude_code() in a real "
          f"`inspect eval` (default: the newest release; measured: {inspect_swe.MEASURED_VERSION})")
    for variant, text in inspect_swe.PINS.items():
        default = " (default)" if variant == inspect_swe.DEFAULT_PIN else ""
        print(f"  +{variant:<30} {text}{default}")
    print("  +*                              one target per pin setting")
    print("  +checkout=PATH[#REV]            the launcher's code from that folder, or that git revision of it")
    for family in _agent_clis():
        print(f"{family.NAME}[@VERSION][+POLICY]  {family.__doc__.split(' as a target')[0]}, installed on first use "
              f"(pinned: {family.PINNED_VERSION}; policies as claude-code's)")
    print("PATH.yaml                 a target file describing any agent (see README)")
    return EXIT_OK


def _agent_clis() -> list:
    """The agent CLIs judged side by side with Claude Code under the same launch policies (issue 10)."""
    import importlib

    return [importlib.import_module(f"harness.targets.{m}") for m in ("codex", "gemini_cli", "qwen_code", "opencode")]
