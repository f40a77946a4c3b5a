"""A baseline-vs-candidate comparison as text: the console, summary.md, junit.xml and comparison.json.

Every output says the same thing in the same words: per scenario and check, the
two final verdicts and the change, the step at which the sides first disagreed,
and for each regression or fix the evidence of the side that fails.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path

from harness.redaction import redact, redact_json, redact_xml
from harness.report import files
from harness.report.wording import explain, indent
from harness.results import (
    CHANGE_ERROR, FIX, REGRESSION, UNCHANGED_FAIL, Cell, CheckResult, Comparison, RunResult, ScenarioDiff,
)

_MARK = {REGRESSION: "✗", CHANGE_ERROR: "!", FIX: "✓", UNCHANGED_FAIL: "·"}


def verdict_pair(cell: Cell) -> str:
    return f"{cell.baseline} → {cell.candidate}"


def where_it_changed(sd: ScenarioDiff, check: str) -> str:
    first = sd.first_change(check)
    return f"from step {first.step} ({sd.scenario.steps[first.step - 1].kind})" if first else ""


def totals_line(comparison: Comparison) -> str:
    counts = comparison.counts()
    parts = ", ".join(f"{n} {change}" for change, n in counts.items() if n)
    return f"{len(comparison.scenarios)} scenario(s), {sum(counts.values())} checks: {parts}"


def gate_line(comparison: Comparison) -> str:
    failures = comparison.gate_failures()
    return "gate: passes" if not failures else f"gate: FAILS ({len(failures)} reason(s))"


def evidence_for(sd: ScenarioDiff, check: str) -> tuple[str, RunResult, CheckResult] | None:
    """The side whose verdict explains the change: the failing (or erring) one."""
    cell = sd.final(check)
    for side, result, verdict in (("candidate", sd.candidate, cell.candidate), ("baseline", sd.baseline, cell.baseline)):
        if verdict != "pass":
            found = next((c for c in result.checks if c.check == check), None)
            if found is not None:
                return side, result, found
    return None


# ------------------------------------------------------------------------------------------ console


def table(comparison: Comparison) -> str:
    header = ["scenario", "check", "baseline → candidate", "change", "first differs"]
    rows = [header]
    for sd in comparison.scenarios:
        for check in sd.scenario.checks:
            cell = sd.final(check)
            rows.append([sd.scenario.name, check, verdict_pair(cell), cell.change, where_it_changed(sd, check)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(value.ljust(widths[i]) for i, value in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += ["", f"baseline:  {comparison.baseline.name}", f"candidate: {comparison.candidate.name}",
              totals_line(comparison), gate_line(comparison)]
    return "\n".join(lines)


def details(comparison: Comparison) -> str:
    """Every regression, error and fix with its evidence; the gate's reasons last (for the console: redacted)."""
    return redact(_details(comparison))


def _details(comparison: Comparison) -> str:
    blocks = []
    for sd in comparison.scenarios:
        for side, result in (("baseline", sd.baseline), ("candidate", sd.candidate)):
            if result.error:
                blocks.append(f"! {sd.scenario.name} · {side} run error\n  {result.error}")
        for check in sd.scenario.checks:
            cell = sd.final(check)
            if cell.change not in (REGRESSION, FIX) and not (cell.change == UNCHANGED_FAIL and comparison.fail_on_unchanged_fail):
                continue
            found = evidence_for(sd, check)
            head = f"{_MARK[cell.change]} {cell.change}: {sd.scenario.name} · {check} ({verdict_pair(cell)}, {where_it_changed(sd, check) or 'at every step'})"
            if found:
                side, _, verdict = found
                head += f"\n  {side} evidence:\n{indent(verdict.message, '    ')}"
            blocks.append(head)
    failures = comparison.gate_failures()
    if failures:
        blocks.append("the gate fails because:\n" + "\n".join(f"  - {reason}" for reason in failures))
    return "\n\n".join(blocks)


# ------------------------------------------------------------------------------------------ summary.md


def markdown(comparison: Comparison) -> str:
    failures = comparison.gate_failures()
    lines = [
        f"# harness diff: {'no regressions' if not failures else 'the gate fails'}",
        "",
        f"Baseline `{comparison.baseline.name}` vs candidate `{comparison.candidate.name}`. {totals_line(comparison)}.",
        "",
        "| scenario | check | baseline → candidate | change | first differs |",
        "|---|---|---|---|---|",
    ]
    for sd in comparison.scenarios:
        for check in sd.scenario.checks:
            cell = sd.final(check)
            change = f"**{cell.change}**" if cell.change in (REGRESSION, CHANGE_ERROR, FIX) else cell.change
            lines.append(f"| {sd.scenario.name} | {check} | {verdict_pair(cell)} | {change} | {where_it_changed(sd, check)} |")
    if failures:
        lines += ["", "## Why the gate fails", ""] + [f"- {reason}" for reason in failures]
    body = _details(comparison)  # redacted with the whole page
    if body:
        lines += ["", "## Evidence", "", "```", body, "```"]
    return redact("\n".join(lines) + "\n")


# ------------------------------------------------------------------------------------------ junit.xml


def junit(comparison: Comparison) -> str:
    """One case per scenario × check; a case fails when it fails the gate, so CI shows what blocks the merge."""
    suites = ET.Element("testsuites", name=f"harness diff {comparison.baseline.name} → {comparison.candidate.name}")
    gate = set(comparison.gate_failures())
    for sd in comparison.scenarios:
        suite = ET.SubElement(suites, "testsuite", name=sd.scenario.name)
        failures = errors = 0
        for check in sd.scenario.checks:
            cell = sd.final(check)
            case = ET.SubElement(suite, "testcase", classname=sd.scenario.name, name=f"{check}[{comparison.candidate.name}]",
                                 time=f"{(sd.baseline.duration_s + sd.candidate.duration_s) / max(1, len(sd.scenario.checks)):.3f}")
            reason = f"{cell.change}: {sd.scenario.name} · {check} (baseline {cell.baseline}, candidate {cell.candidate})"
            found = evidence_for(sd, check)
            text = "\n\n".join(explain(r) for r in (sd.baseline, sd.candidate))
            if cell.change == CHANGE_ERROR:
                errors += 1
                ET.SubElement(case, "error", message=reason).text = text
            elif reason in gate:
                failures += 1
                first = found[2].message.strip().splitlines()[0] if found else ""
                ET.SubElement(case, "failure", message=f"{reason}: {first}").text = text
            else:
                ET.SubElement(case, "system-out").text = f"{cell.change} ({verdict_pair(cell)})" + (
                    f"\n{found[0]} evidence:\n{found[2].message}" if found else "")
        suite.set("tests", str(len(sd.scenario.checks)))
        suite.set("failures", str(failures))
        suite.set("errors", str(errors))
    tree = ET.ElementTree(redact_xml(suites))  # every text and attribute, before it is escaped
    ET.indent(tree)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True)


# ------------------------------------------------------------------------------------------ comparison.json


def to_json(comparison: Comparison, command: list[str]) -> dict:
    return {
        "command": command,
        "baseline": comparison.baseline.name,
        "candidate": comparison.candidate.name,
        "baseline_revision": comparison.baseline.revision,
        "candidate_revision": comparison.candidate.revision,
        "counts": comparison.counts(),
        "gate_failures": comparison.gate_failures(),
        "scenarios": [
            {
                "scenario": sd.scenario.name,
                "path": str(sd.scenario.path) if sd.scenario.path else None,
                "change": sd.change,
                "checks": {check: {"baseline": sd.final(check).baseline, "candidate": sd.final(check).candidate,
                                   "change": sd.final(check).change,
                                   "first_change_step": (sd.first_change(check).step if sd.first_change(check) else None)}
                           for check in sd.scenario.checks},
                "cells": [asdict(c) | {"change": c.change} for c in sd.cells],
                "baseline_run": sd.baseline.to_json(),
                "candidate_run": sd.candidate.to_json(),
            }
            for sd in comparison.scenarios
        ],
    }


def write_json(comparison: Comparison, path: Path, command: list[str]) -> Path:
    text = json.dumps(redact_json(to_json(comparison, command)), indent=2, ensure_ascii=False, default=str) + "\n"
    return files.write_text(path, text)


def write_markdown(comparison: Comparison, path: Path) -> Path:
    return files.write_text(path, markdown(comparison))


def write_junit(comparison: Comparison, path: Path) -> Path:
    return files.write_text(path, junit(comparison) + "\n")
