"""What the fake model says during one step: the scenario's scripted turns, in order.

A request the script did not foresee still gets an answer (so the agent can
finish and the run can be judged) but the journal flags it.
"""

from __future__ import annotations

from collections import deque
from typing import Any

# DEFAULT_REPLY: what the model says where nothing is scripted; the scenario's (its grammar gives it to fault turns).
from harness.scenario.model import DEFAULT_REPLY, ApiError, Step, TextBlock, ThinkingBlock, ToolUseBlock, Turn, Usage

SIDE_REPLY = "OK."


# More model requests than this in one step is an agent looping (opencode 1.18.33 alternates compaction and
# continuation without end when every reply reports a full window: 565 requests in 42 s). The fake API refuses
# the rest with an error and the runner reports the step as a loop, with the count.
MAX_REQUESTS_PER_STEP = 100


class StepScript:
    def __init__(self, step: Step, max_requests: int = MAX_REQUESTS_PER_STEP):
        self.step = step
        self._turns: deque[Turn] = deque(step.turns)
        self.requests = 0  # model requests answered (or refused) in this step
        self.max_requests = max_requests  # a run's steps keep the default; `make bench` serves far more on purpose

    def count_request(self) -> ApiError | None:
        """Counts one model request; past the cap, the error to answer it with."""
        self.requests += 1
        if self.requests <= self.max_requests:
            return None
        return ApiError(400, "invalid_request_error",
                        f"harness: more than {self.max_requests} model requests in one step; the agent is looping")

    @property
    def looped(self) -> bool:
        return self.requests > self.max_requests

    def take_turn(self) -> Turn | None:
        if self.step.error is not None:  # the step fails however often the agent tries
            return Turn(blocks=(), error=self.step.error)
        return self._turns.popleft() if self._turns else None

    @property
    def unused_turns(self) -> int:
        return len(self._turns)

    @property
    def unused(self) -> tuple[Turn, ...]:
        """The scripted replies nobody asked for, in order; the first of them is `turns[len(turns) - len(unused)]`."""
        return tuple(self._turns)


def blocks_of(turn: Turn) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in turn.blocks:
        if isinstance(block, TextBlock):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingBlock):
            blocks.append({"type": "thinking", "thinking": block.thinking, "signature": block.signature})
        elif isinstance(block, ToolUseBlock):
            blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
    return blocks


def text_turn(text: str) -> Turn:
    return Turn(blocks=(TextBlock(text),))


def resolve_usage(computed_input: int, blocks: list[dict[str, Any]], *given: Usage | None) -> dict[str, int]:
    """Scripted numbers win field by field (turn, then step); the rest are estimated."""
    output_chars = sum(len(b.get("text") or b.get("thinking") or str(b.get("input", ""))) for b in blocks)
    usage = {
        "input_tokens": computed_input,
        "output_tokens": max(1, output_chars // 4),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    for source in reversed([g for g in given if g is not None]):
        for key in usage:
            value = getattr(source, key)
            if value is not None:
                usage[key] = value
    return usage
