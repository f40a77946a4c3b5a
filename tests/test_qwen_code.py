"""The real Qwen Code from npm on the library's Claude Code scenarios, per launch policy.

Each step is a real `node cli.js -p ...` process (installed into the tool folder
on first use; an install failure fails the test with npm's reason, never a
skip). The failing checks must be exactly the ones measured for that policy,
and each failure is re-derived from the raw request bytes: the appended text
counted in the system message as sent, and the one history break 0.24.4 always
shows (a resumed process drops the previous turn's "current date" reminder, which
its chat file never recorded; and it rebuilds the startup context, with its listing
of the working folder, in the first user message) located by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.journal.exchange import COMPACTION, MAIN
from harness.results import RunResult
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import qwen_code, resolve_target
from harness.targets.policy_family import EVERY_LAUNCH, FIRST_LAUNCH_ONLY, NEVER

SUITE = Path(__file__).resolve().parent.parent / "scenarios" / "claude-code"
PINNED = qwen_code.PINNED_VERSION
HISTORY, APPENDED, PREFIX = "history_preserved", "appended_exactly_once", "prefix_stable"
DATE_REMINDER = "<system-reminder>\nThe current date is: "
# The first user message opens with this context, rebuilt per process: date, OS, folder and a listing of its files.
STARTUP_CONTEXT = "<system-reminder>\nThis is the Qwen Code. We are setting up the context for our chat."

# Checks that fail, measured on 0.24.4 (identity_stable passes everywhere).
MEASURED = [
    ("wrong-answer-then-retry.yaml", FIRST_LAUNCH_ONLY, {APPENDED, PREFIX, HISTORY}),
    ("wrong-answer-then-retry.yaml", EVERY_LAUNCH, {HISTORY}),
    ("wrong-answer-then-retry.yaml", NEVER, {APPENDED, HISTORY}),
    ("uncaught-error-then-retry.yaml", EVERY_LAUNCH, {HISTORY}),
    # the system prompt renders `git status` and recent commits; the startup context lists the new notes.txt
    ("two-turns-in-a-git-repository.yaml", EVERY_LAUNCH, {PREFIX, HISTORY}),
]


def run(scenario_file: str, policy: str, tmp_path: Path) -> tuple[RunResult, list[dict]]:
    (target,) = resolve_target(f"qwen-code@{PINNED}+{policy}")
    journal = tmp_path / "journal.jsonl"
    result = run_scenario(load_scenario(SUITE / scenario_file), target, journal)
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]
    return result, records


def mains(records: list[dict]) -> list[dict]:
    return [r for r in records if r["class"] == MAIN and r["status"] == 200]


def system_of(record: dict) -> str:
    first = json.loads(record["body"])["messages"][0]
    assert first["role"] == "system" and isinstance(first["content"], str), first
    return first["content"]


def texts(message: dict) -> list[str]:
    content = message.get("content") or ""
    return [content] if isinstance(content, str) else [p.get("text", "") for p in content]


def flat(messages: list[dict], drop: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(role, text or tool call) per part, system message left out, and parts that start with one of `drop`."""
    items = []
    for message in messages:
        if message["role"] == "system":
            continue
        for text in texts(message):
            if text and not text.startswith(drop or "\0"):
                items.append((message["role"], text))
        for call in message.get("tool_calls") or []:
            items.append((message["role"], json.dumps(call["function"], sort_keys=True)))
    return items


def history_breaks(records: list[dict], drop: tuple[str, ...] = ()) -> list[int]:
    """Main requests (seq) that do not start with the previous one plus its reply; compactions reset the chain."""
    breaks, previous = [], None
    for record in records:
        if record["class"] == COMPACTION:
            previous = None
        if record not in mains(records):
            continue
        messages = json.loads(record["body"])["messages"]
        if previous is not None:
            reply = "".join(b.get("text", "") for b in previous["reply"]["content"])
            want = flat(json.loads(previous["body"])["messages"], drop) + [("assistant", reply)]
            if flat(messages, drop)[: len(want)] != want:
                breaks.append(record["seq"])
        previous = record
    return breaks


def failing_from_bytes(records: list[dict], append: str) -> set[str]:
    found, bodies = set(), mains(records)
    if any(system_of(r).count(append) != 1 for r in bodies):
        found.add(APPENDED)
    if len({system_of(r) + json.dumps(json.loads(r["body"]).get("tools"), sort_keys=True) for r in bodies}) > 1:
        found.add(PREFIX)
    if history_breaks(records):
        found.add(HISTORY)
    return found


def assert_measured(result: RunResult, records: list[dict], append: str, failing: set[str]) -> None:
    assert result.error is None, result.error
    verdicts = {c.check: c.verdict for c in result.checks}
    assert {c for c, v in verdicts.items() if v != "pass"} == failing, {c.check: c.message for c in result.checks}
    assert failing_from_bytes(records, append) == failing, "the raw bytes disagree with the checks"
    if HISTORY in failing:  # the only breaks: the previous turn's date reminder is gone, the startup context rebuilt
        assert history_breaks(records, (DATE_REMINDER, STARTUP_CONTEXT)) == [], "history breaks for another reason"


@pytest.mark.parametrize("scenario_file, policy, failing", MEASURED,
                         ids=[f"{s.removesuffix('.yaml')}-{p}" for s, p, _ in MEASURED])
def test_failing_checks_are_the_measured_ones_and_match_the_bytes(scenario_file, policy, failing, tmp_path):
    result, records = run(scenario_file, policy, tmp_path)
    assert_measured(result, records, load_scenario(SUITE / scenario_file).append, failing)
    if scenario_file.startswith("two-turns"):  # the listing changes where notes.txt appears (step 2) only
        assert history_breaks(records, (DATE_REMINDER,)) == [mains(records)[1]["seq"]]
    else:
        assert history_breaks(records, (DATE_REMINDER,)) == []
    pids = [pid for step in result.steps for pid in step.pids]
    assert len(pids) == len(set(pids)) == len(result.steps), "every step is a fresh process"


def test_compress_gets_the_scenarios_summary_and_does_not_continue_on_its_own(tmp_path):
    scenario = load_scenario(SUITE / "compact-then-resume.yaml")
    result, records = run("compact-then-resume.yaml", EVERY_LAUNCH, tmp_path)
    assert_measured(result, records, scenario.append, {HISTORY})
    compact = result.steps[2]
    # Qwen asks on the main prompt first, then its own summarizer (the fake API's <summary> reply has no
    # <state_snapshot>); neither is a turn of the conversation, and nothing follows them in that process.
    assert compact.kind == "compact" and compact.classes == {COMPACTION: 2}, compact.classes
    summary = scenario.steps[2].summary
    after = mains(records)[-1]
    assert after["step"] == 4
    assert any(summary in text for m in json.loads(after["body"])["messages"] for text in texts(m))
    assert system_of(after).count(scenario.append) == 1
