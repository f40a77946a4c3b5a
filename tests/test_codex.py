"""The real Codex CLI from npm, under every launch policy, through the claude-code scenarios.

Each step is a real `codex exec` process (a `compact` step: `codex app-server`
driven by harness.targets.codex) of the pinned release from the tool folder;
a missing release is installed here, and one that cannot be installed fails
with npm's reason, never a skip. The verdicts must match what was measured
(MEASURED below, explained in the report of the change), and the identity,
appended-text and prefix verdicts are re-derived from the journal's raw request
bytes, without the harness's normalizer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.journal.exchange import COMPACTION, MAIN, OUTBOUND
from harness.results import RunResult
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import codex, resolve_target
from harness.targets.policy_family import EVERY_LAUNCH, FIRST_LAUNCH_ONLY, NEVER

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "scenarios" / "claude-code"
PINNED = codex.PINNED_VERSION
FIRST, EVERY = FIRST_LAUNCH_ONLY, EVERY_LAUNCH

# Checks that fail, per scenario and policy (all others pass). Codex replays the developer message
# the session recorded at launch on every resume, so only a compaction, which rebuilds it from the
# compacting process's own configuration, loses text passed on the first launch only.
MEASURED = {
    ("wrong-answer-then-retry.yaml", FIRST): set(),
    ("wrong-answer-then-retry.yaml", EVERY): set(),
    ("wrong-answer-then-retry.yaml", NEVER): {"appended_exactly_once"},
    ("uncaught-error-then-retry.yaml", FIRST): set(),
    ("uncaught-error-then-retry.yaml", EVERY): set(),
    ("uncaught-error-then-retry.yaml", NEVER): {"appended_exactly_once"},
    ("compact-then-resume.yaml", FIRST): {"appended_exactly_once", "prefix_stable"},
    ("compact-then-resume.yaml", EVERY): set(),
    ("compact-then-resume.yaml", NEVER): {"appended_exactly_once"},
    ("two-turns-in-a-git-repository.yaml", FIRST): set(),
    ("two-turns-in-a-git-repository.yaml", EVERY): set(),
    ("two-turns-in-a-git-repository.yaml", NEVER): {"appended_exactly_once"},
}


def run(scenario_file: str, policy: str, tmp_path: Path) -> tuple[RunResult, Path]:
    (target,) = resolve_target(f"codex@{PINNED}+{policy}")  # inside the test: an install failure fails it
    journal = tmp_path / "journal.jsonl"
    return run_scenario(load_scenario(SUITE / scenario_file), target, journal), journal


# ---------------------------------------------------------------------------------------- the bytes, read again


def records(journal: Path) -> list[dict]:
    return [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]


def raw_bodies(journal: Path, klass: str = MAIN) -> list[dict]:
    return [json.loads(r["body"]) for r in records(journal) if r["class"] == klass and r["status"] == 200]


def developer_texts(body: dict) -> list[str]:
    """Codex sends no `instructions`: its prompt is the developer messages at the head of `input`."""
    assert "instructions" not in body
    return [part["text"] for item in body["input"] if item.get("role") == "developer" for part in item["content"]]


def derived_verdicts(journal: Path, append: str) -> dict[str, str]:
    bodies = raw_bodies(journal)
    assert bodies, "no main request reached the fake API"
    identities = {next((m.group(0) for t in developer_texts(b) if (m := re.search(r"(?m)^You are [^\n]*", t))), None)
                  for b in bodies}
    return {
        "identity_stable": "pass" if len(identities) == 1 and None not in identities else "fail",
        "appended_exactly_once": "pass" if all(sum(t.count(append) for t in developer_texts(b)) == 1 for b in bodies) else "fail",
        "prefix_stable": "pass" if len({"\n".join(developer_texts(b)) for b in bodies}) == 1 else "fail",
    }


# ---------------------------------------------------------------------------------------- the runs


@pytest.mark.parametrize("scenario_file, policy", list(MEASURED), ids=[f"{s.removesuffix('.yaml')}-{p}" for s, p in MEASURED])
def test_verdicts_match_the_measurement_and_the_bytes(scenario_file, policy, tmp_path):
    result, journal = run(scenario_file, policy, tmp_path)
    assert result.error is None, result.error
    verdicts = {c.check: c.verdict for c in result.checks}
    failing = {check for check, verdict in verdicts.items() if verdict != "pass"}
    assert failing == MEASURED[scenario_file, policy], {c.check: c.message for c in result.checks if c.verdict != "pass"}
    append = load_scenario(SUITE / scenario_file).append.strip()
    for check, verdict in derived_verdicts(journal, append).items():
        assert verdicts[check] == verdict, f"{check}: the check says {verdicts[check]}, the raw bytes say {verdict}"
    assert not [r for r in records(journal) if r["class"] == OUTBOUND], "Codex tried to reach another host"


def test_a_compaction_rebuilds_the_developer_message_from_the_compacting_process(tmp_path):
    """Every-launch keeps the text through /compact; the compact step is one summarization request, nothing else."""
    result, journal = run("compact-then-resume.yaml", EVERY, tmp_path)
    assert result.error is None, result.error
    append = load_scenario(SUITE / "compact-then-resume.yaml").append.strip()
    compact_step = next(s for s in result.steps if s.kind == "compact")
    by_step = [r for r in records(journal) if r["step"] == compact_step.index]
    assert [r["class"] for r in by_step] == [COMPACTION], by_step
    (summarizing,) = raw_bodies(journal, COMPACTION)
    assert summarizing["input"][-1]["content"][0]["text"].startswith("You are performing a CONTEXT CHECKPOINT COMPACTION")
    after = raw_bodies(journal)[-1]
    assert any(item.get("role") == "user" and item["content"][0]["text"].startswith("Another language model started")
               for item in after["input"]), "the resume after /compact does not carry the summary"
    assert sum(t.count(append) for t in developer_texts(after)) == 1


def test_every_step_is_a_fresh_process_resuming_one_thread(tmp_path):
    result, journal = run("two-turns-in-a-git-repository.yaml", EVERY, tmp_path)
    assert result.error is None, result.error
    pids = [pid for step in result.steps for pid in step.pids]
    assert len(pids) == len(set(pids)) == 3, pids
    bodies = raw_bodies(journal)
    assert len({b["prompt_cache_key"] for b in bodies}) == 1, "each process should continue the launch's thread"
    assert [sum(i.get("role") == "assistant" for i in b["input"]) for b in bodies] == [0, 1, 2]
