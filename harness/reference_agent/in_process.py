"""A reference-agent step inside the harness process: its command line, with no subprocess and no socket.

The run session calls `run_in_process` where it would start a process (the target's
executor is InProcessSteps(run_in_process), harness/execution/in_process.py),
with the argv, environment, working directory, timeout and log files it would have
used, and between the same `api.begin_step`/`end_step`, so the journal attributes
requests to steps exactly as in subprocess mode. The step is the agent's own
`cli.main`, called with the same flags, with this process's environment and
working directory swapped for the step's while it runs, its stdout and stderr
captured into the step's log files, and its HTTP connection replaced by one
over a sync httpx.Client routed through respx to the same FakeModelAPI
(httpx_connection.py, harness/fakeapi/inprocess.py).

What keeps the fresh-process guarantee: `cli.main` builds everything a process
would (config, client, ProcessContext with its clock and id minting, the
session object) on every call, from the flags and from what the previous step
saved under HOME; the agent's modules keep no state of their own between calls
(the tests compare their globals before and after a run).

No socket: the runner gives in-process steps BASE_URL, an address no server
answers (the `.invalid` top-level domain never resolves; harness/execution/base.py).
A caller that hands the step the address of a live fake API server instead
gets the same: every environment value naming that server is pointed at
BASE_URL. The router knows only BASE_URL: a request anywhere else, a live
server included, is refused by respx and fails as a refused connection would.

What this mode cannot do as a process would:
- a timeout ends the step only where it waits on the fake API (a slow first
  byte, or the next request): the agent's own code cannot be interrupted;
- exit codes are the CLI's (`AgentError.exit_code`, argparse's 2, `SystemExit`'s
  code) and 1 for an uncaught exception with its traceback on stderr, as the
  interpreter would; stdout and stderr are what went through sys.stdout and
  sys.stderr.
"""

from __future__ import annotations

import io
from typing import Mapping

from harness.fakeapi.core import FakeModelAPI
from harness.execution.base import IN_PROCESS_BASE_URL, StepCall
from harness.execution.in_process import CapturedStep
from harness.isolation.process import ProcessOutcome

ARGV0 = "in-process:harness.reference_agent"  # first argv item of an in-process step, shown in reports
BASE_URL = IN_PROCESS_BASE_URL  # where in-process steps send requests: only the respx router answers


def step_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The step's environment with every value naming a live fake API pointed at BASE_URL instead."""
    live = env.get("ANTHROPIC_BASE_URL")
    if not live or live.rstrip("/") == BASE_URL:
        return dict(env)  # nothing to redirect; the CLI reports the missing variable as it would
    live = live.rstrip("/")
    return {name: BASE_URL + value[len(live):] if value == live or value.startswith(live + "/") else value
            for name, value in env.items()}


def run_in_process(call: StepCall, api: FakeModelAPI) -> ProcessOutcome:
    """One step, as run_process would run `python -m harness.reference_agent ARGS`, minus the process."""
    import httpx

    from harness.fakeapi.inprocess import StepExpired, SyncRespxTransport, router_for
    from harness.reference_agent import cli
    from harness.reference_agent.httpx_connection import HttpxConnection

    step = CapturedStep(api, call.stdout_path, call.stderr_path)
    if not call.argv or call.argv[0] != ARGV0:
        return ProcessOutcome(None, 0.0, step.pid, launch_error=f"not an in-process reference-agent command: {list(call.argv)!r}")
    step_env = step_environment(call.env)
    transport = SyncRespxTransport(router_for(api, BASE_URL), deadline=step.started + call.timeout_s)
    with httpx.Client(transport=transport, trust_env=False) as http, step.running(step_env, call.cwd):

        def connect(scheme: str, host: str, port: int | None, timeout: float) -> HttpxConnection:
            return HttpxConnection(http, scheme, host, port, timeout)

        try:
            step.exit_code = cli.main(list(call.argv[1:]), step_env, connect=connect)
        except SystemExit as exc:  # argparse, or the agent itself
            step.exit_code = _system_exit_code(exc.code, step.err)
        except StepExpired:
            step.expired(call.timeout_s)
        except Exception:  # the interpreter's behaviour for an uncaught exception
            step.crashed()
    return step.outcome()


def _system_exit_code(code: object, err: io.StringIO) -> int:
    """What the interpreter makes of `raise SystemExit(code)`: None is 0, an int itself, anything else printed and 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1
