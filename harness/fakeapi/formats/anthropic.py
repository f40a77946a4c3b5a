"""The Anthropic Messages wire format, both directions.

Parses and validates requests into the normalized view the checks read, and
renders scripted replies as the JSON message or the full server-sent event
sequence a real client expects. Reading that view (text, compaction requests)
is conversation.py's job, shared with the other protocols.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Iterator

NAME = "anthropic"
MODELS = ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5", "reference-model-1")
_BLOCK_TYPES_IN = {
    "text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking",
    "server_tool_use", "web_search_tool_result", "search_result", "container_upload",
}
TEXT_CHUNK = 24  # characters per text_delta, so clients must really accumulate
JSON_CHUNK = 16  # characters per input_json_delta


class BadRequest(Exception):
    """A request the real API would refuse with a 4xx; carries the provider's error shape."""

    def __init__(self, message: str, status: int = 400, error_type: str = "invalid_request_error"):
        super().__init__(message)
        self.status = status
        self.error_type = error_type


def error_body(message: str, error_type: str = "invalid_request_error", request_id: str = "") -> bytes:
    return json.dumps(
        {"type": "error", "error": {"type": error_type, "message": message}, "request_id": request_id}
    ).encode()


# --------------------------------------------------------------------------- requests


def parse_messages_request(body: bytes) -> dict[str, Any]:
    """Validate a POST /v1/messages body and return its normalized view."""
    payload = _json_object(body)
    for key in ("model", "max_tokens", "messages"):
        if key not in payload:
            raise BadRequest(f"{key}: Field required")
    if not isinstance(payload["model"], str) or not payload["model"]:
        raise BadRequest("model: Input should be a non-empty string")
    if not isinstance(payload["max_tokens"], int) or isinstance(payload["max_tokens"], bool) or payload["max_tokens"] < 1:
        raise BadRequest("max_tokens: Input should be a positive integer")
    normalized = _normalize_prompt(payload)
    if not normalized["messages"]:
        raise BadRequest("messages: at least one message is required")
    normalized.update(
        model=payload["model"],
        max_tokens=payload["max_tokens"],
        stream=bool(payload.get("stream", False)),
        metadata=payload.get("metadata"),
        thinking=payload.get("thinking"),
        tool_choice=payload.get("tool_choice"),
    )
    if payload.get("cache_control") is not None:  # automatic caching; kept only when sent, so older journals read the same
        normalized["cache_control"] = payload["cache_control"]
    return normalized


def parse_count_tokens_request(body: bytes) -> dict[str, Any]:
    payload = _json_object(body)
    if "messages" not in payload:
        raise BadRequest("messages: Field required")
    normalized = _normalize_prompt(payload)
    normalized["model"] = payload.get("model")
    return normalized


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise BadRequest("request body must be a JSON object")
    return payload


def _normalize_prompt(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "system": _normalize_system(payload.get("system")),
        "tools": _normalize_tools(payload.get("tools")),
        "messages": _normalize_messages(payload.get("messages")),
    }


# Claude Code sends request attribution as the first system block. The provider reads it as
# metadata, not as prompt: it is not part of the cache key (its hash changes after every
# compaction, and in some builds with every request, while real sessions keep their cache hits).
BILLING_HEADER = "x-anthropic-billing-header:"


def _normalize_system(system: Any) -> list[dict[str, Any]]:
    if system is None:
        return []
    if isinstance(system, str):
        return [{"text": system, "cache_control": None}]
    if not isinstance(system, list):
        raise BadRequest("system: Input should be a string or a list of text blocks")
    blocks = []
    for i, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise BadRequest(f"system.{i}: Input should be a text block")
        entry = {"text": block["text"], "cache_control": block.get("cache_control")}
        if block["text"].startswith(BILLING_HEADER):
            entry["cache_key"] = False
        blocks.append(entry)
    return blocks


def _normalize_tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise BadRequest("tools: Input should be a list of objects")
    for i, tool in enumerate(tools):
        if not isinstance(tool.get("name"), str):
            raise BadRequest(f"tools.{i}.name: Field required")
    return tools


def _normalize_messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list):
        raise BadRequest("messages: Input should be a valid list")
    normalized = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise BadRequest(f"messages.{i}: Input should be an object")
        role = message.get("role")
        if role not in ("user", "assistant", "system"):
            raise BadRequest(f"messages.{i}.role: Input should be 'user' or 'assistant'")
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise BadRequest(f"messages.{i}.content: Input should be a string or a list of blocks")
        for j, block in enumerate(content):
            if not isinstance(block, dict) or block.get("type") not in _BLOCK_TYPES_IN:
                raise BadRequest(f"messages.{i}.content.{j}: unknown or missing block type")
            if block["type"] == "text" and not isinstance(block.get("text"), str):
                raise BadRequest(f"messages.{i}.content.{j}.text: Field required")
        normalized.append({"role": role, "content": content})
    return normalized


# --------------------------------------------------------------------------- replies


@dataclass
class RenderedReply:
    message: dict[str, Any]  # the complete message object, as the JSON reply would carry it

    @property
    def journal_view(self) -> dict[str, Any]:
        return {
            "content": self.message["content"],
            "stop_reason": self.message["stop_reason"],
            "usage": self.message["usage"],
        }


def build_message(
    seq: int,
    model: str,
    blocks: list[dict[str, Any]],
    stop_reason: str,
    usage: dict[str, int],
) -> RenderedReply:
    content = []
    for i, block in enumerate(blocks):
        block = dict(block)
        if block["type"] == "tool_use" and not block.get("id"):
            block["id"] = "toolu_" + _stable_id(seq, i, 22)
        if block["type"] == "thinking" and not block.get("signature"):
            block["signature"] = "sig_" + _stable_id(seq, i, 40)
        content.append(block)
    return RenderedReply(
        {
            "id": "msg_" + _stable_id(seq, -1, 24),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
    )


def _stable_id(seq: int, index: int, length: int) -> str:
    """Same run, same ids: replays of a scenario produce identical bytes."""
    return hashlib.sha256(f"{seq}:{index}".encode()).hexdigest()[:length]


def render_json(reply: RenderedReply) -> bytes:
    return json.dumps(reply.message).encode()


def render_sse(reply: RenderedReply) -> Iterator[bytes]:
    """The full streaming event sequence, one SSE event per yielded chunk."""
    message = reply.message
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    yield _event("message_start", {"type": "message_start", "message": start})
    yield _event("ping", {"type": "ping"})
    for index, block in enumerate(message["content"]):
        yield from _block_events(index, block)
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": usage,
        },
    )
    yield _event("message_stop", {"type": "message_stop"})


def event_name(event: bytes) -> str:
    """The `event:` field of one rendered event."""
    first = event.split(b"\n", 1)[0].decode()
    return first.removeprefix("event: ")


def stream_event_names(blocks: list[dict[str, Any]]) -> list[str]:
    """The events a streamed reply with these blocks consists of (their number depends on the content only)."""
    usage = {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    return [event_name(e) for e in render_sse(build_message(0, "model", blocks, "end_turn", usage))]


MALFORMED_EVENT = "content_block_delta"  # every block streams at least one


def render_sse_malformed(reply: RenderedReply) -> tuple[list[bytes], int]:
    """The full event sequence, except that the `data:` JSON of the first content_block_delta is cut in half.

    Returns the events and the 0-based position of the broken one. The event keeps its name and its
    blank-line terminator, so only a client that parses the data notices; the stream ends normally.
    """
    events = list(render_sse(reply))
    index = next(i for i, e in enumerate(events) if event_name(e) == MALFORMED_EVENT)
    head, data = events[index].decode().rstrip("\n").split("\ndata: ", 1)
    events[index] = f"{head}\ndata: {data[: len(data) // 2]}\n\n".encode()
    return events, index


def _block_events(index: int, block: dict[str, Any]) -> Iterator[bytes]:
    kind = block["type"]
    if kind == "text":
        yield _start(index, {"type": "text", "text": ""})
        for piece in _pieces(block["text"], TEXT_CHUNK):
            yield _delta(index, {"type": "text_delta", "text": piece})
    elif kind == "thinking":
        yield _start(index, {"type": "thinking", "thinking": "", "signature": ""})
        for piece in _pieces(block["thinking"], TEXT_CHUNK):
            yield _delta(index, {"type": "thinking_delta", "thinking": piece})
        yield _delta(index, {"type": "signature_delta", "signature": block["signature"]})
    elif kind == "tool_use":
        yield _start(index, {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}})
        yield _delta(index, {"type": "input_json_delta", "partial_json": ""})
        for piece in _pieces(json.dumps(block["input"]), JSON_CHUNK):
            yield _delta(index, {"type": "input_json_delta", "partial_json": piece})
    else:  # pragma: no cover - scripts only produce the three kinds above
        raise ValueError(f"cannot stream a {kind} block")
    yield _event("content_block_stop", {"type": "content_block_stop", "index": index})


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _start(index: int, block: dict[str, Any]) -> bytes:
    return _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def count_tokens_body(raw_size: int) -> bytes:
    return json.dumps({"input_tokens": estimate_tokens(raw_size)}).encode()


def estimate_tokens(size_bytes: int) -> int:
    return max(1, size_bytes // 4)


def models_body() -> bytes:
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in MODELS
    ]
    return json.dumps({"data": data, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]}).encode()


def model_body(model_id: str) -> bytes:
    return json.dumps({"type": "model", "id": model_id, "display_name": model_id, "created_at": "2025-01-01T00:00:00Z"}).encode()
