"""The fake API's Gemini wire format (`models/M:generateContent`, `:streamGenerateContent?alt=sse`), through a real server.

Replies are read with the stdlib and a strict SSE reader written here, never
with the harness's own code; the conversation test runs the unchanged checks
over the journal read back from disk.
"""

from __future__ import annotations

import http.client
import json
import re
from typing import Any

import pytest
from vocabulary import say, step_with

from harness.checks import CheckContext, run_check
from harness.journal.requests import read_journal
from harness.fakeapi.formats import gemini
from harness.scenario.model import ApiError, TextBlock, ToolUseBlock, Turn, Usage

MODEL = "gemini-test-pro"
STREAM = f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
JSON = f"/v1beta/models/{MODEL}:generateContent"
IDENTITY = "You are Agent X, a coding assistant."
APPEND = "APPENDED RULES: answer with one number."
IDENTITY_PATTERN = re.compile(r"You are Agent \w+")


def request(server, method: str, path: str, body: dict | bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    raw = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        conn.request(method, path, body=raw, headers={"content-type": "application/json", "x-goog-api-key": "fake-key"})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def sse_chunks(raw: bytes) -> list[dict[str, Any]]:
    """Strict: every event is one `data:` line ended by a blank line (CRLF, as Google sends them)."""
    text = raw.decode()
    assert text.endswith("\r\n\r\n")
    events = text[:-4].split("\r\n\r\n")
    assert all(e.startswith("data: ") and "\n" not in e for e in events), events
    return [json.loads(e[len("data: "):]) for e in events]


def accumulate(chunks: list[dict]) -> dict[str, Any]:
    text, calls, finish = "", [], None
    for chunk in chunks:
        (candidate,) = chunk["candidates"]
        for part in candidate["content"]["parts"]:
            text += part.get("text", "")
            if "functionCall" in part:
                calls.append(part["functionCall"])
        finish = candidate.get("finishReason", finish)
    return {"text": text, "calls": calls, "finish": finish, "usage": chunks[-1]["usageMetadata"]}


def body(*contents: dict, system: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"contents": list(contents) or [{"role": "user", "parts": [{"text": "What is 6*7?"}]}], **extra}
    if system:
        out["systemInstruction"] = {"role": "user", "parts": [{"text": s} for s in system]}
    return out


def test_json_reply_and_normalized_view(served):
    api, server, journal_path = served
    api.begin_step(step_with(Turn(blocks=(TextBlock("The answer is 42."),), usage=Usage(input_tokens=10, output_tokens=5))))
    tools = [{"functionDeclarations": [{"name": "calc", "description": "math", "parametersJsonSchema": {"type": "object"}}]}]
    status, headers, raw = request(server, "POST", JSON, body(
        {"role": "user", "parts": [{"text": "What is 6*7?"}]},
        system=[IDENTITY, APPEND], tools=tools, generationConfig={"maxOutputTokens": 50},
    ))
    assert status == 200 and headers["content-type"] == "application/json"
    reply = json.loads(raw)
    (candidate,) = reply["candidates"]
    assert candidate["content"] == {"role": "model", "parts": [{"text": "The answer is 42."}]}
    assert candidate["finishReason"] == "STOP" and reply["modelVersion"] == MODEL
    assert reply["usageMetadata"] == {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}

    (line,) = read_journal(journal_path)
    assert (line.protocol, line.klass, line.status, line.path, line.stream) == ("gemini", "main", 200, JSON, False)
    assert line.headers["x-goog-api-key"] == "[redacted]"
    assert line.normalized["system"] == [{"text": IDENTITY, "cache_control": None}, {"text": APPEND, "cache_control": None}]
    assert line.normalized["tools"] == tools
    assert line.normalized["messages"] == [{"role": "user", "content": [{"type": "text", "text": "What is 6*7?"}]}]
    assert (line.normalized["model"], line.normalized["max_tokens"]) == (MODEL, 50)
    assert line.reply["content"] == [{"type": "text", "text": "The answer is 42."}]


def test_stream_in_pieces_with_usage_and_cached_tokens(served):
    api, server, journal_path = served
    text = "Forty-two, the answer to everything asked here today."
    api.begin_step(step_with(Turn(blocks=(TextBlock(text),), usage=Usage(input_tokens=20, output_tokens=9, cache_read_input_tokens=300))))
    status, headers, raw = request(server, "POST", STREAM, body())
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    chunks = sse_chunks(raw)
    assert len(chunks) > 2  # the client must really accumulate
    assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])
    got = accumulate(chunks)
    assert (got["text"], got["finish"]) == (text, "STOP")
    assert got["usage"] == {"promptTokenCount": 320, "candidatesTokenCount": 9, "totalTokenCount": 329, "cachedContentTokenCount": 300}
    (line,) = read_journal(journal_path)
    assert line.stream is True and line.query == "alt=sse"


@pytest.mark.parametrize("path", [STREAM, JSON])
def test_function_call_round_trip(served, path):
    api, server, journal_path = served
    api.begin_step(step_with(Turn(blocks=(ToolUseBlock(name="list_directory", input={"dir_path": "."}),)), say("Done.")))
    status, _, raw = request(server, "POST", path, body())
    reply = accumulate(sse_chunks(raw)) if "alt=sse" in path else accumulate([json.loads(raw)])
    (call,) = reply["calls"]
    assert call["name"] == "list_directory" and call["args"] == {"dir_path": "."} and call["id"]
    history = [
        {"role": "user", "parts": [{"text": "What is 6*7?"}]},
        {"role": "model", "parts": [{"functionCall": call}]},
        {"role": "user", "parts": [{"functionResponse": {"id": call["id"], "name": call["name"], "response": {"output": "a.txt"}}}]},
    ]
    status, _, raw = request(server, "POST", path, body(*history))
    assert status == 200
    first, second = read_journal(journal_path)
    assert first.reply["content"] == [{"type": "tool_use", "id": call["id"], "name": "list_directory", "input": {"dir_path": "."}}]
    assert second.normalized["messages"][1:] == [
        {"role": "assistant", "content": first.reply["content"]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": {"output": "a.txt"}}]},
    ]


def test_thought_parts_are_thinking_blocks(served):
    api, server, journal_path = served
    api.begin_step(step_with(say("42")))
    request(server, "POST", JSON, body({"role": "user", "parts": [{"text": "q"}]},
                                       {"role": "model", "parts": [{"text": "hmm", "thought": True}, {"text": "a"}]},
                                       {"role": "user", "parts": [{"text": "q2"}]}))
    (line,) = read_journal(journal_path)
    assert line.normalized["messages"][1]["content"] == [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "a"}]


def test_scripted_error_in_google_shape(served):
    api, server, journal_path = served
    api.begin_step(step_with(error=ApiError(status=429, type="rate_limit_error", message="slow down", retry_after=0)))
    status, headers, raw = request(server, "POST", STREAM, body())
    assert status == 429 and headers["retry-after"] == "0"
    assert json.loads(raw) == {"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}
    (line,) = read_journal(journal_path)
    assert (line.klass, line.status, line.protocol) == ("main", 429, "gemini")


@pytest.mark.parametrize("payload, message", [
    (b"{not json", "Invalid JSON payload"),
    ({"contents": []}, "contents is not specified"),
    ({"contents": [{"role": "robot", "parts": [{"text": "x"}]}]}, "valid role"),
    ({"contents": [{"role": "user", "parts": [{"functionCall": {"args": {}}}]}]}, "Name cannot be empty"),
])
def test_malformed_body_refused_in_google_shape_and_journaled(served, payload, message):
    api, server, journal_path = served
    status, _, raw = request(server, "POST", JSON, payload)
    error = json.loads(raw)["error"]
    assert status == 400 and error["code"] == 400 and error["status"] == "INVALID_ARGUMENT" and message in error["message"]
    (line,) = read_journal(journal_path)
    assert (line.klass, line.protocol) == ("malformed", "gemini")


def test_count_tokens_and_model_listings_are_side_calls(served):
    api, server, journal_path = served
    status, _, raw = request(server, "POST", f"/v1beta/models/{MODEL}:countTokens", body())
    assert status == 200 and json.loads(raw)["totalTokens"] > 0
    assert request(server, "GET", "/v1beta/models")[0] == 200
    status, _, raw = request(server, "GET", f"/v1beta/models/{MODEL}")
    assert status == 200 and json.loads(raw)["name"] == f"models/{MODEL}"
    assert [e.klass for e in read_journal(journal_path)] == ["side", "side", "side"]


def test_unknown_method_on_a_model_path_is_refused(served):
    _, server, journal_path = served
    status, _, raw = request(server, "POST", f"/v1beta/models/{MODEL}:embedContent", body())
    assert status == 404 and json.loads(raw)["error"]["status"] == "NOT_FOUND"
    assert [e.klass for e in read_journal(journal_path)] == ["malformed"]


def _turn(server, system: list[str], history: list[dict], prompt: str) -> list[dict]:
    contents = history + [{"role": "user", "parts": [{"text": prompt}]}]
    got = accumulate(sse_chunks(request(server, "POST", STREAM, body(*contents, system=system))[2]))
    return contents + [{"role": "model", "parts": [{"text": got["text"]}]}]


CHECK_NAMES = ("identity_stable", "appended_exactly_once", "prefix_stable", "history_preserved")
DEFECTS = {
    "keeps-everything": set(),
    "drops-append": {"appended_exactly_once", "prefix_stable"},
    "new-identity": {"identity_stable", "prefix_stable"},
    "forgets-last-reply": {"history_preserved"},
}


@pytest.mark.parametrize("defect", list(DEFECTS))
def test_checks_judge_a_two_step_conversation(served, defect):
    api, server, journal_path = served
    system = [IDENTITY, APPEND]
    api.begin_step(step_with(say("6*7 is 42."), index=1))
    history = _turn(server, system, [], "What is 6*7?")
    api.end_step()
    api.begin_step(step_with(say("7*8 is 56."), index=2))
    if defect == "drops-append":
        system = [IDENTITY]
    elif defect == "new-identity":
        system = ["You are Agent Y, a coding assistant.", APPEND]
    elif defect == "forgets-last-reply":
        history = history[:-1]
    _turn(server, system, history, "And 7*8?")
    api.end_step()
    exchanges = read_journal(journal_path)
    assert [(e.step, e.klass, e.protocol) for e in exchanges] == [(1, "main", "gemini"), (2, "main", "gemini")]
    context = CheckContext(tuple(exchanges), APPEND, IDENTITY_PATTERN)
    verdicts = {name: run_check(name, context).verdict for name in CHECK_NAMES}
    assert verdicts == {name: "fail" if name in DEFECTS[defect] else "pass" for name in CHECK_NAMES}


def test_route_recognizes_only_model_method_paths():
    assert gemini.route("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent") == ("gemini-2.5-pro", "streamGenerateContent")
    assert gemini.route("POST", "/v1/models/m:generateContent") == ("m", "generateContent")
    assert gemini.route("GET", "/v1beta/models/m:generateContent") is None
    assert gemini.route("POST", "/v1/messages") is None
