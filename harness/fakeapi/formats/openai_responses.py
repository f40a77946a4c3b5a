"""The OpenAI Responses wire format (`POST /v1/responses`), both directions.

Normalized into the same view as the other formats: `instructions` is the
first system block; `input` (a string, or a list of items) becomes messages:
message items (`role` user/assistant; system/developer ones become system
blocks) with string content or `input_text`/`output_text` parts as text
blocks (other parts kept as given), `function_call` items as assistant
tool_use blocks `{id: call_id, name, input}`, `function_call_output` items as
user tool_result blocks `{tool_use_id: call_id, content}`; `reasoning` items
as thinking blocks (which the history check ignores). Tools are kept as given.
The fake API keeps no state: `previous_response_id` is refused.

Replies: a `response` object whose output is one `message` item with one
`output_text` part (all scripted text) and one `function_call` item per
scripted tool use; streamed as the event sequence the SDK accumulates, every
event with `type` and `sequence_number`. Scripted thinking is not sent.
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
from harness.journal.exchange import OPENAI_RESPONSES

NAME = OPENAI_RESPONSES
PATH = "/v1/responses"
REQUEST_ID_HEADER = "x-request-id"
CARRIES_FAULTS = False
count_tokens = None  # the fake API serves no OpenAI token counts
models_body = None  # nor OpenAI's model listing
# The WireFormat (formats/base.py); its error shape is the one both OpenAI formats share.
__all__ = ["CARRIES_FAULTS", "NAME", "REQUEST_ID_HEADER", "BadRequest", "build_reply", "cache_figures", "count_tokens",
           "endpoint", "error_body", "models_body", "owns_path", "parse_request", "refusal_body", "render_json",
           "render_sse"]


def endpoint(method: str, path: str) -> str | None:
    return GENERATE if (method, path) == ("POST", PATH) else None


def owns_path(path: str) -> bool:
    return path == PATH


# --------------------------------------------------------------------------- requests


def parse_request(body: bytes, path: str = "") -> dict[str, Any]:
    """Validate a POST /v1/responses body and return its normalized view.

    `path` is unused: every format takes it, since Gemini names the model and streaming in the path.
    """
    payload = json_object(body)
    model = require_model(payload)
    if payload.get("previous_response_id") is not None:
        raise BadRequest("previous_response_id is not supported by the fake API: send the whole input", "previous_response_id")
    if "input" not in payload:
        raise BadRequest("Missing required parameter: 'input'.", "input")
    instructions = payload.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise BadRequest("instructions: expected a string", "instructions")
    system = [{"text": instructions, "cache_control": None}] if instructions is not None else []
    raw = payload["input"]
    if isinstance(raw, str):
        raw = [{"type": "message", "role": "user", "content": raw}]
    if not isinstance(raw, list):
        raise BadRequest("input: expected a string or an array of items", "input")
    messages: list[dict[str, Any]] = []
    for i, item in enumerate(raw):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise BadRequest(f"{where}: expected an object", where)
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            role = item.get("role")
            if role not in ("user", "assistant", "system", "developer"):
                raise BadRequest(f"Invalid value for '{where}.role': expected user, assistant, system or developer.", f"{where}.role")
            blocks = content_blocks(item.get("content"), where)
            if role in ("system", "developer"):
                system += [{"text": b["text"], "cache_control": None} for b in blocks if b["type"] == "text"]
            else:
                messages.append({"role": role, "content": blocks})
        elif kind == "function_call":
            for key in ("call_id", "name", "arguments"):
                if not isinstance(item.get(key), str):
                    raise BadRequest(f"Missing required parameter: '{where}.{key}'.", f"{where}.{key}")
            block = {"type": "tool_use", "id": item["call_id"], "name": item["name"], "input": parse_arguments(item["arguments"])}
            messages.append({"role": "assistant", "content": [block]})
        elif kind == "function_call_output":
            if not isinstance(item.get("call_id"), str):
                raise BadRequest(f"Missing required parameter: '{where}.call_id'.", f"{where}.call_id")
            output = item.get("output")
            if isinstance(output, list):
                output = content_blocks(output, where)
            elif not isinstance(output, str):
                raise BadRequest(f"Missing required parameter: '{where}.output'.", f"{where}.output")
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": item["call_id"], "content": output}]})
        elif kind == "reasoning":
            messages.append({"role": "assistant", "content": [{"type": "thinking", "thinking": json.dumps(item.get("summary"))}]})
        else:
            raise BadRequest(f"Invalid value for '{where}.type': {kind!r} is not supported by the fake API.", f"{where}.type")
    return {
        "system": system,
        "tools": normalize_tools(payload.get("tools")),
        "messages": messages,
        "model": model,
        "max_tokens": payload.get("max_output_tokens"),
        "stream": parse_stream(payload),
        "metadata": payload.get("metadata"),
        "tool_choice": payload.get("tool_choice"),
        "instructions": instructions,
    }


# --------------------------------------------------------------------------- replies


def cache_figures(cache: PromptCache, normalized: dict[str, Any]) -> CacheFigures:
    """Automatic caching, as for Chat Completions; a cache of its own (a format never reads another's)."""
    return cache.openai(NAME, normalized)


@dataclass
class ResponsesReply:
    response: dict[str, Any]  # the complete response object
    blocks: list[dict[str, Any]]  # what was sent, as Anthropic-shaped blocks
    stop_reason: str
    usage: dict[str, int]

    @property
    def journal_view(self) -> dict[str, Any]:
        return {"content": self.blocks, "stop_reason": self.stop_reason, "status": self.response["status"],
                "usage": self.usage}


def build_reply(seq: int, normalized: dict[str, Any], blocks: list[dict[str, Any]], stop_reason: str,
                usage: dict[str, int]) -> ResponsesReply:
    sent = sendable_blocks(seq, blocks)
    text = "".join(b["text"] for b in sent if b["type"] == "text")
    calls = [b for b in sent if b["type"] == "tool_use"]
    output: list[dict[str, Any]] = []
    if text or not calls:
        output.append({
            "type": "message", "id": "msg_" + stable_id(seq, -2, 24), "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        })
    for i, call in enumerate(calls):
        output.append({
            "type": "function_call", "id": "fc_" + stable_id(seq, 100 + i, 24), "call_id": call["id"],
            "name": call["name"], "arguments": json.dumps(call["input"]), "status": "completed",
        })
    prompt, cached, output_tokens = wire_usage(usage)
    incomplete = stop_reason == "max_tokens"
    response = {
        "id": "resp_" + stable_id(seq, -1, 32),
        "object": "response",
        "created_at": CREATED,
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": normalized.get("instructions"),
        "max_output_tokens": normalized.get("max_tokens"),
        "model": normalized["model"],
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": normalized.get("tool_choice") or "auto",
        "tools": normalized["tools"],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": prompt + output_tokens,
        },
        "metadata": normalized.get("metadata") or {},
    }
    journaled = ([{"type": "text", "text": text}] if text else []) + calls
    return ResponsesReply(response, journaled, stop_reason, usage)


def render_json(reply: ResponsesReply) -> bytes:
    return json.dumps(reply.response).encode()


def render_sse(reply: ResponsesReply) -> Iterator[bytes]:
    """response.created … response.completed (or .incomplete), each event with `type` and `sequence_number`."""
    response = reply.response
    counter = iter(range(1 << 30))

    def event(kind: str, **fields: Any) -> bytes:
        data = {"type": kind, "sequence_number": next(counter), **fields}
        return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()

    pending = dict(response, status="in_progress", output=[], usage=None, incomplete_details=None)
    yield event("response.created", response=pending)
    yield event("response.in_progress", response=pending)
    for index, item in enumerate(response["output"]):
        if item["type"] == "message":
            yield event("response.output_item.added", output_index=index, item=dict(item, status="in_progress", content=[]))
            part = item["content"][0]
            empty = dict(part, text="")
            yield event("response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=empty)
            for piece in pieces(part["text"], TEXT_CHUNK):
                yield event("response.output_text.delta", item_id=item["id"], output_index=index, content_index=0,
                            delta=piece, logprobs=[])
            yield event("response.output_text.done", item_id=item["id"], output_index=index, content_index=0,
                        text=part["text"], logprobs=[])
            yield event("response.content_part.done", item_id=item["id"], output_index=index, content_index=0, part=part)
        else:  # function_call
            yield event("response.output_item.added", output_index=index, item=dict(item, status="in_progress", arguments=""))
            for piece in pieces(item["arguments"], JSON_CHUNK):
                yield event("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece)
            yield event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                        name=item["name"], arguments=item["arguments"])
        yield event("response.output_item.done", output_index=index, item=item)
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    yield event(final, response=response)
