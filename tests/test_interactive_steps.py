"""Interactive steps: the agent's terminal UI in a real pseudo-terminal, answered, typed into and quit.

The Claude Code runs are the real builds under a real pty against the real
fake API, from a fresh HOME: the dialogs they show are answered on screen
(folder trust, the API key), the prompt is typed, and the journal is judged as
for -p steps. A hung UI is a run error naming the step and its last screen
line, with nothing of it left running; a family without a terminal UI is
"cannot express"; a bad `interactive:` is a one-line input error.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.execution.screen import Screen
from harness.execution.terminal_ui import TerminalUI
from harness.journal.exchange import MAIN
from harness.journal.launches import read_launches
from harness.results import CANNOT_EXPRESS, ERROR
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario, scenario_from_text
from harness.targets import claude_code, resolve_target
from harness.targets.base import Interactive, SessionIdSource

ROOT = Path(__file__).resolve().parent.parent
HEADLESS_THEN_INTERACTIVE = ROOT / "scenarios" / "claude-code" / "headless-then-interactive.yaml"
PINNED, OLDER = claude_code.PINNED_VERSION, claude_code.OLDER_VERSION
APPEND = "Task prompt: answer with one number. Never use tools."
ONE_INTERACTIVE_TURN = """
name: one-interactive-turn
append: "Task prompt: answer with one number."
steps:
  - launch: {prompt: "What is 6*7?", reply: "42", interactive: true, timeout_s: 8}
checks: [identity_stable]
"""


def target(name: str):
    (resolved,) = resolve_target(name)
    return resolved


def main_bodies(journal: Path, step: int) -> list[dict]:
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [json.loads(r["body"]) for r in records if r["class"] == MAIN and int(r["step"]) == step]


def system_text(body: dict) -> str:
    return "\n".join(block["text"] for block in body["system"])


# ---------------------------------------------------------------------------------------- the scenario grammar


@pytest.mark.parametrize("value,shown", [("yes-please", "a string"), ("1", "an integer"), ("", "null")])
def test_interactive_takes_true_or_false_and_says_where_it_is_wrong(tmp_path, value, shown):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nsteps:\n  - launch:\n      prompt: hi\n"
                    f"      interactive: {value}\nchecks: [identity_stable]\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    text = str(caught.value)
    assert f"{path}:5" in text and "steps[1].launch.interactive" in text, text
    assert "expected true or false" in text and shown in text, text
    assert "\n" not in text


def test_a_compact_step_cannot_be_interactive(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nsteps:\n  - launch: {prompt: hi}\n  - compact: {interactive: true}\n"
                    "checks: [identity_stable]\n", encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_scenario(path)
    assert f"{path}:4" in str(caught.value) and "not allowed on a compact step" in str(caught.value)


def test_the_step_says_whether_it_is_interactive():
    scenario = scenario_from_text("name: s\nsteps:\n  - launch: {prompt: hi}\n  - resume: {prompt: again, interactive: true}\n"
                                  "  - retry: {prompt: more, interactive: false}\nchecks: [identity_stable]\n")
    assert [step.interactive for step in scenario.steps] == [False, True, False]


# ---------------------------------------------------------------------------------------- what cannot run in a pty


@pytest.mark.parametrize("name", ["reference", "reference:drop-append-on-resume"])
def test_a_target_without_a_terminal_ui_cannot_express_an_interactive_step(name, tmp_path):
    result = run_scenario(scenario_from_text(ONE_INTERACTIVE_TURN), target(name), tmp_path / "journal.jsonl")
    assert result.status == CANNOT_EXPRESS
    assert result.cannot_express == ("step 1 (launch): it runs interactively (`interactive: true`), and this target "
                                     "declares no terminal UI the harness can drive")
    assert not (tmp_path / "journal.jsonl").exists() or not (tmp_path / "journal.jsonl").read_text()


def test_claude_code_cannot_express_an_interactive_step_it_has_no_command_for(tmp_path):
    """The terminal UI is launched and resumed by id; a `session: fork` step has no interactive command."""
    scenario = scenario_from_text("name: s\nsteps:\n  - launch: {prompt: hi}\n"
                                  "  - resume: {prompt: again, interactive: true, session: fork}\nchecks: [identity_stable]\n")
    reason = target(f"claude-code@{PINNED}+append-every-launch").cannot_express_reason(scenario.steps)
    assert reason == ("step 2 (resume): it runs interactively, and this target's terminal UI has no resume command "
                      "reaching its session by `session: fork`")


# ---------------------------------------------------------------------------------------- a UI that hangs or quits


def shell_ui(script: str, ready: str = r"^NEVER READY$"):
    """The reference target with a terminal UI that is a shell script: a real process in a real pty."""
    (reference,) = resolve_target("reference")
    ui = Interactive(commands={"launch": ("sh", "-c", script)}, ui=TerminalUI(ready=ready, exit_s=3),
                     session_id=SessionIdSource("stdout_regex", r"session (\S+)"))
    return dataclasses.replace(reference, name="reference-with-a-shell-ui", interactive=ui)


def test_a_hung_ui_is_an_error_naming_the_step_and_the_last_screen_line_and_its_group_is_killed(tmp_path):
    script = "printf 'loading the UI\\r\\n'; sleep 600 & printf 'still loading\\r\\n'; wait"
    result = run_scenario(scenario_from_text(ONE_INTERACTIVE_TURN), shell_ui(script), tmp_path / "journal.jsonl")
    assert result.status == ERROR
    assert result.error == ("step 1 (launch): interactive step: timed out after 8s waiting for the input prompt (or a "
                            "dialog the family declares); the screen's last line: 'still loading'"), result.error
    assert "\n" not in result.error
    assert any("process group was killed" in note for note in result.steps[0].notes)
    (launch,) = read_launches(tmp_path / "launches" / "journal.jsonl")
    with pytest.raises(ProcessLookupError):
        os.killpg(launch.pid, 0)  # the shell and its sleep: nothing of the step outlives it
    kept = tmp_path / "terminals" / "journal.step-1.txt"
    assert "still loading" in kept.read_text(encoding="utf-8")


def test_a_ui_that_exits_before_the_turn_is_an_error_saying_so(tmp_path):
    result = run_scenario(scenario_from_text(ONE_INTERACTIVE_TURN), shell_ui("printf 'no terminal for me\\r\\n'"),
                          tmp_path / "journal.jsonl")
    assert result.status == ERROR
    assert "the terminal UI exited while the harness waited for the input prompt" in result.error, result.error
    assert "the screen's last line: 'no terminal for me'" in result.error


def test_the_screen_reads_a_tui_as_a_person_sees_it():
    screen = Screen(rows=4, columns=20)
    screen.feed("Welcome\x1b[9Gto\x1b[12GClaude\r\n\x1b[38;5;1m❯ 1. Yes\x1b[39m\r\n  2. No")
    screen.feed("\x1b[1A\x1b[2K\x1b[")  # a sequence cut between two reads
    screen.feed("3G- 1. Yes ✔")
    assert screen.lines() == ["Welcome to Claude", "  - 1. Yes ✔", "  2. No", ""]
    assert screen.last_line() == "2. No"


# ---------------------------------------------------------------------------------------- the real Claude Code


def test_claude_code_from_a_fresh_home_answers_its_dialogs_and_keeps_the_session(tmp_path):
    """Pinned build, headless launch then an interactive resume: the resume's request comes from the UI, in the
    same session, with the text kept; the transcript shows what was answered."""
    name = f"claude-code@{PINNED}+append-every-launch"
    result = run_scenario(load_scenario(HEADLESS_THEN_INTERACTIVE), target(name), tmp_path / "journal.jsonl")
    assert result.status != ERROR, result.error
    launch, resume = result.steps
    assert resume.classes == {MAIN: 1}, resume.classes  # nothing refused, nothing the fake API could not read
    assert launch.session_id == resume.session_id and launch.pids != resume.pids
    assert resume.argv[-4:] == ["--resume", launch.session_id, "--append-system-prompt", APPEND]
    assert "-p" not in resume.argv
    transcript = (tmp_path / "terminals" / "journal.step-2.txt").read_text(encoding="utf-8")
    for line in ("--- dialog: folder trust ---", "--- dialog: API key ---", ">>> typed the prompt", ">>> quit: '/exit'"):
        assert line in transcript, transcript
    assert "● 56" in transcript  # the scripted reply, shown in the UI
    (body,) = main_bodies(tmp_path / "journal.jsonl", 2)
    users = [m for m in body["messages"] if m["role"] == "user"]
    assert "And 7*8?" in json.dumps(users[-1]), users[-1]
    # the UI adds its tools mid-conversation: a system message with a tool_addition block, after the typed prompt
    assert body["messages"][-1]["role"] == "system"
    assert "tool_addition" in [block["type"] for block in body["messages"][-1]["content"]]
    assert system_text(body).count(APPEND) == 1


@pytest.mark.parametrize("policy,appended", [("append-first-launch-only", "fail"), ("append-every-launch", "pass")])
def test_the_older_builds_interactive_resume_drops_the_text_a_broken_launcher_does_not_pass(policy, appended, tmp_path):
    """2.1.236 resumed in its UI without --append-system-prompt loses the caller's text (the first seed, now in a
    terminal); the launcher that passes it on every launch keeps it. Its UI's identity differs from -p's either way."""
    result = run_scenario(load_scenario(HEADLESS_THEN_INTERACTIVE), target(f"claude-code@{OLDER}+{policy}"),
                          tmp_path / "journal.jsonl")
    assert result.status != ERROR, result.error
    verdicts = {c.check: c.verdict for c in result.checks}
    assert verdicts["appended_exactly_once"] == appended
    (headless,) = main_bodies(tmp_path / "journal.jsonl", 1)
    (interactive,) = main_bodies(tmp_path / "journal.jsonl", 2)
    assert system_text(interactive).count(APPEND) == (1 if appended == "pass" else 0)
    assert "running within the Claude Agent SDK" in system_text(headless)
    assert "You are Claude Code, Anthropic's official CLI for Claude.\n" in system_text(interactive)
    assert verdicts["identity_stable"] == "fail"
    assert all(c.as_expected for c in result.checks), [(c.check, c.verdict, c.expected_verdict) for c in result.checks]


def test_code_puppy_resumed_in_its_repl_continues_the_named_session(tmp_path):
    """code-puppy 0.0.946's prompt_toolkit REPL, `-r NAME` after a headless turn: the history carries over; the
    identity is minted anew per process (the second seed) and the -p autonomy text is absent, so the prefix moves."""
    scenario = scenario_from_text(
        "name: cp-headless-then-interactive\nappend: \"Task prompt: answer with one number.\"\nsteps:\n"
        "  - launch: {prompt: \"What is 6*7?\", reply: \"42\"}\n"
        "  - resume: {prompt: \"And 7*8?\", reply: \"56\", interactive: true}\n"
        "checks: [identity_stable, prefix_stable, history_preserved]\n")
    result = run_scenario(scenario, target("code-puppy@0.0.946+openai"), tmp_path / "journal.jsonl")
    assert result.status != ERROR, result.error
    launch, resume = result.steps
    assert resume.classes.get(MAIN) == 1 and resume.unforeseen == 0, (resume.classes, resume.notes)
    assert launch.session_id == resume.session_id == "harness-session"
    assert {c.check: c.verdict for c in result.checks} == {
        "identity_stable": "fail", "prefix_stable": "fail", "history_preserved": "pass"}
    assert ">>> quit: '/exit'" in (tmp_path / "terminals" / "journal.step-2.txt").read_text(encoding="utf-8")
