"""A bounded exploration of the real Claude Code CLI: the README's explore figures are these runs.

The ci profile is derandomized, so CI tries the same sequences every time;
Claude Code answers the fake API deterministically, so the outcome is stable.
The pinned build with the caller's text on every launch survives every
sequence tried; with the text on the first launch only (the first seed's
launcher), the search finds the seed's incident on its own and shrinks it to
launch → resume → compact → resume.
"""

from __future__ import annotations

from harness.explore.found import replay, write_finding
from harness.explore.search import Budget, explore_target
from harness.results import PASS
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import claude_code, resolve_target

BUDGET = Budget(profile="ci", examples=20, max_steps=5)
PINNED = claude_code.PINNED_VERSION
# What a 5-step search can take on Claude Code (it passes no per-step temporary text, so that rule is off).
EXPLORED_RULES = {"launch", "resume", "retry_after_wrong_answer", "retry_after_failed_turn", "turn_failed_by_api",
                  "compact", "tool_call_turn", "workdir_change_turn"}


def target(name: str):
    (resolved,) = resolve_target(name)
    return resolved


def test_the_pinned_build_with_the_text_on_every_launch_survives_the_bounded_search():
    outcome = explore_target(target(f"claude-code@{PINNED}+append-every-launch"), BUDGET)
    assert outcome.findings == [], [f"{f.what} at step {f.step}: {f.steps}" for f in outcome.findings]
    assert set(outcome.rules) == EXPLORED_RULES, outcome.rules  # every step kind really ran, not a vacuous pass
    assert outcome.sequences >= BUDGET.examples and outcome.steps >= 3 * BUDGET.examples
    assert set(outcome.unavailable) == {"turn_with_temporary_text"}


def test_the_first_launch_only_launcher_is_found_failing_after_a_compaction(tmp_path):
    explored = target(f"claude-code@{PINNED}+append-first-launch-only")
    outcome = explore_target(explored, BUDGET)
    finding = outcome.findings[0]
    assert [next(iter(step)) for step in finding.steps] == ["launch", "resume", "compact", "resume"]
    assert finding.check == "identity_stable" and finding.step == 4
    written = write_finding(finding, explored, tmp_path, "test")
    reproduced, result = replay(written.path, finding, explored)
    assert reproduced, result.checks
    fixed = run_scenario(load_scenario(written.path), target(f"claude-code@{PINNED}+append-every-launch"))
    assert fixed.status == PASS, "the same sequence passes when the launcher passes the text every time"
