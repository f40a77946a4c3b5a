"""System-prompt assembly: the part of every request the harness judges.

Block 1 is the prompt-cache breakpoint, so anything in it that changes between
processes (identity, time, a growing fragment, a doubled or missing append)
silently costs a full cache miss and changes the agent's instructions. The
known defects that corrupt the prompt are all expressed here, as small
deviations from the clean rules, so the clean path stays easy to read.

Everything is a pure function of a session dict and a ProcessContext, which
carries the per-process facts (flags, clock, id minting) that never persist.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime

from . import defects as d
from .compaction import CONTINUATION_PREFIX
from .session import new_session_record, user_texts

IDENTITY_TEMPLATE = (
    "You are Reference Agent, a small test agent for launcher harnesses (agent id {agent_id})."
)
INSTRUCTION_LINES = (
    "Answer the user's request concisely and accurately.",
    "Use the calculator tool for any arithmetic instead of computing it yourself.",
    "If a tool reports an error, say so instead of guessing a result.",
)
# Word for word what code-puppy 0.0.946 adds to every `-p` run, so one scenario declaring it
# judges the reference agent, code-puppy and the pydantic-ai example alike.
HEADLESS_TEXT = (
    "This is an unattended, non-interactive run. Never ask for confirmation, approval,\n"
    "clarification, or manual verification, including through tools or MCP servers. Use\n"
    "reasonable defaults, proceed autonomously, and validate with the tools available to\n"
    "you. State any assumptions or optional manual checks only in the final response."
)
NO_NOTES = "Recalled notes: none."
CACHE_BREAKPOINT = {"type": "ephemeral"}


def mint_agent_id() -> str:
    return uuid.uuid4().hex[:8]


@dataclass(frozen=True)
class ProcessContext:
    """What this process knows that the session must not remember."""

    defects: frozenset[str] = frozenset()
    resumed: bool = False
    append_flag: str | None = None
    temporary: str | None = None  # this process's --temporary text: after the breakpoint, never saved
    now: Callable[[], datetime] = datetime.now
    today: Callable[[], date] = date.today
    new_agent_id: Callable[[], str] = field(default=mint_agent_id)

    def has(self, defect: str) -> bool:
        return defect in self.defects


def gather_notes(prompts: list[str]) -> str:
    """Recall earlier prompts; the clean agent calls this once, at launch, with none."""
    # A compaction summary is machinery, not the user's words.
    notes = [" ".join(p.split()) for p in prompts if not p.startswith(CONTINUATION_PREFIX)]
    if not notes:
        return NO_NOTES
    return "Recalled notes:\n" + "\n".join(f"- {note}" for note in notes)


def start_session(ctx: ProcessContext, *, session_id: str | None = None) -> dict:
    """Mint and record everything block 0 and block 1 will ever need, once."""
    append = ctx.append_flag or None
    session = new_session_record(
        session_id=session_id,
        agent_id=ctx.new_agent_id(),
        created_date=ctx.today().isoformat(),
        append=append,
        memory_fragment=gather_notes([]),
    )
    state = session["defect_state"]
    if ctx.has(d.DUPLICATE_APPEND_ON_RESUME) and append:
        # The buggy launcher stored its rendered body, which ends with the append;
        # only that tail matters for reproducing the doubling.
        state["rendered_body_tail"] = append
    if ctx.has(d.APPEND_LOST_AFTER_COMPACTION):
        session["history_meta"]["first_message"] = {"append": append}
    if ctx.has(d.TEMPORARY_TEXT_FROZEN_INTO_PREFIX):
        state["frozen_texts"] = [HEADLESS_TEXT]
    return session


def resume_session(session: dict, ctx: ProcessContext) -> None:
    """Apply this process's flags to a loaded session; clean restores, never re-derives."""
    if ctx.append_flag is not None and not ctx.has(d.APPEND_LOST_AFTER_COMPACTION):
        session["append"] = ctx.append_flag or None
    if ctx.has(d.FRESH_IDENTITY_PER_PROCESS):
        session["agent_id"] = ctx.new_agent_id()
    if ctx.has(d.GROWING_PROMPT_FRAGMENT):
        session["memory_fragment"] = gather_notes(user_texts(session["messages"]))


def appended_texts(session: dict, ctx: ProcessContext) -> list[str]:
    """The append occurrences that end block 1: exactly one when clean and set."""
    current = session.get("append")
    if not ctx.resumed:
        return [current] if current else []
    if ctx.has(d.DROP_APPEND_ON_RESUME):
        return []
    if ctx.has(d.APPEND_LOST_AFTER_COMPACTION):
        pin = session.get("history_meta", {}).get("first_message", {}).get("append")
        return [pin] if pin else []
    texts = []
    if ctx.has(d.DUPLICATE_APPEND_ON_RESUME):
        tail = session.get("defect_state", {}).get("rendered_body_tail")
        if tail:
            texts.append(tail)
    if current:
        texts.append(current)
    return texts


def durable_body(session: dict, ctx: ProcessContext) -> str:
    lines = list(INSTRUCTION_LINES)
    if ctx.has(d.TIMESTAMP_IN_PREFIX):
        lines.append(f"Current time: {ctx.now().isoformat(timespec='microseconds')}")
    else:
        lines.append(f"Session date: {session['created_date']}")
    if session.get("memory_fragment"):
        lines.append(session["memory_fragment"])
    if ctx.resumed and ctx.has(d.TEMPORARY_TEXT_FROZEN_INTO_PREFIX):
        lines.extend(session.get("defect_state", {}).get("frozen_texts", []))
    return "\n\n".join(["\n".join(lines), *appended_texts(session, ctx)])


def system_blocks(session: dict, ctx: ProcessContext, *, headless: bool = True) -> list[dict]:
    """Identity, cached durable body, then what this process alone says: the headless text (for -p runs)
    and the caller's temporary text.

    Both sit after the breakpoint so that dropping them moves no cached byte, and
    neither is ever written to the session: the next process decides afresh.
    """
    blocks = [
        {"type": "text", "text": IDENTITY_TEMPLATE.format(agent_id=session["agent_id"])},
        {"type": "text", "text": durable_body(session, ctx), "cache_control": dict(CACHE_BREAKPOINT)},
    ]
    if headless:
        blocks.append({"type": "text", "text": HEADLESS_TEXT})
    if ctx.temporary:
        blocks.append({"type": "text", "text": ctx.temporary})
    return blocks


def user_prompt(prompt: str, ctx: ProcessContext) -> str:
    """What is saved as the user's turn: the prompt, and nothing meant for this process only."""
    if ctx.has(d.TEMPORARY_TEXT_IN_HISTORY) and ctx.temporary:
        # A prompt-submit hook that adds its context to the prompt itself, which the session then keeps.
        return f"{prompt}\n\n{ctx.temporary}"
    return prompt
