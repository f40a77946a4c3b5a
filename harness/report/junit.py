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
from harness.report.wording import explain, mismatch_heading
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
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("time", f"{duration:.3f}")
    tree = ET.ElementTree(redact_xml(suites))  # every text and attribute, before it is escaped
    ET.indent(tree)
    files.write_bytes(path, ET.tostring(tree.getroot(), encoding="utf-8", xml_declaration=True))
    return path


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
