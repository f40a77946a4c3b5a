"""A plain JSONL of captured request bodies (one per line), as a logging proxy writes them.

Only the requests are there: no replies, no processes, no steps. Replies are
taken from the next request's history where it repeats them; the last turn's
reply and anything else missing is a placeholder the description names.
Bodies in the Anthropic Messages, OpenAI Chat Completions or Responses format
are read with the fake API's own parsers, so a body the fake API would refuse
is refused here too, with its line.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import InputError
from harness.fakeapi.formats import anthropic, openai_chat, openai_responses
from harness.importing.calls import Call


def body_of(record: dict) -> dict:
    """The request body a line holds: the line itself, or its `body` object (proxies that log more than the body)."""
    return record["body"] if isinstance(record.get("body"), dict) else record


def is_request_body(record: dict) -> bool:
    return "model" in record and ("messages" in record or "input" in record)


def calls_from_requests(path: Path, records: list[dict]) -> list[Call]:
    calls = []
    for number, record in enumerate(records, 1):
        body = body_of(record)
        if not is_request_body(body):
            raise InputError(f"line {number}: not a model request body (expected 'model' and 'messages' or 'input')", path)
        parser, raw = _parser(body), json.dumps(body).encode("utf-8")
        try:
            normalized = parser.parse_request(raw) if parser else anthropic.parse_messages_request(raw)
        except anthropic.BadRequest as exc:
            raise InputError(f"line {number}: the fake API would refuse this request: {exc}", path) from None
        calls.append(Call(normalized=normalized))
    return calls


def _parser(body: dict):
    """The OpenAI module for an OpenAI-shaped body, None for the Anthropic Messages format."""
    if "input" in body and "messages" not in body:
        return openai_responses
    messages = body.get("messages") or []
    if "system" not in body and any(isinstance(m, dict) and m.get("role") in ("system", "developer", "tool") for m in messages):
        return openai_chat
    if any(isinstance(m, dict) and ("tool_calls" in m or "tool_call_id" in m) for m in messages):
        return openai_chat
    return None
