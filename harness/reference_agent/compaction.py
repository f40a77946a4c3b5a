"""Compaction: replace the whole history with a model-written summary.

This is the step that throws away the original messages, so any state a
launcher keeps *on* those messages (rather than in the session proper) is lost
here; the harness resumes after a compaction precisely to catch that.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable

from .errors import CompactionError
from .session import add_user_text, replace_history

COMPACTION_SYSTEM_TEXT = "You are a helpful AI assistant tasked with summarizing conversations."
COMPACTION_INSTRUCTION = (
    "Your task is to create a detailed summary of the conversation so far. "
    "Wrap your analysis in <analysis> tags and the summary in <summary> tags."
)
RETRY_INSTRUCTION = (
    "Your reply did not contain a <summary>...</summary> block. "
    "Reply again with the summary wrapped in <summary> tags."
)
CONTINUATION_PREFIX = (
    "This session is being continued from a previous conversation. "
    "Summary of the earlier conversation:\n\n"
)
_SUMMARY = re.compile(r"<summary>(.*?)</summary>", re.DOTALL)


def compaction_system() -> list[dict]:
    return [{"type": "text", "text": COMPACTION_SYSTEM_TEXT}]


def compaction_messages(history: list[dict]) -> list[dict]:
    """History plus the instruction, on a copy: the live history must not change yet."""
    messages = copy.deepcopy(history)
    add_user_text(messages, COMPACTION_INSTRUCTION)
    return messages


def reply_text(reply: dict) -> str:
    return "".join(b.get("text", "") for b in reply.get("content", []) if b.get("type") == "text")


def extract_summary(reply: dict) -> str | None:
    match = _SUMMARY.search(reply_text(reply))
    if match is None or not match.group(1).strip():
        return None
    return match.group(1).strip()


def continuation_message(summary: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": CONTINUATION_PREFIX + summary}]}


def summarize(history: list[dict], send: Callable[[list[dict]], dict]) -> tuple[str, int]:
    """Ask for a summary, and once more if the reply has none; return it and the request count."""
    messages = compaction_messages(history)
    reply = send(messages)
    summary = extract_summary(reply)
    if summary is not None:
        return summary, 1
    if reply.get("content"):
        messages.append({"role": "assistant", "content": reply["content"]})
    add_user_text(messages, RETRY_INSTRUCTION)
    summary = extract_summary(send(messages))
    if summary is None:
        raise CompactionError("compaction failed: the model replied twice without a <summary>...</summary> block")
    return summary, 2


def compact_session(session: dict, send: Callable[[list[dict]], dict]) -> int:
    """Summarize and replace the history in place; returns the number of requests sent."""
    summary, sent = summarize(session["messages"], send)
    replace_history(session, [continuation_message(summary)])
    # The stored usage described the history that no longer exists.
    session["last_usage"] = None
    session["compactions"] = session.get("compactions", 0) + 1
    return sent


def context_tokens(usage: dict | None) -> int:
    if not usage:
        return 0
    keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(int(usage.get(k) or 0) for k in keys)


def needs_autocompact(session: dict, threshold: int) -> bool:
    return context_tokens(session.get("last_usage")) > threshold
