"""junit.xml: one test case per scenario × target × check, the way CI systems render tests.

A case fails when its verdict differs from the scenario's expectation, so a
known defect that fails as expected is green, and a fixed one turns red until
its expectation is updated.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Sequence

from harness.redaction import redact_xml
from harness.report import files
from harness.report.wording import attempts_line, explain, mismatch_heading
from harness.results import CANNOT_EXPRESS, ERROR, RunResult


def write(results: list[RunResult], path: Path, notes: Sequence[str] = ()) -> Path:
    suites = ET.Element("testsuites", name="harness")
    by_scenario: dict[str, list[RunResult]] = {}
    for result in results:
        by_scenario.setdefault(result.scenario, []).append(result)
    for scenario, runs in by_scenario.items():
        suite = ET.SubElement(suites, "testsuite", name=scenario)
        if notes:  # every suite carries them: a CI view may show one suite alone
            properties = ET.SubElement(suite, "properties")
            for note in notes:
                ET.SubElement(properties, "property", name="harness.note", value=note)
        tests = failures = errors = 0
        duration = 0.0
        for run in runs:
            duration += run.duration_s
            for check in run.checks:
                tests += 1
                case = ET.SubElement(
                    suite, "testcase", classname=f"{scenario}", name=f"{check.check}[{run.target}]",
                    time=f"{run.duration_s / max(1, len(run.checks)):.3f}",
                )
                if check.verdict == CANNOT_EXPRESS:
                    ET.SubElement(case, "skipped", message=check.message)
                elif check.verdict == ERROR:
                    errors += 1
                    ET.SubElement(case, "error", message=_first_line(check.message)).text = explain(run)
                elif not check.as_expected:
                    failures += 1
                    message = f"{mismatch_heading(check)}: {_first_line(check.message)}"
                    ET.SubElement(case, "failure", message=message).text = explain(run)
                elif check.verdict != "pass":
                    ET.SubElement(case, "system-out").text = f"fails as expected: {check.message}"
                if run.attempts:
                    _earlier_attempts(case, run, check)
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("time", f"{duration:.3f}")
    tree = ET.ElementTree(redact_xml(suites))  # every text and attribute, before it is escaped
    ET.indent(tree)
    files.write_bytes(path, ET.tostring(tree.getroot(), encoding="utf-8", xml_declaration=True))
    return path


def _earlier_attempts(case: ET.Element, run: RunResult, check) -> None:
    """Each earlier attempt where this check was not as expected, as Surefire marks reruns: `flakyFailure` when
    the last attempt was as expected (the case passed on a rerun), `rerunFailure` when it was not either."""
    tag = "rerunFailure" if not check.as_expected or check.verdict == ERROR else "flakyFailure"
    for number, attempt in enumerate(run.attempts, 1):
        earlier = next((c for c in attempt.checks if c.check == check.check), None)
        if earlier is not None and not earlier.as_expected:
            element = ET.SubElement(case, tag, message=f"attempt {number}: {mismatch_heading(earlier)}: "
                                                       f"{_first_line(earlier.message)}", type=earlier.verdict)
            ET.SubElement(element, "system-out").text = f"journal: {attempt.journal}" if attempt.journal else ""
    if run.flaky:
        out = case.find("system-out")
        said = f"FLAKY run: {attempts_line(run)}"
        if out is None:
            ET.SubElement(case, "system-out").text = said
        else:
            out.text = f"{out.text}\n{said}"


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
