"""inspect_swe's antigravity() in a real `inspect eval`: the Antigravity SDK's runner, launched once per agent call.

Real parts only, as in test_inspect_swe_agents.py: the release's agents
virtualenv, google-antigravity 0.1.7 (its bundled engine) from the tools
folder behind the recording shim, the fake API on 127.0.0.1. antigravity()
passes the caller's system messages in request.json (`system_instructions`),
which the engine puts at the end of its own system prompt; from the second
run on those are the first run's whole system prompt (the bridge's state), so
the prompt nests once more per run. The last test runs a patched release
(+checkout=REPO#REV) whose one line that joins the system messages drops or
doubles them: a request check fails for both and passes for the release.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from harness.journal.launches import launch_journal_path, read_launches
from harness.results import CANNOT_EXPRESS
from harness.targets import resolve_target
from harness.targets.inspect_swe import MEASURED_VERSION
from test_inspect_swe import assert_as_expected, run, verdicts
from test_inspect_swe_agents import mutant_repository

ROOT = Path(__file__).resolve().parent.parent
AGENTS, SUITE = ROOT / "scenarios" / "inspect-swe-agents", ROOT / "scenarios" / "inspect-swe"
ANTIGRAVITY = f"inspect-swe@{MEASURED_VERSION}+agent=antigravity"
APPEND = "Task prompt: answer with one number. Never use tools."
OPEN, CLOSE = "<user_system_instructions>\n", "\n</user_system_instructions>"
# antigravity()'s one line that passes the sample's system messages on (request.json's system_instructions).
SOURCE = Path("inspect_swe") / "_antigravity" / "antigravity.py"
LINE = '"system_instructions": "\\n\\n".join(system_messages),'
MUTANTS = {"drop": '"system_instructions": "",',
           "double": '"system_instructions": "\\n\\n".join(system_messages * 2),'}


def system_prompts(journal: Path) -> list[tuple[int, str]]:
    """(step, the system prompt as sent) per answered main request, read from the raw journal bytes."""
    out = []
    for line in journal.read_bytes().decode("utf-8").splitlines():
        record = json.loads(line)
        if record["class"] == "main" and record["status"] == 200:
            system = json.loads(record["body"])["system"]
            out.append((record["step"], system if isinstance(system, str) else "".join(b["text"] for b in system)))
    return out


def test_the_text_goes_through_request_json_into_the_system_prompt_and_nests_on_the_second_run(tmp_path):
    result, journal = run(AGENTS / "isa-second-turn.yaml", ANTIGRAVITY, tmp_path, keep_workspace=True)
    workspace = Path(result.workspace)
    try:
        state = workspace / "home" / ".antigravity-state"
        request = json.loads((state / "request.json").read_text(encoding="utf-8"))  # the second run's
        assert (state / "runner.py").is_file()
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    assert_as_expected(result)
    assert result.target == f"{ANTIGRAVITY}+google-antigravity@0.1.7"
    launches = read_launches(launch_journal_path(journal))
    assert [launch.argv for launch in launches] == [
        ["antigravity-python", str(state / "runner.py"), "--config", str(state / "request.json")]] * 2
    assert not any(APPEND in arg for launch in launches for arg in launch.argv)  # never argv
    (step1, first), (step2, second) = system_prompts(journal)
    assert (step1, step2) == (1, 2)
    # Turn 1: the engine's own prompt, then the caller's text once, in the block the engine appends last.
    engine = first[: first.index("\n\n" + OPEN)]
    assert engine.startswith("<identity>\nYou are Antigravity") and OPEN not in engine
    assert first == f"{engine}\n\n{OPEN}{APPEND}{CLOSE}" and first.count(APPEND) == 1
    # Turn 2: request.json's system_instructions are turn 1's whole system prompt, wrapped again by the engine.
    assert request["system_instructions"] == first and request["prompt"] == "And 7*8?"
    assert request["conversation_id"]
    assert second == f"{engine}\n\n{OPEN}{first}{CLOSE}"
    assert (second.count("<identity>"), second.count(OPEN), second.count(APPEND)) == (2, 2, 1)
    assert verdicts(result) == {"identity_stable": "pass", "appended_exactly_once": "pass", "prefix_stable": "fail",
                                "history_preserved": "pass"}


def test_the_system_prompt_nests_once_more_per_run(tmp_path):
    result, journal = run(AGENTS / "isa-auto-compaction-then-resume.yaml", ANTIGRAVITY, tmp_path)
    assert_as_expected(result)
    prompts = system_prompts(journal)
    assert [step for step, _ in prompts] == [1, 2, 3]  # one request per run: the 990k usage compacts nothing
    (_, first), (_, second), (_, third) = prompts
    engine = first[: first.index("\n\n" + OPEN)]
    assert third == f"{engine}\n\n{OPEN}{second}{CLOSE}"
    assert [(p.count("<identity>"), p.count(APPEND)) for _, p in prompts] == [(1, 1), (2, 1), (3, 1)]
    growth = len(second) - len(first)
    assert len(third) - len(second) == growth == len(engine) + len("\n\n" + OPEN + CLOSE)


@pytest.mark.parametrize("scenario, reason", [
    (AGENTS / "isa-one-launch.yaml", "passes the caller's text in request.json"),
    (AGENTS / "isa-wrong-answer-then-retry.yaml", "takes no `attempts`"),
    (SUITE / "isw-uncaught-error-retry.yaml", "does not relaunch after a failed launch"),
    (SUITE / "isw-wrong-answer-compact-resume.yaml", "has no compaction command"),
])
def test_what_antigravity_cannot_be_made_to_do_is_refused_before_anything_runs(tmp_path, scenario, reason):
    result, journal = run(scenario, ANTIGRAVITY, tmp_path)
    assert result.status == CANNOT_EXPRESS and reason in result.cannot_express
    assert not journal.exists() or journal.read_text() == ""


@pytest.fixture(scope="module")
def mutant_repo(tmp_path_factory) -> Path:
    return mutant_repository(tmp_path_factory.mktemp("antigravity-mutants"), ANTIGRAVITY, {SOURCE: (LINE, MUTANTS)})


@pytest.mark.parametrize("mutant, count", [("release", 1), ("drop", 0), ("double", 2)])
def test_a_launcher_that_drops_or_doubles_the_callers_text_fails_the_request_check(tmp_path, mutant_repo, mutant, count):
    result, journal = run(AGENTS / "isa-second-turn.yaml", f"{ANTIGRAVITY}+checkout={mutant_repo}#{mutant}", tmp_path)
    assert_as_expected(result)
    (_, first), _ = system_prompts(journal)
    assert first.count(APPEND) == count and first.count(OPEN) == min(count, 1)  # empty instructions: no block at all
    appended = next(c for c in result.checks if c.check == "appended_exactly_once")
    assert appended.verdict == ("pass" if mutant == "release" else "fail")
    if mutant != "release":
        assert appended.step == 1
