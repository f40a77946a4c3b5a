"""Synthetic journals for check tests: exchanges built the way the fake API records them."""

from __future__ import annotations

import json
import re
from typing import Any

from harness.checks import CheckContext
from harness.journal.exchange import COMPACTION, MAIN, Exchange

IDENTITY = re.compile(r"(?m)^You are [^\n]*")
BREAKPOINT = {"type": "ephemeral"}


def system(*texts: str, breakpoint_at: int | None = -1) -> list[dict[str, Any]]:
    """System blocks; the cache breakpoint sits on block `breakpoint_at` (None: no breakpoint)."""
    blocks = [{"text": t, "cache_control": None} for t in texts]
    if breakpoint_at is not None and blocks:
        blocks[breakpoint_at]["cache_control"] = BREAKPOINT
    return blocks


def user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def assistant(*texts: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": t} for t in texts]}


def exchange(
    seq: int,
    step: int,
    system_blocks: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    reply: str | list[dict[str, Any]] = "ok",
    klass: str = MAIN,
    kind: str = "resume",
    tools: list[dict[str, Any]] | None = None,
) -> Exchange:
    content = [{"type": "text", "text": reply}] if isinstance(reply, str) else reply
    normalized = {"model": "m", "system": system_blocks, "tools": tools or [], "messages": messages}
    return Exchange(
        seq=seq, method="POST", path="/v1/messages", query="", headers={},
        body=json.dumps(normalized).encode(), klass=klass, status=200, step=step,
        step_kind="launch" if step == 1 else kind, normalized=normalized,
        reply={"content": content, "stop_reason": "end_turn", "usage": {}},
    )


def compaction(seq: int, step: int, messages: list[dict[str, Any]], summary: str) -> Exchange:
    return exchange(
        seq, step, system("You are a helpful AI assistant tasked with summarizing conversations."),
        messages + [user("Your task is to create a detailed summary of the conversation so far.")],
        reply=f"<analysis>a</analysis>\n<summary>\n{summary}\n</summary>", klass=COMPACTION, kind="compact",
    )


def context(*exchanges: Exchange, append: str | None = "APPENDED RULES") -> CheckContext:
    return CheckContext(tuple(exchanges), append, IDENTITY)


def conversation(turns: list[tuple[str, str]], system_for_step=None, start_step: int = 1) -> list[Exchange]:
    """One main request per step, each carrying the full history: a correct agent's journal."""
    out, history = [], []
    for i, (prompt, answer) in enumerate(turns):
        step = start_step + i
        history = history + [user(prompt)]
        blocks = system_for_step(step) if system_for_step else system("You are Agent X.", "Body.\n\nAPPENDED RULES")
        out.append(exchange(i + 1, step, blocks, list(history), answer))
        history = history + [assistant(answer)]
    return out
