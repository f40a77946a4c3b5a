"""`harness minimize`: a padded failing scenario shrinks to its core, and the result fails on replay."""

from __future__ import annotations

import itertools

import pytest

from harness import cli
from harness.explore.minimize import ddmin, minimize
from harness.results import FAIL, PASS
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import resolve_target

PADDED = """\
name: padded-compaction
description: The compaction defect, buried in turns that have nothing to do with it.
append: "Rules: never delete files; report every command you run."
steps:
  - launch:  {prompt: "List the three primary colours.", reply: "Red, yellow and blue."}
  - resume:
      prompt: "What is 12*12?"
      reply:
        - tool_use: {name: calculator, input: {expression: "12*12"}}
        - "144"
  - resume:  {prompt: "Now the secondary ones.", temporary: "Only for this turn.", reply: "Orange, green and purple."}
  - retry:   {prompt: "That is not right. The secondary ones?", reply: "Orange, green and violet."}
  - compact: {summary: "Colours were listed."}
  - resume:  {prompt: "Which is a mix of red and blue?", reply: "Purple."}
  - resume:  {prompt: "And of yellow and blue?", reply: "Green."}
expect:
  reference:append-lost-after-compaction: {appended_exactly_once: fail, prefix_stable: fail}
"""


def target(spec: str):
    (found,) = resolve_target(spec)
    return found


def test_a_padded_scenario_shrinks_to_its_core_and_fails_on_replay(tmp_path):
    path = tmp_path / "padded.yaml"
    path.write_text(PADDED)
    defect = target("reference:append-lost-after-compaction")
    done = minimize(path, defect)
    assert done.check == "appended_exactly_once" and (done.steps_before, done.steps_after) == (7, 3)
    assert done.path == tmp_path / "padded.min.yaml"
    minimized = load_scenario(done.path)
    assert [s.kind for s in minimized.steps] == ["launch", "compact", "resume"]
    assert all(s.temporary is None for s in minimized.steps)
    assert [turn.blocks[0].text for s in minimized.steps for turn in s.turns] == ["ok", "ok"]
    assert minimized.name == "padded-compaction-min" and minimized.expect == {}
    replayed = run_scenario(minimized, defect)
    assert replayed.verdict_of("appended_exactly_once") == FAIL
    assert run_scenario(minimized, target("reference")).status == PASS  # the core, not a broken scenario


def test_the_check_asked_for_is_the_one_kept_failing(tmp_path):
    """forget-last-reply loses the last reply: history_preserved needs two turns, no compaction, no tool."""
    path = tmp_path / "tools.yaml"
    path.write_text(PADDED.replace("padded-compaction", "tools"))
    done = minimize(path, target("reference:forget-last-reply"), check="history_preserved")
    assert [s.kind for s in load_scenario(done.path).steps] == ["launch", "resume"]


@pytest.mark.parametrize("needed", [(3,), (3, 7), (0, 9), (2, 4, 6)])
def test_ddmin_finds_exactly_the_items_the_failure_needs(needed):
    calls = []

    def fails(items):
        calls.append(list(items))
        return set(needed) <= set(items)

    items = list(range(10))
    result = ddmin(items, fails)
    assert result == list(needed)
    for i in range(len(result)):  # 1-minimal: no single item can go
        assert not fails(result[:i] + result[i + 1:])
    assert len(calls) < 2 ** len(items)  # not an exhaustive search


def test_ddmin_keeps_order_and_returns_empty_when_nothing_is_needed():
    assert ddmin([5, 1, 4], lambda items: True) == []
    pairs = list(itertools.permutations(range(6), 2))[:5]
    assert ddmin(pairs, lambda items: pairs[3] in items) == [pairs[3]]


def test_cli_prints_what_it_kept_and_the_file(tmp_path, capsys):
    path = tmp_path / "padded.yaml"
    path.write_text(PADDED)
    code = cli.main(["minimize", str(path), "--target", "reference:append-lost-after-compaction", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "appended_exactly_once still fails on reference:append-lost-after-compaction with 3 of 7 steps" in out
    assert f"written: {tmp_path / 'padded.min.yaml'}" in out


@pytest.mark.parametrize("spec, extra, message", [
    ("reference", [], "every check passes on reference: nothing fails"),
    ("reference:append-lost-after-compaction", ["--check", "identity_stable"],
     "--check identity_stable: it does not fail on reference:append-lost-after-compaction (pass)"),
    ("reference:*", [], "stands for 10 targets"),
])
def test_nothing_to_minimize_is_a_usage_error_naming_why(spec, extra, message, tmp_path, capsys):
    path = tmp_path / "padded.yaml"
    path.write_text(PADDED)
    assert cli.main(["minimize", str(path), "--target", spec, "--quiet", *extra]) == cli.EXIT_INPUT
    assert message in capsys.readouterr().err
    assert not (tmp_path / "padded.min.yaml").exists()
