"""Scenario files: YAML in, validated frozen dataclasses out.

Every error names the file, the line and the key at fault (exit 2 upstream);
a scenario that cannot be read is never skipped.

INTERFACE (implemented by load_scenario / load_scenarios below):
the runner, the fake API script and the checks only ever see these classes.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

STEP_KINDS = ("launch", "resume", "retry", "compact")
WORKDIR_KINDS = ("plain", "git")
VERDICTS = ("pass", "fail")
STOP_REASONS = ("end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal")


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


@dataclass(frozen=True)
class Turn:
    """One scripted model reply (one HTTP response to one main request)."""

    blocks: tuple[Block, ...]
    usage: Usage | None = None
    stop_reason: str | None = None  # None: "tool_use" if any tool_use block, else "end_turn"
    error: ApiError | None = None  # set: the reply is this error, and blocks is empty

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

    @property
    def scripts_an_error(self) -> bool:
        """The scenario foresees that this step's agent process fails (a non-zero exit is then not a run error)."""
        return self.error is not None or any(turn.error is not None for turn in self.turns)


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

    def expected_verdict(self, target_name: str, check: str) -> str:
        """A check with no stated expectation must pass; an exact target name wins over a glob."""
        if target_name in self.expect:
            return self.expect[target_name].get(check, "pass")
        for pattern, verdicts in self.expect.items():
            if fnmatch.fnmatchcase(target_name, pattern):
                return verdicts.get(check, "pass")
        return "pass"
