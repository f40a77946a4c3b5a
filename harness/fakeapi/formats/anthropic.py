"""The Anthropic Messages wire format, both directions: a WireFormat (formats/base.py) like the others.

Parses and validates requests into the normalized view the checks read, and
renders scripted replies as the JSON message or the full server-sent event
sequence a real client expects. Reading that view (text, compaction requests)
is conversation.py's job, shared with the other protocols. It is the one
format whose streams scripted faults break (a BreakableStream; its event
sequence is anthropic_sse.py), and the shape of every refusal on a path no
format owns.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness.fakeapi.cache_sim import CacheFigures, PromptCache
# The stream half of this WireFormat (a BreakableStream): render_sse, event_name, render_sse_malformed.
from harness.fakeapi.formats.anthropic_sse import RenderedReply, event_name, render_sse, render_sse_malformed  # noqa: F401
from harness.fakeapi.formats.base import COUNT_TOKENS, GENERATE, MODEL_INFO, WRONG_METHOD, BadRequest
from harness.fakeapi.script import blocks_of
from harness.journal.exchange import ANTHROPIC
from harness.scenario import installed_rules
from harness.scenario.model import Turn

NAME = ANTHROPIC
REQUEST_ID_HEADER = "request-id"
CARRIES_FAULTS = True
MESSAGES_PATH = "/v1/messages"
COUNT_TOKENS_PATH = "/v1/messages/count_tokens"
MODELS_PATH = "/v1/models"
_ENDPOINTS = {("POST", MESSAGES_PATH): GENERATE, ("POST", COUNT_TOKENS_PATH): COUNT_TOKENS, ("GET", MODELS_PATH): MODEL_INFO}
MODELS = ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5", "reference-model-1")
_BLOCK_TYPES_IN = {
    "text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking",
    "server_tool_use", "web_search_tool_result", "search_result", "container_upload",
    # tools added mid-conversation (beta mid-conversation-tool-changes-2026-07-01): Claude Code 2.1.332's terminal UI
    # sends one in a system message on its first interactive turn, and falls back after four refusals
    "tool_addition",
}


def endpoint(method: str, path: str) -> str | None:
    found = _ENDPOINTS.get((method, path))
    if found is None and method == "GET" and path.startswith(MODELS_PATH + "/"):
        return MODEL_INFO
    if found is None and path in (MESSAGES_PATH, COUNT_TOKENS_PATH, MODELS_PATH):
        return WRONG_METHOD
    return found


def owns_path(path: str) -> bool:
    """Only the messages paths: a refusal on /v1/models is in Gemini's shape, whose model paths it matches too."""
    return path in (MESSAGES_PATH, COUNT_TOKENS_PATH)


def error_body(message: str, error_type: str = "invalid_request_error", request_id: str = "") -> bytes:
    return json.dumps(
        {"type": "error", "error": {"type": error_type, "message": message}, "request_id": request_id}
    ).encode()


def refusal_body(exc: BadRequest, request_id: str) -> bytes:
    return error_body(str(exc), exc.error_type, request_id)


# --------------------------------------------------------------------------- requests


def parse_request(body: bytes, path: str = "") -> dict[str, Any]:
    """The WireFormat's parse: `path` is unused, a Messages request names its model and streaming in the body."""
    return parse_messages_request(body)


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


def count_tokens(body: bytes) -> tuple[dict[str, Any], bytes]:
    """POST /v1/messages/count_tokens: validated like a message's prompt, journaled with its normalized view."""
    payload = _json_object(body)
    if "messages" not in payload:
        raise BadRequest("messages: Field required")
    normalized = _normalize_prompt(payload)
    normalized["model"] = payload.get("model")
    return normalized, json.dumps({"input_tokens": estimate_tokens(len(body))}).encode()


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
            line_end = block["text"].find("\n")
            if line_end == -1 or not block["text"][line_end + 1:].strip():
                entry["cache_key"] = False
            else:  # the header line leads a block of prompt (older Inspect bridges join the system prompt in one
                entry["cache_key_from"] = line_end + 1  # block): only the line is metadata, the rest is prompt
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


def cache_figures(cache: PromptCache, normalized: dict[str, Any]) -> CacheFigures:
    """Explicit caching: prefixes are read and written at the request's cache_control breakpoints."""
    return cache.anthropic(normalized)


def build_reply(
    seq: int,
    normalized: dict[str, Any],
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
            "model": normalized["model"],
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


def stream_event_names(blocks: list[dict[str, Any]]) -> list[str]:
    """The events a streamed reply with these blocks consists of (their number depends on the content only)."""
    usage = {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    return [event_name(e) for e in render_sse(build_reply(0, {"model": "model"}, blocks, "end_turn", usage))]


def estimate_tokens(size_bytes: int) -> int:
    return max(1, size_bytes // 4)


def models_body(path: str) -> bytes:
    """GET /v1/models, or /v1/models/ID: any ID is a model."""
    if path != MODELS_PATH:
        return _model_body(path.rsplit("/", 1)[-1])
    data = [
        {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"} for m in MODELS
    ]
    return json.dumps({"data": data, "has_more": False, "first_id": MODELS[0], "last_id": MODELS[-1]}).encode()


def _model_body(model_id: str) -> bytes:
    return json.dumps({"type": "model", "id": model_id, "display_name": model_id, "created_at": "2025-01-01T00:00:00Z"}).encode()


def _streamed_event_names(blocks) -> list[str]:
    return stream_event_names(blocks_of(Turn(blocks=blocks)))


# A `cut_stream` fault's `after_events` is bounded by the events this renderer streams; the scenario reader
# sits below the fake API, so the rule is installed into it from here.
installed_rules.install_streamed_events(_streamed_event_names)
