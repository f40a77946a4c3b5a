"""Each step one fresh process of the agent, in a network namespace of its own: the executor most targets use.

The run session builds the step's argv, environment and log files from the
target (harness/run/session.py); this starts that process against the run's
own fake API server, reached at the same base URL inside the step's namespace
and nothing else (harness/isolation/netns.py), and waits for it as
harness/isolation/process.py holds it. An interactive step is the same
process with a pseudo-terminal for its stdio, driven by pty.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.execution.base import OneStepAtATime, StepCall, StepSession
from harness.execution.pty import run_in_terminal
from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.server import FakeAPIServer
from harness.isolation import netns
from harness.isolation.process import ProcessOutcome, run_process


@dataclass(frozen=True)
class SubprocessSteps(OneStepAtATime):
    """One fresh subprocess per step: the default of every Target."""

    def serve(self, api: FakeModelAPI) -> FakeAPIServer:
        return FakeAPIServer(api).__enter__()

    def carry_out(self, call: StepCall, session: StepSession) -> tuple[netns.StepIsolation, ProcessOutcome]:
        if call.terminal is not None:  # an interactive step: the same process, its UI in a pty and driven
            return run_in_terminal(call, session, call.terminal)
        with netns.isolated_step(call.argv, session.server) as isolation:
            outcome = run_process(
                isolation.argv, call.env, call.cwd, call.timeout_s, call.stdout_path, call.stderr_path,
                on_start=session.api.set_step_pid, pass_fds=isolation.pass_fds, label=call.label,
            )
        return isolation, outcome
