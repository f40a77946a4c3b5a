"""A scenario whose steps a target has no way to carry out is reported as such: not run, never a pass."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.report import console, junit
from harness.report.wording import counts, outcome
from harness.results import CANNOT_EXPRESS, FAIL, PASS
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario, scenario_from_text
from harness.targets import resolve_target
from cli_outcome import HARNESS

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



# ------------------------------------------------- temporary text, which reaches a target file only as {temporary}

ROOT = Path(__file__).resolve().parent.parent
MINIMAL = ROOT / "examples" / "minimal-agent"
ONE_STEP = ROOT / "scenarios" / "temporary-text-for-one-step.yaml"


def test_temporary_text_for_a_target_file_without_the_placeholder_is_not_applicable(tmp_path):
    # The library's scenario against the example agent's own file, as a team runs it: nothing starts, exit 0.
    done = subprocess.run([str(HARNESS), "run", str(ONE_STEP), "--target", str(MINIMAL / "target.yaml"),
                           "--report-dir", str(tmp_path / "report")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CANNOT EXPRESS" in done.stdout and "ERROR" not in done.stdout, done.stdout
    (result,) = json.loads((tmp_path / "report" / "results.json").read_text())["runs"]
    assert result["status"] == CANNOT_EXPRESS and result["steps"] == []
    assert result["cannot_express"] == (
        f"step 2 (resume): its temporary text reaches the agent only through the {{temporary}} placeholder, which "
        f"{MINIMAL / 'target.yaml'} uses in neither its resume command nor its env (add it where the agent takes "
        "text for one turn)")


def test_a_target_file_that_passes_temporary_text_still_runs_and_is_judged(tmp_path):
    # The example agent, told the text in the step's prompt: it reaches the model, and is saved with the history.
    text = (MINIMAL / "target.yaml").read_text().replace('-p, "{prompt}", --resume', '-p, "{prompt} {temporary}", --resume')
    assert "{temporary}" in text
    (tmp_path / "target.yaml").write_text(text.replace("{target_dir}", str(MINIMAL)))
    (target,) = resolve_target(str(tmp_path / "target.yaml"))
    result = run_scenario(load_scenario(ONE_STEP), target, tmp_path / "journal.jsonl")
    assert result.status != CANNOT_EXPRESS and result.cannot_express is None and len(result.steps) == 3
    assert [c.verdict for c in result.checks if c.check == "temporary_text_transient"] == [FAIL], result.checks


def test_a_built_in_target_without_the_placeholder_says_its_own_command_passes_none():
    (reference,) = resolve_target("reference")
    plain = {kind: tuple(a for a in argv if "{temporary}" not in a) for kind, argv in reference.commands.items()}
    silent = dataclasses.replace(reference, name="reference-silent", commands=plain)
    steps = load_scenario(ONE_STEP).steps
    assert silent.cannot_express_reason(steps) == ("step 2 (resume): its temporary text reaches the agent only "
                                                   "through the {temporary} placeholder, and this target's resume "
                                                   "command passes none")
    retried = [dataclasses.replace(step, kind="retry") if step.index == 2 else step for step in steps]
    assert "(retry): " in silent.cannot_express_reason(retried) and "resume (which its retry steps use)" in (
        silent.cannot_express_reason(retried))
    # The environment every command gets carries it just as well; and the reference's own commands pass it.
    assert dataclasses.replace(silent, env={**silent.env, "NOTE": "{temporary}"}).cannot_express_reason(steps) is None
    assert reference.cannot_express_reason(steps) is None


HEADLESS = ROOT / "scenarios" / "temporary-headless-text.yaml"


def test_an_agents_own_headless_text_is_not_applicable_to_an_agent_that_adds_none(tmp_path):
    """The scenario's top-level `temporary:` is code-puppy's instruction, added by the agent itself: nothing hands it
    over, so against a target file it was 'error: appears in no request'. Not applicable is not an error."""
    done = subprocess.run([str(HARNESS), "run", str(HEADLESS), "--target", str(MINIMAL / "target.yaml"),
                           "--report-dir", str(tmp_path / "report")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = json.loads((tmp_path / "report" / "results.json").read_text())["runs"]
    assert result["status"] == CANNOT_EXPRESS and result["steps"] == []
    assert result["cannot_express"] == ("the scenario's `temporary:` is text an agent adds to every run by itself (a "
                                        f"headless instruction), and {MINIMAL / 'target.yaml'} adds none the harness "
                                        "knows of")


def test_an_agent_known_to_add_its_headless_text_is_still_an_error_when_it_stops_adding_it(tmp_path):
    # Where the text is the agent's own (code-puppy, the reference), its absence is a run that proves nothing:
    # an error, never a not-applicable that a gate would take as green.
    (minimal,) = resolve_target(str(MINIMAL / "target.yaml"))
    claims_it = dataclasses.replace(minimal, adds_own_temporary_text=True)
    result = run_scenario(load_scenario(HEADLESS), claims_it, tmp_path / "journal.jsonl")
    (verdict,) = [c for c in result.checks if c.check == "temporary_text_transient"]
    assert result.status == "error" and verdict.verdict == "error", result.checks
    assert verdict.message.startswith("nothing to judge: temporary text 'This is an unattended"), verdict.message
    (reference,) = resolve_target("reference")
    assert run_scenario(load_scenario(HEADLESS), reference, tmp_path / "r.jsonl").status == PASS
