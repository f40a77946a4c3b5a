"""`harness import`: artefacts the harness itself produced by running real agents, back into scenarios.

Each incident here is a real run: the pinned (and the older) Claude Code CLI,
or inspect_swe in a real Inspect eval, driven through a scenario with the
workspace kept, so the transcript, the journal and the eval log are the
agent's own bytes. The imported scenario is then run against the same target
and must fail the same checks the incident failed, and pass on a launcher
without the defect.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from vocabulary import as_foreground

from harness.cli import main
from harness.importing import detect_format, read_draft
from harness.importing.appended import appended_candidates
from harness.importing.draft import prompt_text, summary_in
from harness.results import FAIL, PASS, RunResult
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario, scenario_from_text
from harness.targets import claude_code, resolve_target
from harness.targets.policy_family import EVERY_LAUNCH, FIRST_LAUNCH_ONLY, NEVER

PINNED, OLDER = claude_code.PINNED_VERSION, claude_code.OLDER_VERSION
FIRST_ONLY, EVERY = FIRST_LAUNCH_ONLY, EVERY_LAUNCH
APPEND = "Task prompt: answer with one number. Never use tools."
# The first seed's shape: a wrong answer retried, a compaction, the next turn.
INCIDENT = f"""
name: incident
append: "{APPEND}"
steps:
  - launch:  {{prompt: "What is 6*7?", reply: "41"}}
  - retry:   {{prompt: "Your answer was incorrect. Try again.", reply: "42"}}
  - compact: {{summary: "The user asked for 6*7; the first answer (41) was wrong, the second (42) right."}}
  - resume:  {{prompt: "And 7*8?", reply: "56"}}
checks: [identity_stable, appended_exactly_once, prefix_stable, history_preserved]
"""
UNCAUGHT_ERROR = f"""
name: uncaught-error
append: "{APPEND}"
steps:
  - launch: {{prompt: "What is 6*7?", reply: "42"}}
  - resume:
      prompt: "And 7*8?"
      error: {{status: 400, type: invalid_request_error, message: "scripted failure of this turn"}}
  - retry:  {{prompt: "And 7*8?", reply: "56"}}
checks: [identity_stable, appended_exactly_once, prefix_stable, history_preserved]
"""
TOOL_TURN = f"""
name: tool-turn
append: "{APPEND}"
steps:
  - launch:
      prompt: "Which text files are here?"
      reply:
        - tool_use: {{name: Glob, input: {{pattern: "*.txt"}}}}
        - "None."
  - resume: {{prompt: "And 7*8?", reply: "56"}}
checks: [identity_stable, appended_exactly_once, prefix_stable, history_preserved]
"""
CHECKS = ("identity_stable", "appended_exactly_once", "prefix_stable", "history_preserved")


def target(name: str):
    (resolved,) = resolve_target(name)
    return resolved


def verdicts(result: RunResult) -> dict[str, str]:
    assert result.error is None, result.error
    return {c.check: c.verdict for c in result.checks}


class Incident:
    """A scenario run with its workspace kept: the verdicts, and the artefacts the run left.

    The kept workspace is moved into `folder` (a pytest temporary folder), so it goes when the test's files do.
    """

    def __init__(self, text: str, target_name: str, folder: Path):
        scenario = scenario_from_text(text, folder / "incident.yaml")
        self.journal = folder / "journal.jsonl"
        self.result = run_scenario(scenario, target(target_name), self.journal, keep_workspace=True)
        self.workspace = kept(self.result, folder)

    @property
    def transcript(self) -> Path:
        (found,) = (self.workspace / "home" / ".claude" / "projects").glob("*/*.jsonl")
        return found


def kept(result: RunResult, folder: Path) -> Path:
    """A run's kept workspace, moved out of the system temporary folder into the test's own."""
    moved = folder / "workspace"
    shutil.move(result.workspace, moved)
    return moved


@pytest.fixture(scope="module")
def pinned_incident(tmp_path_factory) -> Incident:
    return Incident(INCIDENT, f"claude-code@{PINNED}+{FIRST_ONLY}", tmp_path_factory.mktemp("pinned"))


def imported(artefact: Path, out: Path, *extra: str) -> Path:
    assert main(["import", str(artefact), "--out", str(out), *extra]) == 0
    return out


def replay(path: Path, target_name: str, folder: Path) -> dict[str, str]:
    return verdicts(run_scenario(load_scenario(path), target(target_name), folder / f"{target_name}.jsonl"))


# ------------------------------------------------------------------------- the "done when"


def test_a_claude_code_transcript_imports_into_a_scenario_failing_the_same_checks(pinned_incident, tmp_path, capsys):
    original = verdicts(pinned_incident.result)
    assert original == {"identity_stable": FAIL, "appended_exactly_once": FAIL, "prefix_stable": FAIL,
                        "history_preserved": PASS}
    assert detect_format(pinned_incident.transcript) == "claude-transcript"

    path = imported(pinned_incident.transcript, tmp_path / "imported.yaml")
    printed = capsys.readouterr().out
    assert "launch → resume → compact → resume" in printed and f"written: {path}" in printed

    scenario = load_scenario(path)
    assert scenario.append == APPEND  # inferred: 2.1.332 records the system prompt per request shape
    assert [(s.kind, s.prompt) for s in scenario.steps] == [
        ("launch", "What is 6*7?"), ("resume", "Your answer was incorrect. Try again."), ("compact", None),
        ("resume", "And 7*8?")]
    assert [s.turns[0].blocks[0].text for s in scenario.steps if s.turns] == ["41", "42", "56"]
    assert scenario.steps[2].summary == "The user asked for 6*7; the first answer (41) was wrong, the second (42) right."
    assert "wrong answer looks like any other resume" in scenario.description
    assert scenario.expect == {}

    assert replay(path, f"claude-code@{PINNED}+{FIRST_ONLY}", tmp_path) == original
    assert replay(path, f"claude-code@{PINNED}+{EVERY}", tmp_path) == dict.fromkeys(CHECKS, PASS)


def test_the_run_s_journal_imports_with_its_recorded_steps(pinned_incident, tmp_path):
    path = imported(pinned_incident.journal, tmp_path / "from-journal.yaml")
    scenario = load_scenario(path)
    assert [s.kind for s in scenario.steps] == ["launch", "retry", "compact", "resume"]  # the journal knows them
    assert [s.prompt for s in scenario.steps] == ["What is 6*7?", "Your answer was incorrect. Try again.", None, "And 7*8?"]
    assert scenario.append == APPEND
    assert replay(path, f"claude-code@{PINNED}+{FIRST_ONLY}", tmp_path) == verdicts(pinned_incident.result)


def test_request_bodies_alone_give_the_steps_and_say_which_reply_is_missing(pinned_incident, tmp_path):
    bodies = tmp_path / "requests.jsonl"
    records = [json.loads(line) for line in pinned_incident.journal.read_text().splitlines()]
    bodies.write_text("".join(r["body"] + "\n" for r in records))
    assert detect_format(bodies) == "requests"

    draft = read_draft(bodies)
    assert [s.kind for s in draft.steps] == ["launch", "resume", "compact", "resume"]
    assert [s.turns for s in draft.steps] == [["41"], ["42"], [], ["ok"]]  # the last reply is in no later history
    assert draft.steps[2].summary.startswith("The user asked for 6*7")  # from the continuation message
    assert any("'And 7*8?' is not in the record" in note for note in draft.notes)
    assert any("Which process sent each request is not recorded" in note for note in draft.notes)
    path = imported(bodies, tmp_path / "from-requests.yaml")
    assert replay(path, f"claude-code@{PINNED}+{FIRST_ONLY}", tmp_path) == verdicts(pinned_incident.result)


def test_an_older_transcript_without_system_prompts_says_so_and_takes_append(tmp_path):
    incident = Incident(INCIDENT, f"claude-code@{OLDER}+{FIRST_ONLY}", tmp_path / "incident")
    without = read_draft(incident.transcript)
    assert without.append is None
    assert any("could not be inferred" in note and "--append" in note for note in without.notes)

    path = imported(incident.transcript, tmp_path / "older.yaml", "--append", APPEND)
    assert load_scenario(path).checks == CHECKS
    assert replay(path, f"claude-code@{OLDER}+{FIRST_ONLY}", tmp_path) == verdicts(incident.result)


def test_a_failed_turn_becomes_an_error_step_and_the_next_attempt_a_retry(tmp_path):
    incident = Incident(UNCAUGHT_ERROR, f"claude-code@{PINNED}+{EVERY}", tmp_path / "incident")
    scenario = load_scenario(imported(incident.transcript, tmp_path / "error.yaml", "--append", APPEND))
    assert [s.kind for s in scenario.steps] == ["launch", "resume", "retry"]
    failed = scenario.steps[1]
    assert (failed.error.status, failed.error.type, failed.error.message) == (400, "invalid_request_error",
                                                                               "scripted failure of this turn")
    assert replay(tmp_path / "error.yaml", f"claude-code@{PINNED}+{EVERY}", tmp_path) == verdicts(incident.result)


def test_a_tool_round_trip_imports_as_a_tool_turn_then_the_answer(tmp_path):
    incident = Incident(TOOL_TURN, f"claude-code@{PINNED}+{FIRST_ONLY}", tmp_path / "incident")
    path = imported(incident.transcript, tmp_path / "tool.yaml", "--append", APPEND)
    launch = load_scenario(path).steps[0]
    assert [[type(b).__name__ for b in turn.blocks] for turn in launch.turns] == [["ToolUseBlock"], ["TextBlock"]]
    assert (launch.turns[0].blocks[0].name, launch.turns[0].blocks[0].input) == ("Glob", {"pattern": "*.txt"})
    assert replay(path, f"claude-code@{PINNED}+{FIRST_ONLY}", tmp_path) == verdicts(incident.result)


def test_an_inspect_eval_log_imports_with_its_retry_and_the_caller_s_text(tmp_path):
    library = Path(__file__).resolve().parent.parent / "scenarios" / "inspect-swe" / "isw-wrong-answer-compact-resume.yaml"
    name = f"inspect-swe@0.2.72+claude-code@{PINNED}+pin"
    result = run_scenario(load_scenario(library), target(name), tmp_path / "journal.jsonl", keep_workspace=True)
    (log,) = (kept(result, tmp_path) / "inspect" / "logs").glob("*.json")
    assert detect_format(log) == "inspect-log"

    scenario = load_scenario(imported(log, tmp_path / "from-inspect.yaml"))
    assert [s.kind for s in scenario.steps] == ["launch", "retry", "compact", "resume"]  # the score said 41 was wrong
    assert scenario.append == APPEND and scenario.checks[:2] == ("launch_appended_exactly_once", "launch_prompt_from_caller")
    assert replay(tmp_path / "from-inspect.yaml", name, tmp_path) == verdicts(result)

    # A benchmark's log holds many samples: --sample picks one (here the same sample again, under another id
    # and caller text), and a wrong id lists the ones there are.
    log_data = json.loads(log.read_text())
    other = json.loads(json.dumps(log_data["samples"][0]))
    other["id"], other["input"][0]["content"] = "second", "Task prompt: be brief."
    log_data["samples"].append(other)
    both = tmp_path / "two-samples.json"
    both.write_text(json.dumps(log_data))
    assert load_scenario(imported(both, tmp_path / "second.yaml", "--sample", "second")).append == "Task prompt: be brief."
    assert "The log holds 2 samples; sample second was imported." in load_scenario(tmp_path / "second.yaml").description
    assert main(["import", str(both), "--out", str(tmp_path / "none.yaml"), "--sample", "third"]) == 2


def test_an_incident_recorded_by_hand_with_serve_record_imports(tmp_path):
    """The by-hand route: `harness serve --record`, Claude Code pointed at it as a user would, then import."""
    folder, home, work = tmp_path / "recording", tmp_path / "home", tmp_path / "work"
    home.mkdir(), work.mkdir()
    server = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--record", str(folder)],
                              stderr=subprocess.PIPE, text=True, preexec_fn=as_foreground)
    try:
        base_url = server.stderr.readline().split()[-1]
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "ANTHROPIC_BASE_URL": base_url,
               "ANTHROPIC_API_KEY": "sk-not-a-real-key", **claude_code.OFFLINE_ENV}
        claude = [*claude_code.cli_command(PINNED), "--output-format", "json"]
        first = subprocess.run([*claude, "-p", "What is 6*7?", "--append-system-prompt", APPEND],
                               cwd=work, env=env, capture_output=True, text=True, timeout=120, check=True)
        session = json.loads(first.stdout)["session_id"]
        subprocess.run([*claude, "-p", "And 7*8?", "--resume", session], cwd=work, env=env, capture_output=True,
                       text=True, timeout=120, check=True)
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=20)

    draft = read_draft(folder / "journal.jsonl")
    assert [(s.kind, s.prompt) for s in draft.steps] == [("launch", "What is 6*7?"), ("resume", "And 7*8?")]
    assert all(s.turns and isinstance(s.turns[0], str) for s in draft.steps)  # the default replies it was given
    # 2.1.332 keeps the first launch's text on a resume, so no request lacks it: the importer says it cannot tell
    assert draft.append is None and any("--append" in note for note in draft.notes)
    path = imported(folder / "journal.jsonl", tmp_path / "recorded.yaml", "--append", APPEND)
    assert replay(path, f"claude-code@{PINNED}+{EVERY}", tmp_path) == dict.fromkeys(CHECKS, PASS)
    assert replay(path, f"claude-code@{PINNED}+{NEVER}", tmp_path)["appended_exactly_once"] == FAIL


# ------------------------------------------------------------------------- bad input is named, never imported


@pytest.mark.parametrize("content, message", [
    ("", "empty file"),
    ('{"sessionId": "s", "type": "user"}\nnot json\n', "line 2: not JSON"),
    ('{"hello": 1}\n', "not an artefact harness import reads"),
    ('{"model": "m", "max_tokens": 1, "messages": []}\n', "line 1: the fake API would refuse this request"),
    ('{"sessionId": "s", "type": "summary"}\n', "no prompt or reply in this transcript"),
])
def test_an_unreadable_artefact_exits_2_naming_file_and_line(tmp_path, capsys, content, message):
    artefact = tmp_path / "artefact.jsonl"
    artefact.write_text(content)
    assert main(["import", str(artefact), "--out", str(tmp_path / "out.yaml")]) == 2
    err = capsys.readouterr().err
    assert message in err and str(artefact) in err
    assert not (tmp_path / "out.yaml").exists()


def test_an_existing_output_is_not_overwritten_without_force(pinned_incident, tmp_path, capsys):
    out = tmp_path / "taken.yaml"
    out.write_text("keep me\n")
    assert main(["import", str(pinned_incident.transcript), "--out", str(out)]) == 2
    assert "exists already" in capsys.readouterr().err and out.read_text() == "keep me\n"
    assert main(["import", str(pinned_incident.transcript), "--out", str(out), "--force"]) == 0
    assert load_scenario(out).steps[0].prompt == "What is 6*7?"


# ------------------------------------------------------------------------- the readings the importer relies on


def test_the_appended_text_is_the_separated_difference_between_system_blocks():
    base = "You are an agent.\nBe brief."
    assert appended_candidates([["id", base + "\n\n" + APPEND], ["id", base]]) == [APPEND]
    assert appended_candidates([["id", base + "\n\n" + APPEND + "\n\n" + APPEND], ["id", base + "\n\n" + APPEND]]) == [APPEND]
    assert appended_candidates([["id", base], ["id", base]]) == []  # carried alike everywhere: not visible
    assert appended_candidates([["id", base + " v2"], ["id", base]]) == []  # glued on, not a separated block
    assert appended_candidates([["id", base + "\n\nshort"], ["id", base]]) == []  # too short to be instructions


def test_the_prompt_is_the_caller_s_text_not_what_the_client_adds():
    reminder = {"type": "text", "text": "<system-reminder>\nAttribution.\n</system-reminder>\n"}
    assert prompt_text([reminder, {"type": "text", "text": "What is 6*7?"}]) == "What is 6*7?"
    assert prompt_text([{"type": "text", "text": "<command-name>/compact</command-name>"}]) is None
    assert prompt_text([{"type": "tool_result", "tool_use_id": "t", "content": "4"}]) is None
    assert prompt_text("<local-command-stdout>Compacted</local-command-stdout>") is None


def test_a_summary_is_read_from_a_reply_or_a_continuation_message():
    assert summary_in("<analysis>x</analysis>\n<summary>\nS.\n</summary>") == "S."
    continuation = ("This session is being continued from a previous conversation.\nSummary:\nS, twice.\n\n"
                    "If you need specific details from before compaction, read the transcript.")
    assert summary_in(continuation) == "S, twice."
    assert summary_in("no summary here") is None


def test_a_long_description_is_written_folded_and_reads_back_unchanged():
    from harness.scenario.writer import render
    from harness.scenario.reader import scenario_from_text

    prose = " ".join(["Imported from a transcript: # not a comment, -- nor a list."] * 6)
    text = render({"name": "n", "description": prose, "append": APPEND, "steps": [{"launch": {"prompt": "p", "reply": "r"}}]})
    assert "description: >-\n" in text and max(map(len, text.splitlines())) <= 102
    assert scenario_from_text(text, "n.yaml").description == prose


def _request(*turns: tuple[str, str]) -> dict:
    return {"system": [{"type": "text", "text": "You are X."}],
            "messages": [{"role": role, "content": [{"type": "text", "text": text}]} for role, text in turns]}


def test_several_prompts_from_one_process_split_and_a_compaction_inside_one_gives_its_summary():
    from harness.importing.calls import Call, infer_steps

    said = lambda text: [{"type": "text", "text": text}]  # noqa: E731
    calls = [
        Call(_request(("user", "A")), reply=said("a"), process=1),
        Call(_request(("user", "A"), ("assistant", "a"), ("user", "B")), reply=said("b"), process=1),
        Call(_request(("user", "A"), ("assistant", "a"), ("user", "B"), ("assistant", "b"),
                      ("user", "Write a <summary> of the conversation so far.")), reply=said("<summary>S</summary>"), process=2),
        Call(_request(("user", "This session is being continued from a previous conversation.\nSummary:\nS"),
                      ("user", "C")), reply=said("c"), process=2),
    ]
    notes: list[str] = []
    assert [s.document() for s in infer_steps(calls, notes)] == [
        {"launch": {"prompt": "A", "reply": "a"}},
        {"resume": {"prompt": "B", "reply": "b"}},
        {"resume": {"prompt": "C", "reply": "c", "summary": "S"}},
    ]
    assert any("interactive session" in note for note in notes)
