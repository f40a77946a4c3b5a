"""A pydantic-ai step inside the harness process: the driver's own step, with no subprocess and no socket.

The run session calls `run_in_process` where it would start a process (the
target's executor is InProcessSteps(run_in_process), harness/execution/in_process.py),
with the argv, environment, working directory, timeout and log files it would
have used, and between the same `api.begin_step`/`end_step`, so the journal
attributes requests to steps exactly as in subprocess mode. The driver's
`run_step` runs in this process with the step's environment and working directory
swapped in, and its HTTP client routed through respx to the same FakeModelAPI
(harness/fakeapi/inprocess.py). Each step calls the factory again and restores
the history from the file the previous step wrote, as the subprocess mode does.

What this mode cannot guarantee, unlike a fresh process per step:
- module-level state survives between steps (and runs): the agent module is
  imported once, so an id minted at import time, a cache or a global counter
  is shared by every step, and a bug that needs a fresh process can hide;
- no process isolation: the agent shares this interpreter, its environment
  (swapped for the step's while it runs), sys.path and any threads it starts;
  nothing it leaves running is killed, and there is no network namespace;
- a timeout cancels the run at its next await: code blocking synchronously
  (a factory sleeping, a busy loop) cannot be interrupted;
- an exit code is imitated: 0 on success, 2 when the step cannot run, 1 when
  the agent raised; stdout and stderr are what was written through sys.stdout
  and sys.stderr, not what C code or subprocesses wrote to the descriptors.
"""

from __future__ import annotations

import asyncio
import json
import time

from harness.fakeapi.core import FakeModelAPI
from harness.isolation.process import ProcessOutcome
from harness.pydantic_ai import driver
from harness.execution.base import StepCall
from harness.execution.in_process import CapturedStep
from harness.pydantic_ai.loading import LoadError

ARGV0 = "in-process:harness.pydantic_ai.driver"  # first argv item of an in-process step, shown in reports


def run_in_process(call: StepCall, api: FakeModelAPI) -> ProcessOutcome:
    """One step, as run_process would run it, minus the process."""
    step = CapturedStep(api, call.stdout_path, call.stderr_path)
    try:
        args = driver.parser().parse_args(list(call.argv[1:]))
    except SystemExit as exc:  # argparse already wrote why
        return ProcessOutcome(int(exc.code or 2), time.monotonic() - step.started, step.pid,
                              launch_error=f"bad in-process driver arguments: {list(call.argv[1:])!r}")
    with step.running(call.env, call.cwd):
        try:
            summary = asyncio.run(_bounded(args, api, call.timeout_s))
            print(json.dumps(summary, ensure_ascii=False))
        except _Expired:
            step.expired(call.timeout_s)
        except (driver.StepError, LoadError) as exc:
            step.exit_code = 2
            print(f"pydantic-ai driver: {exc}", file=step.err)
        except Exception:
            step.crashed()
    return step.outcome()


class _Expired(Exception):
    """The step's timeout passed (told apart from a TimeoutError the agent itself raised)."""


async def _bounded(args, api: FakeModelAPI, timeout_s: float) -> dict:
    from harness.fakeapi import inprocess

    async with inprocess.http_client(api, args.base_url) as client:
        timer = asyncio.timeout(timeout_s)
        try:
            async with timer:
                return await driver.run_step(args, http_client=client)
        except TimeoutError:
            if timer.expired():
                raise _Expired() from None
            raise
