"""Expectations keyed by a target-name glob: exact names win, globs match, nothing matched means pass."""

from __future__ import annotations


from builders import IDENTITY, conversation

from harness.results import FAIL, PASS
from harness.run.runner import judge
from harness.targets.base import SessionIdSource, Target
from vocabulary import parse

GLOB_EXPECT = (
    "name: globs",
    "append: x",
    "steps: [{launch: {prompt: hi}}]",
    "checks: [appended_exactly_once, prefix_stable]",
    "expect:",
    "  'claude-code@*+append-never': {appended_exactly_once: fail}",
    "  'claude-code@2.1.236+append-never': {prefix_stable: fail}",
    "  'reference:*': {prefix_stable: fail}",
)


def test_an_exact_target_name_beats_a_glob():
    sc = parse(*GLOB_EXPECT)
    # the exact entry says nothing about appended_exactly_once: it must pass, whatever the glob says
    assert sc.expected_verdict("claude-code@2.1.236+append-never", "appended_exactly_once") == "pass"
    assert sc.expected_verdict("claude-code@2.1.236+append-never", "prefix_stable") == "fail"


def test_a_glob_applies_to_every_matching_target_name():
    sc = parse(*GLOB_EXPECT)
    for name in ("claude-code@2.1.332+append-never", "claude-code@9.9.9-beta.1+append-never"):
        assert sc.expected_verdict(name, "appended_exactly_once") == "fail", name
        assert sc.expected_verdict(name, "prefix_stable") == "pass", name
    assert sc.expected_verdict("reference:drop-append-on-resume", "prefix_stable") == "fail"


def test_a_target_that_no_expectation_matches_must_pass():
    sc = parse(*GLOB_EXPECT)
    for name in ("claude-code@2.1.332+append-every-launch", "reference", "claude-code+append-never", "x"):
        for check in ("appended_exactly_once", "prefix_stable"):
            assert sc.expected_verdict(name, check) == "pass", (name, check)


def test_the_runner_judges_against_glob_expectations():
    sc = parse(*GLOB_EXPECT)
    exchanges = conversation([("a", "1"), ("b", "2")], lambda step: [
        {"text": "You are Agent X.", "cache_control": None},
        {"text": f"Body {step}.\n\nx", "cache_control": {"type": "ephemeral"}},
    ])
    named = Target(name="claude-code@2.1.332+append-never", commands={}, session_id=SessionIdSource("stdout_json", "session_id"),
                   identity_regex=IDENTITY.pattern)
    verdicts = {c.check: c for c in judge(sc, named, exchanges, None)}
    assert verdicts["prefix_stable"].verdict == FAIL and verdicts["prefix_stable"].expected_verdict == PASS
    assert verdicts["prefix_stable"].as_expected is False
    assert verdicts["appended_exactly_once"].verdict == PASS and verdicts["appended_exactly_once"].expected_verdict == FAIL
    assert verdicts["appended_exactly_once"].as_expected is False
