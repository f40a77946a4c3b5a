"""One process's work: a launch, a resume, or a compaction, end to end.

Kept apart from argument parsing so the harness (and the tests) can drive a
whole step with an injected client and clock, and apart from prompt assembly
so the order of state changes (resume, auto-compact, prompt, save) is visible
in one place: that order is what several of the known defects get wrong.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Protocol

from . import defects as d
from .client import build_request_body
from .compaction import (
    compact_session,
    compaction_system,
    needs_autocompact,
    reply_text,
)
from .prompt import (
    ProcessContext,
    resume_session,
    start_session,
    system_blocks,
    user_prompt,
)
from .session import add_assistant_reply, add_user_text, load_session, save_session
from .tools import TOOLS, run_tool_loop

DEFAULT_MODEL = "reference-model-1"
DEFAULT_AUTOCOMPACT_TOKENS = 160_000


class Client(Protocol):
    requests_sent: int

    def create(self, body: dict) -> dict: ...


@dataclass
class RunResult:
    session_id: str
    result: str
    num_requests: int
    auto_compacted: bool = False
    compacted: bool = False

    def as_json(self) -> dict:
        out = {
            "type": "result",
            "session_id": self.session_id,
            "result": self.result,
            "is_error": False,
            "num_requests": self.num_requests,
            "auto_compacted": self.auto_compacted,
        }
        if self.compacted:
            out["compacted"] = True
        return out


@dataclass
class AgentConfig:
    home: str | os.PathLike
    model: str = DEFAULT_MODEL
    stream: bool = True
    autocompact_tokens: int = DEFAULT_AUTOCOMPACT_TOKENS


def _compact(session: dict, client: Client, config: AgentConfig) -> None:
    def send(messages: list[dict]) -> dict:
        body = build_request_body(
            model=config.model, system=compaction_system(), messages=messages, tools=None, stream=config.stream
        )
        return client.create(body)

    compact_session(session, send)
    save_session(config.home, session)


def run_prompt(
    prompt: str, *, client: Client, config: AgentConfig, ctx: ProcessContext, resume_id: str | None = None
) -> RunResult:
    """Launch (resume_id None) or resume, auto-compacting first if the context is full."""
    ctx = replace(ctx, resumed=resume_id is not None)
    auto_compacted = False
    if resume_id is None:
        session = start_session(ctx)
    else:
        session = load_session(config.home, resume_id)
        resume_session(session, ctx)
        if needs_autocompact(session, config.autocompact_tokens):
            _compact(session, client, config)
            auto_compacted = True

    messages = session["messages"]
    add_user_text(messages, user_prompt(prompt, ctx))

    def send(history: list[dict]) -> dict:
        # Rendered per request: a defect that re-reads the clock must be able to.
        body = build_request_body(
            model=config.model,
            system=system_blocks(session, ctx, headless=True),
            messages=history,
            tools=TOOLS,
            stream=config.stream,
        )
        return client.create(body)

    final, _ = run_tool_loop(messages, send)
    session["last_usage"] = final.get("usage")
    if ctx.has(d.FORGET_LAST_REPLY):
        save_session(config.home, session)
        add_assistant_reply(messages, final)
    else:
        add_assistant_reply(messages, final)
        save_session(config.home, session)
    return RunResult(session["session_id"], reply_text(final), client.requests_sent, auto_compacted)


def run_compact(resume_id: str, *, client: Client, config: AgentConfig, ctx: ProcessContext) -> RunResult:
    ctx = replace(ctx, resumed=True)
    session = load_session(config.home, resume_id)
    resume_session(session, ctx)
    _compact(session, client, config)
    return RunResult(session["session_id"], "Compacted.", client.requests_sent, compacted=True)
