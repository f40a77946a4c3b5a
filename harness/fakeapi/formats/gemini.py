"""The Gemini API wire format (`POST /v1beta/models/MODEL:generateContent`, `:streamGenerateContent?alt=sse`), both ways.

Unlike the other formats the model and streaming are named by the URL, not the
body, so `parse_request` takes the path too. Normalized into the same view:

- `systemInstruction` (a Content, a list of parts or a string) becomes one
  system block per text part, `cache_control` None: the format has no
  breakpoints (its caching is implicit, by prefix, as OpenAI's);
- `contents` become messages: role `user` (and the legacy `function`) as user,
  `model` as assistant; `text` parts as text blocks (`thought: true` ones as
  thinking blocks, which the history check ignores), `functionCall` as tool_use
  `{id, name, input}`, `functionResponse` as tool_result `{tool_use_id,
  content}` (ids are the part's `id`, or "" when the client sent none); other
  parts kept as given, typed by their key;
- `tools` kept as given (`[{functionDeclarations: [...]}]`).

Replies: a GenerateContentResponse with one candidate; streamed as SSE `data:`
lines, each a whole GenerateContentResponse carrying the next piece of text
(or one whole functionCall, as the API sends them), the last with the
`finishReason`, every one with `usageMetadata`. Tool calls carry an `id`, which
the client echoes in its history and its functionResponse. Scripted thinking is
not sent. Errors come in Google's shape `{error: {code, message, status}}`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness.fakeapi.cache_sim import CacheFigures, PromptCache
from harness.fakeapi.formats.anthropic import estimate_tokens
from harness.fakeapi.formats.base import COUNT_TOKENS, GENERATE, MODEL_INFO, BadRequest as _BadRequest
from harness.fakeapi.formats.openai_shared import pieces, sendable_blocks, stable_id, wire_usage
from harness.journal.exchange import GEMINI

NAME = GEMINI
REQUEST_ID_HEADER = "x-request-id"
CARRIES_FAULTS = False
TEXT_CHUNK = 24  # characters per streamed chunk, so clients must really accumulate
# /v1beta/models/gemini-2.5-pro:streamGenerateContent (also /v1/, and tuned or publisher model paths)
PATH_RE = re.compile(r"^/(?:v1|v1beta|v1alpha)/(?:.+/)?models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")
GENERATE_METHODS = ("generateContent", "streamGenerateContent")
MODELS_RE = re.compile(r"^/(?:v1|v1beta|v1alpha)/models(?:/(?P<model>[^/:]+))?$")  # GET: a listing, or one model
MODELS = ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite")
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           405: "INVALID_ARGUMENT", 413: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
           503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED", 529: "UNAVAILABLE"}
_TYPE_STATUS = {"rate_limit_error": 429, "overloaded_error": 503, "api_error": 500, "invalid_request_error": 400,
                "authentication_error": 401, "permission_error": 403, "not_found_error": 404}
_FINISH = {"end_turn": "STOP", "stop_sequence": "STOP", "tool_use": "STOP", "max_tokens": "MAX_TOKENS",
           "pause_turn": "STOP", "refusal": "SAFETY"}


class BadRequest(_BadRequest):
    """A request Google would refuse with a 4xx."""


def route(method: str, path: str) -> tuple[str, str] | None:
    """(model, method) of a Gemini model path (`...:streamGenerateContent`), or None."""
    match = PATH_RE.match(path) if method == "POST" else None
    return (match["model"], match["method"]) if match else None


def endpoint(method: str, path: str) -> str | None:
    """Any method of a model path is GENERATE but countTokens (parse_request refuses the unknown ones, 404)."""
    routed = route(method, path)
    if routed is not None:
        return COUNT_TOKENS if routed[1] == "countTokens" else GENERATE
    return MODEL_INFO if method == "GET" and MODELS_RE.match(path) else None


def owns_path(path: str) -> bool:
    return bool(route("POST", path) or MODELS_RE.match(path))


def error_body(message: str, error_type: str = "invalid_request_error", request_id: str = "",
               status: int | None = None) -> bytes:
    """Google's error shape, with no request id; the code follows the scripted error type when no status is given."""
    code = status or _TYPE_STATUS.get(error_type, 500)
    return json.dumps({"error": {"code": code, "message": message, "status": _STATUS.get(code, "UNKNOWN")}}).encode()


def refusal_body(exc: _BadRequest, request_id: str = "") -> bytes:
    return error_body(str(exc), exc.error_type, request_id, exc.status)


# --------------------------------------------------------------------------- requests


def parse_request(body: bytes, path: str = "") -> dict[str, Any]:
    """Validate a generateContent / streamGenerateContent body and return its normalized view."""
    found = PATH_RE.match(path)
    if found is None or found["method"] not in GENERATE_METHODS:
        raise BadRequest(f"expected POST /v1beta/models/MODEL:generateContent or :streamGenerateContent, got {path!r}", 404, "not_found_error")
    payload = _json_object(body)
    raw_contents = payload.get("contents")
    if not isinstance(raw_contents, list) or not raw_contents:
        raise BadRequest("* GenerateContentRequest.contents: contents is not specified")
    messages = []
    for i, content in enumerate(raw_contents):
        where = f"contents[{i}]"
        if not isinstance(content, dict):
            raise BadRequest(f"Invalid value at '{where}': expected an object")
        role = content.get("role", "user")
        if role not in ("user", "model", "function"):
            raise BadRequest(f"Please use a valid role: user, model. ({where}.role: {role!r})")
        blocks = _parts(content.get("parts"), where)
        messages.append({"role": "assistant" if role == "model" else "user", "content": blocks})
    return {
        "system": _system(payload.get("systemInstruction", payload.get("system_instruction"))),
        "tools": _tools(payload.get("tools")),
        "messages": messages,
        "model": found["model"],
        "max_tokens": (payload.get("generationConfig") or {}).get("maxOutputTokens"),
        "stream": found["method"] == "streamGenerateContent",
        "metadata": None,
        "tool_choice": payload.get("toolConfig"),
        "generation_config": payload.get("generationConfig"),
    }


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"Invalid JSON payload received. {exc}") from None
    if not isinstance(payload, dict):
        raise BadRequest("Invalid JSON payload received. Expected an object.")
    return payload


def _system(instruction: Any) -> list[dict[str, Any]]:
    if instruction is None:
        return []
    if isinstance(instruction, str):
        return [{"text": instruction, "cache_control": None}]
    parts = instruction.get("parts") if isinstance(instruction, dict) else instruction
    blocks = _parts(parts, "systemInstruction")
    return [{"text": b["text"], "cache_control": None} for b in blocks if b["type"] == "text"]


def _tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise BadRequest("Invalid value at 'tools': expected an array of objects")
    return tools


def _parts(parts: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(parts, list):
        raise BadRequest(f"* GenerateContentRequest.{where}.parts: contents.parts must not be empty")
    blocks = []
    for j, part in enumerate(parts):
        at = f"{where}.parts[{j}]"
        if not isinstance(part, dict):
            raise BadRequest(f"Invalid value at '{at}': expected an object")
        if "text" in part:
            if not isinstance(part["text"], str):
                raise BadRequest(f"Invalid value at '{at}.text': expected a string")
            if part.get("thought"):
                blocks.append({"type": "thinking", "thinking": part["text"]})
            else:
                blocks.append({"type": "text", "text": part["text"]})
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            if not isinstance(call.get("name"), str) or not call["name"]:
                raise BadRequest(f"* GenerateContentRequest.{at}.function_call.name: Name cannot be empty.")
            blocks.append({"type": "tool_use", "id": call.get("id") or "", "name": call["name"], "input": call.get("args", {})})
        elif isinstance(part.get("functionResponse"), dict):
            answer = part["functionResponse"]
            if not isinstance(answer.get("name"), str) or not answer["name"]:
                raise BadRequest(f"* GenerateContentRequest.{at}.function_response.name: Name cannot be empty.")
            blocks.append({"type": "tool_result", "tool_use_id": answer.get("id") or "", "content": answer.get("response")})
        else:
            kind = next((k for k in part if k not in ("thought", "thoughtSignature")), "empty")
            blocks.append({"type": kind, **part})
    return blocks


# --------------------------------------------------------------------------- replies


def cache_figures(cache: PromptCache, normalized: dict[str, Any]) -> CacheFigures:
    """Implicit caching, by prefix, as OpenAI's."""
    return cache.openai(NAME, normalized)


@dataclass
class GeminiReply:
    response: dict[str, Any]  # the complete GenerateContentResponse
    blocks: list[dict[str, Any]]  # what was sent, as Anthropic-shaped blocks
    stop_reason: str
    usage: dict[str, int]  # Anthropic-shaped, as scripted

    @property
    def journal_view(self) -> dict[str, Any]:
        return {"content": self.blocks, "stop_reason": self.stop_reason,
                "finish_reason": self.response["candidates"][0]["finishReason"], "usage": self.usage}


def build_reply(seq: int, normalized: dict[str, Any], blocks: list[dict[str, Any]], stop_reason: str,
                usage: dict[str, int]) -> GeminiReply:
    sent = sendable_blocks(seq, blocks)
    parts: list[dict[str, Any]] = []
    for block in sent:
        if block["type"] == "text":
            parts.append({"text": block["text"]})
        elif block["type"] == "tool_use":
            parts.append({"functionCall": {"id": block["id"], "name": block["name"], "args": block["input"]}})
    if not parts:
        parts.append({"text": ""})
    prompt, cached, output_tokens = wire_usage(usage)
    usage_metadata = {"promptTokenCount": prompt, "candidatesTokenCount": output_tokens,
                      "totalTokenCount": prompt + output_tokens}
    if cached:
        usage_metadata["cachedContentTokenCount"] = cached
    response = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": _FINISH.get(stop_reason, "STOP"),
                        "index": 0}],
        "usageMetadata": usage_metadata,
        "modelVersion": normalized["model"],
        "responseId": stable_id(seq, -1, 22),
    }
    journaled = [b for b in sent if b["type"] in ("text", "tool_use")]
    return GeminiReply(response, journaled, stop_reason, usage)


def render_json(reply: GeminiReply) -> bytes:
    return json.dumps(reply.response).encode()


def render_sse(reply: GeminiReply) -> Iterator[bytes]:
    """One `data:` event per text piece or function call; the last carries the finishReason."""
    response = reply.response
    candidate = response["candidates"][0]
    chunks: list[dict[str, Any]] = []
    for part in candidate["content"]["parts"]:
        if "text" in part:
            chunks += [{"text": piece} for piece in pieces(part["text"], TEXT_CHUNK)]
        else:
            chunks.append(part)
    for i, part in enumerate(chunks):
        last = i == len(chunks) - 1
        data = dict(response, candidates=[{"content": {"role": "model", "parts": [part]}, "index": 0}])
        if last:
            data["candidates"][0]["finishReason"] = candidate["finishReason"]
        yield b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\r\n\r\n"


# --------------------------------------------------------------------------- other endpoints


def count_tokens(body: bytes) -> tuple[None, bytes]:
    """`:countTokens`: the estimate the fake API uses everywhere (4 bytes a token); the body is not read."""
    return None, json.dumps({"totalTokens": estimate_tokens(len(body))}).encode()


def models_body(path: str) -> bytes:
    """GET of the model listing, or of one model: any name is a model."""
    model = MODELS_RE.match(path)["model"]
    return json.dumps(_model(model) if model else {"models": [_model(m) for m in MODELS]}).encode()


def _model(model_id: str) -> dict[str, Any]:
    return {"name": f"models/{model_id}", "version": "001", "displayName": model_id, "inputTokenLimit": 1048576,
            "outputTokenLimit": 65536, "supportedGenerationMethods": ["generateContent", "countTokens"]}
