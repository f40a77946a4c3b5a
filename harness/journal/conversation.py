"""Reading the normalized view every protocol module produces: text, and what a request is.

Kept out of the wire-format modules so the checks, the classifier and later
protocols (OpenAI Chat, Responses) share one reading of system text, message
text and compaction requests.
"""

from __future__ import annotations

import re
from typing import Any

SYSTEM_SEPARATOR = "\n\n"
_SUMMARY_WORD = re.compile(r"(?i)\bsummar(?:y|ies|ise|ize|ising|izing)\b")
_CONVERSATION = re.compile(r"(?i)\bconversation\b")
# How clients open the message that carries a summary back into the conversation.
_CONTINUATION_OPENINGS = (
    "This session is being continued from a previous conversation",
    "Another language model started to solve this problem",  # Codex, before the summary it got back
)
# Continuations a bridge may merge behind other text into one block (Kimi Code's, in inspect_swe's Anthropic request).
_CONTINUATION_ANYWHERE = ("The conversation so far has been compacted to free up context",)


def system_text(normalized: dict[str, Any] | None) -> str:
    """All system blocks, joined as the model reads them."""
    return SYSTEM_SEPARATOR.join(b["text"] for b in (normalized or {}).get("system", []))


def message_text(message: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")


def last_user_text(normalized: dict[str, Any]) -> str:
    for message in reversed(normalized.get("messages", [])):
        if message["role"] == "user":
            return message_text(message)
    return ""


def is_compaction(normalized: dict[str, Any]) -> bool:
    """The client asks for a summary of the conversation (Claude Code's /compact and auto-compact).

    Recognised from the bytes alone, block by block in the last user turn: one
    text block asks for a summary of the conversation and names the <summary>
    tags the client will parse. Judged per block because after a compaction a
    client may send the summary it got back and the next prompt in one message;
    that continuation talks about a summary too, but never asks for one.
    """
    for message in reversed(normalized.get("messages", [])):
        if message["role"] != "user":
            continue
        return any(_asks_for_summary(b.get("text", "")) for b in message.get("content", []) if b.get("type") == "text")
    return False


def _asks_for_summary(text: str) -> bool:
    if text.lstrip().startswith(_CONTINUATION_OPENINGS) or any(c in text for c in _CONTINUATION_ANYWHERE):
        return False
    return "<summary>" in text and bool(_SUMMARY_WORD.search(text)) and bool(_CONVERSATION.search(text))


def compaction_reply_text(summary: str) -> str:
    """The shape Claude Code parses: its analysis scratchpad, then the summary."""
    return (
        "<analysis>\nThe conversation so far was reviewed for the summary below.\n</analysis>\n\n"
        f"<summary>\n{summary}\n</summary>"
    )


def default_summary(normalized: dict[str, Any]) -> str:
    """A deterministic summary naming what was asked and answered, for unscripted compactions."""
    asked, answered = [], []
    for message in normalized.get("messages", [])[:-1]:
        text = message_text(message).strip()
        if text:
            (asked if message["role"] == "user" else answered).append(text.splitlines()[0][:80])
    return (
        f"The user asked {len(asked)} time(s): " + "; ".join(repr(a) for a in asked)
        + f". The assistant answered {len(answered)} time(s): " + "; ".join(repr(a) for a in answered) + "."
    )
