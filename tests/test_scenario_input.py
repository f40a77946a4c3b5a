"""Scenario files in, dataclasses or a precise InputError out.

Bad inputs are written as tuples of lines, so the line an error must name is
the 1-based position in the tuple.  Every error must name the file, that line
and the key path (list positions counted from 1).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.checks import CHECK_NAMES, OPT_IN_CHECKS
from harness.errors import InputError
from harness.scenario.model import Scenario, Step, TextBlock, ThinkingBlock, ToolUseBlock, Turn, Usage
from harness.scenario.reader import load_scenario, load_scenarios
from harness.scenario.checks_section import APPEND_CHECK, NEEDS
from harness.documents.located import LocatedDict, LocatedList, load_located, unknown_key_error

EXAMPLE = textwrap.dedent(
    """\
    name: retry-after-wrong-answer          # required, string matching [A-Za-z0-9][A-Za-z0-9._-]*
    description: A wrong answer, a retry in a fresh process, compaction, a resume.   # optional string
    append: "Task prompt: answer with one number."      # optional non-empty string: the caller's appended system text
    steps:                                   # required non-empty list
      - launch:  {prompt: "What is 6*7?", reply: "41"}
      - retry:   {prompt: "Your answer was incorrect. Try again.", reply: "42"}
      - compact: {}
      - resume:  {prompt: "What is 2+2?", reply: "4"}
    checks: [identity_stable, appended_exactly_once, prefix_stable, history_preserved]   # optional; default: all CHECK_NAMES in that order
    expect:              # optional: known verdicts of named targets
      reference:drop-append-on-resume: {appended_exactly_once: fail}
    """
)


def write(directory: Path, text: str | tuple[str, ...], name: str = "scenario.yaml") -> Path:
    if isinstance(text, tuple):
        text = "\n".join(text) + "\n"
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path) -> InputError:
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    return caught.value


def assert_error(error: InputError, path: Path, line: int | None, *fragments: str) -> None:
    message = str(error)
    assert error.path == str(path), message
    assert error.line == line, message
    prefix = f"{path}:{line}: " if line is not None else f"{path}: "
    assert message.startswith(prefix), message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


# ============================================================================ good input


def test_example_scenario_loads_exactly(tmp_path):
    path = write(tmp_path, EXAMPLE, "retry.yaml")
    scenario = load_scenario(path)
    assert scenario == Scenario(
        name="retry-after-wrong-answer",
        description="A wrong answer, a retry in a fresh process, compaction, a resume.",
        append="Task prompt: answer with one number.",
        steps=(
            Step(index=1, kind="launch", prompt="What is 6*7?", turns=(Turn(blocks=(TextBlock("41"),)),), line=5),
            Step(
                index=2,
                kind="retry",
                prompt="Your answer was incorrect. Try again.",
                turns=(Turn(blocks=(TextBlock("42"),)),),
                line=6,
            ),
            Step(index=3, kind="compact", prompt=None, turns=(), line=7),
            Step(index=4, kind="resume", prompt="What is 2+2?", turns=(Turn(blocks=(TextBlock("4"),)),), line=8),
        ),
        checks=("identity_stable", "appended_exactly_once", "prefix_stable", "history_preserved"),
        expect={"reference:drop-append-on-resume": {"appended_exactly_once": "fail"}},
        path=path,
    )
    assert type(scenario.expect) is dict
    assert all(type(v) is dict for v in scenario.expect.values())
    assert scenario.expected_verdict("reference:drop-append-on-resume", "appended_exactly_once") == "fail"
    assert scenario.expected_verdict("reference:drop-append-on-resume", "prefix_stable") == "pass"
    assert load_scenarios([path]) == [scenario]


def test_default_checks_are_all_check_names_in_order(tmp_path):
    text = EXAMPLE.replace(
        "checks: [identity_stable, appended_exactly_once, prefix_stable, history_preserved]", "# no checks"
    )
    scenario = load_scenario(write(tmp_path, text))
    # Less the checks that judge against something this scenario does not declare (scenario_checks.NEEDS),
    # and the launch checks, which judge the launcher and are listed where a scenario means to.
    assert scenario.checks == tuple(n for n in CHECK_NAMES if n not in OPT_IN_CHECKS and (n == APPEND_CHECK or n not in NEEDS))


def test_rich_replies_usage_and_step_settings(tmp_path):
    path = write(
        tmp_path,
        (
            "name: rich.scenario_1",
            "steps:",
            "  - launch:",
            "      prompt: List the files.",
            "      timeout_s: 30",
            "      summary: The user asked for files.",
            "      usage: {input_tokens: 10}",
            "      reply:",
            "        - tool_use: {name: Bash, input: {command: ls, args: [-l, 2], opts: {x: null}}, id: toolu_1}",
            "          text: Let me look.",
            "          thinking: I should run ls.",
            "          usage: {output_tokens: 7, cache_read_input_tokens: 0}",
            "        - content:",
            "            - text: first",
            "            - tool_use: {name: Read}",
            "            - thinking: later thought",
            "          stop_reason: max_tokens",
            "        - Done.",
            "  - compact:",
            "  - resume:",
            "      prompt: again",
            "      timeout_s: 2.5",
            "checks: [identity_stable, prefix_stable]",
        ),
    )
    scenario = load_scenario(path)
    assert scenario.append is None
    assert scenario.description == ""
    assert scenario.checks == ("identity_stable", "prefix_stable")
    assert scenario.expect == {}
    launch, compact, resume = scenario.steps
    assert launch == Step(
        index=1,
        kind="launch",
        prompt="List the files.",
        turns=(
            Turn(
                blocks=(
                    ThinkingBlock("I should run ls.", None),
                    TextBlock("Let me look."),
                    ToolUseBlock(
                        name="Bash",
                        input={"command": "ls", "args": ["-l", 2], "opts": {"x": None}},
                        id="toolu_1",
                    ),
                ),
                usage=Usage(output_tokens=7, cache_read_input_tokens=0),
            ),
            Turn(
                blocks=(TextBlock("first"), ToolUseBlock(name="Read", input={}), ThinkingBlock("later thought")),
                stop_reason="max_tokens",
            ),
            Turn(blocks=(TextBlock("Done."),)),
        ),
        summary="The user asked for files.",
        usage=Usage(input_tokens=10),
        timeout_s=30.0,
        line=3,
    )
    assert launch.turns[0].effective_stop_reason == "tool_use"
    assert launch.turns[2].effective_stop_reason == "end_turn"
    tool_input = launch.turns[0].blocks[2].input
    assert type(tool_input) is dict and type(tool_input["args"]) is list and type(tool_input["opts"]) is dict
    assert not isinstance(tool_input, LocatedDict) and not isinstance(tool_input["args"], LocatedList)
    assert isinstance(launch.timeout_s, float)
    assert compact == Step(index=2, kind="compact", line=19)
    assert resume == Step(index=3, kind="resume", prompt="again", timeout_s=2.5, line=20)


def test_directories_are_searched_recursively_sorted_skipping_hidden(tmp_path):
    def scenario_text(name: str) -> str:
        return f"name: {name}\nsteps:\n  - launch: {{prompt: hi}}\nchecks: [identity_stable]\n"

    root = tmp_path / "scenarios"
    write(root, scenario_text("b"), "b.yaml")
    write(root, scenario_text("a"), "a.yml")
    write(root, scenario_text("c"), "sub/c.yaml")
    write(root, scenario_text("z"), "0-first.yaml")
    write(root, "not: a scenario", "notes.txt")
    write(root, "broken: [", ".hidden.yaml")
    write(root, "broken: [", ".git/x.yaml")
    single = write(tmp_path, scenario_text("single"), "single.yaml")
    loaded = load_scenarios([single, root, root / "b.yaml"])  # b.yaml reached twice: loaded once
    assert [s.name for s in loaded] == ["single", "z", "a", "b", "c"]
    assert [s.path for s in loaded] == [
        single,
        root / "0-first.yaml",
        root / "a.yml",
        root / "b.yaml",
        root / "sub" / "c.yaml",
    ]


def test_located_yaml_lines():
    data = load_located("a: 1\nb:\n  - x\n  -\n    c: 2\n", "f.yaml")
    assert isinstance(data, LocatedDict) and data.line == 1
    assert data.key_lines == {"a": 1, "b": 2}
    assert isinstance(data["b"], LocatedList)
    assert data["b"].item_lines == [3, 5]
    assert data["b"][1].key_lines == {"c": 5}
    assert load_located("# nothing\n", "f.yaml") is None


def test_unknown_key_error_message():
    error = unknown_key_error("promt", ["prompt", "reply", "summary", "usage", "timeout_s"], "f.yaml", 7, "steps[2].retry")
    assert str(error) == (
        "f.yaml:7: steps[2].retry: unknown key 'promt' "
        "(did you mean 'prompt'? allowed: prompt, reply, summary, timeout_s, usage)"
    )
    assert str(unknown_key_error("zzz", ["name"], "f.yaml", 1, "")) == "f.yaml:1: unknown key 'zzz' (allowed: name)"


# ============================================================================ bad input, one file

HEAD = ("name: bad", "checks: [identity_stable, prefix_stable]")  # lines 1-2 of most bad cases

BAD = [
    # --- YAML itself
    ("syntax-mapping-value", ("name: x", "steps: a: b"), 2, ["invalid YAML", "mapping values are not allowed here", "column 9"]),
    ("syntax-unclosed-flow", ("name: x", "steps: [", "  - launch: {}", "checks: 3"), 3, ["invalid YAML at column 3", "found '-'"]),
    ("syntax-unclosed-flow-at-end", ("name: x", "steps: [{launch: {prompt: hi}}", "checks: [identity_stable]"), 3,
     ["invalid YAML", "flow sequence started on line 2"]),
    ("syntax-unclosed-quote", ("name: \"x", "steps: []"), 3, ["invalid YAML", "quoted scalar started on line 1"]),
    ("two-documents", ("name: x", "---", "name: y"), 2, ["single document", "started on line 1"]),
    ("unknown-tag", ("name: !!python/name:os.system x",), 1, ["invalid YAML", "constructor"]),
    # --- scalars PyYAML resolves but cannot build (each was a ValueError, KeyError or AttributeError traceback)
    ("date-out-of-range", ("name: x", "description: 2024-13-45"), 2, ["invalid YAML at column 14", "cannot read timestamp '2024-13-45'", "month must be in 1..12"]),
    ("day-out-of-range", ("name: x", "description: 2024-02-30 10:00:00"), 2, ["cannot read timestamp", "day is out of range"]),
    ("integer-too-long", ("name: x", "steps:", "  - launch: {prompt: hi, timeout_s: " + "9" * 5000 + "}"), 3,
     ["cannot read int '999", "Exceeds the limit (4300 digits)"]),
    ("bool-tag-on-word", ("name: x", "append: !!bool maybe"), 2, ["cannot read bool 'maybe': not a valid bool"]),
    ("timestamp-tag-on-word", ("name: x", "append: !!timestamp soon"), 2, ["cannot read timestamp 'soon': not a valid timestamp"]),
    ("float-tag-on-word", ("name: x", "append: !!float x"), 2, ["cannot read float 'x'"]),
    # 0x and 0b integers are read without Python's 4,300-digit limit, and then no message, report or JSON can print them
    ("hex-integer-too-long", ("name: x", "steps: 0x" + "f" * 5000), 2, ["column 8", "cannot read int '0xfff", "4300 digits"]),
    ("binary-integer-too-long-in-a-tool-input", ("name: x", "steps:", "  - launch:", "      prompt: hi", "      reply:",
                                                "        - tool_use: {name: Bash, input: {n: 0b" + "1" * 15000 + "}}",
                                                "checks: [identity_stable]"), 6,
     ["cannot read int '0b111", "4300 digits"]),
    ("int-tag-on-nothing", ("name: x", "append: !!int"), 2, ["cannot read int '': not a valid int"]),
    ("float-tag-on-underscore", ("name: x", "steps:", "  - launch: {prompt: hi, timeout_s: !!float _}"), 3,
     ["column 37", "cannot read float '_': not a valid float"]),
    # --- text no file, argument or journal can hold: half a UTF-16 surrogate pair, written as an escape
    ("lone-surrogate", (*HEAD, "steps:", "  - launch: {prompt: \"hi \\ud83d\\ude00\"}"), 4,
     ["column 22", "\\ud83d is half of a UTF-16 surrogate pair", "\\UXXXXXXXX"]),
    ("lone-surrogate-in-key", (*HEAD, "\"\\udfff\": 1"), 3, ["\\udfff is half"]),
    # --- documents bounded while composed (harness/documents/guards.py)
    ("recursive-alias", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - tool_use:",
                         "            name: Bash", "            input: &loop {again: *loop}"), 9,
     ["column 34", "recursive alias *loop", "anchored on line 9"]),
    ("nested-too-deep", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - tool_use:",
                         "            name: Bash", "            input: {deep: " + "[" * 200 + "]" * 200 + "}"), 9,
     ["nested more than 100 deep"]),
    ("duplicate-top-key", (*HEAD, "steps:", "  - launch: {prompt: hi}", "name: again"), 5,
     ["duplicate key 'name'", "first on line 1, again on line 5"]),
    ("duplicate-nested-key", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      prompt: again"), 6,
     ["steps[1].launch: duplicate key 'prompt'", "first on line 5, again on line 6"]),
    # --- top level
    ("empty-file", ("",), 1, ["empty file"]),
    ("only-comments", ("# nothing here", "# still nothing"), 1, ["empty file"]),
    ("top-level-list", ("- name: x", "- steps: []"), 1, ["top level must be a mapping", "got a list"]),
    ("top-level-string", ("just text",), 1, ["top level must be a mapping", "got a string"]),
    ("unknown-top-key", (*HEAD, "steps:", "  - launch: {prompt: hi}", "descripton: typo"), 5,
     ["unknown key 'descripton' (did you mean 'description'? allowed: append, checks, description, expect, incident, instruction_files, min_cache_reuse, name, steps, temporary, workdir)"]),
    ("missing-name", ("steps:", "  - launch: {prompt: hi}"), 1, ["missing required key 'name'"]),
    ("missing-steps", (*HEAD,), 1, ["missing required key 'steps'"]),
    ("name-list", ("checks: [identity_stable]", "name: [a, b]", "steps: [{launch: {prompt: hi}}]"), 2,
     ["name: expected a non-empty string, got a list"]),
    ("name-pattern", ("name: bad name", "steps: [{launch: {prompt: hi}}]"), 1,
     ["name: expected a name matching [A-Za-z0-9][A-Za-z0-9._-]*, got 'bad name'"]),
    ("name-number", ("name: 42", "steps: [{launch: {prompt: hi}}]"), 1, ["name: expected a non-empty string, got an integer (42); quote it"]),
    ("description-number", (*HEAD, "description: 5", "steps: [{launch: {prompt: hi}}]"), 3, ["description: expected a string, got an integer (5)"]),
    ("append-empty", (*HEAD, "append: ''", "steps: [{launch: {prompt: hi}}]"), 3, ["append: expected a non-empty string, got an empty string"]),
    ("steps-mapping", (*HEAD, "steps:", "  launch: {prompt: hi}"), 3, ["steps: expected a non-empty list of steps, got a mapping"]),
    ("steps-empty", (*HEAD, "steps: []"), 3, ["steps: expected a non-empty list of steps, got an empty list"]),
    # --- step shapes
    ("step-bare-kind", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - compact"), 5,
     ["steps[2]: expected a mapping with one step kind", "got a string ('compact'); write 'compact: {}'"]),
    ("step-empty-mapping", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - {}"), 5, ["steps[2]: expected a mapping with one step kind", "got an empty mapping"]),
    ("step-settings-not-indented", (*HEAD, "steps:", "  - launch:", "    prompt: hi"), 5,
     ["steps[1]: a step has exactly one key", "got 'launch', 'prompt'; indent the step's settings under 'launch:'"]),
    ("step-unknown-kind", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - resum: {prompt: again}"), 5,
     ["steps[2]: unknown step kind 'resum' (did you mean 'resume'? allowed: compact, launch, resume, retry)"]),
    ("step-unknown-key", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - retry:", "      promt: again"), 6,
     ["steps[2].retry: unknown key 'promt' (did you mean 'prompt'? allowed: append, commit, edit, error, interactive, prefix_change, prompt, reply, session, summary, temporary, timeout_s, usage)"]),
    ("step-session-mode-unknown", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - resume: {prompt: again, session: forked}"), 5,
     ["steps[2].resume.session: unknown session mode 'forked' (did you mean 'fork'? known: continue, fork)"]),
    ("step-session-on-launch", (*HEAD, "steps:", "  - launch: {prompt: hi, session: continue}"), 4,
     ["steps[1].launch.session: the launch starts the session; 'session' says how a later step reaches it"]),
    ("step-body-string", (*HEAD, "steps:", "  - launch: hi"), 4, ["steps[1].launch: expected a mapping of step settings (or nothing), got a string ('hi')"]),
    ("first-step-not-launch", (*HEAD, "steps:", "  - resume: {prompt: hi}"), 4, ["steps[1].resume: the first step must be 'launch', got 'resume'"]),
    ("second-launch", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - compact: {}", "  - launch: {prompt: again}"), 6,
     ["steps[3].launch: 'launch' may only be the first step", "one scenario is one session"]),
    ("missing-prompt", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - retry:", "      reply: hello"), 6,
     ["steps[2].retry: missing required key 'prompt'"]),
    ("missing-prompt-null-body", (*HEAD, "steps:", "  - launch:"), 4, ["steps[1].launch: missing required key 'prompt'"]),
    ("prompt-on-compact", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - compact:", "      summary: s", "      prompt: no"), 7,
     ["steps[2].compact: 'prompt' is not allowed on a compact step", "allowed: append, commit, edit, prefix_change, reply, session, summary, temporary, timeout_s, usage"]),
    ("prompt-number", (*HEAD, "steps:", "  - launch:", "      prompt: 5"), 5,
     ["steps[1].launch.prompt: expected a non-empty string, got an integer (5); quote it to make it text"]),
    # --- a NUL character, which no process argument (nor file path) can carry: YAML's \\0, \\x00 and \\u0000 all write one
    ("nul-in-launch-prompt", (*HEAD, "steps:", "  - launch: {prompt: \"say\\0hi\"}"), 4,
     ["steps[1].launch.prompt: contains a NUL character (character 4 of 6): it reaches the agent as a process argument"]),
    ("nul-in-resume-prompt", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - resume:", "      prompt: \"again\\x00\""), 6,
     ["steps[2].resume.prompt: contains a NUL character (character 6 of 6)"]),
    ("nul-in-retry-prompt", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - retry: {prompt: \"\\u0000again\"}"), 5,
     ["steps[2].retry.prompt: contains a NUL character (character 1 of 6)"]),
    ("nul-in-append", ("name: bad", "append: \"Task\\0 prompt\"", "steps: [{launch: {prompt: hi}}]"), 2,
     ["append: contains a NUL character", "process argument"]),
    ("nul-in-temporary", (*HEAD, "temporary: \"headless\\0\"", "steps: [{launch: {prompt: hi}}]"), 3,
     ["temporary: contains a NUL character"]),
    ("nul-in-temporary-list", (*HEAD, "temporary:", "  - fine", "  - \"not\\x00 fine\"", "steps: [{launch: {prompt: hi}}]"), 5,
     ["temporary[2]: contains a NUL character"]),
    ("nul-in-step-temporary", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - compact:", "      temporary: \"\\0\""), 6,
     ["steps[2].compact.temporary: contains a NUL character (character 1 of 1)"]),
    ("nul-in-commit", (*HEAD, "workdir: git", "steps:", "  - launch: {prompt: hi, commit: \"fix\\0\"}"), 5,
     ["steps[1].launch.commit: contains a NUL character", "git commit's message"]),
    ("nul-in-edit-path", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      edit: {\"a\\0.txt\": text}"), 6,
     ["steps[1].launch.edit['a\\x00.txt']: contains a NUL character", "a file path"]),
    ("prompt-empty", (*HEAD, "steps:", "  - launch: {prompt: ''}"), 4, ["steps[1].launch.prompt: expected a non-empty string, got an empty string"]),
    ("summary-list", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      summary: [a]"), 6, ["steps[1].launch.summary: expected a string, got a list"]),
    ("timeout-string", (*HEAD, "steps:", "  - launch: {prompt: hi, timeout_s: '10'}"), 4,
     ["steps[1].launch.timeout_s: expected a positive number of seconds, got a string ('10')"]),
    ("timeout-zero", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - compact: {timeout_s: 0}"), 5, ["steps[2].compact.timeout_s: expected a positive number of seconds, got 0"]),
    ("timeout-bool", (*HEAD, "steps:", "  - launch: {prompt: hi, timeout_s: true}"), 4,
     ["steps[1].launch.timeout_s: expected a positive number of seconds, got a boolean (true)"]),
    # --- replies and turns
    ("reply-number", (*HEAD, "steps:", "  - launch:", "      prompt: What is 6*7?", "      reply: 42"), 6,
     ["steps[1].launch.reply: expected a string or a non-empty list of turns, got an integer (42); quote it"]),
    ("reply-empty-list", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply: []"), 6,
     ["steps[1].launch.reply: expected a string or a non-empty list of turns, got an empty list"]),
    ("reply-mapping", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply: {text: hello}"), 6,
     ["steps[1].launch.reply: expected a string or a non-empty list of turns, got a mapping"]),
    ("turn-number", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - ok", "        - 3"), 8,
     ["steps[1].launch.reply[2]: expected a turn", "got an integer (3)"]),
    ("turn-list", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - [a]"), 7, ["steps[1].launch.reply[1]: expected a turn", "got a list"]),
    ("turn-no-blocks", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - usage: {input_tokens: 1}"), 7,
     ["steps[1].launch.reply[1]: a turn needs at least one block"]),
    ("turn-empty-content", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - stop_reason: end_turn", "          content: []"), 8,
     ["steps[1].launch.reply[1]: a turn needs at least one block"]),
    ("turn-content-not-list", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - content: {text: a}"), 7,
     ["steps[1].launch.reply[1].content: expected a list of content blocks, got a mapping"]),
    ("turn-unknown-key", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - text: a", "          stop: end_turn"), 8,
     ["steps[1].launch.reply[1]: unknown key 'stop' (did you mean 'stop_reason'?"]),
    ("turn-text-list", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - text: [a]"), 7,
     ["steps[1].launch.reply[1].text: expected a string, got a list"]),
    ("turn-thinking-number", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - {text: a, thinking: 1.5}"), 7,
     ["steps[1].launch.reply[1].thinking: expected a string, got a number (1.5)"]),
    ("turn-bad-stop-reason", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - text: a", "          stop_reason: done"), 8,
     ["steps[1].launch.reply[1].stop_reason: expected one of end_turn, tool_use, max_tokens, stop_sequence, pause_turn, refusal, got 'done'"]),
    ("content-mixed-with-text", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - text: a", "          content: [{text: b}]"), 8,
     ["steps[1].launch.reply[1]: 'content' cannot be combined with 'text'"]),
    ("block-string", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - content:", "            - {text: a}", "            - plain"), 9,
     ["steps[1].launch.reply[1].content[2]: expected a content block", "got a string ('plain')"]),
    ("block-two-keys", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - content:", "            - {text: a, thinking: b}"), 8,
     ["steps[1].launch.reply[1].content[1]: expected a content block", "got keys 'text', 'thinking'"]),
    ("block-unknown-key", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - content:", "            - txt: a"), 8,
     ["steps[1].launch.reply[1].content[1]: unknown key 'txt' (did you mean 'text'? allowed: text, thinking, tool_use)"]),
    ("block-text-null", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - content:", "            - text:"), 8,
     ["steps[1].launch.reply[1].content[1].text: expected a string, got null"]),
    # --- tool_use
    ("tool-use-name-list", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - retry:", "      prompt: again", "      reply:", "        - text: ok",
                            "        - tool_use:", "            name: [Bash]"), 10,
     ["steps[2].retry.reply[2].tool_use.name: expected a non-empty string, got a list"]),
    ("tool-use-missing-name", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - tool_use: {input: {}}"), 7,
     ["steps[1].launch.reply[1].tool_use: missing required key 'name'"]),
    ("tool-use-input-list", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - tool_use:", "            name: Bash",
                             "            input: [ls]"), 9,
     ["steps[1].launch.reply[1].tool_use.input: expected a mapping of tool arguments, got a list"]),
    ("tool-use-input-date", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - tool_use:", "            name: Bash",
                             "            input:", "              when: 2024-01-02"), 10,
     ["steps[1].launch.reply[1].tool_use.input.when: expected JSON data", "got a date (2024-01-02); quote it"]),
    ("tool-use-unknown-key", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - tool_use: {name: Bash, inputs: {}}"), 7,
     ["steps[1].launch.reply[1].tool_use: unknown key 'inputs' (did you mean 'input'? allowed: id, input, name)"]),
    ("tool-use-in-content-id-number", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - content:",
                                       "            - tool_use: {name: Bash, id: 7}"), 8,
     ["steps[1].launch.reply[1].content[1].tool_use.id: expected a non-empty string, got an integer (7)"]),
    # --- usage
    ("usage-bool", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      usage:", "        input_tokens: true"), 7,
     ["steps[1].launch.usage.input_tokens: expected a non-negative integer, got a boolean (true)"]),
    ("usage-negative", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      reply:", "        - text: a", "          usage: {output_tokens: -3}"), 8,
     ["steps[1].launch.reply[1].usage.output_tokens: expected a non-negative integer, got -3"]),
    ("usage-float", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      usage: {cache_read_input_tokens: 1.5}"), 6,
     ["steps[1].launch.usage.cache_read_input_tokens: expected a non-negative integer, got a number (1.5)"]),
    ("usage-unknown-key", (*HEAD, "steps:", "  - launch:", "      prompt: hi", "      usage: {input_token: 1}"), 6,
     ["steps[1].launch.usage: unknown key 'input_token' (did you mean 'input_tokens'?"]),
    ("usage-not-mapping", (*HEAD, "steps:", "  - launch: {prompt: hi}", "  - compact: {usage: 5}"), 5,
     ["steps[2].compact.usage: expected a mapping of token counts", "got an integer (5)"]),
    # --- checks
    ("unknown-check", ("name: bad", "steps: [{launch: {prompt: hi}}]", "checks:", "  - identity_stable", "  - prefix_stabel"), 5,
     ["checks[2]: unknown check 'prefix_stabel' (did you mean 'prefix_stable'? known checks: "
      f"{', '.join(sorted(CHECK_NAMES))})"]),
    ("duplicate-check", ("name: bad", "steps: [{launch: {prompt: hi}}]", "checks:", "  - prefix_stable", "  - identity_stable", "  - prefix_stable"), 6,
     ["checks[3]: duplicate check 'prefix_stable' (already checks[1])"]),
    ("check-not-string", ("name: bad", "steps: [{launch: {prompt: hi}}]", "checks: [identity_stable, [x]]"), 3,
     ["checks[2]: expected a check name, got a list"]),
    ("checks-string", ("name: bad", "steps: [{launch: {prompt: hi}}]", "checks: identity_stable"), 3,
     ["checks: expected a non-empty list of check names, got a string ('identity_stable')"]),
    ("checks-empty", ("name: bad", "steps: [{launch: {prompt: hi}}]", "checks: []"), 3,
     ["checks: expected a non-empty list of check names, got an empty list"]),
    ("append-check-without-append", ("name: bad", "steps: [{launch: {prompt: hi}}]", "checks:", "  - identity_stable", "  - appended_exactly_once"), 5,
     ["checks[2]: check 'appended_exactly_once' needs 'append'"]),
    ("default-checks-without-append", ("# defaults", "name: bad", "steps: [{launch: {prompt: hi}}]"), 2,
     ["the default checks", "include 'appended_exactly_once', which needs 'append'"]),
    # --- expect
    ("expect-bad-verdict", (*HEAD, "steps: [{launch: {prompt: hi}}]", "expect:", "  ref-x:", "    prefix_stable: passed"), 6,
     ["expect.ref-x.prefix_stable: expected one of pass, fail, got a string ('passed')"]),
    ("expect-bool-verdict", (*HEAD, "steps: [{launch: {prompt: hi}}]", "expect:", "  ref:", "    prefix_stable: true"), 6,
     ["expect.ref.prefix_stable: expected one of pass, fail, got a boolean (true)"]),
    ("expect-check-not-in-checks", (*HEAD, "steps: [{launch: {prompt: hi}}]", "expect:", "  ref: {history_preserved: fail}"), 5,
     ["expect.ref.history_preserved: check 'history_preserved' is not among this scenario's checks (identity_stable, prefix_stable)"]),
    ("expect-unknown-check", (*HEAD, "steps: [{launch: {prompt: hi}}]", "expect:", "  ref:", "    identity_stabel: fail"), 6,
     ["expect.ref: unknown check 'identity_stabel' (did you mean 'identity_stable'? known checks:"]),
    ("expect-unknown-reference-defect", (*HEAD, "steps: [{launch: {prompt: hi}}]", "expect:", "  reference:drop-apend: {prefix_stable: fail}"), 5,
     ["expect['reference:drop-apend']: unknown reference defect 'drop-apend' in target 'reference:drop-apend' (known: drop-append-on-resume,"]),
    ("expect-unknown-claude-code-policy", (*HEAD, "steps: [{launch: {prompt: hi}}]", "expect:", "  claude-code@2.1.332+append-always: {prefix_stable: fail}"), 5,
     ["unknown launch policy 'append-always' in target 'claude-code@2.1.332+append-always' (known: append-first-launch-only"]),
    ("expect-claude-code-without-version", (*HEAD, "steps: [{launch: {prompt: hi}}]", "expect:", "  claude-code+append-never: {prefix_stable: fail}"), 5,
     ["a claude-code target is always named claude-code@VERSION+POLICY"]),
    ("expect-list", (*HEAD, "steps: [{launch: {prompt: hi}}]", "expect: [ref]"), 4,
     ["expect: expected a mapping of target name -> {check: pass|fail}, got a list"]),
    ("expect-target-string", (*HEAD, "steps: [{launch: {prompt: hi}}]", "expect:", "  ref: fail"), 5,
     ["expect.ref: expected a mapping of check name -> pass|fail, got a string ('fail')"]),
    ("expect-target-empty-name", (*HEAD, "steps: [{launch: {prompt: hi}}]", "expect:", "  '': {prefix_stable: fail}"), 5,
     ["expect: expected a target name (a non-empty string) as key, got an empty string"]),
]


@pytest.mark.parametrize(("lines", "line", "fragments"), [case[1:] for case in BAD], ids=[case[0] for case in BAD])
def test_bad_scenario_is_rejected_at_the_right_line(tmp_path, lines, line, fragments):
    path = write(tmp_path, lines, "bad-input.yaml")
    error = load_error(path)
    assert_error(error, path, line, *fragments)
    assert "bad-input.yaml" in str(error)


def test_undecodable_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: x\nsteps:\n  - launch: {prompt: caf\xe9}\n")
    assert_error(load_error(path), path, 3, "not UTF-8", "0xe9", "column 25")


def test_unprintable_character(tmp_path):
    path = write(tmp_path, "name: x\nsteps: [\x07]\n")
    assert_error(load_error(path), path, 2, "invalid YAML at column 9", "#x0007")


# ============================================================================ bad input, several files


def test_duplicate_scenario_names_across_files(tmp_path):
    first = write(tmp_path, "name: same\nsteps: [{launch: {prompt: hi}}]\nchecks: [identity_stable]\n", "a/one.yaml")
    second = write(tmp_path, "# second\nname: same\nsteps: [{launch: {prompt: hi}}]\nchecks: [identity_stable]\n", "b/two.yaml")
    with pytest.raises(InputError) as caught:
        load_scenarios([tmp_path])
    assert_error(caught.value, second, 2, "name: duplicate scenario name 'same'", f"also used in {first}:1")


def test_directory_without_yaml(tmp_path):
    (tmp_path / "empty").mkdir()
    write(tmp_path / "empty", "name: x", "README.txt")
    write(tmp_path / "empty", "name: x", ".hidden/x.yaml")
    with pytest.raises(InputError) as caught:
        load_scenarios([tmp_path / "empty"])
    assert_error(caught.value, tmp_path / "empty", None, "no scenario files (*.yaml, *.yml) in this directory")


@pytest.mark.parametrize("loader", [load_scenario, lambda p: load_scenarios([p])], ids=["load_scenario", "load_scenarios"])
def test_missing_path(tmp_path, loader):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(InputError) as caught:
        loader(missing)
    assert_error(caught.value, missing, None, "no such file")


def test_error_in_one_file_of_a_directory_is_not_skipped(tmp_path):
    write(tmp_path, "name: good\nsteps: [{launch: {prompt: hi}}]\nchecks: [identity_stable]\n", "a.yaml")
    bad = write(tmp_path, "name: bad\nsteps: [{launch: {prompt: hi}}]\nchecks: [identity_stable]\nextra: 1\n", "b.yaml")
    with pytest.raises(InputError) as caught:
        load_scenarios([tmp_path])
    assert_error(caught.value, bad, 4, "unknown key 'extra'")


def test_no_paths_given():
    with pytest.raises(InputError, match="no scenario files or directories given"):
        load_scenarios([])


# ============================================================================ a target file where a scenario was expected

TARGET_FILE = Path(__file__).resolve().parent.parent / "examples" / "minimal-agent" / "target.yaml"


def test_a_folder_holding_a_target_file_says_which_file_is_one(tmp_path):
    write(tmp_path, "name: good\nsteps: [{launch: {prompt: hi}}]\nchecks: [identity_stable]\n", "a.yaml")
    target = write(tmp_path, TARGET_FILE.read_text(), "target.yaml")  # `name:` first, `protocol:` on line 2
    with pytest.raises(InputError) as caught:
        load_scenarios([tmp_path])
    assert_error(caught.value, target, 2, "this is a target file, not a scenario (it has protocol, launch, resume and "
                 f"session_id but no steps); pass it with --target {target}")
    assert "unknown key" not in str(caught.value)


@pytest.mark.parametrize(("text", "line", "fragment"), [
    # A scenario's steps written without `steps:` are mappings, not argv lists: the unknown key is the right word.
    ("name: x\nlaunch: {prompt: hi}\nresume: {prompt: again}\n", 2, "unknown key 'launch'"),
    # With `steps`, it is a scenario whatever else it holds.
    ("name: x\nsteps: [{launch: {prompt: hi}}]\nsession_id: {stdout_json: session_id}\n", 3, "unknown key 'session_id'"),
    ("name: x\n# an agent\nresume: [agent, --resume, '{session_id}']\n", 3, "this is a target file, not a scenario (it has resume but"),
])
def test_only_a_file_shaped_like_a_target_file_is_called_one(tmp_path, text, line, fragment):
    path = write(tmp_path, text)
    assert_error(load_error(path), path, line, fragment)


def test_harness_run_on_a_folder_holding_a_target_file_is_one_line_and_exit_2(tmp_path):
    from cli_outcome import assert_input_error, run_installed

    folder = tmp_path / "agent"
    target = write(folder, TARGET_FILE.read_text(), "target.yaml")
    outcome = run_installed(["run", str(folder), "--target", "reference", "--report-dir", str(tmp_path / "r")], tmp_path)
    assert_input_error(outcome, target, "this is a target file", f"pass it with --target {target}")
