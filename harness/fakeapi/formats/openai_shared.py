"""What the OpenAI formats share (Chat Completions and Responses; Gemini's replies use the reply helpers too).

OpenAI's error shape and its refusals, the request fields both formats read
alike (model, stream, tools, content parts, tool-call arguments), and the
reply's ids, usage and streamed pieces.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness.fakeapi.formats.base import BadRequest as _BadRequest

CREATED = 1735689600  # a fixed `created` (2025-01-01T00:00:00Z): replays produce identical bytes
TEXT_CHUNK = 24  # characters per content delta, so clients must really accumulate
JSON_CHUNK = 16  # characters per arguments delta


class BadRequest(_BadRequest):
    """A request OpenAI would refuse with a 4xx; `param` names the offending field, as OpenAI's errors do."""

    def __init__(self, message: str, param: str | None = None, status: int = 400,
                 error_type: str = "invalid_request_error", code: str | None = None):
        super().__init__(message, status, error_type)
        self.param = param
        self.code = code


def error_body(message: str, error_type: str = "invalid_request_error", request_id: str = "",
               param: str | None = None, code: str | None = None) -> bytes:
    """OpenAI's error shape (both formats); the request id is not in it, only in the response's header."""
    return json.dumps({"error": {"message": message, "type": error_type, "param": param, "code": code}}).encode()


def refusal_body(exc: _BadRequest, request_id: str = "") -> bytes:
    return error_body(str(exc), exc.error_type, request_id, getattr(exc, "param", None), getattr(exc, "code", None))


# --------------------------------------------------------------------------- requests


def json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"We could not parse the JSON body of your request: {exc}") from None
    if not isinstance(payload, dict):
        raise BadRequest("The request body must be a JSON object.")
    return payload


def require_model(payload: dict[str, Any]) -> str:
    if "model" not in payload:
        raise BadRequest("you must provide a model parameter", "model")
    if not isinstance(payload["model"], str) or not payload["model"]:
        raise BadRequest("model: expected a non-empty string", "model")
    return payload["model"]


def parse_stream(payload: dict[str, Any]) -> bool:
    stream = payload.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise BadRequest("stream: expected a boolean", "stream")
    return bool(stream)


def normalize_tools(tools: Any) -> list[dict[str, Any]]:
    """Kept as given, after checking each has a name (Chat nests it under `function`, Responses does not)."""
    if tools is None:
        return []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise BadRequest("tools: expected an array of objects", "tools")
    for i, tool in enumerate(tools):
        if tool.get("type") == "function":
            named = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            if not isinstance(named.get("name"), str) or not named["name"]:
                raise BadRequest(f"Missing required parameter: 'tools[{i}].function.name'.", f"tools[{i}].function.name")
    return tools


def parse_arguments(arguments: Any) -> Any:
    """A tool call's JSON arguments as the input object; the raw string when it is not JSON."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments


def content_blocks(content: Any, where: str, required: bool = True) -> list[dict[str, Any]]:
    """A message's content (a string or an array of parts) as content blocks."""
    if content is None and not required:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise BadRequest(f"Invalid type for '{where}.content': expected a string or an array of parts.", f"{where}.content")
    blocks = []
    for j, part in enumerate(content):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise BadRequest(f"Missing required parameter: '{where}.content[{j}].type'.", f"{where}.content[{j}].type")
        if part["type"] in ("text", "input_text", "output_text"):
            if not isinstance(part.get("text"), str):
                raise BadRequest(f"Missing required parameter: '{where}.content[{j}].text'.", f"{where}.content[{j}].text")
            blocks.append({"type": "text", "text": part["text"]})
        else:
            blocks.append(dict(part))
    return blocks


# --------------------------------------------------------------------------- replies


def stable_id(seq: int, index: int, length: int) -> str:
    """Same run, same ids: replays of a scenario produce identical bytes."""
    return hashlib.sha256(f"{seq}:{index}".encode()).hexdigest()[:length]


def sendable_blocks(seq: int, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scripted blocks an OpenAI format can carry (no thinking), tool calls given ids."""
    out = []
    for i, block in enumerate(blocks):
        if block["type"] == "thinking":
            continue
        block = dict(block)
        if block["type"] == "tool_use" and not block.get("id"):
            block["id"] = "call_" + stable_id(seq, i, 24)
        out.append(block)
    return out


def wire_usage(usage: dict[str, int]) -> tuple[int, int, int]:
    """(prompt tokens incl. cached ones, as OpenAI counts them; cached tokens; completion tokens)."""
    cached = usage.get("cache_read_input_tokens", 0) or 0
    prompt = (usage.get("input_tokens", 0) or 0) + cached + (usage.get("cache_creation_input_tokens", 0) or 0)
    return prompt, cached, usage.get("output_tokens", 0) or 0


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
