"""The real opencode CLI (the pinned release) under the launch policies, verdicts re-read from the raw bytes.

The binary comes from the tool folder (installed here on first use; an install
failure fails the test with npm's reason, never a skip). Each assertion reads
the journal's raw request bodies with nothing but json, so a check that drifted
from the bytes fails here too.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from harness.journal.exchange import COMPACTION, MAIN, OUTBOUND, SIDE
from harness.run.runner import run_scenario
from harness.scenario.reader import scenario_from_text
from harness.targets import opencode, resolve_target
from harness.targets.policy_family import EVERY_LAUNCH, FIRST_LAUNCH_ONLY

APPEND = "Task prompt: answer with one number. Never use tools."
COMPACT_THEN_RESUME = f"""
name: oc-compact-then-resume
append: "{APPEND}"
steps:
  - launch:  {{prompt: "What is 6*7?", reply: "42"}}
  - resume:  {{prompt: "And 7*8?", reply: "56"}}
  - compact: {{summary: "The user asked for 6*7 (42) and 7*8 (56)."}}
  - resume:  {{prompt: "And 2+2?", reply: "4"}}
checks: [identity_stable, appended_exactly_once, prefix_stable, history_preserved]
"""
ERROR_THEN_RETRY = f"""
name: oc-uncaught-error-then-retry
append: "{APPEND}"
steps:
  - launch: {{prompt: "What is 6*7?", reply: "42"}}
  - resume:
      prompt: "And 7*8?"
      error: {{status: 400, type: invalid_request_error, message: "harness: scripted failure of this turn"}}
  - retry:  {{prompt: "And 7*8?", reply: "56"}}
checks: [identity_stable, appended_exactly_once, prefix_stable, history_preserved]
"""


def target(policy: str):
    (resolved,) = resolve_target(f"opencode@{opencode.PINNED_VERSION}+{policy}")
    return resolved


def run(text: str, resolved, tmp_path: Path):
    result = run_scenario(scenario_from_text(text), resolved, tmp_path / "journal.jsonl")
    records = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines() if line.strip()]
    return result, records


def bodies(records: list[dict], klass: str) -> list[dict]:
    return [json.loads(r["body"]) for r in records if r["class"] == klass]


def system_of(body: dict) -> str:
    (system,) = [m["content"] for m in body["messages"] if m["role"] == "system"]
    return system


def verdicts(result) -> dict[str, str]:
    return {c.check: c.verdict for c in result.checks}


def test_every_launch_carries_the_text_once_in_every_turn_through_compaction(tmp_path):
    result, records = run(COMPACT_THEN_RESUME, target(EVERY_LAUNCH), tmp_path)
    assert result.error is None, result.error
    mains = bodies(records, MAIN)
    assert len(mains) == 3 and len(bodies(records, COMPACTION)) == 1
    assert [system_of(b).count(APPEND) for b in mains] == [1, 1, 1]
    assert len({system_of(b) for b in mains}) == 1  # the whole system prompt is byte-identical across processes
    assert all(system_of(b).startswith("You are opencode, ") for b in mains)
    # The compaction is opencode's own summarizer, and the next turn carries its reply as the history.
    (summarizer,) = bodies(records, COMPACTION)
    assert system_of(summarizer).startswith("You are a context summarization agent")
    after = [m["content"] for m in mains[2]["messages"] if m["role"] != "system"]
    assert "The user asked for 6*7 (42) and 7*8 (56)." in after[1] and after[2] == '"And 2+2?"'
    assert verdicts(result) == dict.fromkeys(verdicts(result), "pass")
    # The title request is the only side call, on the small model, in the launch.
    assert [(r["step"], json.loads(r["body"])["model"]) for r in records if r["class"] == SIDE] == [(1, "harness-small")]
    assert not [r for r in records if r["class"] == OUTBOUND]


def test_first_launch_only_loses_the_text_at_the_first_resume(tmp_path):
    result, records = run(COMPACT_THEN_RESUME, target(FIRST_LAUNCH_ONLY), tmp_path)
    assert result.error is None, result.error
    assert [system_of(b).count(APPEND) for b in bodies(records, MAIN)] == [1, 0, 0]
    assert verdicts(result) == {"identity_stable": "pass", "appended_exactly_once": "fail", "prefix_stable": "fail",
                                "history_preserved": "pass"}


def test_a_failed_turn_exits_1_and_the_retry_sends_the_failed_prompt_again(tmp_path):
    result, records = run(ERROR_THEN_RETRY, target(EVERY_LAUNCH), tmp_path)
    assert result.error is None, result.error
    assert [s.exit_code for s in result.steps] == [0, 1, 0]
    assert [(r["step"], r["status"]) for r in records if r["class"] == MAIN] == [(1, 200), (2, 400), (3, 200)]
    retry = bodies(records, MAIN)[-1]
    users = [m["content"] for m in retry["messages"] if m["role"] == "user"]
    assert users == ['"What is 6*7?"', '"And 7*8?"', '"And 7*8?"']  # the failed turn stays in the session
    assert verdicts(result) == dict.fromkeys(verdicts(result), "pass")


def test_nothing_leaves_the_machine_and_the_catch_is_real(tmp_path):
    """Without the config folder's lock file, every start asks registry.npmjs.org for @opencode-ai/plugin."""
    one_turn = f'name: one\nappend: "{APPEND}"\nsteps:\n  - launch: {{prompt: "What is 6*7?", reply: "42"}}\n'
    resolved = target(EVERY_LAUNCH)
    result, records = run(one_turn, resolved, tmp_path / "with")
    assert result.error is None and not [r for r in records if r["class"] == OUTBOUND]
    files = {k: v for k, v in resolved.home_files.items() if "package" not in k and "node_modules" not in k}
    result, records = run(one_turn, dataclasses.replace(resolved, home_files=files), tmp_path / "without")
    assert {r["path"] for r in records if r["class"] == OUTBOUND} == {"registry.npmjs.org:443"}


@pytest.fixture(autouse=True)
def _journal_dirs(tmp_path):
    for name in ("with", "without"):
        (tmp_path / name).mkdir()
