"""The OpenAI Chat Completions wire format (`POST /v1/chat/completions`), both directions.

Requests are validated and normalized into the same view as the Anthropic
Messages format, so the checks and the classifier read them unchanged:

- `system` and `developer` messages become system blocks (one per message, or
  one per text part), with `cache_control` None: the format has no breakpoints;
- `tools` are kept as given (`[{type: function, function: {...}}]`);
- user and assistant messages become messages of content blocks: text parts as
  text blocks (other parts kept as given), an assistant's `tool_calls` as
  tool_use blocks `{id, name, input}` with `input` parsed from the JSON
  arguments (kept as the raw string when it is not JSON);
- a `tool` message becomes a user message with one tool_result block
  `{tool_use_id, content}`.

Replies come from the same scripted turns: text blocks as `content`, tool_use
blocks as `tool_calls` with JSON arguments, thinking blocks are not sent (the
format has no place for them). The journal keeps the reply as Anthropic-shaped
blocks (what the history check compares) plus the `finish_reason` sent.

What both OpenAI formats share (the error shape, ids, usage) is in
openai_shared.py. A WireFormat (formats/base.py) whose replies scripted faults
do not break: the reply is given normally and the exchange notes the fault.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness.fakeapi.cache_sim import CacheFigures, PromptCache
from harness.fakeapi.formats.base import GENERATE
from harness.fakeapi.formats.openai_shared import (
    CREATED,
    JSON_CHUNK,
    TEXT_CHUNK,
    BadRequest,
    content_blocks,
    error_body,
    json_object,
    normalize_tools,
    parse_arguments,
    parse_stream,
    pieces,
    refusal_body,
    require_model,
    sendable_blocks,
    stable_id,
    wire_usage,
)
from harness.journal.exchange import OPENAI_CHAT

NAME = OPENAI_CHAT
PATH = "/v1/chat/completions"
REQUEST_ID_HEADER = "x-request-id"
CARRIES_FAULTS = False
count_tokens = None  # the fake API serves no OpenAI token counts
models_body = None  # nor OpenAI's model listing
_ROLES = ("system", "developer", "user", "assistant", "tool")
_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length",
           "pause_turn": "stop", "refusal": "content_filter"}


def endpoint(method: str, path: str) -> str | None:
    return GENERATE if (method, path) == ("POST", PATH) else None


def owns_path(path: str) -> bool:
    return path == PATH


# --------------------------------------------------------------------------- requests


def parse_request(body: bytes, path: str = "") -> dict[str, Any]:
    """Validate a POST /v1/chat/completions body and return its normalized view.

    `path` is unused: every format takes it, since Gemini names the model and streaming in the path.
    """
    payload = json_object(body)
    model = require_model(payload)
    if "messages" not in payload:
        raise BadRequest("Missing required parameter: 'messages'.", "messages")
    raw_messages = payload["messages"]
    if not isinstance(raw_messages, list):
        raise BadRequest("messages: expected an array", "messages")
    if not raw_messages:
        raise BadRequest("messages: expected an array with minimum length 1, but got an empty array", "messages")
    stream = parse_stream(payload)
    stream_options = payload.get("stream_options")
    if stream_options is not None:
        if not stream:
            raise BadRequest("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options")
        if not isinstance(stream_options, dict):
            raise BadRequest("stream_options: expected an object", "stream_options")
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for i, message in enumerate(raw_messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise BadRequest(f"{where}: expected an object", where)
        role = message.get("role")
        if role not in _ROLES:
            raise BadRequest(
                f"Invalid value for '{where}.role': expected one of {', '.join(_ROLES)}, got {role!r}.", f"{where}.role"
            )
        content = message.get("content")
        if role in ("system", "developer"):
            system += [{"text": b["text"], "cache_control": None} for b in content_blocks(content, where, required=True)]
        elif role == "user":
            messages.append({"role": "user", "content": content_blocks(content, where, required=True)})
        elif role == "assistant":
            blocks = [b for b in content_blocks(content, where, required=False) if b.get("type") != "text" or b["text"]]
            blocks += _tool_uses(message.get("tool_calls"), where)
            if not blocks and "content" not in message:
                raise BadRequest(f"Missing required parameter: '{where}.content'.", f"{where}.content")
            messages.append({"role": "assistant", "content": blocks})
        else:  # tool
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise BadRequest(f"Missing required parameter: '{where}.tool_call_id'.", f"{where}.tool_call_id")
            if isinstance(content, list):
                result: Any = content_blocks(content, where, required=True)
            elif isinstance(content, str):
                result = content
            else:
                raise BadRequest(f"Missing required parameter: '{where}.content'.", f"{where}.content")
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}]})
    return {
        "system": system,
        "tools": normalize_tools(payload.get("tools")),
        "messages": messages,
        "model": model,
        "max_tokens": payload.get("max_completion_tokens", payload.get("max_tokens")),
        "stream": stream,
        "stream_options": stream_options,
        "metadata": payload.get("metadata"),
        "tool_choice": payload.get("tool_choice"),
    }


def _tool_uses(tool_calls: Any, where: str) -> list[dict[str, Any]]:
    if tool_calls is None:
        return []
    if not isinstance(tool_calls, list):
        raise BadRequest(f"{where}.tool_calls: expected an array", f"{where}.tool_calls")
    blocks = []
    for k, call in enumerate(tool_calls):
        at = f"{where}.tool_calls[{k}]"
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not isinstance(function, dict):
            raise BadRequest(f"{at}: expected {{id, type: 'function', function: {{name, arguments}}}}", at)
        if not isinstance(function.get("name"), str) or not isinstance(function.get("arguments"), str):
            raise BadRequest(f"Missing required parameter: '{at}.function.name' or '.arguments'.", f"{at}.function")
        blocks.append({"type": "tool_use", "id": call["id"], "name": function["name"],
                       "input": parse_arguments(function["arguments"])})
    return blocks


# --------------------------------------------------------------------------- replies


def cache_figures(cache: PromptCache, normalized: dict[str, Any]) -> CacheFigures:
    """Automatic caching: the longest prefix shared with an earlier prompt of the same model (both formats)."""
    return cache.openai(NAME, normalized)


@dataclass
class ChatReply:
    completion: dict[str, Any]  # the complete chat.completion object
    blocks: list[dict[str, Any]]  # what was sent, as Anthropic-shaped blocks
    stop_reason: str
    usage: dict[str, int]  # Anthropic-shaped, as scripted
    include_usage: bool = False

    @property
    def journal_view(self) -> dict[str, Any]:
        return {
            "content": self.blocks,
            "stop_reason": self.stop_reason,
            "finish_reason": self.completion["choices"][0]["finish_reason"],
            "usage": self.usage,
        }


def build_reply(seq: int, normalized: dict[str, Any], blocks: list[dict[str, Any]], stop_reason: str,
                usage: dict[str, int]) -> ChatReply:
    sent = sendable_blocks(seq, blocks)
    text = "".join(b["text"] for b in sent if b["type"] == "text")
    calls = [
        {"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
        for b in sent if b["type"] == "tool_use"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    # Journaled as sent: the format joins all text into one `content`, then the tool calls.
    sent = ([{"type": "text", "text": text}] if text else []) + [b for b in sent if b["type"] == "tool_use"]
    prompt, cached, completion_tokens = wire_usage(usage)
    completion = {
        "id": "chatcmpl-" + stable_id(seq, -1, 29),
        "object": "chat.completion",
        "created": CREATED,
        "model": normalized["model"],
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": _FINISH.get(stop_reason, "stop")}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
        },
        "system_fingerprint": "fp_harness",
    }
    include_usage = bool((normalized.get("stream_options") or {}).get("include_usage"))
    return ChatReply(completion, sent, stop_reason, usage, include_usage)


def render_json(reply: ChatReply) -> bytes:
    return json.dumps(reply.completion).encode()


def render_sse(reply: ChatReply) -> Iterator[bytes]:
    """`chat.completion.chunk` deltas, an optional usage chunk, then `data: [DONE]`."""
    completion = reply.completion
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> bytes:
        data: dict[str, Any] = {
            "id": completion["id"], "object": "chat.completion.chunk", "created": completion["created"],
            "model": completion["model"], "system_fingerprint": completion["system_fingerprint"],
            "choices": [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if reply.include_usage:
            data["usage"] = usage
        return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    if message["content"]:
        for piece in pieces(message["content"], TEXT_CHUNK):
            yield chunk({"content": piece})
    for index, call in enumerate(message.get("tool_calls", [])):
        head = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": ""}}
        yield chunk({"tool_calls": [head]})
        for piece in pieces(call["function"]["arguments"], JSON_CHUNK):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, choice["finish_reason"])
    if reply.include_usage:
        yield chunk(None, usage=completion["usage"])
    yield b"data: [DONE]\n\n"
