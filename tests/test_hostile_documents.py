"""Scenario and target documents written to hurt: alias bombs, NUL characters, huge and deep values (issue 18).

Each is one line and exit 2 naming the file (and the line where there is one),
found before memory grows or a step starts; never a traceback.  Plain uses of
anchors, aliases and merge keys keep working.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cli_outcome import assert_input_error, assert_kept_promise, run_in_process, run_installed
from harness.scenario.model import TextBlock, ToolUseBlock
from harness.scenario.reader import load_scenario
from harness.documents.guards import MAX_ALIAS_EXPANSION

ROOT = Path(__file__).resolve().parents[1]
MEMORY_CAP = 400 * 1024 * 1024  # without the bound, the bomb below needs gigabytes


def billion_laughs(indent: str, levels: int = 9) -> str:
    """`a: &a [lol x 9]`, `b: &b [*a x 9]`, ...: 9**levels strings once written out, a few hundred bytes as text."""
    names = "abcdefghijklmnopqrstuvwxyz"
    rows = [f"{indent}a: &a [{', '.join(['lol'] * 9)}]"]
    for below, name in zip(names, names[1:levels]):
        rows.append(f"{indent}{name}: &{name} [{', '.join([f'*{below}'] * 9)}]")
    return "\n".join(rows)


def scenario_text(*, tool_input: str = "{command: ls}", prompt: str = "hi") -> str:
    return textwrap.dedent(
        """\
        name: hostile
        append: "Task prompt: answer with one number."
        steps:
          - launch:
              prompt: {prompt}
              reply:
                - tool_use:
                    name: Bash
                    input: {tool_input}
                - Done.
        checks: [identity_stable]
        """
    ).format(prompt=prompt, tool_input=tool_input)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- alias bombs


def test_alias_bomb_in_a_tool_input_is_refused_before_memory_grows(tmp_path):
    bomb = "\n" + billion_laughs(" " * 14)
    scenario = write(tmp_path / "bomb.yaml", scenario_text(tool_input=bomb))
    outcome = run_installed(["run", str(scenario), "--target", "reference", "--report-dir", str(tmp_path / "reports"),
                             "--quiet"], cwd=tmp_path, memory_bytes=MEMORY_CAP)
    line = assert_input_error(outcome, scenario, f"{scenario}:15: invalid YAML at column", "alias bomb",
                              f"more than {MAX_ALIAS_EXPANSION:,} values")
    assert "MemoryError" not in outcome.stdout + outcome.stderr, line
    assert not (tmp_path / "reports" / "journal").exists()  # refused before any step


def test_alias_bomb_in_a_target_file_is_refused(tmp_path):
    """Target files are read through the same loader: the bound is the document's, not the scenario reader's."""
    target = write(tmp_path / "target.yaml", "name: bomb\nprotocol: anthropic\nlaunch: [python3, '{prompt}']\n"
                   "env:\n  X:\n" + billion_laughs(" " * 4) + "\n")
    outcome = run_installed(["run", str(ROOT / "scenarios" / "retry-after-wrong-answer.yaml"), "--target", str(target),
                             "--report-dir", str(tmp_path / "reports"), "--quiet"], cwd=tmp_path, memory_bytes=MEMORY_CAP)
    assert_input_error(outcome, target, f"{target}:", "alias bomb")


@pytest.mark.parametrize(
    ("name", "document", "line"),
    [
        # each alias is small; together they stand for ~9**6 values
        ("lists", "top:\n" + billion_laughs("  ", levels=7), 7),
        ("mappings", "a: &a {x: 1, y: 2, z: 3}\nb: &b {p: *a, q: *a, r: *a, s: *a, t: *a, u: *a, v: *a, w: *a}\n"
         + "".join(f"{n}: &{n} {{p: *{m}, q: *{m}, r: *{m}, s: *{m}, t: *{m}, u: *{m}, v: *{m}, w: *{m}}}\n"
                   for m, n in zip("bcdefg", "cdefgh")), 6),
        # merge keys repeat the merged pairs in every mapping that merges them, before any key is kept
        ("merge-keys", "a: &a {x: 1, y: 2, z: 3, w: 4}\n"
         + "".join(f"{n}: &{n} {{<<: [{', '.join([f'*{m}'] * 10)}]}}\n" for m, n in zip("abcde", "bcdef")), 5),
    ],
    ids=["lists", "mappings", "merge-keys"],
)
def test_every_kind_of_alias_bomb_is_refused_at_the_alias_that_crosses_the_bound(tmp_path, name, document, line):
    scenario = write(tmp_path / f"{name}.yaml", document)
    outcome = run_in_process(["run", str(scenario), "-t", "reference+in-process", "--report-dir", str(tmp_path / "r")])
    assert_input_error(outcome, scenario, f"{scenario}:{line}: invalid YAML at column", "alias bomb")


def test_plain_anchors_aliases_and_merge_keys_keep_working(tmp_path):
    """A step reused whole, one merged with changes, a tool input written once and used twice, 50,000 values aliased."""
    items = ", ".join(str(i) for i in range(999))
    scenario = write(tmp_path / "anchors.yaml", textwrap.dedent(
        f"""\
        name: anchors
        append: "Task prompt: answer with one number."
        steps:
          - launch: &ask
              prompt: "What is 6*7?"
              reply:
                - tool_use: {{name: Bash, input: &listing {{command: ls, many: &many [{items}]}}}}
                - "42"
          - retry: *ask
          - resume:
              <<: *ask
              prompt: "And again?"
              reply:
                - tool_use: {{name: Bash, input: *listing}}
                - tool_use: {{name: Bash, input: {{same: [{', '.join(['*many'] * 48)}]}}}}
                - "42"
        checks: [identity_stable, appended_exactly_once, history_preserved]
        """
    ))
    loaded = load_scenario(scenario)
    launch, retry, resume = loaded.steps
    assert (retry.prompt, retry.turns) == (launch.prompt, launch.turns)
    assert resume.prompt == "And again?"
    listing = launch.turns[0].blocks[0]
    assert isinstance(listing, ToolUseBlock) and listing.input["many"] == list(range(999))
    assert resume.turns[0].blocks[0].input == listing.input
    assert resume.turns[1].blocks[0].input["same"] == [list(range(999))] * 48
    assert resume.turns[2].blocks == (TextBlock("42"),)
    outcome = run_in_process(["run", str(scenario), "-t", "reference+in-process", "--report-dir", str(tmp_path / "r"),
                              "--quiet"])
    assert_kept_promise(outcome, scenario)
    assert outcome.code == 0, outcome.describe()


# --------------------------------------------------------------------------- NUL characters


@pytest.mark.parametrize("written", ["\\0", "\\x00", "\\u0000"])
@pytest.mark.parametrize("target", ["reference", "reference+in-process"])
def test_nul_in_a_prompt_is_refused_before_any_step(tmp_path, written, target):
    scenario = write(tmp_path / "nul.yaml", scenario_text(prompt=f'"say{written}hi"'))
    outcome = run_in_process(["run", str(scenario), "-t", target, "--report-dir", str(tmp_path / "r"), "--quiet"])
    assert_input_error(outcome, scenario, f"{scenario}:5: steps[1].launch.prompt: contains a NUL character")
    assert not (tmp_path / "r" / "journal").exists()


# --------------------------------------------------------------------------- huge and deep values


def test_a_50_megabyte_string_is_refused_without_being_read_whole(tmp_path):
    scenario = write(tmp_path / "huge.yaml", scenario_text(prompt="x" * (50 * 1024 * 1024)))
    outcome = run_installed(["run", str(scenario), "--target", "reference", "--report-dir", str(tmp_path / "r"),
                             "--quiet"], cwd=tmp_path, memory_bytes=MEMORY_CAP)
    assert_input_error(outcome, scenario, f"{scenario}: more than the 16,777,216 bytes a document may have")


@pytest.mark.parametrize("where", ["tool-input", "prompt", "top-level"])
def test_ten_thousand_deep_nesting_is_refused_at_its_line(tmp_path, where):
    deep = "[" * 10_000 + "]" * 10_000
    text = {
        "tool-input": scenario_text(tool_input="{deep: " + deep + "}"),
        "prompt": scenario_text(prompt=deep),
        "top-level": deep + "\n",
    }[where]
    line = {"tool-input": 9, "prompt": 5, "top-level": 1}[where]
    scenario = write(tmp_path / "deep.yaml", text)
    outcome = run_in_process(["run", str(scenario), "-t", "reference+in-process", "--report-dir", str(tmp_path / "r")])
    assert_input_error(outcome, scenario, f"{scenario}:{line}: invalid YAML at column", "nested more than 100 deep")
