"""Launches a step's own process makes (an Agent SDK starting the CLI), recorded and judged; steps that fork or continue.

Real processes throughout: the reference agent started by a small launcher
script the way an SDK starts the CLI (through the path it is given), the
recording shim relaying a real child's stdin, a real fake API on 127.0.0.1.
The real SDKs run in tests/test_agent_sdk.py.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap

import pytest

from harness.checks import run_check
from harness.checks.context import CheckContext
from harness.checks.launches import APPENDED, FROM_CALLER
from harness.execution.recorded_launches import RecordedLaunchSteps
from harness.fakeapi.core import FakeModelAPI, HTTPResponse
from harness.fakeapi.launch_control import CONTROL_PATH, LaunchControl
from harness.fakeapi.server import FakeAPIServer
from harness.isolation.launch_shim import write_shim
from harness.journal.exchange import REDACTED
from harness.journal.launches import SHIM, Launch, LaunchJournal, launch_journal_path, read_launches
from harness.results import CANNOT_EXPRESS
from harness.run.runner import run_scenario
from harness.scenario.reader import scenario_from_text
from harness.targets import resolve_target
from builders import IDENTITY

APPEND = "Task prompt: answer with one number."
INITIALIZE = {"subtype": "initialize", "appendSystemPrompt": APPEND}
SCENARIO = f"""
name: three-queries
append: "{APPEND}"
steps:
  - launch: {{prompt: "What is 6*7?", reply: "42"}}
  - resume: {{prompt: "And 7*8?", reply: "56"}}
  - resume: {{prompt: "And 8*9?", reply: "72"}}
checks: [launch_appended_exactly_once, launch_prompt_from_caller, appended_exactly_once, history_preserved]
"""

# An SDK in miniature: it is run as the step's process and starts the agent binary the harness names, passing the
# caller's text as the real SDKs do (argv), or not at all on resumes (a caller relying on the session).
LAUNCHER = textwrap.dedent("""
    import os, subprocess, sys
    args = sys.argv[1:]
    if os.environ.get("DROP_ON_RESUME") and "--resume" in args:
        at = args.index("--append-system-prompt")
        del args[at:at + 2]
    sys.exit(subprocess.call([os.environ["HARNESS_AGENT_BINARY"], *args]))
""")


def sdk_like(tmp_path, **env: str):
    """The reference agent behind a launcher script, its launches recorded through the shim."""
    script = tmp_path / "launcher.py"
    script.write_text(LAUNCHER)
    reference = resolve_target("reference")[0]
    head = ("{python}", "-m", "harness.reference_agent")
    commands = {kind: (sys.executable, str(script), *argv[len(head):]) for kind, argv in reference.commands.items()}
    real = (sys.executable, "-m", "harness.reference_agent")
    return dataclasses.replace(reference, name="sdk-like", commands=commands, env={**reference.env, **env},
                               executor=RecordedLaunchSteps(binary="claude", real=real))


def test_the_launches_a_step_makes_are_recorded_in_its_place(tmp_path):
    result = run_scenario(scenario_from_text(SCENARIO), sdk_like(tmp_path), tmp_path / "run.jsonl")
    assert result.status == "pass", (result.error, [c.message for c in result.checks])
    launches = read_launches(launch_journal_path(tmp_path / "run.jsonl"))
    assert [(l.step, l.recorded_by, l.argv[0], l.exit_code) for l in launches] == [
        (1, SHIM, "claude", 0), (2, SHIM, "claude", 0), (3, SHIM, "claude", 0)]
    assert all(str(tmp_path / "launcher.py") not in l.argv for l in launches), "the step's own process is no launch"
    assert {c.check: c.verdict for c in result.checks}[APPENDED] == "pass"


def test_a_launcher_that_drops_the_text_on_resumes_fails_the_launch_check_at_the_first(tmp_path):
    result = run_scenario(scenario_from_text(SCENARIO), sdk_like(tmp_path, DROP_ON_RESUME="1"), tmp_path / "run.jsonl")
    appended = next(c for c in result.checks if c.check == APPENDED)
    assert (appended.verdict, appended.step, appended.observed) == ("fail", 2, 0)
    assert [entry["count"] for entry in appended.evidence["by_launch"]] == [1, 0, 0]


def test_a_step_process_that_never_starts_the_agent_is_an_error_with_a_note(tmp_path):
    target = sdk_like(tmp_path)
    silent = dataclasses.replace(target, commands={k: (sys.executable, "-c", "print('{{\"session_id\": \"s\"}}')")
                                                   for k in target.commands})
    result = run_scenario(scenario_from_text(SCENARIO), silent, tmp_path / "run.jsonl")
    assert result.status == "error"
    assert "never started claude through the recording shim" in " ".join(result.steps[0].notes)


# --------------------------------------------------------------------------- configuration over stdin


@pytest.fixture
def control(tmp_path):
    launches = LaunchJournal(tmp_path / "launches.jsonl")
    api = FakeModelAPI()
    api.control = LaunchControl(launches, lambda: (2, "resume")).handle
    with FakeAPIServer(api) as server:
        yield server, api, launches
    launches.close()


def relay(tmp_path, server, lines: list[bytes]) -> subprocess.CompletedProcess:
    shim = write_shim(tmp_path / "bin", "claude", ["/bin/sh", "-c", "cat > got.bin"], server.base_url + CONTROL_PATH,
                      relay_stdin=True)
    return subprocess.run([str(shim), "--input-format", "stream-json"], input=b"".join(lines), cwd=tmp_path,
                          capture_output=True, timeout=60)


def test_the_shim_relays_stdin_byte_for_byte_and_records_the_initialize_request(tmp_path, control):
    server, _, _ = control
    secret = "sk-ant-api03-" + "x" * 40
    lines = [json.dumps({"type": "control_request", "request_id": "r1",
                         "request": {**INITIALIZE, "apiKey": secret}}).encode() + b"\n",
             b'{"type":"user","message":{"role":"user","content":"hi"}}\n', b"not json, passed on\n"]
    done = relay(tmp_path, server, lines)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "got.bin").read_bytes() == b"".join(lines)
    [launch] = read_launches(tmp_path / "launches.jsonl")
    assert launch.control == [{**INITIALIZE, "apiKey": REDACTED}]
    assert secret not in (tmp_path / "launches.jsonl").read_text()


def test_a_configuring_request_that_cannot_be_recorded_never_reaches_the_agent(tmp_path, control):
    server, api, _ = control
    handle = api.control
    api.control = lambda request, path: (HTTPResponse(500, [], b"{}") if path.endswith("/control")
                                         else handle(request, path))
    done = relay(tmp_path, server, [json.dumps({"type": "control_request", "request": INITIALIZE}).encode() + b"\n"])
    assert done.returncode != 0
    assert b"not passing it on" in done.stderr
    assert (tmp_path / "got.bin").read_bytes() == b""


def launch(step: int, argv: list[str], control: list[dict]) -> Launch:
    return Launch(seq=step, argv=argv, cwd="/", step=step, step_kind="launch" if step == 1 else "resume",
                  recorded_by=SHIM, control=control)


FIELDS = ("--append-system-prompt", "initialize.appendSystemPrompt", "initialize.systemPrompt")


@pytest.mark.parametrize("second, verdict, count", [
    ([INITIALIZE], "pass", 1),
    ([{"subtype": "initialize", "systemPrompt": [""]}], "fail", 0),
    ([{"subtype": "initialize", "systemPrompt": [APPEND, APPEND]}], "fail", 2),
])
def test_the_launch_check_counts_the_text_a_launch_was_configured_with(second, verdict, count):
    launches = [launch(1, ["claude", "--input-format", "stream-json"], [INITIALIZE]),
                launch(2, ["claude", "--resume=S"], second)]
    checked = run_check(APPENDED, CheckContext.of(scenario_from_text(SCENARIO), [], IDENTITY, launches,
                                                  FIELDS))
    assert checked.verdict == verdict
    assert [entry["count"] for entry in checked.evidence["by_launch"]] == [1, count]
    if verdict == "fail":
        assert "configured over stdin with:" in checked.message


def test_a_configured_system_prompt_with_text_the_caller_did_not_give_fails_from_caller():
    rebuilt = {"subtype": "initialize", "systemPrompt": ["You are Claude Code.\n" + APPEND]}
    launches = [launch(1, ["claude"], [INITIALIZE]), launch(2, ["claude", "--resume=S"], [rebuilt])]
    checked = run_check(FROM_CALLER, CheckContext.of(scenario_from_text(SCENARIO), [], IDENTITY,
                                                     launches, FIELDS))
    assert (checked.verdict, checked.step) == ("fail", 2)
    assert "initialize.systemPrompt carries" in checked.message


# --------------------------------------------------------------------------- steps that continue or fork


FORKING = SCENARIO.replace('{prompt: "And 8*9?", reply: "72"}', '{prompt: "And 8*9?", reply: "72", session: fork}')


def test_a_target_without_a_fork_command_cannot_express_a_forking_step(tmp_path):
    reference = resolve_target("reference")[0]
    plain = dataclasses.replace(reference, commands={k: v for k, v in reference.commands.items() if "+" not in k})
    result = run_scenario(scenario_from_text(FORKING), plain, tmp_path / "run.jsonl")
    assert result.status == CANNOT_EXPRESS
    assert "step 3 (resume): it reaches the session by `session: fork`, and this target cannot fork the named " \
           "session under a new id" in result.cannot_express


def test_a_forking_step_runs_the_targets_fork_command(tmp_path):
    reference = resolve_target("reference")[0]
    forking = dataclasses.replace(reference, commands={**reference.commands, "resume+fork": reference.commands["resume"]
                                                       + ("--temporary=FORKED",)})
    result = run_scenario(scenario_from_text(FORKING), forking, tmp_path / "run.jsonl")
    assert result.status == "pass", result.error
    assert [step.argv[-1] for step in result.steps] == ["--temporary=", "--temporary=", "--temporary=FORKED"]
    assert forking.command_for("retry", "fork") == forking.commands["resume+fork"]
    assert dataclasses.replace(forking, commands={"resume": ("x",)}).command_for("resume", "continue") is None


CONTINUING = f"""
name: fork-then-continue
append: "{APPEND}"
steps:
  - launch: {{prompt: "What is 6*7?", reply: "42"}}
  - resume: {{prompt: "And 7*8?", reply: "56"}}
  - resume: {{prompt: "And 8*9?", reply: "72", session: fork}}
  - resume: {{prompt: "And 9*9?", reply: "81", session: continue}}
checks: [appended_exactly_once, history_preserved]
"""


def test_the_reference_agent_forks_a_session_and_continues_the_latest(tmp_path):
    result = run_scenario(scenario_from_text(CONTINUING), resolve_target("reference")[0], tmp_path / "run.jsonl")
    assert result.status == "pass", (result.error, [c.message for c in result.checks])
    ids = [step.session_id for step in result.steps]
    assert ids[0] == ids[1] != ids[2] == ids[3], ids  # the fork has an id of its own; continue takes the latest
    assert "--fork-session" in result.steps[2].argv and "--continue" in result.steps[3].argv
