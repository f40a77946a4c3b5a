"""A scenario whose steps a target has no way to carry out is reported as such: not run, never a pass."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

from harness.report import console, junit
from harness.report.wording import counts, outcome
from harness.results import CANNOT_EXPRESS, PASS
from harness.run.runner import run_scenario
from harness.scenario.reader import scenario_from_text
from harness.targets import resolve_target

COMPACTING = """
name: compacting
append: "Task prompt: answer with one number."
steps:
  - launch:  {prompt: "What is 6*7?", reply: "42"}
  - compact: {summary: "6*7 was asked."}
  - resume:  {prompt: "And 7*8?", reply: "56"}
"""
TWO_TURNS = """
name: two-turns
append: "Task prompt: answer with one number."
steps:
  - launch: {prompt: "What is 6*7?", reply: "42"}
  - resume: {prompt: "And 7*8?", reply: "56"}
"""
REASON = "its headless mode has no compaction command"


def headless_reference():
    (reference,) = resolve_target("reference")
    return dataclasses.replace(reference, name="reference-headless", cannot_express={"compact": REASON})


def test_a_scenario_the_target_cannot_express_is_not_run_and_says_why(tmp_path):
    journal = tmp_path / "journal.jsonl"
    result = run_scenario(scenario_from_text(COMPACTING, "compacting.yaml"), headless_reference(), journal)
    assert result.status == CANNOT_EXPRESS and result.steps == [] and not journal.exists()
    assert result.cannot_express == f"step 2 (compact): {REASON}"
    assert {c.verdict for c in result.checks} == {CANNOT_EXPRESS} and result.checks
    assert result.as_expected and outcome(result) == "CANNOT EXPRESS"
    assert counts([result])["cannot_express"] == 1 and counts([result])["pass"] == 0

    table = console.table([result])
    assert "CANNOT EXPRESS" in table and "1 the target cannot express" in table and REASON in table
    path = junit.write([result], tmp_path / "junit.xml")
    skipped = ET.parse(path).getroot().findall(".//skipped")
    assert len(skipped) == len(result.checks) and REASON in skipped[0].get("message")


def test_the_same_target_runs_what_it_can_express(tmp_path):
    result = run_scenario(scenario_from_text(TWO_TURNS, "two-turns.yaml"), headless_reference(), tmp_path / "j.jsonl")
    assert result.status == PASS and len(result.steps) == 2

