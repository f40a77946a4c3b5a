"""Each step one fresh process of the agent, in a network namespace of its own: the executor most targets use.

The run session builds the step's argv, environment and log files from the
target (harness/run/session.py); this starts that process against the run's
own fake API server, reached at the same base URL inside the step's namespace
and nothing else (harness/isolation/netns.py; one namespace for all the run's
steps where it can, harness/isolation/run_netns.py), and waits for it as
harness/isolation/process.py holds it. An interactive step is the same
process with a pseudo-terminal for its stdio, driven by pty.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.execution.base import OneStepAtATime, StepCall, StepSession
from harness.execution.pty import run_in_terminal
from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.server import FakeAPIServer
from harness.isolation import netns, run_netns
from harness.isolation.process import ProcessOutcome, run_process


class _RunServer(FakeAPIServer):
    """The run's fake API server: the network namespace the run's steps shared goes when it stops."""

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            run_netns.release(self)


@dataclass(frozen=True)
class SubprocessSteps(OneStepAtATime):
    """One fresh subprocess per step: the default of every Target."""

    def serve(self, api: FakeModelAPI) -> FakeAPIServer:
        server = _RunServer(api).__enter__()
        run_netns.share_per_run(server)  # the run's steps share one network namespace, made at the first
        return server

    def carry_out(self, call: StepCall, session: StepSession) -> tuple[netns.StepIsolation, ProcessOutcome]:
        if call.terminal is not None:  # an interactive step: the same process, its UI in a pty and driven
            return run_in_terminal(call, session, call.terminal)
        with netns.isolated_step(call.argv, session.server) as isolation:
            outcome = run_process(
                isolation.argv, call.env, call.cwd, call.timeout_s, call.stdout_path, call.stderr_path,
                on_start=session.api.set_step_pid, pass_fds=isolation.pass_fds, label=call.label,
                netns=isolation.netns,
            )
        return isolation, outcome
