"""What a step's requests say about it: counts per class, pids, unforeseen requests, unused replies, refused hosts.

Shared by the two ways a step runs: a process the runner starts (runner.py)
and a launch made by a launcher process (launcher_run.py).
"""

from __future__ import annotations

import signal
from typing import Sequence

from harness.fakeapi.exchange import OUTBOUND, Exchange
from harness.fakeapi.script import StepScript
from harness.results import StepResult
from harness.scenario import Step


def record_requests(result: StepResult, exchanges: Sequence[Exchange], script: StepScript | None) -> None:
    result.requests = len(exchanges)
    for exchange in exchanges:
        result.classes[exchange.klass] = result.classes.get(exchange.klass, 0) + 1
    result.request_seqs = [e.seq for e in exchanges]
    result.pids = sorted({e.pid for e in exchanges if e.pid is not None})
    result.unforeseen = sum(1 for e in exchanges if e.unforeseen)
    result.unused_turns = script.unused_turns if script else 0
    outbound = [e for e in exchanges if e.klass == OUTBOUND]
    if outbound:
        hosts = sorted({e.destination for e in outbound})
        result.notes.append(f"{len(outbound)} attempt(s) to reach another host refused: {', '.join(hosts)}")
    if result.unforeseen:
        result.notes.append(f"{result.unforeseen} request(s) the script did not foresee got a default reply")
    if result.unused_turns:
        result.notes.append(f"{result.unused_turns} scripted reply(ies) were never requested")


def failed_as_scripted(step: Step, exchanges: Sequence[Exchange]) -> bool:
    """A non-zero exit is foreseen only once the scripted error was actually answered in this step."""
    return step.scripts_an_error and any(e.scripted_error for e in exchanges)


def exit_problem(result: StepResult, step: Step, exchanges: Sequence[Exchange], said: str = "") -> str | None:
    """What a finished step's exit code and requests make of it: its error, or None.

    A non-zero exit after the scripted error was answered is foreseen, and noted; `said` is what the process
    printed last, appended to an unforeseen exit.
    """
    code = result.exit_code
    if code != 0 and not (code is not None and code > 0 and failed_as_scripted(step, exchanges)):
        how = f"was killed by {signal_name(-code)}" if code is not None and code < 0 else f"exited with code {code}"
        return f"the agent {how}{said}"
    if result.requests == 0:
        return "the agent sent no request to the fake API"
    if code != 0:
        result.notes.append(f"exited with code {code} after the scripted API error, as the scenario foresees")
    return None


def signal_name(number: int) -> str:
    try:
        return f"signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"signal {number}"
