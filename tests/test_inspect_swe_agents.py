"""inspect_swe's other agents (codex_cli, gemini_cli, opencode, kimi_code, mini_swe_agent) in a real `inspect eval`, launching the harness's CLI builds.

Real parts only, as in test_inspect_swe.py (whose helpers these reuse): the
release's agents virtualenv (inspect-ai, the SDKs its bridge needs), the
pinned Codex, Gemini CLI, opencode, Kimi Code and mini-swe-agent builds behind the recording shim, the
fake API on 127.0.0.1. Verdicts must equal the scenarios' measured
expectations, and what they rest on is read again from the raw journals. The
last tests run a patched release (+checkout=REPO#REV: a git repository of the
installed inspect_swe with one line changed) that drops or doubles the
caller's system message, and the harness must report the failing verdict.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.journal.launches import launch_journal_path, read_launches
from harness.results import CANNOT_EXPRESS
from harness.scenario.reader import load_scenario
from harness.targets import resolve_target
from harness.targets.inspect_swe import MEASURED_VERSION
from test_inspect_swe import assert_as_expected, run, text_per_launch, verdicts

ROOT = Path(__file__).resolve().parent.parent
SUITE, AGENTS = ROOT / "scenarios" / "inspect-swe", ROOT / "scenarios" / "inspect-swe-agents"
MINI_SUITE = ROOT / "scenarios" / "inspect-swe-mini"  # replies that end mini-swe-agent's turn
RELEASE = f"inspect-swe@{MEASURED_VERSION}"
CODEX, GEMINI, OPENCODE, KIMI, MINI = (f"{RELEASE}+agent={name}" for name in
                                       ("codex_cli", "gemini_cli", "opencode", "kimi_code", "mini_swe_agent"))
APPEND = "Task prompt: answer with one number. Never use tools."
# The one line of gemini_cli(), kimi_code() and mini_swe_agent() that puts the caller's system messages in front of
# the turn's prompt, and two mutants of each: each mutant commit changes every agent's line.
SOURCE_LINES = {
    Path("inspect_swe") / "_gemini_cli" / "gemini_cli.py": (
        'prompt = f"{combined_system}\\n\\n{prompt}"',
        {"drop": "prompt = prompt", "double": 'prompt = f"{combined_system}\\n\\n{combined_system}\\n\\n{prompt}"'}),
    Path("inspect_swe") / "_kimi_code" / "kimi_code.py": (
        'prompt = "\\n\\n".join(system_messages) + "\\n\\n" + prompt',
        {"drop": "prompt = prompt", "double": 'prompt = "\\n\\n".join(system_messages * 2) + "\\n\\n" + prompt'}),
    Path("inspect_swe") / "_mini_swe_agent" / "mini_swe_agent.py": (  # inside `prompt = (...)`
        'f"System instructions:\\n{system_context}\\n\\nTask:\\n{prompt}"',
        {"drop": "prompt", "double": 'f"System instructions:\\n{system_context}\\n\\n{system_context}\\n\\nTask:\\n{prompt}"'}),
}


def text_in_user_messages(journal: Path) -> list[tuple[int, int]]:
    """(step, occurrences of the caller's text in the messages) per answered main request, from the raw bodies."""
    out = []
    for line in journal.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["class"] == "main" and record["status"] == 200:
            out.append((record["step"], json.dumps(json.loads(record["body"])["messages"]).count(APPEND)))
    return out


# ---------------------------------------------------------------------------------------- the release, each agent


def test_codex_cli_passes_the_text_in_agents_md_never_argv_and_the_model_sees_it_as_a_user_message(tmp_path):
    result, journal = run(AGENTS / "isa-wrong-answer-then-retry.yaml", CODEX, tmp_path)
    assert_as_expected(result)
    assert result.target == f"{RELEASE}+agent=codex_cli+codex@0.171.0"
    launches = read_launches(launch_journal_path(journal))
    assert [launch.argv[:2] for launch in launches] == [["codex", "exec"]] * 2  # the version probe is no launch
    assert launches[1].argv[-2:] == ["resume", "--last"] and "Your answer was incorrect. Try again." in launches[1].argv
    assert text_per_launch(journal, APPEND) == [0, 0]
    assert text_in_user_messages(journal) == [(1, 1), (2, 1)]
    appended = next(c for c in result.checks if c.check == "appended_exactly_once")
    assert appended.step == 1 and "1 time(s) in the conversation messages instead" in appended.message


def test_gemini_cli_passes_the_text_in_the_first_prompt_only(tmp_path):
    result, journal = run(SUITE / "isw-wrong-answer-then-retry.yaml", GEMINI, tmp_path)
    assert_as_expected(result)
    assert text_per_launch(journal, APPEND) == [1, 0]
    assert result.steps[1].argv[-3:] == ["--resume", "latest", "Your answer was incorrect. Try again."]
    launch = next(c for c in result.checks if c.check == "launch_appended_exactly_once")
    assert (launch.verdict, launch.step) == ("fail", 2)


def test_opencode_hands_its_own_system_prompt_back_as_the_callers_on_the_second_turn(tmp_path):
    result, journal = run(AGENTS / "isa-second-turn.yaml", OPENCODE, tmp_path)
    assert_as_expected(result)
    launches = read_launches(launch_journal_path(journal))
    assert launches[1].argv[-1] == "--continue" and text_per_launch(journal, APPEND) == [0, 0]  # the prompt is stdin
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    second = [json.loads(r["body"]) for r in records if r["class"] == "main" and r["step"] == 2][0]
    turn = second["messages"][-1]["content"]
    text = turn if isinstance(turn, str) else "".join(block.get("text", "") for block in turn)
    assert text.startswith("You are OpenCode") and text.endswith("And 7*8?") and APPEND not in text


def test_kimi_code_passes_the_text_in_the_first_prompt_and_its_own_system_prompt_on_the_second(tmp_path):
    result, journal = run(AGENTS / "isa-second-turn.yaml", KIMI, tmp_path)
    assert_as_expected(result)
    assert result.target == f"{RELEASE}+agent=kimi_code+kimi-code@2.1.0"
    launches = read_launches(launch_journal_path(journal))
    assert launches[0].argv == ["kimi", "--output-format", "text", "-p", f"{APPEND}\n\nWhat is 6*7?"]
    assert launches[1].argv[1:4] == ["--output-format", "text", "--continue"]
    assert launches[1].argv[-1].startswith("You are Kimi Code CLI") and launches[1].argv[-1].endswith("\n\nAnd 7*8?")
    assert text_per_launch(journal, APPEND) == [1, 0] and text_in_user_messages(journal) == [(1, 1), (2, 1)]
    history = next(c for c in result.checks if c.check == "history_preserved")
    assert (history.verdict, history.step) == ("fail", 2) and '"\\n42"' in history.message  # the reply came back as "\n42"


def test_mini_swe_agent_passes_the_text_in_the_first_task_and_its_own_system_prompt_on_the_second(tmp_path):
    result, journal = run(MINI_SUITE / "isa-submit-second-turn.yaml", MINI, tmp_path)
    assert_as_expected(result)
    assert result.target == f"{RELEASE}+agent=mini_swe_agent+mini-swe-agent@2.2.3"
    launches = read_launches(launch_journal_path(journal))
    head = ["mini", "--yolo", "--exit-immediately", "--agent-class", "resumable_agent.ResumableAgent", "--output"]
    assert [launch.argv[:6] for launch in launches] == [head, head]
    assert launches[0].argv[6] == launches[1].argv[6] and launches[0].argv[6].startswith("/var/tmp/.mini-swe-trajectory-")
    assert launches[0].argv[7:] == ["--task", f"System instructions:\n{APPEND}\n\nTask:\nWhat is 6*7?"]
    own = "You are a helpful assistant that can interact with a computer."  # mini's system prompt, back as the caller's
    assert launches[1].argv[7:] == ["--task", f"System instructions:\n{own}\n\nTask:\nAnd 7*8?"]
    assert text_per_launch(journal, APPEND) == [1, 0] and text_in_user_messages(journal) == [(1, 1), (2, 1)]
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    assert [r["class"] for r in records] == ["main", "main"]  # litellm's price map stays local: nothing outbound
    resumed = json.loads(records[1]["body"])  # MSWEA_RESUME: the first run's trajectory, then the new task
    assert [m["role"] for m in resumed["messages"]] == ["user", "assistant", "user"]
    reply = resumed["messages"][1]["content"]  # the reply's text; its submit tool call stripped (never answered)
    assert [(block["type"], block.get("text")) for block in reply] == [("text", "42")]
    assert resumed["messages"][2]["content"][0]["text"].endswith(
        "When you are done, submit by running: `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`")
    history = next(c for c in result.checks if c.check == "history_preserved")
    assert (history.verdict, history.step) == ("fail", 2) and "at history item 2 of 3" in history.message


def first_user_text(body: dict) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else content[0].get("text", "")


# Where the CLI compacts (the step: the k-th launch's process), a line of its compaction request, and the caller's
# text per answered main request (step, occurrences in the messages): once before the compaction, never after it.
@pytest.mark.parametrize("spec, compacts_at, marker, counts", [
    (CODEX, 2, "You are performing a CONTEXT CHECKPOINT COMPACTION", [(1, 1), (2, 0), (3, 0)]),
    (OPENCODE, 1, "You are a context summarization agent", [(1, 1), (1, 0), (2, 0), (3, 0)]),
])
def test_auto_compaction_by_usage_numbers_summarizes_the_callers_text_away(tmp_path, spec, compacts_at, marker, counts):
    result, journal = run(AGENTS / "isa-auto-compaction-then-resume.yaml", spec, tmp_path)
    assert_as_expected(result)
    appended = next(c for c in result.checks if c.check == "appended_exactly_once")
    assert (appended.verdict, appended.step) == ("fail", 1)
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    compactions = [r for r in records if r["class"] == "compaction" and r["status"] == 200]
    assert [r["step"] for r in compactions] == [compacts_at]  # the usage numbers, not a command, set it off
    compaction = json.loads(compactions[0]["body"])
    assert marker in json.dumps(compaction) and json.dumps(compaction["messages"]).count(APPEND) == 1
    assert text_in_user_messages(journal) == counts
    if spec == CODEX:  # the compacted thread opens with the AGENTS.md the relaunch wrote: Codex's own instructions
        after = json.loads(next(r["body"] for r in records if r["class"] == "main" and r["step"] == compacts_at))
        opening = first_user_text(after)
        assert opening.startswith("# AGENTS.md instructions for") and "You are a coding agent running in the Codex CLI" in opening


@pytest.mark.parametrize("spec, scenario, reason", [
    (CODEX, SUITE / "isw-second-turn.yaml", "passes the caller's text in AGENTS.md"),
    (OPENCODE, SUITE / "isw-wrong-answer-then-retry.yaml", "the prompt on stdin"),
    (GEMINI, SUITE / "isw-uncaught-error-retry.yaml", "gemini_cli() does not relaunch after a failed launch"),
    (GEMINI, SUITE / "isw-wrong-answer-compact-resume.yaml", "gemini_cli() has no compaction command"),
    (MINI, SUITE / "isw-second-turn.yaml", "the only way mini-swe-agent ends a turn"),  # its replies are text
])
def test_what_an_agent_cannot_be_made_to_do_is_refused_before_anything_runs(tmp_path, spec, scenario, reason):
    result, journal = run(scenario, spec, tmp_path)
    assert result.status == CANNOT_EXPRESS and reason in result.cannot_express
    assert not journal.exists() or journal.read_text() == ""


def test_the_pin_is_claude_codes_alone():
    from harness.errors import InputError

    with pytest.raises(InputError, match="the pin is claude_code\\(\\)'s alone"):
        resolve_target(f"{CODEX}+no-pin")


# ---------------------------------------------------------------------------------------- a launcher that drops or doubles


def mutant_repository(folder: Path, spec: str, source_lines: dict[Path, tuple[str, dict[str, str]]]) -> Path:
    """The installed release's inspect_swe as a git repository: `release`, then a commit per mutant name.

    `source_lines`: per source file, the release's one line and its replacement in each mutant (every mutant
    commit changes every file's line).
    """
    (target,) = resolve_target(spec)
    installed = next((target.executor.launcher.venv / "lib").glob("python*/site-packages/inspect_swe"))
    repo = folder / "repo"
    shutil.copytree(installed, repo / "src" / "inspect_swe", ignore=shutil.ignore_patterns("__pycache__"))

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                       capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "release")
    git("tag", "release")
    released = {path: (repo / "src" / path).read_text(encoding="utf-8") for path in source_lines}
    for path, (line, _) in source_lines.items():
        assert released[path].count(line) == 1, path
    for name in {name for _, mutants in source_lines.values() for name in mutants}:
        git("checkout", "-q", "release")
        for path, (line, mutants) in source_lines.items():
            (repo / "src" / path).write_text(released[path].replace(line, mutants[name]), encoding="utf-8")
        git("commit", "-qam", name)
        git("tag", name)
    return repo


@pytest.fixture(scope="module")
def mutant_repo(tmp_path_factory) -> Path:
    return mutant_repository(tmp_path_factory.mktemp("inspect-swe-mutants"), GEMINI, SOURCE_LINES)


# mini-swe-agent ends a turn only on its submit command: its one launch replies with it (isa-submit-one-launch).
@pytest.mark.parametrize("agent, scenario", [(GEMINI, AGENTS / "isa-one-launch.yaml"), (KIMI, AGENTS / "isa-one-launch.yaml"),
                                             (MINI, MINI_SUITE / "isa-submit-one-launch.yaml")])
@pytest.mark.parametrize("mutant, count", [("release", 1), ("drop", 0), ("double", 2)])
def test_a_launcher_that_drops_or_doubles_the_callers_text_fails_the_launch_check(tmp_path, mutant_repo, agent, scenario,
                                                                                   mutant, count):
    result, journal = run(scenario, f"{agent}+checkout={mutant_repo}#{mutant}", tmp_path)
    assert_as_expected(result)
    assert text_per_launch(journal, load_scenario(scenario).append) == [count]
    assert verdicts(result)["launch_appended_exactly_once"] == ("pass" if mutant == "release" else "fail")
