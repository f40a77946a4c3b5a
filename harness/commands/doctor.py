"""`harness doctor TARGET`: one launch and one resume against the fake API, and what the target file should change.

Exit 0 and `ready` when the session id, the identity line and the appended
text all come through both steps; exit 1 and `N problem(s)`, each one line
naming the key to change, otherwise (an agent that hangs or crashes included);
exit 2 for a target that cannot be loaded, as everywhere.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from harness.commands.common import EXIT_DIFFERS, EXIT_INTERRUPTED, EXIT_OK, add_target_file_option, one_target
from harness.commands.doctor_findings import DEFAULT_APPEND
from harness.errors import InputError


def add_parser(sub) -> None:
    doctor = sub.add_parser("doctor", help="run one launch and one resume of a target and say what to fix in its file",
                            description="Run one launch and one resume of TARGET against the fake API and report what "
                                        "each step did: the argv, the requests and their classes, the session id, the "
                                        "identity line and the appended text. Exit 0: ready; 1: problems, each naming "
                                        "what to change; 2: the target cannot be loaded.")
    doctor.add_argument("target", metavar="TARGET", help="a target file (or FILE@REV), or a built-in target")
    doctor.add_argument("--append", default=DEFAULT_APPEND, metavar="TEXT",
                        help="the text the caller appends to the system prompt ({append}); "
                             f"default: {DEFAULT_APPEND!r}")
    add_target_file_option(doctor)


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness.commands.doctor_findings import doctor_scenario, examine
    from harness.journal.requests import read_journal
    from harness.run.runner import Interrupted, run_scenario

    if not args.append.strip():
        raise InputError("--append: empty text; the doctor looks for the appended text in every system prompt")
    target = one_target(args.target, "TARGET", args.target_file_from_working_tree)
    scenario = doctor_scenario(args.append)
    print(f"harness doctor: {target.name}: one launch and one resume against the fake API", flush=True)
    print(f"  appended text ({{append}}): {args.append!r}")
    print(f"  session id rule: {target.session_id.describe()}; identity pattern: /{target.identity_pattern.pattern}/",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="harness-doctor-") as folder:
        journal = Path(folder) / "journal.jsonl"
        try:
            result = run_scenario(scenario, target, journal)
        except Interrupted as stop:
            print(f"harness doctor: INTERRUPTED: {stop.result.error}", file=sys.stderr)
            return EXIT_INTERRUPTED
        exchanges = read_journal(journal) if journal.exists() else []
    findings = examine(scenario, target, result, exchanges)
    for line in findings.lines:
        print(line)
    if result.harness_failure:
        print(f"harness: error: {result.harness_failure}", file=sys.stderr)
        return EXIT_DIFFERS
    if findings.problems:
        print()
        print("problems (what to change in the target file):")
        for problem in findings.problems:
            print(f"  - {problem}")
    print(findings.last_line())
    return EXIT_DIFFERS if findings.problems else EXIT_OK
