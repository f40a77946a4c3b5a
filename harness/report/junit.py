"""junit.xml: one test case per scenario × target × check, the way CI systems render tests.

A case fails when its verdict differs from the scenario's expectation, so a
known defect that fails as expected is green, and a fixed one turns red until
its expectation is updated.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from harness.results import ERROR, RunResult


def write(results: list[RunResult], path: Path) -> Path:
    suites = ET.Element("testsuites", name="harness")
    by_scenario: dict[str, list[RunResult]] = {}
    for result in results:
        by_scenario.setdefault(result.scenario, []).append(result)
    for scenario, runs in by_scenario.items():
        suite = ET.SubElement(suites, "testsuite", name=scenario)
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
                if check.verdict == ERROR:
                    errors += 1
                    ET.SubElement(case, "error", message=_first_line(check.message)).text = _body(run, check)
                elif not check.as_expected:
                    failures += 1
                    message = f"expected {check.expected_verdict}, got {check.verdict}: {_first_line(check.message)}"
                    ET.SubElement(case, "failure", message=message).text = _body(run, check)
                elif check.verdict != "pass":
                    ET.SubElement(case, "system-out").text = f"fails as expected: {check.message}"
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
        suite.set("time", f"{duration:.3f}")
    tree = ET.ElementTree(suites)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return path


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _body(run: RunResult, check) -> str:
    lines = [check.message, "", f"target: {run.target}", f"journal: {run.journal}"]
    for step in run.steps:
        lines.append(f"step {step.index} {step.kind}: exit {step.exit_code}, {step.requests} request(s), {step.duration_s:.2f}s"
                     + (f" — {step.error}" if step.error else ""))
    return "\n".join(lines)
