"""Target files: the documented contract loads as written, and every mistake names file, line and key.

Also the two other halves of a target: reading the session id back
(SessionIdSource.read) and turning `--target` arguments into Targets.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.journal.rules import RequestRule
from harness.journal.exchange import MAIN, Exchange
from harness.reference_agent import KNOWN_DEFECTS
from harness.targets import resolve_target, resolve_targets
from harness.targets.base import DEFAULT_IDENTITY, PLACEHOLDERS, SessionIdSource, Target
from harness.targets.target_file import load_target_file

REPO = Path(__file__).resolve().parent.parent
CONTRACT = REPO / "examples" / "minimal-agent" / "target.yaml"
AGENT = ["python3", "{target_dir}/agent.py"]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the contract


def test_documented_contract_loads_into_the_expected_target(tmp_path):
    # Users copy the file next to their agent: target_dir follows the copy.
    folder = tmp_path / "my agent"
    folder.mkdir()
    copy = folder / "target.yaml"
    shutil.copy(CONTRACT, copy)
    for path, folder_expected in ((CONTRACT, CONTRACT.parent), (copy, folder)):
        target = load_target_file(path)
        assert isinstance(target, Target)
        assert target.name == "my-agent"
        assert dict(target.commands) == {
            "launch": (*AGENT, "-p", "{prompt}", "--append-system-prompt", "{append}"),
            "resume": (*AGENT, "-p", "{prompt}", "--resume", "{session_id}", "--append-system-prompt", "{append}"),
            "compact": (*AGENT, "--compact", "--resume", "{session_id}", "--append-system-prompt", "{append}"),
        }
        assert target.session_id == SessionIdSource("stdout_json", "session_id")
        assert target.identity_regex == r"(?m)^You are [^\n]*"
        assert target.identity_regex == DEFAULT_IDENTITY
        assert target.identity_pattern.search("x\nYou are Minimal Agent (session 1234abcd).\ny").group(0) == (
            "You are Minimal Agent (session 1234abcd)."
        )
        assert target.timeout_s == 60.0
        assert dict(target.env) == {}
        assert target.side_calls == ()
        assert target.target_dir == folder_expected.resolve()
        assert target.source == path
        # retry falls back to resume; a kind with no command has none
        assert target.command_for("retry") == target.commands["resume"]
        assert target.command_for("compact") == target.commands["compact"]


def test_optional_keys_load(tmp_path):
    path = write(tmp_path, "full.yaml", """\
name: full
launch: ["{python}", run.py, "{prompt}"]
resume: ["{python}", run.py, "{prompt}", "{session_id}"]
retry: ["{python}", run.py, --retry, "{session_id}"]
session_id: {stdout_regex: 'session: (?P<session_id>\\S+)'}
identity: {regex: "^I am .*"}
timeout_s: 2.5
env: {HOME_COPY: "{home}", LITERAL: "{{x}}"}
side_calls:
  - {model: haiku}
  - {system: "title", prompt: "^Name this"}
""")
    target = load_target_file(path)
    assert target.command_for("retry") == ("{python}", "run.py", "--retry", "{session_id}")
    assert target.command_for("compact") is None
    assert target.session_id == SessionIdSource("stdout_regex", r"session: (?P<session_id>\S+)")
    assert target.identity_regex == "^I am .*"
    assert target.timeout_s == 2.5
    assert dict(target.env) == {"HOME_COPY": "{home}", "LITERAL": "{{x}}"}
    assert target.side_calls == (RequestRule(model="haiku"), RequestRule(system="title", prompt="^Name this"))


def test_a_target_file_names_the_commands_that_fork_or_continue_a_session(tmp_path):
    path = write(tmp_path, "forking.yaml", """\
name: forking
launch: ["{python}", run.py, "{prompt}"]
resume: ["{python}", run.py, "{prompt}", --resume, "{session_id}"]
resume+fork: ["{python}", run.py, "{prompt}", --resume, "{session_id}", --fork]
compact+continue: ["{python}", run.py, --compact, --continue]
session_id: {stdout_json: session_id}
""")
    target = load_target_file(path)
    assert target.command_for("retry", "fork") == ("{python}", "run.py", "{prompt}", "--resume", "{session_id}", "--fork")
    assert target.command_for("compact", "continue") == ("{python}", "run.py", "--compact", "--continue")
    assert target.command_for("resume", "continue") is None
    with pytest.raises(InputError) as refused:
        load_target_file(write(tmp_path, "typo.yaml", path.read_text().replace("resume+fork:", "resume+forked:")))
    assert "unknown key 'resume+forked' (did you mean 'resume+fork'?" in str(refused.value)


def test_tool_call_names_the_agents_own_tool_as_plain_data(tmp_path):
    # What explore writes into a scenario's `tool_use` for its tool-call turns (tests/test_explore.py runs it).
    path = write(tmp_path, "tool.yaml", """\
name: tooled
launch: [agent, -p, "{prompt}"]
resume: [agent, --resume, "{session_id}"]
session_id: {stdout_json: session_id}
tool_call:
  name: read_file
  input: {path: notes.txt, lines: [1, 2], follow: true, encoding: null}
""")
    tool_call = load_target_file(path).tool_call
    assert tool_call == {"name": "read_file", "input": {"path": "notes.txt", "lines": [1, 2], "follow": True, "encoding": None}}
    assert type(tool_call["input"]) is dict and type(tool_call["input"]["lines"]) is list  # no YAML line bookkeeping
    assert load_target_file(write(tmp_path, "bare.yaml", path.read_text().split("tool_call")[0] + "tool_call: {name: ls}\n")
                            ).tool_call == {"name": "ls", "input": {}}
    assert load_target_file(CONTRACT).tool_call is None


# --------------------------------------------------------------------------- bad target files

GOOD = """\
name: bad-agent
launch: [agent, -p, "{prompt}"]
resume: [agent, --resume, "{session_id}"]
session_id: {stdout_json: session_id}
"""  # four lines; cases below that append to it start on line 5
KNOWN = ", ".join("{" + p + "}" for p in PLACEHOLDERS)

# (id, file text, line, key path the message starts with ("" for none), fragments the message contains)
BAD_FILES = [
    ("empty-file", "", 1, "", ["empty file", "name, launch, resume and session_id"]),
    ("only-comments", "# nothing here\n", 1, "", ["empty file"]),
    ("not-a-mapping", "- launch\n- resume\n", 1, "", ["expected a target mapping, got a list"]),
    ("scalar", "my-agent\n", 1, "", ["expected a target mapping, got a string ('my-agent')"]),
    ("unknown-top-key", GOOD + "timeout: 5\n", 5, "",
     ["unknown key 'timeout'", "did you mean 'timeout_s'?", "allowed: compact, compact+continue, compact+fork, env, identity, launch"]),
    ("duplicate-key", GOOD + "name: again\n", 5, "", ["duplicate key 'name' (first on line 1, again on line 5)"]),
    ("missing-name", GOOD.replace("name: bad-agent\n", "# a target with no name\n"), 2, "", ["missing required key 'name'"]),
    ("empty-name", GOOD.replace("bad-agent", '""'), 1, "name", ["expected a non-empty string"]),
    ("missing-launch", GOOD.replace('launch: [agent, -p, "{prompt}"]\n', ""), 1, "", ["missing required key 'launch'"]),
    ("missing-resume", GOOD.replace('resume: [agent, --resume, "{session_id}"]\n', ""), 1, "",
     ["missing required key 'resume'"]),
    ("missing-session-id", GOOD.replace("session_id: {stdout_json: session_id}\n", ""), 1, "",
     ["missing required key 'session_id'"]),
    ("argv-not-a-list", GOOD.replace('[agent, -p, "{prompt}"]', '"agent -p {prompt}"'), 2, "launch",
     ["expected a non-empty list of command arguments, got a string ('agent -p {prompt}')"]),
    ("argv-empty", GOOD.replace('[agent, --resume, "{session_id}"]', "[]"), 3, "resume",
     ["expected a non-empty list of command arguments, got an empty list"]),
    ("argv-non-string-item", GOOD + "compact:\n  - agent\n  - --compact\n  - 3\n", 8, "compact[3]",
     ["expected a string, got an integer (3)", "quote it"]),
    ("argv-mapping-item", GOOD.replace('[agent, -p, "{prompt}"]', "[agent, {p: x}]"), 2, "launch[2]",
     ["expected a string, got a mapping"]),
    ("unknown-placeholder", GOOD.replace('launch: [agent, -p, "{prompt}"]', 'launch:\n  - agent\n  - "{promt}"'),
     4, "launch[2]", ["unknown placeholder {promt} in '{promt}'", f"(known: {KNOWN})"]),
    ("unknown-placeholder-in-env", GOOD + 'env:\n  AGENT_HOME: "{hme}"\n', 6, "env.AGENT_HOME",
     ["unknown placeholder {hme}", "{home}"]),
    ("bad-braces-open", GOOD.replace('"{prompt}"', '"{prompt"'), 2, "launch[3]",
     ["bad braces in '{prompt'", "write {{ and }} for literal braces"]),
    ("bad-braces-close", GOOD.replace('"{session_id}"', '"id}"'), 3, "resume[3]", ["bad braces in 'id}'"]),
    ("session-id-not-a-mapping", GOOD.replace("{stdout_json: session_id}", "stdout_json"), 4, "session_id",
     ["expected a mapping with one of stdout_json, stdout_regex, header, got a string"]),
    ("session-id-no-source", GOOD.replace("{stdout_json: session_id}", "{}"), 4, "session_id",
     ["expected exactly one of stdout_json, stdout_regex, header, got 0 keys"]),
    ("session-id-two-sources", GOOD.replace("{stdout_json: session_id}", "\n  stdout_json: session_id\n  header: x-session-id"),
     4, "session_id", ["expected exactly one of stdout_json, stdout_regex, header, got 2 keys"]),
    ("session-id-unknown-source", GOOD.replace("{stdout_json: session_id}", "\n  stdout_jsn: session_id"), 5, "session_id",
     ["unknown key 'stdout_jsn'", "did you mean 'stdout_json'?", "allowed: header, stdout_json, stdout_regex"]),
    ("session-id-empty-value", GOOD.replace("{stdout_json: session_id}", '{header: ""}'), 4, "session_id.header",
     ["expected a non-empty string"]),
    ("invalid-stdout-regex", GOOD.replace("{stdout_json: session_id}", "\n  stdout_regex: 'id=(['"), 5,
     "session_id.stdout_regex", ["not a valid regular expression", "'id=(['"]),
    ("invalid-identity-regex", GOOD + 'identity:\n  regex: "You are ("\n', 6, "identity.regex",
     ["not a valid regular expression", "'You are ('"]),
    ("identity-not-a-mapping", GOOD + 'identity: "You are"\n', 5, "identity", ["expected a mapping with 'regex'"]),
    ("identity-unknown-key", GOOD + "identity: {regexp: x}\n", 5, "identity", ["unknown key 'regexp'", "did you mean 'regex'?"]),
    ("unknown-protocol", GOOD + "protocol: openai\n", 5, "protocol", ["expected one of anthropic, ", "got 'openai'"]),
    ("timeout-zero", GOOD + "timeout_s: 0\n", 5, "timeout_s", ["expected a positive number of seconds, got 0"]),
    ("timeout-negative", GOOD + "timeout_s: -1.5\n", 5, "timeout_s", ["expected a positive number of seconds, got -1.5"]),
    ("timeout-text", GOOD + 'timeout_s: "5"\n', 5, "timeout_s", ["expected a positive number of seconds, got a string"]),
    ("timeout-boolean", GOOD + "timeout_s: true\n", 5, "timeout_s", ["got a boolean"]),
    ("timeout-infinite", GOOD + "timeout_s: .inf\n", 5, "timeout_s", ["expected a positive number of seconds, got inf"]),
    ("env-not-a-mapping", GOOD + "env: [A=1]\n", 5, "env", ["expected a mapping of variable name -> value, got a list"]),
    ("env-bad-name-digit", GOOD + "env:\n  GOOD_NAME: x\n  1BAD: x\n", 7, "env.1BAD",
     ["expected an environment variable name, got a string ('1BAD')"]),
    ("env-bad-name-space", GOOD + 'env:\n  "MY VAR": x\n', 6, "env['MY VAR']", ["expected an environment variable name"]),
    ("env-bad-name-integer", GOOD + "env:\n  42: x\n", 6, "env[42]", ["expected an environment variable name, got an integer"]),
    ("env-value-not-text", GOOD + "env:\n  DEBUG: 1\n", 6, "env.DEBUG", ["expected a string, got an integer (1)", "quote it"]),
    ("side-calls-not-a-list", GOOD + "side_calls: {model: haiku}\n", 5, "side_calls", ["expected a list of rules, got a mapping"]),
    ("side-calls-item-not-a-mapping", GOOD + "side_calls:\n  - haiku\n", 6, "side_calls[1]",
     ["expected a mapping with some of model, system, prompt, got a string ('haiku')"]),
    ("side-calls-empty-rule", GOOD + "side_calls:\n  - {model: haiku}\n  - {}\n", 7, "side_calls[2]",
     ["a rule needs at least one of model, system, prompt"]),
    ("side-calls-unknown-key", GOOD + "side_calls:\n  - {modle: haiku}\n", 6, "side_calls[1]",
     ["unknown key 'modle'", "did you mean 'model'?"]),
    ("side-calls-bad-regex", GOOD + 'side_calls:\n  - model: haiku\n    system: "(unclosed"\n', 7, "side_calls[1].system",
     ["not a valid regular expression", "'(unclosed'"]),
    ("side-calls-non-string", GOOD + "side_calls:\n  - {prompt: 3}\n", 6, "side_calls[1].prompt", ["expected a string, got an integer"]),
    ("tool-call-not-a-mapping", GOOD + "tool_call: calculator\n", 5, "tool_call",
     ["expected a mapping with 'name' (one of the agent's own tools)", "got a string ('calculator')"]),
    ("tool-call-no-name", GOOD + "tool_call: {input: {expression: 6*7}}\n", 5, "tool_call", ["missing required key 'name'"]),
    ("tool-call-empty-name", GOOD + 'tool_call: {name: ""}\n', 5, "tool_call.name", ["expected a non-empty string"]),
    ("tool-call-name-not-text", GOOD + "tool_call:\n  name: 3\n", 6, "tool_call.name", ["expected a non-empty string, got an integer"]),
    ("tool-call-unknown-key", GOOD + "tool_call:\n  name: calculator\n  args: {expression: 6*7}\n", 7, "tool_call",
     ["unknown key 'args'", "allowed: input, name"]),
    ("tool-call-id", GOOD + "tool_call: {name: calculator, id: toolu_1}\n", 5, "tool_call", ["unknown key 'id'"]),
    ("tool-call-input-not-a-mapping", GOOD + "tool_call:\n  name: calculator\n  input: [6, 7]\n", 7, "tool_call.input",
     ["expected a mapping of tool arguments, got a list"]),
    ("tool-call-input-not-json", GOOD + "tool_call:\n  name: calendar\n  input:\n    day: 2024-01-02\n", 8,
     "tool_call.input.day", ["expected JSON data", "quote it"]),
    ("tool-call-input-infinite", GOOD + "tool_call:\n  name: calculator\n  input: {x: .inf}\n", 7, "tool_call.input.x",
     ["expected a finite number"]),
    ("yaml-syntax", GOOD + "env: {A: [\n", 6, "", ["invalid YAML"]),
    # NUL: no process argument or environment value can carry one (YAML escapes write it; a raw byte is not YAML)
    ("nul-in-argv-escape", GOOD.replace('"{prompt}"', '"{prompt}\\0"'), 2, "launch[3]",
     ["contains a NUL character (character 9 of 9): it reaches the agent as a process argument", "each write one"]),
    ("nul-in-argv-hex-escape", GOOD + 'compact: [agent, "--compact\\x00"]\n', 5, "compact[2]", ["contains a NUL character"]),
    ("nul-in-argv-program", GOOD.replace("[agent, --resume", '["agent\\u0000", --resume'), 3, "resume[1]",
     ["contains a NUL character (character 6"]),
    ("nul-in-env-value", GOOD + 'env:\n  FINE: "ok"\n  TOKEN: "abc\\x00def"\n', 7, "env.TOKEN",
     ["contains a NUL character (character 4", "environment value"]),
    ("nul-in-env-value-escape", GOOD + 'env: {A: "\\0"}\n', 5, "env.A", ["contains a NUL character"]),
    ("nul-byte-raw", GOOD.replace("[agent, -p", "[agent\0, -p"), 2, "", ["invalid YAML", "(character #x0000)"]),
    ("nul-in-name", GOOD.replace("bad-agent", '"bad\\0agent"'), 1, "name",
     ["contains the control character '\\x00'", "file names and reports"]),
    ("control-character-in-name", GOOD.replace("bad-agent", '"bad\\tagent"'), 1, "name", ["control character '\\t'"]),
]


@pytest.mark.parametrize(("text", "line", "where", "fragments"), [c[1:] for c in BAD_FILES], ids=[c[0] for c in BAD_FILES])
def test_bad_target_file_names_file_line_and_key(tmp_path, text, line, where, fragments):
    path = write(tmp_path, "agent-target.yaml", text)
    with pytest.raises(InputError) as caught:
        load_target_file(path)
    error = caught.value
    assert error.path == str(path)
    assert error.line == line, str(error)
    if where:
        assert error.message.startswith(f"{where}: "), str(error)
    for fragment in fragments:
        assert fragment in error.message, str(error)
    assert str(error) == f"{path}:{line}: {error.message}"


@pytest.mark.parametrize(("key", "escape"), [("launch", "\\0"), ("env", "\\x00")])
def test_a_nul_byte_is_one_line_and_exit_2_before_any_run(tmp_path, key, escape):
    # Without the check the agent's process cannot even be started ("embedded null byte") mid-run.
    text = CONTRACT.read_text().replace("{target_dir}", str(CONTRACT.parent))
    if key == "launch":
        text = text.replace('-p, "{prompt}", --append', f'-p, "{{prompt}}{escape}", --append', 1)
    else:
        text = text.replace("env: {}", f'env: {{AGENT_MODE: "quiet{escape}"}}')
    path = write(tmp_path, "t.yaml", text)
    scenario = write(tmp_path, "s.yaml", "name: one\nappend: Rules.\nsteps:\n  - launch: {prompt: hi, reply: hello}\n")
    done = subprocess.run([sys.executable, "-m", "harness", "run", "--target", str(path), "--report-dir",
                           str(tmp_path / "report"), str(scenario)], capture_output=True, text=True, timeout=120)
    where = "launch[4]" if key == "launch" else "env.AGENT_MODE"
    line = 3 if key == "launch" else 9
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    assert done.stderr.startswith(f"harness: error: {path}:{line}: {where}: contains a NUL character"), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "report" / "journal").exists()


def test_missing_target_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file") as caught:
        load_target_file(tmp_path / "nope.yaml")
    assert caught.value.path == str(tmp_path / "nope.yaml")


# --------------------------------------------------------------------------- reading the session id back


def exchange(seq: int, headers: dict[str, str]) -> Exchange:
    return Exchange(seq=seq, method="POST", path="/v1/messages", query="", headers=headers, body=b"{}", klass=MAIN,
                    status=200, step=1, step_kind="launch")


def test_stdout_json_takes_the_last_json_line_carrying_the_key():
    source = SessionIdSource("stdout_json", "session_id")
    stdout = "\n".join([
        "loading config...",
        '{"session_id": "early-progress-event", "type": "init"}',
        '{"type": "progress", "pct": 50}',
        "{not json at all",
        '{"type": "result", "session_id": "final-id", "result": "42"}',
        '{"type": "stats", "tokens": 12}',
        "bye",
    ])
    assert source.read(stdout, []) == "final-id"


@pytest.mark.parametrize(("stdout", "expected"), [
    ('{"session_id": "only"}', "only"),
    ('{\n  "session_id": "pretty-printed",\n  "result": "x"\n}\n', "pretty-printed"),
    ('  {"session_id": "indented"}  \n', "indented"),
    ('log\n{"session_id": 42}\n', None),  # not text: not an id
    ('{"session_id": ""}', None),
    ('["session_id", "in-a-list"]', None),
    ('{"result": "no id here"}', None),
    ('session_id: abc\n', None),
    ("", None),
])
def test_stdout_json_edge_cases(stdout, expected):
    assert SessionIdSource("stdout_json", "session_id").read(stdout, []) == expected


def test_stdout_json_reads_a_custom_key():
    source = SessionIdSource("stdout_json", "conversationId")
    assert source.read('{"session_id": "x"}\n{"conversationId": "c-1"}\n', []) == "c-1"


@pytest.mark.parametrize(("pattern", "expected"), [
    (r"session (?P<session_id>[0-9a-f-]+) saved", "1234-abcd"),  # the named group wins
    (r"(\w+) (?P<session_id>[0-9a-f-]+) saved", "1234-abcd"),  # even when it is not the first group
    (r"session ([0-9a-f-]+) saved", "1234-abcd"),  # one group: that group
    (r"[0-9a-f]{4}-[0-9a-f]{4}", "1234-abcd"),  # no group: the whole match
    (r"resume with --resume (\S+)", None),  # no match
])
def test_stdout_regex(pattern, expected):
    stdout = "starting\nsession 1234-abcd saved\ndone\n"
    assert SessionIdSource("stdout_regex", pattern).read(stdout, []) == expected


def test_header_reads_the_journaled_exchanges():
    source = SessionIdSource("header", "X-Session-Id")  # header names are case-insensitive
    exchanges = [
        exchange(1, {"content-type": "application/json"}),
        exchange(2, {"x-session-id": "from-header", "x-api-key": "[redacted]"}),
        exchange(3, {"x-session-id": "a-later-one"}),
    ]
    assert source.read("stdout is ignored: {\"session_id\": \"nope\"}", exchanges) == "from-header"
    assert source.read("", exchanges[:1]) is None
    assert source.read("", []) is None


def test_describe_names_the_source():
    assert SessionIdSource("stdout_json", "session_id").describe() == "stdout_json: session_id"


# --------------------------------------------------------------------------- resolving --target


def test_resolve_reference():
    (target,) = resolve_target("reference")
    assert target.name == "reference"
    assert {"launch", "resume", "compact"} <= set(target.commands)
    assert not any("--defect" in part for argv in target.commands.values() for part in argv)


def test_resolve_reference_with_one_defect():
    defect = KNOWN_DEFECTS[0]
    (target,) = resolve_target(f"reference:{defect}")
    assert target.name == f"reference:{defect}"
    launch = list(target.commands["launch"])
    assert launch[launch.index("--defect") + 1] == defect


def test_resolve_reference_with_two_defects_is_one_target():
    a, b = KNOWN_DEFECTS[:2]
    (target,) = resolve_target(f"reference:{a},{b}")
    assert target.name == f"reference:{a},{b}"
    launch = list(target.commands["launch"])
    assert [launch[i + 1] for i, part in enumerate(launch) if part == "--defect"] == [a, b]


def test_resolve_reference_star_is_clean_plus_each_defect():
    targets = resolve_target("reference:*")
    assert [t.name for t in targets] == ["reference"] + [f"reference:{d}" for d in KNOWN_DEFECTS]
    assert len(resolve_targets(["reference:*"])) == 1 + len(KNOWN_DEFECTS)


def test_unknown_defect_lists_the_known_ones():
    with pytest.raises(InputError) as caught:
        resolve_target(f"reference:{KNOWN_DEFECTS[0]},no-such-defect")
    message = str(caught.value)
    assert "unknown reference defect 'no-such-defect'" in message
    for defect in KNOWN_DEFECTS:
        assert defect in message


@pytest.mark.parametrize("spec", ["claude", "referense", "some/dir/agent"])
def test_unknown_target_name(spec):
    with pytest.raises(InputError) as caught:
        resolve_target(spec)
    message = str(caught.value)
    assert f"unknown target {spec!r}" in message
    assert "reference:*" in message and "claude-code[@VERSION][+POLICY]" in message and "*.yaml" in message


def test_target_file_path(tmp_path):
    (target,) = resolve_target(str(CONTRACT))
    assert target.name == "my-agent"
    assert target.target_dir == CONTRACT.parent.resolve()
    # a missing *.yaml path is a target file that cannot be read, not an unknown name
    with pytest.raises(InputError, match="no such file"):
        resolve_target(str(tmp_path / "missing.yaml"))
    # an existing file is a target file whatever its suffix
    other = write(tmp_path, "agent.target", CONTRACT.read_text().replace("my-agent", "other-agent"))
    assert [t.name for t in resolve_target(str(other))] == ["other-agent"]


def test_resolve_targets_keeps_order():
    names = [t.name for t in resolve_targets(["reference", str(CONTRACT), f"reference:{KNOWN_DEFECTS[1]}"])]
    assert names == ["reference", "my-agent", f"reference:{KNOWN_DEFECTS[1]}"]


@pytest.mark.parametrize("specs", [
    ["reference", "reference"],
    ["reference:*", f"reference:{KNOWN_DEFECTS[0]}"],
    [str(CONTRACT), str(CONTRACT)],
])
def test_the_same_target_twice_is_an_input_error(specs):
    with pytest.raises(InputError, match="given twice"):
        resolve_targets(specs)


def test_two_target_files_with_the_same_name(tmp_path):
    copy = write(tmp_path, "copy.yaml", CONTRACT.read_text())
    with pytest.raises(InputError, match="target 'my-agent' given twice"):
        resolve_targets([str(CONTRACT), str(copy)])

