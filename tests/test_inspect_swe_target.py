"""The inspect-swe target without running an eval: names, the plan a scenario becomes, refusals, the eval log read back.

The real evals are in test_inspect_swe.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.inspect_swe.launcher import InspectLauncher, has_pin_filter, package_root
from harness.inspect_swe.plan import COMPACT_PROMPT, plan_of
from harness.scenario.reader import scenario_from_text
from harness.targets import claude_code, expectation_name_problem
from harness.targets.inspect_swe import parse_spec
from harness.isolation.workspace import Workspace

APPEND = "Task prompt: answer with one number."


def scenario(steps: str, extra: str = ""):
    return scenario_from_text(f"name: s\nappend: \"{APPEND}\"\n{extra}steps:\n{steps}\nchecks: [launch_appended_exactly_once]\n")


# --------------------------------------------------------------------------- names


def test_a_bare_name_means_the_newest_release_with_the_pinned_claude_code_and_the_pin_on():
    assert parse_spec("inspect-swe") == ("latest", claude_code.PINNED_VERSION, ["pin"], None, None)


def test_every_part_of_a_name(tmp_path):
    version, claude, pins, checkout, revision = parse_spec(f"inspect-swe@0.2.72+claude-code@2.1.236+*+checkout={tmp_path}#fix")
    assert (version, claude, pins, checkout, revision) == ("0.2.72", "2.1.236", ["pin", "no-pin"], tmp_path.resolve(), "fix")
    assert parse_spec("inspect-swe@latest+no-pin")[2] == ["no-pin"]


@pytest.mark.parametrize("spec, message", [
    ("inspect-swe@0.2", "expected inspect-swe[@VERSION|@latest]"),
    ("inspect-swe+pinned", "unknown part 'pinned'"),
    ("inspect-swe+claude-code@2.1", "unknown part 'claude-code@2.1'"),
    ("inspect-swe+checkout=/no/such/folder", "checkout folder /no/such/folder does not exist"),
    ("inspect-swe+checkout=", "+checkout= needs a folder"),
])
def test_bad_names_say_what_is_wrong(spec, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("|", r"\|").replace("+", r"\+")):
        parse_spec(spec)


def test_expectations_must_name_release_claude_code_and_pin():
    assert expectation_name_problem("inspect-swe@0.2.72+claude-code@2.1.236+pin") is None
    assert "always named" in expectation_name_problem("inspect-swe@0.2.72+pin")
    assert "always named" in expectation_name_problem("inspect-swe@latest+claude-code@2.1.236+pin")
    assert expectation_name_problem("inspect-swe@*+claude-code@2.1.236+pin") is None  # globs are matched later


# --------------------------------------------------------------------------- the plan


def test_each_step_kind_becomes_what_claude_code_can_be_made_to_do():
    plan, problems = plan_of(scenario("""
  - launch:  {prompt: "What is 6*7?", reply: "41"}
  - retry:   {prompt: "Incorrect. Again.", reply: "42"}
  - resume:
      prompt: "And 7*8?"
      error: {status: 400, type: invalid_request_error, message: "boom"}
  - retry:   {prompt: "And 7*8?", reply: "56"}
  - compact: {summary: "S"}
  - resume:  {prompt: "And 2+2?", reply: "5"}
  - retry:   {prompt: "Wrong again.", reply: "4"}
"""), pin=False, cwd="/w")
    assert problems == []
    assert plan.system == APPEND and plan.pin is False and plan.cwd == "/w"
    assert plan.turns == ["What is 6*7?", "And 7*8?", COMPACT_PROMPT, "And 2+2?"]
    assert plan.incorrect_messages == ["Incorrect. Again.", "Wrong again."]
    assert plan.wrong_answers == ["41", "5"]
    assert plan.attempts == 2


@pytest.mark.parametrize("steps, extra, problem", [
    ('  - launch: {prompt: "Hi"}\n  - retry: {prompt: "Again", reply: "y"}', "", "needs a scripted text reply"),
    ('  - launch: {prompt: "Hi", error: {status: 400, type: t, message: m}}\n  - retry: {prompt: "Other", reply: "y"}', "",
     "re-sends the failed step's prompt 'Hi', not 'Other'"),
    ('  - launch: {prompt: "Hi", reply: "x"}\n  - retry: {prompt: "Again", reply: "y"}\n  - resume: {prompt: "More", reply: "x"}', "",
     "its reply 'x' is also a wrong answer"),
    ('  - launch: {prompt: "Hi", reply: "x"}\n  - resume: {prompt: "More", reply: "y", edit: {a.txt: "1"}}', "", "files changed between launches"),
    ('  - launch: {prompt: "Hi", reply: "x", temporary: "T"}', "", "temporary text"),
])
def test_what_claude_code_cannot_be_made_to_do_is_refused_with_the_reason(steps, extra, problem):
    _, problems = plan_of(scenario(steps, extra), pin=True, cwd="/w")
    assert any(problem in p for p in problems), problems


# --------------------------------------------------------------------------- the launcher's files and log


def launcher(tmp_path: Path, **kwargs) -> InspectLauncher:
    return InspectLauncher(venv=tmp_path / "venv", claude=("/bin/claude",), pin=True, **kwargs)


def test_the_task_and_its_plan_are_written_and_inspect_points_at_the_fake_api(tmp_path):
    workspace = Workspace.create("t", tmp_path)
    call = launcher(tmp_path).prepare(scenario('  - launch: {prompt: "Hi", reply: "x"}'), workspace, "http://127.0.0.1:5")
    folder = workspace.root / "inspect"
    assert json.loads((folder / "plan.json").read_text())["turns"] == ["Hi"]
    compile((folder / "task.py").read_text(), "task.py", "exec")
    assert call.cwd == folder and call.argv[1:3] == ["eval", "task.py"]
    assert call.argv[call.argv.index("--model-base-url") + 1] == "http://127.0.0.1:5"
    assert call.private_dirs == {"/var/tmp": workspace.root / "var-tmp"} and (workspace.root / "var-tmp").is_dir()
    assert "PYTHONPATH" not in call.env


def test_a_checkout_goes_first_on_pythonpath(tmp_path):
    (tmp_path / "repo" / "src" / "inspect_swe").mkdir(parents=True)
    (tmp_path / "repo" / "src" / "inspect_swe" / "__init__.py").write_text("")
    workspace = Workspace.create("t", tmp_path)
    call = launcher(tmp_path, checkout=tmp_path / "repo").prepare(scenario('  - launch: {prompt: "Hi", reply: "x"}'), workspace, "http://x")
    assert call.env["PYTHONPATH"] == str(tmp_path / "repo" / "src")
    with pytest.raises(InputError, match="holds no inspect_swe package"):
        package_root(tmp_path)


@pytest.mark.parametrize("log, error, note", [
    (None, "the eval wrote no log", None),
    ("{not json", "cannot read the eval log", None),
    ({"status": "error", "error": {"message": "Boom happened\ntraceback"}, "samples": []}, "the eval ended with status error: Boom happened", None),
    ({"status": "success", "samples": [{"error": {"message": "RuntimeError('x')"}, "scores": {}}]}, "the sample failed: RuntimeError('x')", None),
    ({"status": "success", "samples": [{"scores": {"scripted_answers": {"value": "C", "answer": "42"}}}]}, None,
     "sample scored C by scripted_answers (answer '42')"),
])
def test_the_eval_log_is_read_back_as_the_launchers_own_verdict(tmp_path, log, error, note):
    workspace = Workspace.create("t", tmp_path)
    logs = workspace.root / "inspect" / "logs"
    logs.mkdir(parents=True)
    if log is not None:
        (logs / "x.json").write_text(log if isinstance(log, str) else json.dumps(log))
    told = launcher(tmp_path).outcome(workspace)
    assert (told.error is None) == (error is None)
    if error:
        assert error in told.error
    if note:
        assert note in told.notes


def test_a_workspace_the_private_var_tmp_would_hide_is_refused(tmp_path):
    workspace = Workspace(Path("/var/tmp/harness-run-x"))
    with pytest.raises(InputError, match="is under /var/tmp, which the eval gets a private copy of"):
        launcher(tmp_path).prepare(scenario('  - launch: {prompt: "Hi", reply: "x"}'), workspace, "http://x")


# --------------------------------------------------------------------------- a release from before the pin

WITH_PIN = "from .systemprompt import pin_system_prompt_filter\n"
WITHOUT_PIN = "def claude_code(system_prompt=None):\n    pass\n"


def launcher_module(root: Path, text: str) -> Path:
    module = root / "inspect_swe" / "_claude_code" / "claude_code.py"
    module.parent.mkdir(parents=True, exist_ok=True)
    (root / "inspect_swe" / "__init__.py").write_text("")
    module.write_text(text)
    return root


ONE_LAUNCH = '  - launch: {prompt: "Hi", reply: "x"}'


@pytest.mark.parametrize("text, pin_refused", [(WITHOUT_PIN, True), (WITH_PIN, False)])
def test_pin_on_a_release_without_the_pin_filter_cannot_be_expressed(tmp_path, text, pin_refused):
    """Read from the installed module, as 0.2.70 (without) and 0.2.71 (with) ship it; +no-pin runs either."""
    launcher_module(tmp_path / "venv" / "lib" / "python3.11" / "site-packages", text)
    problems = launcher(tmp_path).problems(scenario(ONE_LAUNCH))
    assert any(p.startswith("+pin: this inspect_swe has no bridge-side system-prompt pin") for p in problems) == pin_refused
    assert InspectLauncher(venv=tmp_path / "venv", claude=("/bin/claude",), pin=False).problems(scenario(ONE_LAUNCH)) == []
    codex = InspectLauncher(venv=tmp_path / "venv", claude=("/bin/codex",), pin=True, agent="codex_cli")
    assert not any(p.startswith("+pin") for p in codex.problems(scenario(ONE_LAUNCH)))  # the pin is claude_code()'s alone


def test_the_pin_is_looked_for_in_the_checkout_and_revision_that_will_run(tmp_path):
    import subprocess

    repo = launcher_module(tmp_path / "repo" / "src", WITHOUT_PIN).parent
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "before"], check=True)
    before = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    launcher_module(repo / "src", WITH_PIN)
    subprocess.run([*git, "commit", "-qam", "pin"], check=True)
    after = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert has_pin_filter(tmp_path / "no-venv", repo, before) is False
    assert has_pin_filter(tmp_path / "no-venv", repo, after) is True
    assert has_pin_filter(tmp_path / "no-venv", repo, None) is True  # the working tree
    assert has_pin_filter(tmp_path / "no-venv", None, None) is None  # nothing to read: not refused on a guess
