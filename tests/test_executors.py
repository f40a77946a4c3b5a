"""A target's steps are carried out by the executor its family chose, and only through the StepExecutor protocol.

Each family picks one executor when it builds the Target (a fresh subprocess,
a call in the harness process, one launcher process); the run session, the
runner, the explorer and `harness install` ask that executor and never which
kind it is. Here a target with an executor of the test's own is driven by
run_scenario through the protocol alone: a runner or session that went its own
way (a server started regardless, a step run as a subprocess) fails these.
"""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

import harness.targets
from harness import cli
from harness.errors import InputError
from harness.execution.base import IN_PROCESS_BASE_URL, OneStepAtATime
from harness.execution.in_process import InProcessSteps
from harness.execution.launcher import LauncherSteps
from harness.execution.recorded_launches import RecordedLaunchSteps
from harness.execution.subprocess import SubprocessSteps
from harness.explore.search import Budget, explore_target
from harness.inspect_swe.launcher import InspectLauncher
from harness.pydantic_ai import in_process as pydantic_ai_in_process
from harness.reference_agent import in_process as reference_in_process
from harness.results import ERROR, StepResult
from harness.run.runner import run_scenario
from harness.run.session import LiveRun
from harness.scenario.reader import scenario_from_text
from harness.targets import agent_sdk, claude_agent_sdk_ts, inspect_swe, pydantic_ai, resolve_target

REPO = Path(__file__).resolve().parent.parent
PYDANTIC_AI_EXAMPLE = "examples/pydantic-ai-agent/agent.py"
SCENARIO = scenario_from_text("""\
name: two-steps
append: "Appended rules: never delete files."
checks: [appended_exactly_once]
steps:
  - launch: {prompt: "Remember 17.", reply: "Noted."}
  - resume: {prompt: "Add 5.", reply: "22."}
""")


class Spying(OneStepAtATime):
    """The in-process reference agent's steps, every call the session and the runner make of the protocol noted."""

    in_harness_process = True

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.sessions: list = []

    def serve(self, api):
        self.calls.append(("serve", api))
        return None

    def run_steps(self, session, on_step):
        self.calls.append(("run_steps", session))
        self.sessions.append(session)
        return super().run_steps(session, on_step)

    def carry_out(self, call, session):
        self.calls.append(("carry_out", call))
        return InProcessSteps(reference_in_process.run_in_process).carry_out(call, session)


class WholeRun:
    """An executor that takes every step at once, as a launcher does, and says how the run went."""

    in_harness_process = False

    def serve(self, api):
        return None

    def describe(self, commands):
        return "the whole run at once"

    def why_not_one_at_a_time(self):
        return "runs every step in one go"

    def cannot_express(self, scenario):
        return None

    def run_steps(self, session, on_step):
        for step in session.scenario.steps:
            on_step(StepResult(index=step.index, kind=step.kind, notes=[f"taken by {session.target.name}"]))
        return "the whole run went wrong, as its executor says"


def reference(spec: str = "reference+in-process"):
    (target,) = resolve_target(spec)
    return target


def test_run_scenario_asks_the_targets_executor_for_the_server_the_run_and_each_step():
    spy = Spying()
    target = dataclasses.replace(reference(), name="reference-spied", executor=spy)
    result = run_scenario(SCENARIO, target)
    assert result.error is None and [check.verdict for check in result.checks] == ["pass"]
    assert [kind for kind, _ in spy.calls] == ["serve", "run_steps", "carry_out", "carry_out"]
    (session,) = spy.sessions
    assert spy.calls[0][1] is session.api and session.server is None  # serve said: no HTTP server
    calls = [call for kind, call in spy.calls if kind == "carry_out"]
    assert [call.argv for call in calls] == [step.argv for step in result.steps]
    assert all(call.argv[0] == reference_in_process.ARGV0 for call in calls)  # built from the target's commands
    assert [call.label for call in calls] == ["the agent of step 1 (launch)", "the agent of step 2 (resume)"]
    assert "ran in the harness process: no subprocess, no network namespace" in result.steps[0].notes


def test_a_run_is_what_its_executor_reports_and_returns():
    target = dataclasses.replace(reference("reference"), name="whole", executor=WholeRun())
    result = run_scenario(SCENARIO, target)
    assert [(step.index, step.notes) for step in result.steps] == [(1, ["taken by whole"]), (2, ["taken by whole"])]
    assert result.status == ERROR and result.error == "the whole run went wrong, as its executor says"
    assert all(check.message.startswith("not judged: the run did not complete") for check in result.checks)


def test_explore_asks_the_executor_whether_steps_can_be_chosen_one_at_a_time():
    target = dataclasses.replace(reference(), name="whole", executor=WholeRun())
    with pytest.raises(InputError, match=r"target 'whole' runs every step in one go; explore needs a fresh process per"):
        explore_target(target, Budget())


def test_the_session_serves_the_fake_api_as_the_executor_says():
    with LiveRun(SCENARIO, reference()) as run:
        assert run.server is None and run.base_url == IN_PROCESS_BASE_URL
    with LiveRun(SCENARIO, reference("reference")) as run:
        assert run.server is not None and run.base_url == run.server.base_url


def test_each_family_chooses_its_executor_once_and_the_target_still_pickles(tmp_path):
    pydantic_ai_spec = f"pydantic-ai:{PYDANTIC_AI_EXAMPLE}:persisted_agent+anthropic"
    launcher = InspectLauncher(venv=tmp_path / "venv", claude=("/opt/claude",), pin=True)
    chosen = {
        "reference": (reference("reference"), SubprocessSteps()),
        "reference+in-process": (reference(), InProcessSteps(reference_in_process.run_in_process)),
        "pydantic-ai": (pydantic_ai.targets(pydantic_ai_spec, cwd=REPO)[0], SubprocessSteps()),
        "pydantic-ai+in-process": (pydantic_ai.targets(pydantic_ai_spec + "+in-process", cwd=REPO)[0],
                                   InProcessSteps(pydantic_ai_in_process.run_in_process)),
        "inspect-swe": (inspect_swe.build("0.2.72", "2.1.332", "pin", tmp_path / "venv", ("/opt/claude",), None, None,
                                          None), LauncherSteps(launcher)),
        "claude-agent-sdk-ts": (agent_sdk.build(claude_agent_sdk_ts.FAMILY, "0.3.328", "2.1.328", "append-never",
                                                ("node", "step.mjs"), ("/opt/claude",)),
                                RecordedLaunchSteps(binary="claude", real=("/opt/claude",), relay_stdin=True)),
    }
    for family, (target, executor) in chosen.items():
        assert target.executor == executor, family
        assert pickle.loads(pickle.dumps(target)) == target, family  # run/pool.py's workers may get one
    assert [t.executor.in_harness_process for t, _ in chosen.values()] == [False, True, False, True, False, False]
    assert [t.executor.why_not_one_at_a_time() for t, _ in chosen.values()] == [
        None, None, None, None, "runs a whole scenario in one launcher process", None]
    assert [t.executor.records_launches for name, (t, _) in chosen.items() if name != "inspect-swe"] == [
        False, False, False, False, True]


def test_harness_install_says_what_the_executor_runs(capsys, monkeypatch, tmp_path):
    launcher = InspectLauncher(venv=tmp_path / "venv", claude=("/opt/claude",), pin=True)
    assert LauncherSteps(launcher).describe({}) == f"{tmp_path / 'venv' / 'bin' / 'inspect'} eval, launching /opt/claude"
    assert cli.main(["install", "reference", "reference+in-process"]) == 0
    assert capsys.readouterr().out.splitlines() == ["reference: {python}",
                                                    f"reference+in-process: {reference_in_process.ARGV0}"]
    whole = dataclasses.replace(reference("reference"), name="whole", executor=WholeRun())
    monkeypatch.setattr(harness.targets, "resolve_target", lambda spec: [whole])
    assert cli.main(["install", "whole"]) == 0
    assert capsys.readouterr().out.splitlines() == ["whole: the whole run at once"]
