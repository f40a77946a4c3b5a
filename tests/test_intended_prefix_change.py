"""prefix_stable with declared changes: a change at a declared step is reported and passes, any other still fails.

Synthetic journals pin the segment rules in the Anthropic shape (breakpoints)
and the OpenAI shape (none); the real reference agent shows one change passing
where it is declared and failing where it is not.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from builders import context, conversation, system

from harness.checks import prefix
from harness.checks.context import CheckContext
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import resolve_target

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
REASON = "the project's instructions changed"
OLD, NEW = "Body.\n\nProject rules: v1.", "Body.\n\nProject rules: version 2."
SHAPES = {
    "anthropic": lambda body: system("You are Agent X.", body, "per-run tail", breakpoint_at=1),
    "openai": lambda body: system("You are Agent X.", body, breakpoint_at=None),
}


def turns(bodies: dict[int, str], shape: str, count: int = 4):
    """One request per step; step s carries bodies[s], or the latest body declared before it."""
    def system_for(step):
        body = next(bodies[s] for s in sorted(bodies, reverse=True) if s <= step)
        return SHAPES[shape](body)

    return conversation([(f"q{i}", f"a{i}") for i in range(1, count + 1)], system_for)


def judged(exchanges, declared: dict[int, str] | None = None) -> CheckContext:
    return replace(context(*exchanges), prefix_changes=dict(declared or {}))


def bytes_of(shape: str, body: str) -> int:
    return len(prefix.system_prefix(turns({1: body}, shape, 1)[0]))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_change_at_the_declared_step_passes_and_is_reported(shape):
    result = prefix.check(judged(turns({1: OLD, 3: NEW}, shape), {3: REASON}))
    assert result.verdict == "pass", result.message
    before, after = bytes_of(shape, OLD), bytes_of(shape, NEW)
    assert f"step 3: prefix changed as declared ({REASON}): {before} → {after} bytes" in result.message
    assert result.message.startswith("prefix identical in all 4 requests apart from the declared change(s)")
    assert result.evidence["declared_changes"] == [{
        "step": 3, "reason": REASON, "changed": True, "first_request": 3, "judged_at_step": 3,
        "bytes_before": before, "bytes_after": after, "tools_changed": False,
    }]
    assert [s["from_step"] for s in result.evidence["segments"]] == [1, 3]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_same_change_undeclared_fails_exactly_as_before(shape):
    undeclared = prefix.check(judged(turns({1: OLD, 3: NEW}, shape)))
    assert undeclared.verdict == "fail" and (undeclared.step, undeclared.request) == (3, 3)
    assert undeclared.message.startswith("prefix changed at step 3 (resume), request #3: system prefix (block 1), first differing byte")
    assert "\n  steps whose prefix differs from step 1: 3, 4" in undeclared.message
    assert "declared" not in undeclared.message and "declared_changes" not in undeclared.evidence
    elsewhere = prefix.check(judged(turns({1: OLD, 3: NEW}, shape), {2: REASON}))
    assert elsewhere.verdict == "fail" and elsewhere.step == 3
    assert f"step 2: prefix did not change, though a change was declared ({REASON})" in elsewhere.message


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_second_change_after_the_declared_one_fails_against_the_new_segment(shape):
    result = prefix.check(judged(turns({1: OLD, 2: NEW, 4: NEW + " and more"}, shape), {2: REASON}))
    assert result.verdict == "fail" and result.step == 4
    assert "step 2 (resume), request #2: " in result.message  # the yardstick is the segment's first request
    assert "steps whose prefix differs from step 2: 4" in result.message
    assert f"step 2: prefix changed as declared ({REASON})" in result.message


def test_changes_before_and_after_a_declared_step_are_both_listed():
    result = prefix.check(judged(turns({1: OLD, 2: OLD + "!", 3: NEW, 4: NEW + "!"}, "anthropic"), {3: REASON}))
    assert result.verdict == "fail" and result.step == 2
    assert "steps whose prefix differs from step 1: 2; from step 3 (declared change): 4" in result.message


def test_a_declared_change_that_did_not_happen_is_noted_not_failed():
    result = prefix.check(judged(turns({1: OLD}, "anthropic"), {3: REASON}))
    assert result.verdict == "pass"
    assert result.message.startswith("prefix (")
    assert f"step 3: prefix did not change, though a change was declared ({REASON})" in result.message
    assert result.evidence["declared_changes"][0]["changed"] is False


def test_a_declared_step_without_requests_starts_the_segment_at_the_next_request():
    exchanges = [e for e in turns({1: OLD, 3: NEW}, "anthropic") if e.step != 2]  # step 2 a compaction, say
    result = prefix.check(judged(exchanges, {2: REASON}))
    assert result.verdict == "pass", result.message
    assert "step 2: prefix changed as declared" in result.message and "(first request after it: step 3)" in result.message
    beyond = prefix.check(judged(turns({1: OLD}, "anthropic"), {9: REASON}))
    assert beyond.verdict == "pass" and "step 9: a prefix change was declared" in beyond.message
    assert "no main request came after it to judge" in beyond.message


def test_declared_tool_changes_pass_and_say_so():
    exchanges = turns({1: OLD}, "anthropic", 3)
    for e in exchanges:
        e.normalized["tools"] = [{"name": "calculator"}] + ([{"name": "grep"}] if e.step >= 2 else [])
    assert prefix.check(judged(exchanges)).verdict == "fail"
    result = prefix.check(judged(exchanges, {2: REASON}))
    assert result.verdict == "pass" and "tool definitions changed" in result.message


def test_several_declared_changes():
    result = prefix.check(judged(turns({1: OLD, 2: NEW, 4: OLD}, "openai"), {2: REASON, 4: "rolled back"}))
    assert result.verdict == "pass", result.message
    assert [o["step"] for o in result.evidence["declared_changes"] if o["changed"]] == [2, 4]


# ----------------------------------------------------------------- the reference agent, for real


def _prefix_verdict(sc, spec: str, tmp_path: Path):
    (target,) = resolve_target(spec)
    result = run_scenario(sc, target, tmp_path / f"{target.name.replace(':', '_')}-{len(list(tmp_path.iterdir()))}.jsonl")
    assert result.error is None, result.error
    return next(c for c in result.checks if c.check == prefix.NAME)


def test_e2e_a_declared_change_passes_and_the_same_change_undeclared_fails(tmp_path):
    declared = load_scenario(SCENARIOS / "declared-project-change.yaml")
    assert declared.prefix_changes == {4: "the project's instructions were rewritten between the turns"}
    undeclared = replace(declared, steps=tuple(replace(s, prefix_change=None) for s in declared.steps))
    lost = "reference:append-lost-after-compaction"  # the prefix moves at step 4, the first turn after compaction
    passed = _prefix_verdict(declared, lost, tmp_path)
    assert passed.verdict == "pass" and "step 4: prefix changed as declared" in passed.message, passed.message
    failed = _prefix_verdict(undeclared, lost, tmp_path)
    assert failed.verdict == "fail" and failed.step == 4, failed.message
    clean = _prefix_verdict(declared, "reference", tmp_path)
    assert clean.verdict == "pass" and "step 4: prefix did not change" in clean.message
    early = _prefix_verdict(declared, "reference:drop-append-on-resume", tmp_path)  # the same text lost at step 2
    assert early.verdict == "fail" and early.step == 2, early.message
