"""`harness bisect`: the first release (or revision) of a target whose verdicts on a scenario differ from an older one's.

"Since which release does a plain --resume keep the appended text?" is a
question about a range of releases; answering it by hand means installing
and running them one by one. This runs the scenario on the two ends, then
halves the range (harness/bisect/search.py), installing only the releases it
tests, and writes bisect.json with both sides' evidence for each check that
changed. Exit 0: a boundary was found; 1: none could be (the ends agree, an
end cannot be judged, or only skipped releases separate the two sides);
2: bad input; 130: interrupted (bisect.json then says so).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from harness.commands.common import EXIT_DIFFERS, EXIT_INTERRUPTED, EXIT_OK
from harness.errors import InputError

BISECT_FILE = "bisect.json"


def add_parser(sub) -> None:
    bisect = sub.add_parser("bisect", help="find the first release or revision whose verdicts on a scenario change")
    bisect.add_argument("scenario", type=Path, metavar="SCENARIO", help="the scenario file to run on each release")
    bisect.add_argument("--target", "-t", required=True, metavar="RANGE",
                        help="NAME@OLD..NEW[+OPTIONS]: the family's releases between OLD and NEW (its registry's, in "
                             "version order), e.g. 'claude-code@2.1.236..2.1.332+append-first-launch-only'; or "
                             "FILE@REV1..REV2: a target file's revisions, first-parent")
    bisect.add_argument("--check", metavar="C", help="compare this check's verdict only (default: every check)")
    bisect.add_argument("--report-dir", metavar="DIR", help="where bisect.json and each release's journal go "
                        "(default: a new bisect-<time> folder in the configured report folder)")
    bisect.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


def run(args: argparse.Namespace, command: list[str]) -> int:
    from harness import config
    from harness.bisect.candidates import parse
    from harness.bisect.probe import Prober
    from harness.bisect.search import bisect
    from harness.redaction import redact
    from harness.report import folder
    from harness.scenario.reader import load_scenario

    project = config.current()
    scenario = load_scenario(args.scenario)
    if args.check is not None and args.check not in scenario.checks:
        raise InputError(f"--check {args.check}: the scenario runs {', '.join(scenario.checks)}", args.scenario)
    span = parse(args.target)
    report_dir = folder.prepare(args.report_dir, "bisect", [BISECT_FILE, "journal"], project.place(project.report_dir)).resolve()
    say = (lambda line: None) if args.quiet else (lambda line: print(f"harness bisect: {line}", file=sys.stderr, flush=True))
    n = len(span.candidates)
    say(f"{n} {span.kind}s from {span.candidates[0].label} to {span.candidates[-1].label} ({span.source}); "
        f"at most {2 + math.ceil(math.log2(n - 1))} to test")
    reasons: dict[str, list[str]] = {}
    for item in span.left_out:
        reasons.setdefault(item["why"], []).append(item["version"])
    for why, versions in reasons.items():
        say(f"left out {len(versions)} ({why}): {_some(versions)}")
    if span.out_of_order:
        say(f"{len(span.out_of_order)} uploaded after a higher release (a backport, or the registry's late record of "
            f"it), searched in version order: {_some([item['version'] for item in span.out_of_order])}")
    prober = Prober(scenario, args.check, report_dir / "journal")
    started = time.monotonic()

    def announce(candidate, left: int) -> None:
        say(f"testing {candidate.label} ({left} undecided, {len(prober.results)} tested, "
            f"{time.monotonic() - started:.0f}s)")

    record = {"scenario": str(args.scenario), "range": args.target, "source": span.source, "kind": span.kind,
              "check": args.check, "candidates": len(span.candidates), "left_out": span.left_out,
              "out_of_order": span.out_of_order,
              "command": command}
    try:
        found = bisect(span.candidates, prober, announce)
    except KeyboardInterrupt:
        record["interrupted"] = True
        _write(report_dir, record)
        print(f"harness bisect: interrupted; what was tested is in {report_dir / BISECT_FILE}", file=sys.stderr)
        return EXIT_INTERRUPTED
    record.update(_outcome(found, prober))
    _warn_out_of_order(record, span.out_of_order)
    record["installed"] = prober.installed
    record["seconds"] = round(time.monotonic() - started, 1)
    _write(report_dir, record)
    _say_outcome(record, say if not args.quiet else (lambda line: None))
    print(f"harness bisect: {redact(record['conclusion'])}")
    print(f"report: {report_dir / BISECT_FILE}")
    return EXIT_OK if record["first_changed"] is not None and not record["between"] else EXIT_DIFFERS


def _some(versions: list[str], shown: int = 8) -> str:
    return ", ".join(versions[:shown]) + (f" and {len(versions) - shown} more" if len(versions) > shown else "")


def _warn_out_of_order(record: dict, out_of_order: list[dict]) -> None:
    """A boundary on a release uploaded out of order may be a backport's doing, not the line's: the answer says so."""
    for item in out_of_order:
        if item["version"] in (record["first_changed"], record["last_unchanged"]):
            record["conclusion"] += (f"; note: {item['version']} was uploaded after {item['after']} "
                                     f"({item['uploaded'][:10]} against {item['after_uploaded'][:10]}), so it may "
                                     "be a backport off the line between the ends")


def _outcome(found, prober) -> dict:
    from harness.bisect.probe import evidence
    from harness.bisect.search import changed_checks

    tested = [{"release": c.label, "spec": c.spec, "uploaded": c.uploaded, "subject": c.subject,
               "verdicts": dict(p.verdicts) if p.verdicts is not None else None,
               "status": prober.results[c.label].status, "journal": prober.results[c.label].journal}
              for c, p in found.tested if p.skipped is None]
    skipped = [{"release": c.label, "spec": c.spec, "why": p.skipped} for c, p in found.tested if p.skipped is not None]
    out = {"first_changed": None, "last_unchanged": None, "between": [c.label for c in found.between],
           "tested": tested, "skipped": skipped, "changed_checks": [], "evidence": {}, "problem": found.problem}
    if found.problem is not None:
        out["conclusion"] = f"no boundary: {found.problem}"
        return out
    before, after = found.last_unchanged, found.first_changed
    out["last_unchanged"], out["first_changed"] = before.label, after.label
    probes = {c.label: p for c, p in found.tested}
    changed = changed_checks(probes[before.label], probes[after.label])
    out["changed_checks"] = changed
    out["evidence"] = {check: evidence(check, {"last_unchanged": (before.label, prober.results[before.label]),
                                               "first_changed": (after.label, prober.results[after.label])})
                       for check in changed}
    verdicts = ", ".join(f"{check} {dict(probes[before.label].verdicts)[check]} -> "
                         f"{dict(probes[after.label].verdicts).get(check)}" for check in changed)
    if found.between:
        out["conclusion"] = (f"the change lies between {before.label} and {after.label}, in one of "
                             f"{', '.join(c.label for c in found.between)}, none of which could be judged ({verdicts})")
    else:
        out["conclusion"] = f"first changed in {after.label} (last unchanged: {before.label}): {verdicts}"
    return out


def _say_outcome(record: dict, say) -> None:
    for item in record["skipped"]:
        say(f"skipped {item['release']}: {item['why']}")
    for check, sides in record["evidence"].items():
        for side in ("last_unchanged", "first_changed"):
            entry = sides[side]
            say(f"{check} on {entry['release']}: {entry['verdict']}"
                + (f" - {entry['message']}" if entry.get("message") else ""))


def _write(report_dir: Path, record: dict) -> None:
    from harness.redaction import redact_json

    path = report_dir / BISECT_FILE
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(redact_json(json.loads(json.dumps(record, default=str))), indent=2) + "\n")
    partial.replace(path)
