"""Each step a call in the harness process: the in-process executor, and the frame every such call shares.

The pydantic-ai and reference-agent in-process modes each call their agent their
own way (harness/pydantic_ai/in_process.py, harness/reference_agent/in_process.py);
InProcessSteps carries out a step by that call instead of a process, and the
run's fake API gets no HTTP server: the agent's requests reach it through respx
at IN_PROCESS_BASE_URL (harness/execution/base.py). Both calls need the same
frame so the runner sees what a process would have left: this process's
environment and working directory as the step's while it runs, stdout and
stderr captured into the step's log files, the sending pid told to the fake
API, and a ProcessOutcome at the end.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Mapping

from harness.execution.base import OneStepAtATime, StepCall, StepSession
from harness.fakeapi.core import FakeModelAPI
from harness.isolation.netns import StepIsolation
from harness.isolation.process import ProcessOutcome

# A step's agent called in this process: the step as the session built it, the run's fake API -> its outcome.
InProcessCall = Callable[[StepCall, FakeModelAPI], ProcessOutcome]


@dataclass(frozen=True)
class InProcessSteps(OneStepAtATime):
    """Each step `call`, in the harness process: no subprocess, no network namespace, no HTTP server.

    `call` is a module-level function, so the Target holding this executor pickles as before.
    """

    call: InProcessCall
    in_harness_process = True

    def serve(self, api: FakeModelAPI) -> None:
        return None

    def carry_out(self, call: StepCall, session: StepSession) -> tuple[StepIsolation, ProcessOutcome]:
        isolation = StepIsolation(argv=call.argv, notes=["ran in the harness process: no subprocess, no network namespace"])
        outcome = self.call(call, session.api)
        return isolation, outcome


@contextlib.contextmanager
def sandboxed(env: Mapping[str, str], cwd: Path) -> Iterator[None]:
    """This process's environment and working directory as a step's, restored afterwards.

    Process-global: only one sandboxed call may run at a time in a process (the
    runner runs steps one after another; pytest-xdist workers are processes).
    """
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    _become(saved_env, env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        _become(dict(os.environ), saved_env)


def _become(current: Mapping[str, str], wanted: Mapping[str, str]) -> None:
    """os.environ made equal to `wanted`, touching only the variables that differ.

    Clearing and refilling it did the same with a putenv or unsetenv for every variable, twice per
    step: about 4% of an in-process reference step, where only a few variables differ.
    """
    for name in [name for name in current if name not in wanted]:
        del os.environ[name]
    for name, value in wanted.items():
        if current.get(name) != value:
            os.environ[name] = value


class CapturedStep:
    """One in-process step's frame: started when made, `running` around the call, `outcome` at the end."""

    def __init__(self, api: FakeModelAPI, stdout_path: Path, stderr_path: Path):
        self.started = time.monotonic()
        self.pid = os.getpid()
        api.set_step_pid(self.pid)  # the agent is this process
        self.stdout_path, self.stderr_path = stdout_path, stderr_path
        self.out, self.err = io.StringIO(), io.StringIO()
        self.exit_code: int | None = 0
        self.timed_out = False
        self.launch_error: str | None = None

    @contextlib.contextmanager
    def running(self, env: Mapping[str, str], cwd: Path) -> Iterator[None]:
        with sandboxed(env, cwd), contextlib.redirect_stdout(self.out), contextlib.redirect_stderr(self.err):
            yield

    def expired(self, timeout_s: float) -> None:
        self.exit_code, self.timed_out = None, True
        self.launch_error = f"timed out after {timeout_s:g}s; the in-process run was cancelled"
        print(f"in-process step cancelled after {timeout_s:g}s", file=self.err)

    def crashed(self) -> None:
        """An uncaught exception, as the interpreter reports it: exit 1 and the traceback on stderr."""
        self.exit_code = 1
        traceback.print_exc(file=self.err)

    def outcome(self) -> ProcessOutcome:
        self.stdout_path.write_text(self.out.getvalue(), encoding="utf-8")
        self.stderr_path.write_text(self.err.getvalue(), encoding="utf-8")
        return ProcessOutcome(self.exit_code, time.monotonic() - self.started, self.pid,
                              timed_out=self.timed_out, launch_error=self.launch_error)
