"""What a step's requests say about it: counts per class, pids, unforeseen requests, unused replies, refused hosts.

Shared by the ways a step runs: a process (or in-process call) the run session
starts (harness/run/session.py) and a launch made by a launcher process
(launcher.py).
"""

from __future__ import annotations

import signal
from typing import Sequence

from harness.journal.exchange import COMPACTION, FOREIGN, MAIN, OUTBOUND, Exchange
from harness.fakeapi.script import StepScript
from harness.fakeapi.sender import SENDER_NOT_FOUND
from harness.results import StepResult
from harness.scenario.model import Step, TextBlock, ThinkingBlock, ToolUseBlock, Turn


def record_requests(result: StepResult, exchanges: Sequence[Exchange], script: StepScript | None) -> None:
    """`exchanges`: all the step's, foreign ones included; they are counted apart and never as the agent's."""
    foreign = [e for e in exchanges if e.klass == FOREIGN]
    for exchange in exchanges:
        result.classes[exchange.klass] = result.classes.get(exchange.klass, 0) + 1
    exchanges = own_requests(exchanges)
    result.requests = len(exchanges)
    result.request_seqs = [e.seq for e in exchanges]
    result.pids = sorted({e.pid for e in exchanges if e.pid is not None})
    result.unforeseen = sum(1 for e in exchanges if e.unforeseen)
    result.unused_turns = script.unused_turns if script else 0
    if foreign:
        senders = sorted({str(e.pid) for e in foreign if e.pid is not None}) or ["unknown"]
        result.notes.append(f"{len(foreign)} request(s) from a process that is not the step's (pid {', '.join(senders)}) "
                            "were journaled as foreign and refused; they are not judged")
    unknown = sum(1 for e in exchanges if SENDER_NOT_FOUND in e.notes)
    if unknown:
        result.notes.append(f"the sending process of {unknown} request(s) could not be found: they are judged as the "
                            "step's, unproven")
    outbound = [e for e in exchanges if e.klass == OUTBOUND]
    if outbound:
        hosts = sorted({e.destination for e in outbound})
        result.notes.append(f"{len(outbound)} attempt(s) to reach another host refused: {', '.join(hosts)}")
    if result.unforeseen:
        result.notes.append(f"{result.unforeseen} request(s) the script did not foresee got a default reply")


def own_requests(exchanges: Sequence[Exchange]) -> list[Exchange]:
    """The step's requests less those another process sent: what the step is judged on."""
    return [e for e in exchanges if e.klass != FOREIGN]


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


def turn_problem(result: StepResult, step: Step, exchanges: Sequence[Exchange], script: StepScript | None) -> str | None:
    """Whether the step did what it is there for: asked for its turn (or its compaction) and for every scripted reply.

    A step that exits 0 having sent only a model listing, a token count or a side call was never judged: its
    requests are not the turn the checks read, so passing it would be a green that judged nothing. The same
    for a scripted reply left over at the end of the step: the scenario's next turn was never taken. Replies
    left after a scripted error the agent gave up on (a non-zero exit the scenario foresees) are only noted:
    an agent that retries in-process takes them, one that exits leaves them to the launcher's retry step.
    """
    exchanges = own_requests(exchanges)
    wanted = (MAIN, COMPACTION) if step.kind == "compact" else (MAIN,)
    if not any(e.klass in wanted for e in exchanges):
        what = "a compaction (or model) request" if step.kind == "compact" else "a model request for its turn"
        sent = ", ".join(f"{e.method} {e.path} ({e.klass})" for e in exchanges[:4]) + ("…" if len(exchanges) > 4 else "")
        return f"the agent never sent {what}: its {len(exchanges)} request(s) were {sent}"
    unused = script.unused if script is not None else ()
    if not unused:
        return None
    first = len(step.turns) - len(unused) + 1
    listed = "; ".join(f"reply {first + i} of {len(step.turns)}: {brief_turn(turn)}" for i, turn in enumerate(unused[:3]))
    more = f" (and {len(unused) - 3} more)" if len(unused) > 3 else ""
    if result.exit_code not in (0, None) and failed_as_scripted(step, exchanges):
        result.notes.append(f"the agent gave up after the scripted API error; {len(unused)} scripted reply(ies) after it "
                            f"were left for the retry: {listed}{more}")
        return None
    return (f"{len(unused)} scripted reply(ies) of this step were never requested: {listed}{more}; the agent "
            f"made {sum(1 for e in exchanges if e.klass == MAIN)} model request(s) for {len(step.turns)} scripted turn(s)")


def brief_turn(turn: Turn, limit: int = 80) -> str:
    """A scripted reply as a reviewer recognises it in the scenario file."""
    if turn.error is not None:
        return f"error {turn.error.status} {turn.error.type}"
    parts = []
    for block in turn.blocks:
        if isinstance(block, TextBlock):
            parts.append(repr(block.text if len(block.text) <= limit else block.text[:limit] + "…"))
        elif isinstance(block, ToolUseBlock):
            parts.append(f"tool_use {block.name}")
        elif isinstance(block, ThinkingBlock):
            parts.append("thinking")
    text = ", ".join(parts) or "an empty reply"
    return f"{text} (with fault {turn.fault.describe()})" if turn.fault is not None else text
