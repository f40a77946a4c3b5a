"""The real Gemini CLI (pinned release, from the npm registry) under every launch policy, offline.

Every verdict asserted here is also re-derived from the raw request bytes in
the journal (the Gemini body's systemInstruction and contents, parsed here, not
by the harness's normalizer).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.journal.exchange import COMPACTION, MAIN
from harness.results import CANNOT_EXPRESS, RunResult
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import gemini_cli, resolve_target

ROOT = Path(__file__).resolve().parent.parent
PINNED = gemini_cli.PINNED_VERSION
WRONG_ANSWER = ROOT / "scenarios" / "claude-code" / "wrong-answer-then-retry.yaml"
COMPACT = ROOT / "scenarios" / "claude-code" / "compact-then-resume.yaml"
GIT = ROOT / "scenarios" / "claude-code" / "two-turns-in-a-git-repository.yaml"
AUTO = ROOT / "scenarios" / "gemini-cli" / "auto-compression-then-resume.yaml"
# The checks each policy fails on the retry and auto-compression scenarios (measured; see the target's docstring).
FAILS = {
    "append-every-launch": set(),
    "append-first-launch-only": {"appended_exactly_once", "prefix_stable"},
    "append-never": {"appended_exactly_once"},
}


def run(path: Path, policy: str, tmp_path: Path) -> tuple[RunResult, Path]:
    (target,) = resolve_target(f"gemini-cli@{PINNED}+{policy}")
    journal = tmp_path / "journal.jsonl"
    return run_scenario(load_scenario(path), target, journal), journal


def records(journal: Path) -> list[dict]:
    return [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]


def system_of(body: dict) -> str:
    return "\n\n".join(p.get("text", "") for p in body["systemInstruction"]["parts"])


def verdicts(result: RunResult) -> dict[str, str]:
    return {c.check: c.verdict for c in result.checks}


def from_bytes(journal: Path, append: str) -> dict[str, str]:
    bodies = [json.loads(r["body"]) for r in records(journal) if r["class"] == MAIN]
    counts = [system_of(b).count(append) for b in bodies]
    systems = {system_of(b) for b in bodies}
    return {"appended_exactly_once": "pass" if set(counts) == {1} else "fail",
            "prefix_stable": "pass" if len(systems) == 1 else "fail"}


@pytest.mark.parametrize("policy", list(FAILS))
def test_retry_after_a_wrong_answer_keeps_the_text_only_where_the_launcher_gives_it(policy, tmp_path):
    result, journal = run(WRONG_ANSWER, policy, tmp_path)
    assert result.status != "error", result.error
    expected = {c: "fail" if c in FAILS[policy] else "pass" for c in verdicts(result)}
    assert verdicts(result) == expected
    raw = from_bytes(journal, load_scenario(WRONG_ANSWER).append)
    assert raw == {k: expected[k] for k in raw}
    assert {r["class"] for r in records(journal)} == {MAIN}  # with the model pinned: no router, nothing outbound


@pytest.mark.parametrize("policy", ["append-every-launch", "append-first-launch-only"])
def test_auto_compression_by_usage_numbers_is_carried_across_a_resume(policy, tmp_path):
    result, journal = run(AUTO, policy, tmp_path)
    assert result.status != "error", result.error
    assert verdicts(result) == {c: "fail" if c in FAILS[policy] else "pass" for c in verdicts(result)}
    rows = records(journal)
    assert [r["class"] for r in rows].count(COMPACTION) == 2  # the <state_snapshot> request and its verification
    summary = "A running total was started at 10."
    last = json.loads(rows[-1]["body"])
    assert summary in last["contents"][0]["parts"][1]["text"]  # the resumed process starts from the summary
    assert all("Start a running total" not in p.get("text", "") for c in last["contents"] for p in c["parts"])


def test_a_compact_step_is_reported_as_one_it_cannot_express(tmp_path):
    result, journal = run(COMPACT, "append-every-launch", tmp_path)
    assert result.status == CANNOT_EXPRESS and result.steps == []  # nothing run, nothing passed
    assert "(compact): headless -p /compress never awaits its summary" in result.cannot_express
    assert all(c.verdict == CANNOT_EXPRESS for c in result.checks)


def test_a_resume_rewrites_the_first_message_with_the_current_directory_listing(tmp_path):
    result, journal = run(GIT, "append-every-launch", tmp_path)
    # Seen once to fail prefix_stable in a fresh clone's whole suite, never since in 57 runs alone or under load:
    # the evidence (which bytes moved) is kept in the failure message for the next time.
    assert verdicts(result) == {"identity_stable": "pass", "appended_exactly_once": "pass", "prefix_stable": "pass",
                                "history_preserved": "fail"}, [c.message for c in result.checks if c.verdict != "pass"]
    first, second = ([json.loads(r["body"])["contents"][0]["parts"][0]["text"]] for r in records(journal)[:2])
    assert "notes.txt" not in first[0] and "notes.txt" in second[0]  # committed between the turns
