"""Scenario files: YAML in, validated frozen dataclasses out.

Every error names the file, the line and the key at fault (exit 2 upstream);
a scenario that cannot be read is never skipped.

INTERFACE (read by load_scenario / load_scenarios in harness/scenario/reader.py):
the runner, the fake API script and the checks only ever see these classes.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Union

if TYPE_CHECKING:
    from harness.scenario.incident import Incident

STEP_KINDS = ("launch", "resume", "retry", "compact")
# How a later step reaches the session, besides naming it by id (the default): the agent's most recent session in
# the working directory (Claude Code's --continue), or a copy of the named session under a new id (--fork-session).
SESSION_MODES = {"continue": "continue the most recent session in the working directory",
                 "fork": "fork the named session under a new id"}
WORKDIR_KINDS = ("plain", "git")
VERDICTS = ("pass", "fail")
# What the fake model says where a scenario scripts no text (harness/fakeapi/script.py answers with it).
DEFAULT_REPLY = "OK."
STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal")
# What a `fault:` turn can do to the transport of one reply (harness/fakeapi/faults.py says what goes on the wire).
FAULT_KINDS = ("cut_stream", "reset", "slow_first_byte", "malformed_sse")
MAX_FAULT_SECONDS = 600.0


@dataclass(frozen=True)
class Usage:
    """Token counts the fake API reports for a reply; None means "computed"."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


@dataclass(frozen=True)
class TextBlock:
    text: str


@dataclass(frozen=True)
class ThinkingBlock:
    thinking: str
    signature: str | None = None


@dataclass(frozen=True)
class ToolUseBlock:
    name: str
    input: dict
    id: str | None = None


Block = Union[TextBlock, ThinkingBlock, ToolUseBlock]


@dataclass(frozen=True)
class ApiError:
    """An HTTP error the fake API answers instead of a message (the agent's "uncaught error")."""

    status: int
    type: str
    message: str
    retry_after: float | None = None  # seconds; None: "0" on 429 and 529, no header otherwise

    @property
    def retry_after_header(self) -> str | None:
        """The `retry-after` value sent with this error, if any (whole seconds as integers, else up to ms)."""
        seconds = self.retry_after
        if seconds is None:
            return "0" if self.status in (429, 529) else None
        if float(seconds).is_integer():
            return str(int(seconds))
        return f"{seconds:.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Fault:
    """A transport fault the fake API injects into one reply instead of answering it cleanly."""

    kind: str  # one of FAULT_KINDS
    after_events: int | None = None  # cut_stream: SSE events sent before the connection is closed
    seconds: float | None = None  # slow_first_byte: silence before the first byte (headers included)

    def describe(self) -> str:
        if self.kind == "cut_stream":
            return f"cut_stream after {self.after_events} events"
        if self.kind == "slow_first_byte":
            return f"slow_first_byte {self.seconds:g}s"
        return self.kind


@dataclass(frozen=True)
class Turn:
    """One scripted model reply (one HTTP response to one main request)."""

    blocks: tuple[Block, ...]
    usage: Usage | None = None
    stop_reason: str | None = None  # None: "tool_use" if any tool_use block, else "end_turn"
    error: ApiError | None = None  # set: the reply is this error, and blocks is empty
    fault: Fault | None = None  # set: blocks (if any) are what the faulted reply starts to send

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(isinstance(b, ToolUseBlock) for b in self.blocks) else "end_turn"


@dataclass(frozen=True)
class Step:
    index: int  # 1-based position in the scenario, as humans count steps
    kind: str  # one of STEP_KINDS
    prompt: str | None = None  # required for launch/resume/retry, absent for compact
    turns: tuple[Turn, ...] = ()  # replies to this step's main requests, in order
    summary: str | None = None  # reply text for compaction requests made during this step
    usage: Usage | None = None  # default usage for this step's turns
    timeout_s: float | None = None
    line: int | None = None  # line of the step in its file
    error: ApiError | None = None  # every main request of the step is answered with this error
    edits: tuple[tuple[str, str], ...] = ()  # (relative path, new content) written before the process starts
    commit: str | None = None  # commit message: everything in the working directory is committed before the step
    temporary: str | None = None  # text given to this step only ({temporary}); it must not outlive the step
    prefix_change: str | None = None  # why the prompt prefix is meant to change at this step (a project change)
    session: str | None = None  # one of SESSION_MODES; None: the session named by id, as every agent can
    append: str | None = None  # the caller's text from this step on, replacing the scenario's (a launcher's new text)
    interactive: bool = False  # the agent runs in a pseudo-terminal: its UI is answered, the prompt typed, then quit

    @property
    def scripts_an_error(self) -> bool:
        """The scenario foresees that this step's agent process may fail (a non-zero exit is then not a run error).

        True for a step `error`, a turn `error` and a turn `fault`; the runner still requires that one of them
        was actually answered (Exchange.scripted_error) before it excuses a non-zero exit.
        """
        return self.error is not None or any(turn.error is not None or turn.fault is not None for turn in self.turns)


def texts_until(first: str | None, changes: Mapping[int, str], step: int | None) -> list[str | None]:
    """The caller's texts in force up to a step, oldest first: the scenario's, then each step's change (`append:`).

    The last one is the step's own; the launch checks, the request checks and the run session all read it here.
    """
    return [first, *(text for index, text in sorted(changes.items()) if step is not None and index <= step)]


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: tuple[Step, ...]
    checks: tuple[str, ...]
    description: str = ""
    append: str | None = None
    expect: dict = field(default_factory=dict)  # target name or glob -> {check name -> "pass"|"fail"}
    path: Path | None = None
    workdir: str = "plain"  # one of WORKDIR_KINDS: "git" makes the working directory a repository
    temporary: tuple[str, ...] = ()  # texts the agent adds to every run that must stay out of the prefix and history
    min_cache_reuse: float | None = None  # the cache_reuse check's floor: cached / prompt tokens after the first step
    incident: Incident | None = None  # a catalog entry's source, releases and default targets (scenario/incident.py)
    instruction_files: tuple[str, ...] = ()  # files the agent reads as instructions: each request carries their current text

    def file_versions(self, path: str) -> tuple[tuple[int, str], ...]:
        """(step, text) of each `edit:` writing `path`, in step order: the file's text from that step on."""
        return tuple((s.index, text) for s in self.steps for edited, text in s.edits if edited == path)

    @property
    def prefix_changes(self) -> dict[int, str]:
        """Step index -> the declared reason the prefix changes there."""
        return {s.index: s.prefix_change for s in self.steps if s.prefix_change}

    @property
    def step_appends(self) -> dict[int, str]:
        """Step index -> the caller's text from that step on, where a step changes it."""
        return {s.index: s.append for s in self.steps if s.append is not None}

    def append_at(self, index: int) -> str | None:
        """The caller's text at a step: the last change at or before it, else the scenario's."""
        return texts_until(self.append, self.step_appends, index)[-1]

    @property
    def step_temporary(self) -> dict[int, str]:
        """Step index -> the text given to that step only."""
        return {s.index: s.temporary for s in self.steps if s.temporary}

    def expected_verdict(self, target_name: str, check: str) -> str:
        """A check with no stated expectation must pass; an exact target name wins over a glob."""
        if target_name in self.expect:
            return self.expect[target_name].get(check, "pass")
        for pattern, verdicts in self.expect.items():
            if fnmatch.fnmatchcase(target_name, pattern):
                return verdicts.get(check, "pass")
        return "pass"
