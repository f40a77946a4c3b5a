"""inspect_swe's claude_code() in a real `inspect eval`, launching the real Claude Code CLI: the first seed, end to end.

Real parts only: the release's virtualenv from the package index (`make test`
installs it first; a missing one is installed here and a failed install fails
the test with pip's reason), the harness's Claude Code builds behind the
recording shim, the fake API on 127.0.0.1, and for the fix a git repository
built from the release's sdist with examples/inspect-swe-fix/every-launch.patch
on top. Verdicts must match the scenarios' measured expectations, and the
launch and request verdicts are re-derived here from the raw journals.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from harness.journal.exchange import MAIN
from harness.journal.launches import launch_journal_path, read_launches
from harness.results import CANNOT_EXPRESS
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import claude_code, resolve_target
from harness.targets.inspect_swe import MEASURED_VERSION

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "scenarios" / "inspect-swe"
AUTO = ROOT / "scenarios" / "inspect-swe-auto-compaction"
RELEASE = f"inspect-swe@{MEASURED_VERSION}"
PINNED, OLDER = claude_code.PINNED_VERSION, claude_code.OLDER_VERSION


@pytest.fixture(scope="module")
def fix_repo(tmp_path_factory) -> Path:
    """The release and the seed's fix as two tagged commits (examples/inspect-swe-fix/make_repo.py)."""
    spec = importlib.util.spec_from_file_location("make_repo", ROOT / "examples" / "inspect-swe-fix" / "make_repo.py")
    make_repo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_repo)
    dest = tmp_path_factory.mktemp("inspect-swe-repo") / "repo"
    make_repo.build_repo(dest, MEASURED_VERSION, None)
    return dest


def run(scenario_path: Path, spec: str, tmp_path: Path, keep_workspace: bool = False):
    (target,) = resolve_target(spec)
    journal = tmp_path / "journal.jsonl"
    result = run_scenario(load_scenario(scenario_path), target, journal, keep_workspace=keep_workspace)
    return result, journal


def verdicts(result) -> dict[str, str]:
    return {c.check: c.verdict for c in result.checks}


def assert_as_expected(result) -> None:
    assert result.error is None, result.error
    mismatches = [f"{c.check}: expected {c.expected_verdict}, got {c.verdict}\n{c.message}" for c in result.checks if not c.as_expected]
    assert not mismatches, "\n\n".join(mismatches)


# ---------------------------------------------------------------------------------------- the bytes, read again


def text_per_launch(journal: Path, text: str) -> list[int]:
    return [sum(arg.count(text) for arg in launch.argv[1:]) for launch in read_launches(launch_journal_path(journal))]


def text_per_main_request(journal: Path, text: str) -> list[tuple[int, int]]:
    """(step, occurrences in the system blocks as sent) per answered main request, from the raw request bodies."""
    out = []
    for line in journal.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["class"] == MAIN and record["status"] == 200:
            body = json.loads(record["body"])
            out.append((record["step"], sum(block["text"].count(text) for block in body["system"])))
    return out


# ---------------------------------------------------------------------------------------- the release


def test_the_release_drops_the_callers_text_at_the_retry_and_the_pin_hides_it_until_compaction(tmp_path):
    scenario = SUITE / "isw-wrong-answer-compact-resume.yaml"
    result, journal = run(scenario, f"{RELEASE}+claude-code@{OLDER}+pin", tmp_path)
    assert_as_expected(result)
    append = load_scenario(scenario).append
    assert text_per_launch(journal, append) == [1, 0, 0, 0]
    assert text_per_main_request(journal, append) == [(1, 1), (2, 1), (4, 0)]  # the pin lets go at the compaction
    launch = next(c for c in result.checks if c.check == "launch_appended_exactly_once")
    assert (launch.verdict, launch.step) == ("fail", 2)
    request = next(c for c in result.checks if c.check == "appended_exactly_once")
    assert (request.verdict, request.step) == ("fail", 4)
    assert [s.kind for s in result.steps] == ["launch", "retry", "compact", "resume"]
    assert "--resume" in result.steps[1].argv and result.steps[1].argv[-1] == "Your answer was incorrect. Try again."
    assert result.steps[2].argv[-1] == "/compact" and result.steps[2].classes == {"compaction": 1}


def test_without_the_pin_the_model_loses_the_text_at_the_first_retry(tmp_path):
    scenario = SUITE / "isw-wrong-answer-then-retry.yaml"
    result, journal = run(scenario, f"{RELEASE}+claude-code@{OLDER}+no-pin", tmp_path)
    assert_as_expected(result)
    assert text_per_main_request(journal, load_scenario(scenario).append) == [(1, 1), (2, 0)]
    assert verdicts(result)["appended_exactly_once"] == "fail"
    # One Inspect process launched both steps: its CPU time, Claude Code's included, is the last step's (the gate's)
    assert [s.cpu_s is None for s in result.steps] == [True, False] and result.steps[-1].cpu_s > 1.0
    assert result.steps[-1].cpu_of_steps == [1]
    assert "cpu_s: the whole inspect eval process's, every step's agents included" in result.steps[-1].notes[-1]


def test_an_uncaught_error_is_retried_by_a_fresh_launch_without_the_text(tmp_path):
    scenario = SUITE / "isw-uncaught-error-retry.yaml"
    result, journal = run(scenario, f"{RELEASE}+claude-code@{PINNED}+pin", tmp_path, keep_workspace=True)
    workspace = Path(result.workspace)
    try:
        # What Inspect puts under /var/tmp landed in the run's own folder bound over it, not on the host.
        assert (workspace / "var-tmp" / "sandbox-services").is_dir()
        assert any(note.startswith("inspect eval: private /var/tmp: bound to") for note in result.steps[-1].notes)
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    assert_as_expected(result)
    assert [s.exit_code for s in result.steps] == [0, 1, 0]
    assert result.steps[1].argv[-1] == result.steps[2].argv[-1] == "And 7*8?"
    session = result.steps[0].session_id
    assert session and [s.session_id for s in result.steps] == [session] * 3  # one session, relaunched
    assert text_per_launch(journal, load_scenario(scenario).append) == [1, 0, 0]


def test_auto_compaction_pushed_by_usage_numbers_ends_the_pin_at_the_retry(tmp_path):
    scenario = AUTO / "isw-auto-compaction-then-resume.yaml"
    result, journal = run(scenario, f"{RELEASE}+claude-code@{PINNED}+pin", tmp_path)
    assert_as_expected(result)
    assert result.steps[1].classes == {"compaction": 1, "main": 1}
    assert text_per_main_request(journal, load_scenario(scenario).append) == [(1, 1), (2, 0), (3, 0)]


def test_a_launch_the_scenario_did_not_foresee_is_an_error_never_a_verdict(tmp_path):
    # 2.1.236 refuses the over-full turn instead of compacting: exit 1 with no request, which
    # claude_code() retries as an uncaught error; that fourth launch is not in the scenario.
    result, _ = run(AUTO / "isw-auto-compaction-then-resume.yaml", f"{RELEASE}+claude-code@{OLDER}+pin", tmp_path)
    assert result.status == "error"
    assert "made 4 launches where the scenario has 3 steps; launch 4 was not foreseen: claude --resume" in result.error
    assert all(c.verdict == "error" for c in result.checks)


def test_a_scenario_the_launcher_cannot_express_is_refused_before_anything_runs(tmp_path):
    scenario = tmp_path / "edits.yaml"
    scenario.write_text(
        'name: edits\nappend: "T"\nsteps:\n  - launch: {prompt: "Hi", reply: "x"}\n'
        '  - resume: {prompt: "More", reply: "y", edit: {a.txt: "1"}}\nchecks: [launch_appended_exactly_once]\n'
    )
    result, journal = run(scenario, f"{RELEASE}+claude-code@{PINNED}+pin", tmp_path)
    assert result.status == CANNOT_EXPRESS
    assert "inspect eval: step 2 (resume): files changed between launches" in result.cannot_express
    assert not journal.exists() or journal.read_text() == ""


# ---------------------------------------------------------------------------------------- the fix, from git


def test_the_fix_commit_passes_the_text_on_every_launch_and_the_verdict_flips(tmp_path, fix_repo):
    scenario = SUITE / "isw-wrong-answer-compact-resume.yaml"
    append = load_scenario(scenario).append
    result, journal = run(scenario, f"{RELEASE}+claude-code@{OLDER}+pin+checkout={fix_repo}#every-launch-fix", tmp_path / "fix")
    assert_as_expected(result)
    assert verdicts(result)["launch_appended_exactly_once"] == "pass"
    assert verdicts(result)["appended_exactly_once"] == "pass"
    assert verdicts(result)["launch_prompt_from_caller"] == "pass"  # never Claude Code's own prompt appended again
    assert text_per_launch(journal, append) == [1, 1, 1, 1]
    assert text_per_main_request(journal, append) == [(1, 1), (2, 1), (4, 1)]
    # The same repository at the release commit fails as the release does: the checkout is what changed.
    released, _ = run(scenario, f"{RELEASE}+claude-code@{OLDER}+pin+checkout={fix_repo}#release", tmp_path / "release")
    assert_as_expected(released)
    assert verdicts(released)["launch_appended_exactly_once"] == "fail"


def test_the_measured_release_is_installed_with_the_versions_it_was_measured_with():
    (target,) = resolve_target(f"{RELEASE}+claude-code@{PINNED}+pin")
    mark = (target.executor.launcher.venv.parent / ".complete").read_text().split()
    assert mark == [f"inspect-swe=={MEASURED_VERSION}", "inspect-ai==0.3.285", "anthropic==2.14.0"]
    assert (target.executor.launcher.venv / "bin" / "inspect").is_file()
