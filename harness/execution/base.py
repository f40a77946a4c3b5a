"""The StepExecutor protocol: how a run session's steps are carried out, chosen once per target.

A target's steps run one of three ways: one fresh subprocess per step
(subprocess.py), a call in the harness process whose requests reach the fake
API through respx (in_process.py), or one launcher process that starts the
agent binary once per step (launcher.py). A target family picks one when it
builds the Target, as an httpx client is given its transport; the run session,
the runner and the explorer only ask the executor, never which kind it is.

The protocol sits below the run session it serves (harness/run/session.py):
an executor sees the session only as a StepSession, what this module says
of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

from harness.execution.terminal_ui import TerminalUI
from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.server import FakeAPIServer
from harness.isolation.netns import StepIsolation
from harness.isolation.process import ProcessOutcome
from harness.isolation.workspace import Workspace
from harness.journal.launches import LaunchJournal
from harness.journal.requests import Journal
from harness.results import StepResult
from harness.scenario.model import Scenario, Step

# Where in-process agents are told the API is: `.invalid` never resolves, so a request that escaped respx fails.
IN_PROCESS_BASE_URL = "http://fake-api.in-process.invalid"


@dataclass(frozen=True)
class StepCall:
    """One step as the run session built it from the target: the process to start, or the call made in its place."""

    argv: list[str]
    env: Mapping[str, str]
    cwd: Path
    timeout_s: float
    stdout_path: Path
    stderr_path: Path
    label: str  # what the step's process is called in a message about it ("the agent of step 2 (resume)")
    step: Step | None = None  # the scenario step it carries out
    terminal: TerminalUI | None = None  # set: an interactive step, run in a pty as the family's UI declares (pty.py)


class SessionTarget(Protocol):
    """What an executor reads of the session's target (harness/targets/base.py's Target)."""

    @property
    def name(self) -> str: ...
    @property
    def timeout_s(self) -> float: ...


class StepSession(Protocol):
    """What an executor uses of the run session: its scenario, fake API, journals, workspace and steps."""

    scenario: Scenario
    api: FakeModelAPI
    journal: Journal
    launches: LaunchJournal
    server: FakeAPIServer | None
    workspace: Workspace

    @property
    def target(self) -> SessionTarget: ...
    def run_step(self, step: Step) -> StepResult: ...  # one step built from the target and carried out
    def record_error(self) -> str | None: ...  # why the run's record can no longer be trusted, or None


class StepExecutor(Protocol):
    """How the steps of a run session are carried out; held by the Target, chosen by its family."""

    # The agent is a call in the harness process: no subprocess, a cheap step (the explorer keeps its workspace
    # in memory and its working directory a plain folder, harness/explore/machine.py).
    in_harness_process: bool

    def serve(self, api: FakeModelAPI) -> FakeAPIServer | None:
        """The HTTP server the run's fake API listens on, started; None where the agent reaches it through respx."""
        ...

    def describe(self, commands: Mapping[str, Sequence[str]]) -> str:
        """What runs the target's steps, for `harness install`; `commands` are the target's argv templates."""
        ...

    def why_not_one_at_a_time(self) -> str | None:
        """Why the next step cannot be chosen after the last (`harness explore` needs that), or None."""
        ...

    def cannot_express(self, scenario: Scenario) -> str | None:
        """What in the scenario this way of running cannot carry out (the run is "cannot express", not run), or None."""
        ...

    def run_steps(self, session: StepSession, on_step: Callable[[StepResult], None]) -> str | None:
        """Every step of the session's scenario in order, each reported as it ends; the run's error, or None."""
        ...


class OneStepAtATime:
    """An executor whose steps are taken one by one: the session builds each, `carry_out` runs it.

    The run stops at the first step that fails to complete, and after a step whose record could not be kept
    (what the next steps send could not be kept either).
    """

    in_harness_process = False
    # The step's process starts the agent binary itself and this executor records those launches (harness/execution/
    # recorded_launches.py); otherwise the session records the step's own argv as the launch.
    records_launches = False

    def describe(self, commands: Mapping[str, Sequence[str]]) -> str:
        return commands["launch"][0]

    def why_not_one_at_a_time(self) -> str | None:
        return None

    def cannot_express(self, scenario: Scenario) -> str | None:
        return None  # the target's commands say what it can express (Target.cannot_express_reason)

    def run_steps(self, session: StepSession, on_step: Callable[[StepResult], None]) -> str | None:
        for step in session.scenario.steps:
            result = session.run_step(step)
            on_step(result)
            if result.error:
                return f"step {step.index} ({step.kind}): {result.error}"
            if session.record_error() is not None:
                return None  # the session's record error is the run's, named by the runner
        return None

    def carry_out(self, call: StepCall, session: StepSession) -> tuple[StepIsolation, ProcessOutcome]:
        """Run one built step, between the session's begin_step and end_step: how it was isolated, how it ended."""
        raise NotImplementedError
