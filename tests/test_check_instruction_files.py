"""instruction_files_current: a project file the agent reads reaches the model as the last edit left it.

Synthetic journals (every byte known) for the check; the reader's declaration rules; the real releases that tell a
stale AGENTS.md from a current one are the catalog's (incidents/codex-27473-*, incidents/gemini-cli-27391-*).
"""

from __future__ import annotations

import json

import pytest
from builders import exchange, system, user

from harness.checks import CheckContext, run_check
from harness.errors import InputError
from harness.scenario.reader import scenario_from_text
from builders import IDENTITY

V1 = "# Rules\n\nAnswer with one number.\n"
V2 = "# Rules\n\nAnswer with one number.\nCite the rule.\n"
SCENARIO = f"""\
name: rules-edited
steps:
  - launch: {{prompt: a, edit: {{AGENTS.md: {json.dumps(V1)}}}}}
  - resume: {{prompt: b, edit: {{AGENTS.md: {json.dumps(V2)}}}}}
  - resume: {{prompt: c}}
instruction_files: [AGENTS.md]
checks: [instruction_files_current]
"""


def _journal(texts_by_step: dict[int, str]) -> list:
    return [exchange(step, step, system("You are Agent X."), [user(f"<rules>{text}</rules>", f"prompt {step}")])
            for step, text in texts_by_step.items()]


def _verdict(journal):
    scenario = scenario_from_text(SCENARIO, "s.yaml")
    return run_check("instruction_files_current", CheckContext.of(scenario, journal, IDENTITY))


def test_the_edited_text_in_every_later_request_passes():
    result = _verdict(_journal({1: V1, 2: V2, 3: V2}))
    assert result.verdict == "pass", result.message


def test_a_resume_that_replays_the_launchs_copy_fails_at_the_step_of_the_edit():
    result = _verdict(_journal({1: V1, 2: V1, 3: V1}))
    assert result.verdict == "fail" and (result.step, result.request) == (2, 2)
    assert "AGENTS.md as step 2 wrote it does not reach the model (0 occurrences); its text from step 1 is there 1 time(s)" \
        in result.message
    assert result.expected == V2.strip() and result.observed == 0


def test_the_old_text_beside_the_new_one_is_evidence_not_a_failure():
    journal = [exchange(1, 1, system("You are Agent X."), [user(V1, "a")]),
               exchange(2, 2, system("You are Agent X."), [user(V1, "a"), user("b"), user("Replace them: " + V2)])]
    result = _verdict(journal)
    assert result.verdict == "pass"
    # V1 is a prefix of V2: its occurrence inside V2 is not counted as the old text
    assert result.evidence["by_request"][1] == {"step": 2, "request": 2, "file": "AGENTS.md", "written_at": 2,
                                                "current": 1, "earlier": {"1": 1}}


def test_a_file_lost_at_the_first_request_fails_there():
    result = _verdict(_journal({1: "something else", 2: V2}))
    assert result.verdict == "fail" and result.step == 1


@pytest.mark.parametrize("text, said", [
    (SCENARIO.replace("instruction_files: [AGENTS.md]\n", ""), "check 'instruction_files_current' needs the files"),
    (SCENARIO.replace("[AGENTS.md]", "[GEMINI.md]"), "instruction_files[1]: 'GEMINI.md' is written by no step's 'edit:'"),
    (SCENARIO.replace("[AGENTS.md]", "[]"), "instruction_files: expected a non-empty list"),
])
def test_the_declaration_is_required_and_must_name_an_edited_file(text, said):
    with pytest.raises(InputError) as caught:
        scenario_from_text(text, "s.yaml")
    assert said in str(caught.value)


def test_it_is_opt_in_so_the_default_checks_do_not_include_it():
    scenario = scenario_from_text(SCENARIO.replace("checks: [instruction_files_current]\n", "append: x\n"), "s.yaml")
    assert "instruction_files_current" not in scenario.checks
