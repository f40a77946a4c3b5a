"""`harness run`'s options about attempts: --retries, --repeat, --allow-flaky and --last-failed.

A retried run that then passes is `flaky`, never quietly green: the gate fails
on it unless the caller says flakes are allowed, and every report names it
with each attempt's journal. `--last-failed` re-runs what the last report did
not find as expected, the way pytest's --lf does; a last report without such a
run runs everything rather than nothing, so a typo cannot make a green gate.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from harness.errors import InputError
from harness.run.attempts import Attempts


def add_attempt_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--retries", type=_count(0), default=0, metavar="N",
                        help="attempt a run whose verdicts differ from the scenario's expectations up to N more times; "
                             "one that then matches is reported `flaky` (every attempt's journal kept) and fails the "
                             "gate unless --allow-flaky")
    parser.add_argument("--repeat", type=_count(1), default=1, metavar="N",
                        help="attempt every run N times whatever its verdicts (a soak): attempts that disagree make "
                             "the run `flaky`")
    parser.add_argument("--allow-flaky", action="store_true",
                        help="exit 0 when the only runs not as expected are flaky ones (they are still reported)")
    parser.add_argument("--last-failed", nargs="?", const="", default=None, metavar="REPORT_DIR",
                        help="run only the runs the last report found not as expected (flaky and errors included): "
                             "REPORT_DIR's results.json, else --report-dir's, else <report_dir>/latest's")


def _count(least: int):
    def parse(value: str) -> int:
        if not (value.isascii() and value.isdigit()) or int(value) < least:
            raise argparse.ArgumentTypeError(f"expected a whole number, at least {least}; got {value!r}")
        return int(value)
    return parse


def attempts_of(args: argparse.Namespace) -> Attempts:
    return Attempts(retries=args.retries, repeat=args.repeat)


def say_flaky(results: Sequence, allowed: bool) -> None:
    flaky = [r for r in results if r.flaky]
    if flaky:
        verdict = "allowed by --allow-flaky" if allowed else "the gate fails on them (--allow-flaky to let them pass)"
        print(f"harness: {len(flaky)} flaky run(s), their attempts disagree; {verdict}:", file=sys.stderr)
        for result in flaky:
            print(f"harness:   {result.scenario} · {result.target}", file=sys.stderr)


def last_report(given: str, report_dir: str | None, project) -> Path:
    """The results.json --last-failed reads: named, else the --report-dir about to be rewritten, else latest."""
    if given:
        folder = Path(given)
    elif report_dir and (Path(report_dir) / "results.json").is_file():
        folder = Path(report_dir)
    else:
        folder = project.place(project.report_dir) / "latest"
    path = folder if folder.name == "results.json" else folder / "results.json"
    if not path.is_file():
        if given and _holds_scenarios(folder):
            raise InputError(f"--last-failed took {given} for the report folder it may name, but that holds scenarios "
                             f"and no report: put the scenarios before --last-failed, or write --last-failed=REPORT_DIR")
        raise InputError(f"--last-failed: no last report at {path} (run once without --last-failed, or name a report folder)")
    return path


def _holds_scenarios(place: Path) -> bool:
    """A scenario file, or a folder with one in it: what `harness run --last-failed scenarios/` meant to run."""
    if place.is_file():
        return place.suffix in (".yaml", ".yml")
    return place.is_dir() and any(found.suffix in (".yaml", ".yml") for found in place.rglob("*"))


def only_last_failed(parts: list, path: Path) -> tuple[list, str]:
    """The parts narrowed to the runs `path` found not as expected, and the note that says so."""
    try:
        runs = json.loads(path.read_text(encoding="utf-8"))["runs"]
        failed = {(run["scenario"], run["target"]) for run in runs if not run["as_expected"]}
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"--last-failed: {path} is not a results.json of harness run ({type(exc).__name__}: {exc})")
    if not failed:
        return parts, f"--last-failed: the last report ({path}) has no run that failed; running all {_runs(parts)} run(s)"
    narrowed = [replace(part, only=frozenset(failed)) for part in parts]
    chosen = _runs(narrowed)
    if chosen == 0:
        raise InputError(f"--last-failed: none of the {len(failed)} run(s) that failed in {path} is among this "
                         "command's scenarios and targets")
    gone = len(failed) - chosen
    return ([p for p in narrowed if p.runs],
            f"--last-failed: {chosen} run(s) that failed in {path}" + (f" ({gone} not in this plan)" if gone else ""))


def _runs(parts: list) -> int:
    return sum(part.runs for part in parts)
