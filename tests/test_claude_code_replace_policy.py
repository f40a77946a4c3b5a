"""Claude Code's own launch policy `replace-every-launch`, and #11641 measured with it in 2.0.x's terminal UI.

The policy passes the caller's text with `--system-prompt` (replacing Claude
Code's prompt) on every launch, headless and interactive alike. It is named
explicitly: `claude-code+*` stays the three policies every agent-CLI family
shares, so the expectations written for `+*` keep their meaning, and the other
families do not know it. The last test runs the catalog entry's scenario on the
release before the fix and the fixing one, each turn typed into the real
terminal UI (2.0.x's dialogs and its `/status` for the session id).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import cli as harness_cli
from harness.errors import InputError
from harness.journal.exchange import MAIN
from harness.results import ERROR
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import claude_code, codex, resolve_target

ROOT = Path(__file__).resolve().parent.parent
ENTRY = ROOT / "incidents" / "claude-code-11641-interactive-resume.yaml"
PINNED = claude_code.PINNED_VERSION
REPLACE = "replace-every-launch"
SHARED = ["append-first-launch-only", "append-every-launch", "append-never"]


def one(spec: str):
    (target,) = resolve_target(spec)
    return target


def option_of(argv: tuple[str, ...]) -> list[tuple[str, str]]:
    """The system-prompt options an argv passes, with their values."""
    return [(flag, argv[i + 1]) for i, flag in enumerate(argv)
            if flag in ("--system-prompt", "--append-system-prompt") and i + 1 < len(argv)]


# ---------------------------------------------------------------------------------------- the policy's argv


@pytest.mark.parametrize("version", [PINNED, "2.0.62"])
def test_every_command_passes_the_text_with_system_prompt_and_never_appends(version):
    target = one(f"claude-code@{version}+{REPLACE}")
    assert target.name == f"claude-code@{version}+{REPLACE}"
    commands = {**target.commands, **{f"interactive {k}": v for k, v in target.interactive.commands.items()}}
    assert set(commands) == {"launch", "resume", "compact", "interactive launch", "interactive resume"}
    for kind, argv in commands.items():
        assert option_of(argv) == [("--system-prompt", "{append}")], (kind, argv)
        assert "--append-system-prompt" not in argv, (kind, argv)
    assert "--resume" in commands["resume"] and "--resume" in commands["interactive resume"]
    assert "-p" in commands["resume"] and "-p" not in commands["interactive resume"]


def test_the_shared_policies_still_append():
    assert option_of(one(f"claude-code@{PINNED}+append-every-launch").commands["resume"]) == [
        ("--append-system-prompt", "{append}")]
    assert option_of(one(f"claude-code@{PINNED}+append-first-launch-only").commands["resume"]) == []


def test_plus_star_is_still_the_three_shared_policies():
    names = [t.name for t in resolve_target(f"claude-code@{PINNED}+*")]
    assert names == [f"claude-code@{PINNED}+{policy}" for policy in SHARED]
    assert claude_code.FAMILY.parse_spec("claude-code+*") == (PINNED, SHARED)
    assert claude_code.FAMILY.parse_spec(f"claude-code@2.0.62+{REPLACE}") == ("2.0.62", [REPLACE])


def test_an_expectation_may_name_it_and_other_families_do_not_know_it():
    assert claude_code.name_problem(f"claude-code@2.0.62+{REPLACE}") is None
    with pytest.raises(InputError, match=f"unknown launch policy '{REPLACE}'"):
        codex.parse_spec(f"codex+{REPLACE}")
    with pytest.raises(InputError) as caught:
        claude_code.parse_spec("claude-code+replace-first-launch-only")
    assert f"append-never, {REPLACE}, or * for the first 3" in str(caught.value)


def test_harness_targets_lists_it_under_claude_code(capsys):
    assert harness_cli.main(["targets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("claude-code[@VERSION][+POLICY]"))
    block = lines[start + 1:start + 6]
    assert [line.split()[0] for line in block] == [*(f"+{p}" for p in SHARED), f"+{REPLACE}", "+*"], block
    assert "--system-prompt" in block[3] and f"one target per policy but {REPLACE}" in block[4]


def test_2_0_builds_are_asked_their_session_id_on_screen_and_2_1_builds_send_it():
    old, new = one(f"claude-code@2.0.62+{REPLACE}").interactive, one(f"claude-code@{PINNED}+{REPLACE}").interactive
    assert new.session_id == claude_code.SESSION_HEADER and new.ui.quit == ("/exit", "\r")
    assert old.session_id == claude_code.SESSION_ON_SCREEN and old.ui.quit[:2] == ("/status", "\r")
    assert old.session_id.read("  Session ID: ecff05e6-412c-4a64-bc6b-af2688c9424b\r\n", []) == (
        "ecff05e6-412c-4a64-bc6b-af2688c9424b")


# ---------------------------------------------------------------------------------------- #11641 in the terminal UI


def main_systems(journal: Path) -> dict[int, list[str]]:
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {int(r["step"]): [block["text"] for block in json.loads(r["body"])["system"]]
            for r in records if r["class"] == MAIN}


@pytest.mark.parametrize("version,verdict", [("2.0.62", "fail"), ("2.0.64", "pass")])
def test_the_resumed_repl_drops_the_replacing_prompt_before_2_0_64(version, verdict, tmp_path):
    """Both launches pass `--system-prompt`; 2.0.62's resumed REPL sends Claude Code's own prompt instead, 2.0.64's
    the new text. Each step answers 2.0.x's dialogs and reads the session id from `/status` before `/exit`."""
    scenario = load_scenario(ENTRY)
    result = run_scenario(scenario, one(f"claude-code@{version}+{REPLACE}"), tmp_path / "journal.jsonl")
    assert result.status != ERROR, result.error
    launch, resume = result.steps
    assert launch.session_id and launch.session_id == resume.session_id
    assert "-p" not in resume.argv and resume.argv[-2] == "--system-prompt"
    verdicts = {c.check: c.verdict for c in result.checks}
    assert verdicts == {"identity_stable": "pass", "appended_exactly_once": verdict, "prefix_stable": "pass",
                        "launch_appended_exactly_once": "pass"}, verdicts
    assert all(c.as_expected for c in result.checks)
    systems = main_systems(tmp_path / "journal.jsonl")
    first, new = scenario.append, scenario.steps[1].append
    assert systems[1] == ["You are Claude Code, Anthropic's official CLI for Claude.", first]
    if verdict == "pass":
        assert systems[2] == ["You are Claude Code, Anthropic's official CLI for Claude.", new]
    else:
        assert len(systems[2]) == 2 and systems[2][1].lstrip().startswith("You are an interactive CLI tool")
        assert new not in "".join(systems[2]) and first not in "".join(systems[2])
    transcript = (tmp_path / "terminals" / "journal.step-1.txt").read_text(encoding="utf-8")
    for line in ("--- dialog: folder trust ---", "--- dialog: API key ---", ">>> quit: '/status'", ">>> quit: '/exit'"):
        assert line in transcript, transcript
