"""A gate that passes must have judged what it claims: steps that never took their turn are errors, not passes.

Each agent is tests/agents/agent.py in a mode that launches correctly and then, on resume, does something
other than its turn (lists models, counts tokens, sends only a title request, prints garbage instead of its
output contract), run for real as fresh processes against the fake API. Every one of them exited 0 and the
run passed before; each is now an error naming the step and what is missing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.journal.exchange import MAIN, SIDE
from harness.journal.requests import read_journal
from harness.results import ERROR, PASS

from test_runner import THREE_TURNS, assert_run_error, scenario, target

REPO = Path(__file__).resolve().parent.parent
AGENTS = REPO / "tests" / "agents"


@pytest.mark.parametrize("mode, sent", [
    ("models-only", "GET /v1/models (side)"),
    ("count-tokens-only", "POST /v1/messages/count_tokens (side)"),
    ("side-call-only", "POST /v1/messages (side)"),
])
def test_a_resume_that_never_asks_for_its_turn_is_an_error(run, mode, sent):
    sc = scenario(f"resume-{mode}", THREE_TURNS)
    result = run(sc, target(f"resume-{mode}"))
    assert_run_error(result, sc, 2, "the agent never sent a model request for its turn", sent)
    resumed = result.steps[1]
    assert resumed.exit_code == 0 and resumed.requests == 1 and MAIN not in resumed.classes
    assert [e.klass for e in read_journal(Path(result.journal))] == [MAIN, SIDE]


def test_a_scripted_reply_left_over_at_the_end_of_a_step_is_an_error_naming_it(run):
    steps = THREE_TURNS.replace('reply: "22."', 'reply: ["22.", "The second reply nobody asked for."]')
    sc = scenario("left-over", steps)
    result = run(sc, target("good"))
    assert_run_error(result, sc, 2, "1 scripted reply(ies) of this step were never requested",
                     "reply 2 of 2: 'The second reply nobody asked for.'", "1 model request(s) for 2 scripted turn(s)")


def test_a_resume_printing_garbage_instead_of_its_output_contract_is_an_error(run):
    sc = scenario("resume-garbage", THREE_TURNS)
    result = run(sc, target("resume-garbage-stdout"))
    assert_run_error(result, sc, 2, "could not read the session id (stdout_json: session_id) from this resume step",
                     "no id for you {not json", "steps_without_session_id")
    assert result.steps[1].requests == 1 and result.steps[1].exit_code == 0


def test_a_target_that_says_a_step_prints_no_id_carries_the_last_one_over(run):
    sc = scenario("resume-garbage-exempt", THREE_TURNS)
    exempt = target("resume-garbage-stdout-exempt")
    assert exempt.steps_without_session_id == {"resume", "retry"}
    result = run(sc, exempt)
    assert result.error is None and result.status == PASS, result.error
    assert len({s.session_id for s in result.steps}) == 1 and result.steps[0].session_id


def test_the_command_line_exits_1_on_a_step_that_never_took_its_turn(tmp_path):
    (tmp_path / "scenario.yaml").write_text(
        'name: cli-models-only\nappend: "Appended rules."\nsteps:\n' + THREE_TURNS, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "run", str(tmp_path / "scenario.yaml"), "--target",
         str(AGENTS / "resume-models-only.yaml"), "--report-dir", str(tmp_path / "report"), "-q"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    results = json.loads((tmp_path / "report" / "results.json").read_text())["runs"]
    assert [r["status"] for r in results] == [ERROR]
    assert results[0]["error"].startswith("step 2 (resume): the agent never sent a model request for its turn")


def test_the_launch_cannot_be_exempt_from_printing_its_session_id(tmp_path):
    from harness.errors import InputError
    from harness.targets.target_file import load_target_file

    text = (AGENTS / "resume-garbage-stdout-exempt.yaml").read_text().replace("[resume, retry]", "[resume, launch]")
    (tmp_path / "t.yaml").write_text(text)
    with pytest.raises(InputError, match=r"t.yaml:5: steps_without_session_id\[2\]: expected one of resume, retry, compact"):
        load_target_file(tmp_path / "t.yaml")
