"""A step's `append:` changes the caller's text from then on: the launcher passes the new text, the model must get it.

astro-anywhere/astro-agent #199's launcher re-passes its system prompt on every
resume and expects the new text to take effect. The checks judge each request
against the text current at its step, and a replaced text still reaching the
model is a failure of its own. Real processes where the agent is involved (the
reference agent, whose clean resume uses the new flag); synthetic journals for
the check's arithmetic.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from harness.checks import run_check
from harness.checks.context import CheckContext
from harness.errors import InputError
from harness.run.runner import run_scenario
from harness.scenario.reader import scenario_from_text
from harness.targets import resolve_target
from builders import IDENTITY, exchange, system, user

OLD, NEW = "Task prompt: answer with one number.", "Task prompt: answer in words."
SCENARIO = f"""
name: changed-text
append: "{OLD}"
steps:
  - launch: {{prompt: "What is 6*7?", reply: "42"}}
  - resume: {{prompt: "And 7*8?", reply: "fifty-six", append: "{NEW}"}}
  - resume: {{prompt: "And 8*9?", reply: "seventy-two"}}
checks: [launch_appended_exactly_once, identity_stable, appended_exactly_once, prefix_stable, history_preserved]
"""


def judged(scenario, *systems: str):
    exchanges = [exchange(i + 1, i + 1, system("You are Agent.", text), [user("q")]) for i, text in enumerate(systems)]
    return run_check("appended_exactly_once", CheckContext.of(scenario, exchanges, IDENTITY))


def test_the_scenario_says_which_text_each_step_carries_and_declares_the_prefix_change():
    scenario = scenario_from_text(SCENARIO)
    assert [scenario.append_at(i) for i in (1, 2, 3)] == [OLD, NEW, NEW]
    assert scenario.prefix_changes == {2: "the caller's text changes here (the step's `append`)"}


@pytest.mark.parametrize("systems, verdict, says", [
    ((OLD, NEW, NEW), "pass", "present exactly once in all 3 requests"),
    ((OLD, OLD, OLD), "fail", "step 2 (resume), request #2: the caller's text was changed by then, and the request "
                              "still carries the replaced text 1 time(s) (the current one 0 time(s))"),
    ((OLD, OLD + "\n" + NEW, NEW), "fail", "still carries the replaced text 1 time(s) (the current one 1 time(s))"),
    ((OLD, NEW, ""), "fail", "step 3 (resume), request #3: the appended text occurs 0 time(s)"),
])
def test_each_request_is_judged_against_the_text_of_its_step(systems, verdict, says):
    checked = judged(scenario_from_text(SCENARIO), *systems)
    assert checked.verdict == verdict and says in checked.message, checked.message


def test_a_new_text_that_contains_the_old_one_is_not_counted_as_the_old_one():
    longer = OLD + " Answer in words."
    scenario = scenario_from_text(SCENARIO.replace(f'append: "{NEW}"', f'append: "{longer}"'))
    assert judged(scenario, OLD, longer, longer).verdict == "pass"


@pytest.mark.parametrize("text, says", [
    (SCENARIO.replace('reply: "42"}', f'reply: "42", append: "{NEW}"}}'), "steps[1].launch.append: the launch passes"),
    (SCENARIO.replace(f'append: "{OLD}"\n', ""), "a step's 'append' changes the caller's text: the scenario needs"),
])
def test_a_changed_text_where_nothing_was_given_is_refused_with_the_place(text, says):
    with pytest.raises(InputError) as refused:
        scenario_from_text(text)
    assert says in str(refused.value)


def test_the_reference_agent_uses_the_new_text_and_its_dropping_defect_fails(tmp_path):
    scenario = scenario_from_text(SCENARIO)
    clean = run_scenario(scenario, resolve_target("reference")[0], tmp_path / "clean.jsonl")
    assert clean.status == "pass", [c.message for c in clean.checks]
    assert [step.argv[step.argv.index("--append-system-prompt") + 1] for step in clean.steps] == [OLD, NEW, NEW]
    dropping = run_scenario(scenario, resolve_target("reference:drop-append-on-resume")[0], tmp_path / "drop.jsonl")
    appended = next(c for c in dropping.checks if c.check == "appended_exactly_once")
    assert (appended.verdict, appended.step) == ("fail", 2)


def test_a_home_file_carrying_the_text_is_written_anew_where_the_text_changes(tmp_path):
    """opencode reads the caller's text from a file its config names: a launcher writes the new text there."""
    reference = resolve_target("reference")[0]
    with_file = dataclasses.replace(reference, home_files={"caller.txt": "{append}", "state.txt": "written once"})
    result = run_scenario(scenario_from_text(SCENARIO), with_file, tmp_path / "run.jsonl", keep_workspace=True)
    home = Path(result.workspace) / "home"
    try:
        assert (home / "caller.txt").read_text() == NEW
        assert (home / "state.txt").read_text() == "written once"
    finally:
        shutil.rmtree(result.workspace, ignore_errors=True)
