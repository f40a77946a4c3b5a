"""`harness doctor TARGET`: one launch and one resume, and each mistake of a target file named with its evidence.

The installed `harness` runs as a subprocess on target files in tmp_path that
drive the real minimal agent (examples/minimal-agent/agent.py) through the
real fake API; each broken file gets exit 1, the problem naming the key to
change, and the evidence it was read from (the stdout, the system prompt's
first line, the counts). A correct file gets `ready`; an agent that crashes
or hangs never does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cli_outcome import Outcome, assert_input_error, assert_kept_promise, run_installed

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "examples" / "minimal-agent" / "agent.py"
LAUNCH = f'launch:  [python3, "{AGENT}", -p, "{{prompt}}", --append-system-prompt, "{{append}}"]'
RESUME = f'resume:  [python3, "{AGENT}", -p, "{{prompt}}", --resume, "{{session_id}}", --append-system-prompt, "{{append}}"]'
SESSION_ID = "session_id: {stdout_json: session_id}"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def doctor(tmp_path: Path, *lines: str, extra: tuple[str, ...] = ()) -> Outcome:
    target = tmp_path / "target.yaml"
    target.write_text("\n".join(["name: my-agent", *lines]) + "\n")
    outcome = run_installed(["doctor", str(target), *extra], cwd=tmp_path, timeout_s=120)
    assert_kept_promise(outcome, target)
    return outcome


def problems(outcome: Outcome) -> list[str]:
    return [line[4:] for line in outcome.stdout.splitlines() if line.startswith("  - ")]


def last_line(outcome: Outcome) -> str:
    return outcome.stdout.rstrip().splitlines()[-1]


def test_the_minimal_agent_is_ready(tmp_path):
    outcome = run_installed(["doctor", str(ROOT / "examples" / "minimal-agent" / "target.yaml")], cwd=tmp_path)
    assert outcome.code == 0, outcome.describe()
    assert last_line(outcome) == "ready" and not problems(outcome)
    out = outcome.stdout
    ids = re.findall(rf"session id: '({UUID})', read by stdout_json: session_id", out)
    assert len(ids) == 2 and ids[0] == ids[1], out  # read from the launch's output, and the resume's
    assert f'stdout ends with: \'{{"session_id": "{ids[0]}", "result": "Hello."}}\'' in out
    first_line = f"'You are Minimal Agent (session {ids[0][:8]}).'"
    assert out.count(f"the system prompt's first line: {first_line}") == 2
    assert f"identity /(?m)^You are [^\\n]*/: {first_line}; the same as the launch's" in out
    assert out.count("appended text in the system prompt: present, once") == 2
    assert re.search(r"requests: #1 POST /v1/messages \(main, 200\)", out) and "#2 POST /v1/messages (main, 200)" in out
    assert re.search(r"step 1 \(launch\): exit 0, \d+\.\d\ds\n  argv: python3 \S+agent.py -p 'Say hello.'", out)


def test_a_session_id_rule_that_never_matches_shows_the_stdout(tmp_path):
    outcome = doctor(tmp_path, LAUNCH, RESUME, r'session_id: {stdout_regex: "sid=(\\S+)"}')
    assert outcome.code == 1, outcome.describe()
    assert "session id: NOT FOUND by stdout_regex: sid=(\\S+); stdout ends with:" in outcome.stdout
    assert re.search(rf'\n    \| {{"session_id": "{UUID}", "result": "Hello."}}\n', outcome.stdout), outcome.stdout
    assert "step 2 (resume): not run, since step 1 did not complete" in outcome.stdout
    (problem,) = problems(outcome)
    assert problem.startswith("session_id: `stdout_regex: sid=(\\S+)` reads no session id from the launch's stdout")
    assert "{stdout_json: KEY}" in problem
    assert last_line(outcome) == "1 problem(s)"


def test_an_identity_regex_that_never_matches_shows_the_first_line(tmp_path):
    outcome = doctor(tmp_path, LAUNCH, RESUME, SESSION_ID, 'identity: {regex: "^I am the agent"}')
    assert outcome.code == 1, outcome.describe()
    assert outcome.stdout.count("identity /^I am the agent/: matches nothing") == 2
    (problem,) = problems(outcome)  # one regex, one problem, however many requests it missed
    assert re.fullmatch(r"identity: /\^I am the agent/ matches nothing in the launch's system prompt, whose first "
                        r"line is 'You are Minimal Agent \(session [0-9a-f]{8}\)\.'; set identity\.regex .*", problem)
    assert last_line(outcome) == "1 problem(s)"


def test_a_resume_without_append_loses_the_text_on_step_two(tmp_path):
    resume = f'resume:  [python3, "{AGENT}", -p, "{{prompt}}", --resume, "{{session_id}}"]'
    outcome = doctor(tmp_path, LAUNCH, resume, SESSION_ID, extra=("--append", "Team rules: be brief."))
    assert outcome.code == 1, outcome.describe()
    steps = outcome.stdout.split("step 2 (resume)")
    assert "appended text in the system prompt: present, once" in steps[0]
    assert "appended text in the system prompt: MISSING" in steps[1]
    assert "'Team rules: be brief.'" in steps[0]  # the caller's text given with --append is the one looked for
    (problem,) = problems(outcome)
    assert problem.startswith("resume: the appended text is missing from its system prompt, and `resume:` has no {append}")
    assert last_line(outcome) == "1 problem(s)"


def test_an_agent_that_exits_1_is_not_ready(tmp_path):
    crash = 'launch:  [python3, -c, "import sys; print(\'no API key\', file=sys.stderr); sys.exit(1)", "{prompt}"]'
    outcome = doctor(tmp_path, crash, RESUME, SESSION_ID)
    assert outcome.code == 1, outcome.describe()
    assert "step 1 (launch): exit 1," in outcome.stdout
    assert "error: the agent exited with code 1; stderr ends with: 'no API key'" in outcome.stdout
    assert "requests: none reached the fake API" in outcome.stdout
    (problem,) = problems(outcome)
    assert problem.startswith("launch: the agent exited with code 1")
    assert last_line(outcome) == "1 problem(s)"


def test_an_agent_that_hangs_is_named_as_hanging(tmp_path):
    hang = 'launch:  [python3, -c, "import time; time.sleep(120)", "{prompt}"]'
    outcome = doctor(tmp_path, hang, RESUME, SESSION_ID, "timeout_s: 1")
    assert outcome.code == 1, outcome.describe()
    assert re.search(r"step 1 \(launch\): (no exit code|exit -9), timed out, ", outcome.stdout), outcome.stdout
    assert "step 2 (resume): not run" in outcome.stdout
    (problem,) = problems(outcome)
    assert problem.startswith("launch: the agent did not finish within timeout_s (1s) and was killed")
    assert last_line(outcome) == "1 problem(s)"


def test_argv_and_stdout_are_redacted(tmp_path):
    token = "ghp_" + "a1B2c3D4e5" * 3 + "abcdef"
    leak = f'launch:  [python3, -c, "import sys; print(sys.argv[1]); sys.exit(1)", "{token}"]'
    outcome = doctor(tmp_path, leak, RESUME, SESSION_ID)
    assert outcome.code == 1, outcome.describe()
    assert token not in outcome.stdout + outcome.stderr
    assert "argv: python3 -c 'import sys; print(sys.argv[1]); sys.exit(1)' '[redacted]'" in outcome.stdout


@pytest.mark.parametrize("text, fragment", [("name: x\nlaunch: [a]\n", "resume"),
                                            ("name: x\nlaunch: [a, '{nope}']\nresume: [a]\nsession_id: {stdout_json: s}\n",
                                             "unknown placeholder {nope}")])
def test_a_broken_target_file_is_bad_input(tmp_path, text, fragment):
    target = tmp_path / "broken.yaml"
    target.write_text(text)
    line = assert_input_error(run_installed(["doctor", str(target)], cwd=tmp_path), target, fragment)
    assert line.startswith(f"harness: error: {target}:")


def test_an_unknown_target_and_an_empty_append_are_bad_input(tmp_path):
    unknown = run_installed(["doctor", "no-such-agent"], cwd=tmp_path)
    assert unknown.code == 2 and unknown.stderr.startswith("harness: error: ") and "\n" not in unknown.stderr.strip()
    target = ROOT / "examples" / "minimal-agent" / "target.yaml"
    assert_input_error(run_installed(["doctor", str(target), "--append", " "], cwd=tmp_path), Path("--append"), "empty")
