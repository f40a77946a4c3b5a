"""One fresh process per step that starts the agent binary itself: an SDK's `query()` launching the agent CLI.

The Claude Agent SDKs are launchers inside the caller's process: each step is
a fresh Python or node process whose one `query()` decides the CLI's argv
(which system-prompt flag, `--resume=ID`, `--fork-session`) and starts it. The
harness starts the step's process; what the launch checks must judge is what
the SDK passed the CLI. So the step's process is told to start the agent
through the recording shim (harness/isolation/launch_shim.py), whose path it
finds in an environment variable, and every launch the shim reports while the
step runs is journaled as that step's. The session then records no launch of
its own for the step (`records_launches`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.execution.base import StepCall, StepSession
from harness.execution.subprocess import SubprocessSteps
from harness.fakeapi.launch_control import CONTROL_PATH, LaunchControl
from harness.isolation import netns
from harness.isolation.launch_shim import write_shim
from harness.isolation.process import ProcessOutcome

SHIM_ENV = "HARNESS_AGENT_BINARY"  # where a step's process finds the agent binary to start (the recording shim)


@dataclass(frozen=True)
class RecordedLaunchSteps(SubprocessSteps):
    """A fresh subprocess per step, as SubprocessSteps runs it, which launches `binary` (really `real`) through the shim."""

    binary: str  # the agent binary's name, as the launch journal shows it
    real: tuple[str, ...]
    relay_stdin: bool = False  # the launcher configures the agent over stdin: record its `initialize` requests too
    records_launches = True

    def carry_out(self, call: StepCall, session: StepSession) -> tuple[netns.StepIsolation, ProcessOutcome]:
        step = call.step
        if step is None or session.server is None:
            raise ValueError("a step whose launches are recorded needs its scenario step and the run's HTTP server")
        shim = write_shim(session.workspace.root / "launch-bin", self.binary, list(self.real),
                          session.server.base_url + CONTROL_PATH, relay_stdin=self.relay_stdin)
        session.api.control = LaunchControl(session.launches, lambda: (step.index, step.kind)).handle
        try:
            isolation, outcome = super().carry_out(replace(call, env={**call.env, SHIM_ENV: str(shim)}), session)
        finally:
            session.api.control = None
        launched = [launch for launch in session.launches.launches() if launch.step == step.index]
        if not launched and not outcome.launch_error and not outcome.timed_out:
            outcome.notes.append(f"the step's process never started {self.binary} through the recording shim")
        return isolation, outcome

    def describe(self, commands) -> str:
        return f"{commands['launch'][0]} …, launching {self.real[-1]}"
