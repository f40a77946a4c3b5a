"""The fake Anthropic Messages API, through a real HTTP server on 127.0.0.1.

Every test talks to a live FakeAPIServer with an independent client: the
official `anthropic` SDK (its stream accumulator judges our SSE), `httpx`, and
`http.client` or raw sockets where the bytes on the wire matter.  Nothing here
parses replies with the harness's own code.
"""

from __future__ import annotations

import base64
import http.client
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.fakeapi import cache_sim
from harness.fakeapi.core import FakeModelAPI
from harness.journal.rules import RequestRule
from harness.journal.requests import Journal, read_journal
from harness.fakeapi.formats.anthropic import MODELS
from harness.fakeapi.server import FakeAPIServer
from harness.scenario.model import Step, TextBlock, ThinkingBlock, ToolUseBlock, Turn, Usage

MODEL = "reference-model-1"

# Claude Code's /compact request, abridged: its summarizer system prompt and instruction.
COMPACT_SYSTEM = "You are a helpful AI assistant tasked with summarizing conversations."
COMPACT_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far, paying close attention to the "
    "user's explicit requests and your previous actions.\n"
    "Before providing your final summary, wrap your analysis in <analysis> tags.\n"
    "Your summary should include the following sections: 1. Primary Request and Intent ...\n"
    "<summary>\n1. Primary Request and Intent:\n   [Detailed description]\n</summary>"
)
# How Claude Code carries the summary back, sometimes in the same message as the next prompt.
CONTINUATION = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation.\n\nSummary:\nThe user asked for 6*7.\n"
)

KIMI_CONTINUATION = (
    "The conversation so far has been compacted to free up context. A summary of the earlier conversation "
    "follows.\n<summary>\nThe user asked for 6*7 (42).\n</summary>\n"
)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "journal.jsonl"


@pytest.fixture
def api(journal_path: Path):
    journal = Journal(journal_path)
    yield FakeModelAPI(journal)
    journal.close()


@pytest.fixture
def server(api: FakeModelAPI):
    with FakeAPIServer(api) as running:
        yield running


@pytest.fixture
def client(server: FakeAPIServer) -> anthropic.Anthropic:
    return sdk(server)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One server for the property tests (hypothesis runs many examples per test)."""
    journal = Journal(tmp_path_factory.mktemp("shared") / "journal.jsonl")
    api = FakeModelAPI(journal)
    with FakeAPIServer(api) as running:
        yield running
    journal.close()


# --------------------------------------------------------------------------- helpers


def sdk(server: FakeAPIServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.base_url, api_key="sk-ant-test", max_retries=0, timeout=20)


def step(*turns: Turn, index: int = 1, kind: str = "launch", summary: str | None = None, usage: Usage | None = None) -> Step:
    return Step(index=index, kind=kind, prompt="prompt", turns=tuple(turns), summary=summary, usage=usage)


def say(text: str, usage: Usage | None = None, stop_reason: str | None = None) -> Turn:
    return Turn(blocks=(TextBlock(text),), usage=usage, stop_reason=stop_reason)


def payload(text: str = "What is 6*7?", *, stream: bool = False, model: str = MODEL, system: Any = None,
            messages: list | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": 1024,
        "messages": messages if messages is not None else [{"role": "user", "content": text}],
    }
    if system is not None:
        body["system"] = system
    if stream:
        body["stream"] = True
    body.update(extra)
    return body


def send(server: FakeAPIServer, body: bytes | dict | None = None, *, path: str = "/v1/messages",
         method: str = "POST", headers: dict[str, str] | None = None,
         conn: http.client.HTTPConnection | None = None) -> tuple[int, dict[str, str], bytes]:
    """One request over http.client; (status, lower-cased headers, body with chunking undone)."""
    raw = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        conn.request(method, path, body=raw, headers={"content-type": "application/json", **(headers or {})})
        response = conn.getresponse()
        data = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data
    finally:
        if own:
            conn.close()


def parse_sse(raw: bytes) -> list[dict[str, Any]]:
    """Strict SSE parse: every event is exactly `event: NAME` + `data: JSON` + blank line, NAME == data.type."""
    text = raw.decode("utf-8")
    assert text.endswith("\n\n"), text[-200:]
    events = []
    for frame in text[:-2].split("\n\n"):
        lines = frame.split("\n")
        assert len(lines) == 2, frame
        assert lines[0].startswith("event: ") and lines[1].startswith("data: "), frame
        data = json.loads(lines[1][len("data: "):])
        assert data["type"] == lines[0][len("event: "):], frame
        events.append(data)
    return events


def sse_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta" and e["delta"]["type"] == "text_delta")


def reply_text(headers: dict[str, str], body: bytes) -> str:
    """The assistant text of a reply, streamed or not, read straight off the wire."""
    if headers["content-type"].startswith("text/event-stream"):
        return sse_text(parse_sse(body))
    message = json.loads(body)
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


def read_http_response(reader) -> tuple[int, dict[str, str], list[bytes]]:
    """Read one response from a raw socket file; chunked bodies come back as their chunks, unjoined."""
    status_line = reader.readline()
    assert status_line.startswith(b"HTTP/1.1 "), status_line
    headers: dict[str, str] = {}
    while (line := reader.readline()) not in (b"\r\n", b""):
        name, value = line.decode("latin-1").split(":", 1)
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding") == "chunked":
        chunks = []
        while True:
            size = int(reader.readline().split(b";")[0], 16)
            if size == 0:
                assert reader.readline() == b"\r\n"
                break
            chunks.append(reader.read(size))
            assert reader.read(2) == b"\r\n"
        return int(status_line.split()[1]), headers, chunks
    return int(status_line.split()[1]), headers, [reader.read(int(headers["content-length"]))]


def file_lines(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    assert raw == b"" or raw.endswith(b"\n")
    return [json.loads(line) for line in raw.split(b"\n") if line]


def only(api: FakeModelAPI):
    (exchange,) = api.journal.exchanges()
    return exchange


# --------------------------------------------------------------------------- 1. streaming


THINKING = "The user wants the files listed. " * 4
TEXT = "I will list the directory so we can see which files are there, then report back. " * 2
TOOL_INPUT = {"command": "ls -la /tmp/work", "timeout": 30, "flags": ["a", "l"], "nested": {"ok": True, "n": None}}
FULL_TURN = Turn(
    blocks=(ThinkingBlock(THINKING, "sig-scripted-1"), TextBlock(TEXT), ToolUseBlock("Bash", TOOL_INPUT, "toolu_scripted01")),
    usage=Usage(input_tokens=111, output_tokens=222, cache_read_input_tokens=333, cache_creation_input_tokens=444),
)
FULL_USAGE = {"input_tokens": 111, "output_tokens": 222, "cache_read_input_tokens": 333, "cache_creation_input_tokens": 444}


def test_sse_event_order_and_framing_from_raw_bytes(server, api):
    api.begin_step(step(FULL_TURN))
    body = json.dumps(payload("List the files.", stream=True)).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(
            b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        status, headers, chunks = read_http_response(sock.makefile("rb"))

    assert status == 200
    assert headers["content-type"] == "text/event-stream; charset=utf-8"
    assert headers["transfer-encoding"] == "chunked"
    assert "content-length" not in headers
    events = parse_sse(b"".join(chunks))
    # One SSE event per HTTP chunk: clients see each event as soon as it is written.
    assert len(chunks) == len(events)
    assert all(c.count(b"\n\n") == 1 and c.endswith(b"\n\n") for c in chunks)

    keys = [(e["type"], e.get("index"), e.get("delta", {}).get("type")) for e in events]
    runs: list[list] = []
    for key in keys:
        if runs and runs[-1][0] == key:
            runs[-1][1] += 1
        else:
            runs.append([key, 1])
    assert [k for k, _ in runs] == [
        ("message_start", None, None),
        ("ping", None, None),
        ("content_block_start", 0, None),
        ("content_block_delta", 0, "thinking_delta"),
        ("content_block_delta", 0, "signature_delta"),
        ("content_block_stop", 0, None),
        ("content_block_start", 1, None),
        ("content_block_delta", 1, "text_delta"),
        ("content_block_stop", 1, None),
        ("content_block_start", 2, None),
        ("content_block_delta", 2, "input_json_delta"),
        ("content_block_stop", 2, None),
        ("message_delta", None, None),
        ("message_stop", None, None),
    ]
    counts = {k: n for k, n in runs}
    assert counts[("content_block_delta", 0, "thinking_delta")] >= 2  # clients must really accumulate
    assert counts[("content_block_delta", 0, "signature_delta")] == 1
    assert counts[("content_block_delta", 1, "text_delta")] >= 2
    assert counts[("content_block_delta", 2, "input_json_delta")] >= 3  # the empty one, then >= 2 pieces

    start = events[0]["message"]
    assert start["type"] == "message" and start["role"] == "assistant" and start["model"] == MODEL
    assert re.fullmatch(r"msg_[0-9a-f]{24}", start["id"])
    assert start["content"] == [] and start["stop_reason"] is None and start["stop_sequence"] is None
    assert start["usage"]["input_tokens"] == 111 and start["usage"]["output_tokens"] == 1

    block_starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert block_starts == [
        {"type": "thinking", "thinking": "", "signature": ""},
        {"type": "text", "text": ""},
        {"type": "tool_use", "id": "toolu_scripted01", "name": "Bash", "input": {}},
    ]
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert "".join(d["thinking"] for d in deltas if d["type"] == "thinking_delta") == THINKING
    assert [d["signature"] for d in deltas if d["type"] == "signature_delta"] == ["sig-scripted-1"]
    assert "".join(d["text"] for d in deltas if d["type"] == "text_delta") == TEXT
    pieces = [d["partial_json"] for d in deltas if d["type"] == "input_json_delta"]
    assert pieces[0] == "" and all(pieces[1:])
    assert json.loads("".join(pieces)) == TOOL_INPUT

    assert events[-2] == {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use", "stop_sequence": None},
        "usage": FULL_USAGE,
    }
    assert events[-1] == {"type": "message_stop"}


def test_sdk_stream_reassembles_scripted_turn(client, api):
    api.begin_step(step(FULL_TURN))
    with client.messages.stream(model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": "List the files."}]) as stream:
        final = stream.get_final_message()

    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[0].thinking == THINKING and final.content[0].signature == "sig-scripted-1"
    assert final.content[1].text == TEXT
    assert (final.content[2].id, final.content[2].name, final.content[2].input) == ("toolu_scripted01", "Bash", TOOL_INPUT)
    assert final.stop_reason == "tool_use" and final.stop_sequence is None
    assert final.model == MODEL and final.role == "assistant"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (111, 222)
    assert (final.usage.cache_read_input_tokens, final.usage.cache_creation_input_tokens) == (333, 444)
    exchange = only(api)
    assert exchange.stream is True and exchange.klass == "main" and exchange.reply["stop_reason"] == "tool_use"


def test_sdk_stream_gets_generated_ids_and_signature(client, api):
    """Unscripted tool ids and thinking signatures are generated, stable, and the same in the journal."""
    api.begin_step(step(Turn(blocks=(ThinkingBlock("hmm"), ToolUseBlock("Read", {"path": "a.txt"})))))
    with client.messages.stream(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "go"}]) as stream:
        final = stream.get_final_message()
    thinking, tool = final.content
    assert re.fullmatch(r"sig_[0-9a-f]{40}", thinking.signature)
    assert re.fullmatch(r"toolu_[0-9a-f]{22}", tool.id)
    assert tool.input == {"path": "a.txt"} and final.stop_reason == "tool_use"
    journaled = only(api).reply["content"]
    assert journaled[0]["signature"] == thinking.signature and journaled[1]["id"] == tool.id


# --------------------------------------------------------------------------- 2. JSON replies, count_tokens, models


def test_sdk_json_message(client, api):
    api.begin_step(step(Turn(blocks=(TextBlock("42"),))))
    message = client.messages.create(model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "What is 6*7?"}])
    assert [(b.type, b.text) for b in message.content] == [("text", "42")]
    assert message.stop_reason == "end_turn" and message.model == MODEL
    exchange = only(api)
    assert exchange.stream is False and exchange.status == 200
    # Unscripted usage is estimated from the prompt's size (cache_sim): a quarter token per byte, rounded up;
    # one short request with no cache breakpoint reads and writes nothing.
    assert message.usage.input_tokens == -(-len(cache_sim.prompt_bytes(exchange.normalized)) // 4) > 1
    assert message.usage.output_tokens == 1
    assert (message.usage.cache_read_input_tokens, message.usage.cache_creation_input_tokens) == (0, 0)


def test_json_reply_headers_on_the_wire(server, api):
    api.begin_step(step(say("hello")))
    status, headers, body = send(server, payload())
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    assert headers["request-id"] == "req_harness000000000001"
    message = json.loads(body)
    assert message["type"] == "message" and message["content"] == [{"type": "text", "text": "hello"}]


def test_count_tokens(client, api):
    counted = client.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "How many tokens is this?"}])
    exchange = only(api)
    assert exchange.path == "/v1/messages/count_tokens" and exchange.method == "POST"
    assert exchange.klass == "side" and exchange.status == 200
    assert counted.input_tokens == max(1, len(exchange.body) // 4) > 1
    assert exchange.normalized["messages"] == [{"role": "user", "content": [{"type": "text", "text": "How many tokens is this?"}]}]


def test_count_tokens_refuses_missing_messages(server, api):
    status, _, body = send(server, {"model": MODEL}, path="/v1/messages/count_tokens")
    assert status == 400
    assert json.loads(body)["error"] == {"type": "invalid_request_error", "message": "messages: Field required"}
    assert (only(api).klass, only(api).error) == ("malformed", "messages: Field required")


def test_models_list_and_retrieve(client, api):
    page = client.models.list()
    assert [m.id for m in page.data] == list(MODELS)
    assert all(m.type == "model" for m in page.data)
    model = client.models.retrieve("claude-opus-4-1")
    assert model.id == "claude-opus-4-1" and model.display_name == "claude-opus-4-1"
    assert model.created_at.year == 2025
    assert [(e.method, e.path, e.status, e.klass) for e in api.journal.exchanges()] == [
        ("GET", "/v1/models", 200, "side"),
        ("GET", "/v1/models/claude-opus-4-1", 200, "side"),
    ]


# --------------------------------------------------------------------------- 3. beta query and header


def test_beta_query_and_header_accepted_and_journaled(client, api):
    api.begin_step(step(say("beta one"), say("beta two")))
    message = client.messages.create(
        model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}],
        extra_query={"beta": "true"}, extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14"},
    )
    assert message.content[0].text == "beta one"
    with httpx.Client(base_url=str(client.base_url), timeout=20) as raw:
        response = raw.post(
            "/v1/messages", params={"beta": "true"}, json=payload("hi", stream=True),
            headers={"anthropic-beta": "fine-grained-tool-streaming-2025-05-14,context-1m-2025-08-07"},
        )
    assert response.status_code == 200
    assert sse_text(parse_sse(response.content)) == "beta two"
    first, second = api.journal.exchanges()
    assert (first.path, first.query, first.status, first.klass) == ("/v1/messages", "beta=true", 200, "main")
    assert first.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert (second.query, second.stream) == ("beta=true", True)
    assert second.headers["anthropic-beta"] == "fine-grained-tool-streaming-2025-05-14,context-1m-2025-08-07"


# --------------------------------------------------------------------------- 4. malformed requests


def _without(key: str) -> bytes:
    body = payload()
    del body[key]
    return json.dumps(body).encode()


def _with(**changes: Any) -> bytes:
    return json.dumps(dict(payload(), **changes)).encode()


MALFORMED = [
    ("not-json", b'{"model": "x", ', "request body is not valid JSON: "),
    ("empty-body", b"", "request body is not valid JSON: "),
    ("json-array", b"[1, 2, 3]", "request body must be a JSON object"),
    ("json-string", b'"hello"', "request body must be a JSON object"),
    ("no-model", _without("model"), "model: Field required"),
    ("no-max-tokens", _without("max_tokens"), "max_tokens: Field required"),
    ("no-messages", _without("messages"), "messages: Field required"),
    ("empty-model", _with(model=""), "model: Input should be a non-empty string"),
    ("zero-max-tokens", _with(max_tokens=0), "max_tokens: Input should be a positive integer"),
    ("bool-max-tokens", _with(max_tokens=True), "max_tokens: Input should be a positive integer"),
    ("empty-messages", _with(messages=[]), "messages: at least one message is required"),
    ("messages-not-list", _with(messages={"role": "user"}), "messages: Input should be a valid list"),
    ("bad-role", _with(messages=[{"role": "robot", "content": "hi"}]), "messages.0.role: Input should be 'user' or 'assistant'"),
    ("bad-system-type", _with(system=42), "system: Input should be a string or a list of text blocks"),
    ("bad-system-block", _with(system=[{"type": "image"}]), "system.0: Input should be a text block"),
    ("bad-content-block", _with(messages=[{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "bogus"}]}]),
     "messages.0.content.1: unknown or missing block type"),
    ("text-block-without-text", _with(messages=[{"role": "user", "content": [{"type": "text"}]}]),
     "messages.0.content.0.text: Field required"),
    ("bad-content-type", _with(messages=[{"role": "user", "content": 7}]),
     "messages.0.content: Input should be a string or a list of blocks"),
    ("tool-without-name", _with(tools=[{"description": "x"}]), "tools.0.name: Field required"),
    ("non-utf8", b'{"model": "claude-\xff\xfe", "max_tokens": 5, "messages": []}',
     "request body is not valid JSON: 'utf-8' codec can't decode byte 0xff"),
]


@pytest.mark.parametrize("body,message", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_request_refused_and_journaled(server, api, journal_path, body, message):
    api.begin_step(step(say("never given")))
    status, headers, reply = send(server, body, headers={"x-api-key": "sk-ant-SECRET"})
    assert status == 400
    error = json.loads(reply)
    assert error == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": error["error"]["message"]},
        "request_id": "req_harness000000000001",
    }
    assert error["error"]["message"].startswith(message)
    assert headers["request-id"] == "req_harness000000000001"

    exchange = only(api)
    assert (exchange.klass, exchange.status, exchange.error) == ("malformed", 400, error["error"]["message"])
    assert exchange.body == body and exchange.reply is None and exchange.step == 1
    (line,) = file_lines(journal_path)
    assert (line["class"], line["status"], line["error"]) == ("malformed", 400, error["error"]["message"])
    if message.startswith("request body is not valid JSON: 'utf-8'"):
        assert line["body"] is None and base64.b64decode(line["body_base64"]) == body
    else:
        assert line["body"] == body.decode() and line["body_base64"] is None
    # A refused request never consumes the step's script.
    assert api.end_step().unused_turns == 1


@pytest.mark.parametrize(
    "method,path,status,kind,message",
    [
        ("GET", "/v1/nope", 404, "not_found_error", "Not found: /v1/nope"),
        ("POST", "/v1/complete", 404, "not_found_error", "Not found: /v1/complete"),
        ("GET", "/v1/messages", 405, "invalid_request_error", "GET /v1/messages is not served by the fake API"),
        ("PUT", "/v1/messages", 405, "invalid_request_error", "PUT /v1/messages is not served by the fake API"),
        ("DELETE", "/v1/models", 405, "invalid_request_error", "DELETE /v1/models is not served by the fake API"),
        ("PATCH", "/v1/messages/count_tokens", 405, "invalid_request_error",
         "PATCH /v1/messages/count_tokens is not served by the fake API"),
    ],
)
def test_unknown_path_and_wrong_method(server, api, journal_path, method, path, status, kind, message):
    got, _, reply = send(server, b"{}", method=method, path=path + "?x=1")
    assert got == status
    assert json.loads(reply)["error"] == {"type": kind, "message": message}
    exchange = only(api)
    assert (exchange.klass, exchange.status, exchange.method, exchange.path, exchange.query) == ("malformed", status, method, path, "x=1")
    assert exchange.error == message
    assert [(l["class"], l["status"], l["error"]) for l in file_lines(journal_path)] == [("malformed", status, message)]


def test_head_and_options_are_answered_and_journaled_without_breaking_keep_alive(server, api):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        head_status, head_headers, head_body = send(server, None, method="HEAD", path="/v1/messages", conn=conn)
        options_status, _, _ = send(server, None, method="OPTIONS", path="/v1/messages", conn=conn)
        after, _, _ = send(server, None, method="GET", path="/v1/models", conn=conn)
    finally:
        conn.close()
    # HEAD is a reachability probe on any path (Claude Code sends `HEAD /` before its first request)
    assert (head_status, head_body, options_status, after) == (200, b"", 405, 200)
    assert [(e.method, e.path, e.status, e.klass) for e in api.journal.exchanges()] == [
        ("HEAD", "/v1/messages", 200, "side"), ("OPTIONS", "/v1/messages", 405, "malformed"), ("GET", "/v1/models", 200, "side")]


def test_sdk_raises_bad_request_with_our_message(client, api):
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(model=MODEL, max_tokens=10, messages=[])
    assert caught.value.status_code == 400
    assert caught.value.body["error"] == {"type": "invalid_request_error", "message": "messages: at least one message is required"}
    assert caught.value.request_id == "req_harness000000000001"
    assert "messages: at least one message is required" in str(caught.value)
    with pytest.raises(anthropic.NotFoundError) as missing:
        client.get("/v1/nothing-here", cast_to=object)
    assert missing.value.body["error"]["type"] == "not_found_error"
    assert [e.klass for e in api.journal.exchanges()] == ["malformed", "malformed"]


# --------------------------------------------------------------------------- 5. keep-alive and chunked requests


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_keep_alive_reuses_one_connection(server, api, stream):
    accepted_before = server._server.accepted
    api.begin_step(step(say("first"), say("second"), say("third")))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        status1, headers1, body1 = send(server, payload("one", stream=stream), conn=conn)
        sock, local = conn.sock, conn.sock.getsockname()
        # A refused request must not poison the connection either.
        status2, _, _ = send(server, b"garbage", conn=conn)
        status3, headers3, body3 = send(server, payload("three", stream=stream), conn=conn)
        status4, _, models = send(server, None, method="GET", path="/v1/models", conn=conn)
        assert conn.sock is sock and conn.sock.getsockname() == local
    finally:
        conn.close()
    assert (status1, status2, status3, status4) == (200, 400, 200, 200)
    assert "connection" not in headers1 or headers1["connection"].lower() != "close"
    assert (reply_text(headers1, body1), reply_text(headers3, body3)) == ("first", "second")
    assert json.loads(models)["data"][0]["id"] == MODELS[0]
    assert server._server.accepted - accepted_before == 1
    exchanges = api.journal.exchanges()
    assert [e.seq for e in exchanges] == [1, 2, 3, 4]
    assert {e.pid for e in exchanges} == {os.getpid()}


def test_chunked_request_body_via_http_client(server, api):
    api.begin_step(step(say("got it")))
    raw = json.dumps(payload("chunked café ☕ body " * 20), ensure_ascii=False).encode()
    cut = [0, 1, 7, raw.index("é".encode()) + 1, 200, 201, len(raw)]  # one cut splits a multi-byte char
    pieces = [raw[a:b] for a, b in itertools.pairwise(cut)]
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        conn.request("POST", "/v1/messages", body=iter(pieces), headers={"content-type": "application/json"}, encode_chunked=True)
        response = conn.getresponse()
        body = response.read()
    finally:
        conn.close()
    assert response.status == 200, body
    assert json.loads(body)["content"][0]["text"] == "got it"
    exchange = only(api)
    assert exchange.body == raw
    assert exchange.headers["transfer-encoding"] == "chunked" and "content-length" not in exchange.headers
    assert exchange.normalized["messages"][0]["content"][0]["text"] == "chunked café ☕ body " * 20


def test_chunked_request_with_extensions_and_trailer_then_pipelined_request(server, api):
    """The chunked reader consumes exactly its body: a request pipelined right after it is read intact."""
    api.begin_step(step(say("A"), say("B")))
    first = json.dumps(payload("first")).encode()
    second = json.dumps(payload("second", stream=True)).encode()
    wire = (
        b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
        + b"%x;name=value\r\n%s\r\n" % (10, first[:10])
        + b"%X\r\n%s\r\n" % (len(first) - 10, first[10:])
        + b"0\r\nX-Trailer: yes\r\n\r\n"
        + b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(second), second)
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(wire)
        reader = sock.makefile("rb")
        status1, _, chunks1 = read_http_response(reader)
        status2, _, chunks2 = read_http_response(reader)
    assert (status1, status2) == (200, 200)
    assert json.loads(b"".join(chunks1))["content"] == [{"type": "text", "text": "A"}]
    assert sse_text(parse_sse(b"".join(chunks2))) == "B"
    assert [e.body for e in api.journal.exchanges()] == [first, second]


# --------------------------------------------------------------------------- 6. concurrency


def test_concurrent_clients(server, api, journal_path):
    threads, per_thread = 16, 3
    total = threads * per_thread
    api.begin_step(step(*(say(f"turn-{i:02d}") for i in range(total))))
    barrier = threading.Barrier(threads)
    results: list[tuple[int, str, str, bool]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
            barrier.wait(timeout=30)
            for k in range(per_thread):
                stream = (n + k) % 2 == 0
                status, headers, body = send(server, payload(f"thread {n} request {k}", stream=stream), conn=conn)
                with lock:
                    results.append((status, headers["request-id"], reply_text(headers, body), stream))
            conn.close()
        except BaseException as exc:  # noqa: BLE001 - reported below
            with lock:
                errors.append(exc)

    pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    started = time.monotonic()
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=60)
    elapsed = time.monotonic() - started
    assert not errors, errors
    assert len(results) == total and all(status == 200 for status, *_ in results)
    # Every scripted turn was given exactly once, whatever the interleaving.
    assert sorted(text for _, _, text, _ in results) == [f"turn-{i:02d}" for i in range(total)]
    exchanges = api.journal.exchanges()
    assert [e.seq for e in exchanges] == list(range(1, total + 1))
    by_rid = {f"req_harness{e.seq:012d}": e for e in exchanges}
    for _, rid, text, stream in results:
        assert by_rid[rid].reply_text() == text and by_rid[rid].stream is stream
    lines = file_lines(journal_path)
    assert len(lines) == total and [l["seq"] for l in lines] == list(range(1, total + 1))
    assert api.end_step().unused_turns == 0
    assert elapsed < 10, f"{total} concurrent requests took {elapsed:.1f}s"


# --------------------------------------------------------------------------- 7. the script


def test_turns_in_order_then_default_reply_flagged(server, api):
    api.begin_step(step(say("one"), say("two"), say("three")))
    texts = []
    for i in range(5):
        status, headers, body = send(server, payload(f"q{i}", stream=i % 2 == 1))
        assert status == 200
        texts.append(reply_text(headers, body))
    assert texts == ["one", "two", "three", "OK.", "OK."]
    exchanges = api.journal.exchanges()
    assert [e.unforeseen for e in exchanges] == [False, False, False, True, True]
    assert [e.notes for e in exchanges[3:]] == [["no scripted reply left for this step: default reply given"]] * 2
    assert all(e.klass == "main" for e in exchanges)
    script = api.end_step()
    assert script is not None and script.unused_turns == 0
    assert api.end_step() is None


def test_request_outside_any_step_gets_default_reply_flagged(server, api):
    status, headers, body = send(server, payload("anyone there?"))
    assert status == 200 and reply_text(headers, body) == "OK."
    exchange = only(api)
    assert exchange.unforeseen is True and exchange.notes == ["request outside any step"]
    assert (exchange.step, exchange.step_kind, exchange.klass) == (None, None, "main")


def test_unused_turns_counted_by_end_step(server, api):
    api.begin_step(step(say("a"), say("b"), say("c"), index=2, kind="resume"))
    send(server, payload())
    script = api.end_step()
    assert script.unused_turns == 2 and script.step.index == 2
    # After the step ended, requests are outside any step again.
    send(server, payload())
    assert [e.step for e in api.journal.exchanges()] == [2, None]


def test_stop_reason_override(client, api):
    api.begin_step(step(say("truncat", stop_reason="max_tokens"), Turn(blocks=(ToolUseBlock("T", {}),), stop_reason="end_turn")))
    first = client.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}])
    with client.messages.stream(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "y"}]) as stream:
        second = stream.get_final_message()
    assert (first.stop_reason, first.content[0].text) == ("max_tokens", "truncat")
    assert (second.stop_reason, second.content[0].input) == ("end_turn", {})


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_usage_turn_wins_over_step_field_by_field(server, api, stream):
    step_usage = Usage(input_tokens=1000, output_tokens=2000, cache_read_input_tokens=3000)
    api.begin_step(step(say("with turn usage", usage=Usage(output_tokens=7, cache_creation_input_tokens=9)),
                        say("step usage only"), usage=step_usage))
    replies = []
    for _ in range(2):
        status, _, body = send(server, payload(stream=stream))
        assert status == 200
        if stream:
            events = parse_sse(body)
            (delta,) = [e for e in events if e["type"] == "message_delta"]
            replies.append(delta["usage"])
            assert events[0]["message"]["usage"]["input_tokens"] == delta["usage"]["input_tokens"]
        else:
            replies.append(json.loads(body)["usage"])
    assert replies == [
        {"input_tokens": 1000, "output_tokens": 7, "cache_creation_input_tokens": 9, "cache_read_input_tokens": 3000},
        {"input_tokens": 1000, "output_tokens": 2000, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 3000},
    ]
    assert [e.reply["usage"] for e in api.journal.exchanges()] == replies


def test_usage_through_sdk_stream(client, api):
    api.begin_step(step(say("x", usage=Usage(input_tokens=5)), usage=Usage(input_tokens=50, output_tokens=60)))
    with client.messages.stream(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "y"}]) as stream:
        final = stream.get_final_message()
    assert (final.usage.input_tokens, final.usage.output_tokens) == (5, 60)
    assert (final.usage.cache_read_input_tokens, final.usage.cache_creation_input_tokens) == (0, 0)


# --------------------------------------------------------------------------- 8. compaction and side calls

SUMMARY_SHAPE = re.compile(r"\A<analysis>\n.+\n</analysis>\n\n<summary>\n(?P<summary>.*)\n</summary>\Z", re.DOTALL)


def compaction_payload(stream: bool = False) -> dict[str, Any]:
    return payload(
        system=[{"type": "text", "text": COMPACT_SYSTEM}],
        stream=stream,
        messages=[
            {"role": "user", "content": "What is 6*7?"},
            {"role": "assistant", "content": [{"type": "text", "text": "42"}]},
            {"role": "user", "content": "And what is 2+2?\nPlease be brief."},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": [{"type": "text", "text": COMPACT_PROMPT}]},
        ],
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_compaction_answered_with_step_summary_without_consuming_turns(server, api, stream):
    api.begin_step(step(say("scripted main reply"), summary="STEP SUMMARY", kind="compact"))
    status, headers, body = send(server, compaction_payload(stream))
    assert status == 200
    match = SUMMARY_SHAPE.match(reply_text(headers, body))
    assert match and match["summary"] == "STEP SUMMARY"
    status, headers, body = send(server, payload("What is 3*3?"))
    assert reply_text(headers, body) == "scripted main reply"
    compaction, main = api.journal.exchanges()
    assert (compaction.klass, compaction.unforeseen, compaction.reply["stop_reason"]) == ("compaction", False, "end_turn")
    assert (main.klass, main.unforeseen) == ("main", False)
    assert api.end_step().unused_turns == 0


def test_compaction_default_summary_names_earlier_prompts(client, api):
    api.begin_step(step(say("unused")))
    body = compaction_payload()
    message = client.messages.create(**body)
    match = SUMMARY_SHAPE.match(message.content[0].text)
    assert match is not None
    assert match["summary"] == (
        "The user asked 2 time(s): 'What is 6*7?'; 'And what is 2+2?'. "
        "The assistant answered 2 time(s): '42'; '4'."
    )
    assert message.stop_reason == "end_turn"
    assert only(api).klass == "compaction"
    assert api.end_step().unused_turns == 1


def test_compaction_outside_step_is_flagged(server, api):
    status, headers, body = send(server, compaction_payload())
    assert status == 200 and SUMMARY_SHAPE.match(reply_text(headers, body))
    exchange = only(api)
    assert (exchange.klass, exchange.unforeseen, exchange.notes) == ("compaction", True, ["compaction request outside any step"])


@pytest.mark.parametrize(
    "system,prompt,klass",
    [
        (COMPACT_SYSTEM, COMPACT_PROMPT, "compaction"),
        ("You are Claude Code.", COMPACT_PROMPT, "compaction"),  # Claude Code 2.1: its own system prompt
        ("You are Claude Code.", [CONTINUATION, COMPACT_PROMPT], "compaction"),  # a second compaction
        ("You are Claude Code.", ["b\n", COMPACT_PROMPT, "<total_tokens>1 tokens left</total_tokens>"], "compaction"),
        ("You are Claude Code.", [CONTINUATION, "What is 2+2?"], "main"),  # the turn after a compaction
        ("You are Claude Code.", CONTINUATION + "What is 2+2? Put the <summary> aside.", "main"),
        # Kimi Code's turn after its compaction, as inspect_swe's bridge merges it: the preserved user
        # messages, then its continuation with the summary, in one block
        ("You are Kimi Code CLI.", "What is 6*7?\n\n" + KIMI_CONTINUATION, "main"),
        ("Conversations get summarized when long.", "What is 2+2?", "main"),  # the word alone decides nothing
        ("You are Claude Code.", "Summarize the conversation so far.", "main"),  # no tags the client would parse
        (COMPACT_SYSTEM, "Summarize the conversation so far.", "main"),  # a summarizer's system prompt alone neither
        ("You are Claude Code.", "What is the capital of France?", "main"),
        (COMPACT_SYSTEM, "What is the capital of France?", "main"),
        (COMPACT_SYSTEM, "Summarize this file for me.", "main"),  # a summary, but not of the conversation
        (COMPACT_SYSTEM, "Tell me about this conversation.", "main"),  # the conversation, but no summary
    ],
)
def test_compaction_classification(server, api, system, prompt, klass):
    api.begin_step(step(say("main reply"), summary="S"))
    if isinstance(prompt, list):  # several text blocks in the last user message
        prompt = [{"type": "text", "text": text} for text in prompt]
    status, headers, body = send(server, payload(prompt, system=system))
    assert status == 200
    assert only(api).klass == klass
    text = reply_text(headers, body)
    assert (text == "main reply") is (klass == "main")
    assert api.end_step().unused_turns == (1 if klass == "compaction" else 0)


def test_side_call_rules(server, api):
    api.side_calls = (
        RequestRule(model=r"haiku", system=r"(?i)title"),
        RequestRule(prompt=r"^quota$"),
    )
    api.begin_step(step(say("main 1"), say("main 2")))
    requests = [
        payload("Write a title", model="claude-haiku-4-5", system="Generate a concise title for this session."),  # side
        payload("quota"),  # side: prompt rule alone
        payload("Write a title", model="claude-haiku-4-5", system="You are Claude Code."),  # system fails: main
        payload("Write a title", model=MODEL, system="Generate a title."),  # model fails: main
        payload("quota please"),  # anchored prompt fails
    ]
    texts = [reply_text(*send(server, r)[1:]) for r in requests]
    assert texts == ["OK.", "OK.", "main 1", "main 2", "OK."]
    assert [(e.klass, e.unforeseen) for e in api.journal.exchanges()] == [
        ("side", False), ("side", False), ("main", False), ("main", False), ("main", True),
    ]
    assert RequestRule().matches({"model": "x", "system": [], "messages": []}) is False


# --------------------------------------------------------------------------- 9. the journal


SECRETS = (b"SECRET123", b"SECRET456", b"SECRET789", b"SECRET000")


def test_secrets_redacted_in_memory_and_on_disk(server, api, journal_path):
    api.begin_step(step(say("ok")))
    headers = {
        "x-api-key": "sk-ant-SECRET123",
        "authorization": "Bearer SECRET456",
        "cookie": "session=SECRET789",
        "anthropic-version": "2023-06-01",
    }
    for path in ("/v1/messages?key=SECRET000&beta=true", "/v1/nope?beta=true&key=SECRET000"):
        send(server, payload(), path=path, headers=headers)
    send(server, b"not json", path="/v1/messages?key=SECRET000", headers=headers)
    exchanges = api.journal.exchanges()
    assert [e.status for e in exchanges] == [200, 404, 400]
    assert [e.query for e in exchanges] == ["key=[redacted]&beta=true", "beta=true&key=[redacted]", "key=[redacted]"]
    for exchange in exchanges:
        assert exchange.headers["x-api-key"] == "[redacted]"
        assert exchange.headers["authorization"] == "[redacted]"
        assert exchange.headers["cookie"] == "[redacted]"
        assert exchange.headers["anthropic-version"] == "2023-06-01"
        assert not any(s.decode() in exchange.dumps() for s in SECRETS)
    on_disk = journal_path.read_bytes()
    assert on_disk.count(b"\n") == 3
    for secret in SECRETS:
        assert secret not in on_disk
    assert on_disk.count(b"[redacted]") == 3 * 4


def test_sdk_api_key_redacted(client, api, journal_path):
    client = client.with_options(api_key="sk-ant-SDKSECRET")
    client.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "x"}])
    headers = only(api).headers
    sent = [name for name in ("x-api-key", "authorization") if name in headers]
    assert sent, headers  # the SDK sends its key in one of these, depending on its version
    assert all(headers[name] == "[redacted]" for name in sent)
    assert b"SDKSECRET" not in journal_path.read_bytes()


def test_each_line_on_disk_before_the_reply_is_read(server, api, journal_path):
    api.begin_step(step(say("one"), say("two")))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        for i, stream in enumerate([True, False, True], start=1):
            conn.request("POST", "/v1/messages", body=json.dumps(payload(f"q{i}", stream=stream)))
            response = conn.getresponse()  # status and headers only: the body is still on the wire
            lines = file_lines(journal_path)
            assert [l["seq"] for l in lines] == list(range(1, i + 1))
            assert lines[-1]["stream"] is stream
            response.read()
    finally:
        conn.close()
    assert [l["reply"]["content"][0]["text"] for l in file_lines(journal_path)] == ["one", "two", "OK."]


def test_read_journal_round_trips(server, api, journal_path):
    api.begin_step(step(Turn(blocks=(ThinkingBlock("t", "s"), TextBlock("é ☕ \u2028 x"), ToolUseBlock("Bash", {"c": "ls"}))),
                        index=3, kind="retry"))
    send(server, payload("hello ☕"))
    send(server, b'\xff\xfe{"model": 1}')
    send(server, compaction_payload(stream=True))
    api.end_step()
    send(server, None, method="GET", path="/v1/models?limit=5")
    in_memory = api.journal.exchanges()
    from_disk = read_journal(journal_path)
    assert [e.to_json() for e in from_disk] == [e.to_json() for e in in_memory]
    assert from_disk[1].body == b'\xff\xfe{"model": 1}'
    assert [(e.step, e.step_kind, e.klass) for e in from_disk] == [
        (3, "retry", "main"), (3, "retry", "malformed"), (3, "retry", "compaction"), (None, None, "side"),
    ]
    assert from_disk[0].reply_text() == "é ☕ \u2028 x"


def test_read_journal_ignores_torn_last_line(server, api, journal_path, tmp_path):
    api.begin_step(step(say("first ☕"), say("second ☕")))
    send(server, payload("a"))
    send(server, payload("b ☕"))
    whole = journal_path.read_bytes()
    last = whole[: whole.rindex(b"\n", 0, len(whole) - 1) + 1]  # everything but the last line
    torn_at = whole.rindex("☕".encode()) + 1  # in the middle of a multi-byte character
    for name, content in [("cut-json", whole[:-40]), ("cut-char", whole[:torn_at]), ("no-newline", whole[:-1])]:
        torn = tmp_path / f"{name}.jsonl"
        torn.write_bytes(content)
        expected = 2 if name == "no-newline" else 1
        got = read_journal(torn)
        assert [e.seq for e in got] == list(range(1, expected + 1)), name
    assert [e.reply_text() for e in read_journal(journal_path)] == ["first ☕", "second ☕"]
    assert len(read_journal(_write(tmp_path / "head.jsonl", last))) == 1


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_unusual_unicode_in_request_is_journaled_and_read_back(server, api, journal_path):
    """Line separators and lone surrogates (legal as JSON escapes) must neither break the file nor the reply."""
    api.begin_step(step(say("fine"), say("also fine")))
    odd = b'{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "a\\u2028b\\u0085c\\ud83d"}]}'
    status, headers, body = send(server, odd)
    assert status == 200 and reply_text(headers, body) == "fine"
    status, headers, body = send(server, payload("next"))
    assert status == 200 and reply_text(headers, body) == "also fine"
    from_disk = read_journal(journal_path)
    assert [e.seq for e in from_disk] == [1, 2]
    assert from_disk[0].body == odd
    assert from_disk[0].normalized["messages"][0]["content"][0]["text"] == "a\u2028b\x85c\ud83d"
    assert len(journal_path.read_bytes().split(b"\n")) == 3


def test_normalized_view(server, api, journal_path):
    tools = [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object", "properties": {"c": {"type": "string"}}}}]
    request = payload(
        system=[
            {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Task prompt: answer with one number."},
        ],
        messages=[
            {"role": "user", "content": "What is 6*7?"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": "x"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "42"},
                                         {"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}]},
        ],
        tools=tools,
        metadata={"user_id": "user_abc"},
        tool_choice={"type": "auto"},
        thinking={"type": "enabled", "budget_tokens": 2048},
    )
    send(server, request)
    send(server, payload("plain", system="Just a string."))
    expected = {
        "system": [
            {"text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
            {"text": "Task prompt: answer with one number.", "cache_control": None},
        ],
        "tools": tools,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "What is 6*7?"}]},
            request["messages"][1],
            request["messages"][2],
        ],
        "model": MODEL,
        "max_tokens": 1024,
        "stream": False,
        "metadata": {"user_id": "user_abc"},
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "tool_choice": {"type": "auto"},
    }
    first, second = api.journal.exchanges()
    assert first.normalized == expected
    assert first.system_text == "You are Claude Code.\n\nTask prompt: answer with one number."
    assert second.normalized["system"] == [{"text": "Just a string.", "cache_control": None}]
    assert second.normalized["tools"] == [] and second.normalized["metadata"] is None
    assert [e.normalized for e in read_journal(journal_path)] == [expected, second.normalized]


# --------------------------------------------------------------------------- 10. which process sent it


CHILD = r"""
import http.client, json, sys
port = int(sys.argv[1])
sys.stdin.readline()  # wait until the parent has named us as the step's process
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": [{"role": "user", "content": "from child"}]}
conn.request("POST", "/v1/messages", body=json.dumps(body), headers={"content-type": "application/json"})
response = conn.getresponse()
sys.stdout.write("%d %s" % (response.status, json.loads(response.read())["content"][0]["text"]))
"""


def test_pid_of_subprocess_and_of_this_process(server, api):
    api.begin_step(step(say("to child"), say("to parent")))
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(server.port)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        api.set_step_pid(child.pid)
        assert api.step_pid == child.pid
        out, _ = child.communicate("go\n", timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0 and out == "200 to child"
    status, _, _ = send(server, payload("from parent"))
    from_child, from_parent = api.journal.exchanges()
    assert from_child.pid == child.pid != os.getpid()
    assert from_parent.pid == os.getpid()
    assert from_child.normalized["messages"][0]["content"][0]["text"] == "from child"
    # This process is not the step's (tests/test_foreign_requests.py): refused, and its turn left unused.
    assert (status, from_parent.klass) == (403, "foreign")
    assert api.end_step().unused_turns == 1


def test_pid_without_step(server, api):
    send(server, payload())
    assert api.step_pid is None
    assert only(api).pid == os.getpid()


# --------------------------------------------------------------------------- 11. the journal when the disk fails


# Serves a fake API whose journal is in argv[1]'s folder, sends requests of argv[2] bytes each until argv[3] were
# answered, and prints what happened. Run where that folder's disk fills up (a tiny tmpfs) or its file may not
# grow (RLIMIT_FSIZE): the fault is the kernel's, on a real file.
DISK_FAULT_HELPER = r"""
import http.client, json, sys
from pathlib import Path
from harness.fakeapi.core import FakeModelAPI
from harness.journal.requests import Journal
from harness.fakeapi.server import FakeAPIServer
from harness.scenario.model import Step, TextBlock, Turn

path, size, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
journal = Journal(path)
api = FakeModelAPI(journal)
api.begin_step(Step(index=1, kind="launch", prompt="p", turns=tuple(Turn(blocks=(TextBlock(f"turn {n}"),)) for n in range(count))))
statuses, texts = [], []
with FakeAPIServer(api) as server:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    for n in range(count):
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": f"{n} " + "x" * size}]}
        conn.request("POST", "/v1/messages", body=json.dumps(body), headers={"content-type": "application/json"})
        response = conn.getresponse()
        statuses.append(response.status)
        texts.append(json.loads(response.read())["content"][0]["text"])
journal.close()
raw = path.read_bytes()
print(json.dumps({"statuses": statuses, "texts": texts, "write_error": journal.write_error,
                  "in_memory": len(journal.exchanges()), "file": raw.decode("utf-8", "replace"),
                  "internal_errors": api.internal_errors}))
"""


def _disk_fault_run(tmp_path: Path, argv_prefix: list[str], folder: Path, size: int, count: int,
                    preexec_fn=None) -> dict[str, Any]:
    helper = tmp_path / "disk_fault_helper.py"
    helper.write_text(DISK_FAULT_HELPER)
    done = subprocess.run([*argv_prefix, sys.executable, str(helper), str(folder / "journal.jsonl"), str(size),
                           str(count)], capture_output=True, text=True, timeout=120, preexec_fn=preexec_fn,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and done.stderr == "", done.stderr  # nothing from the server's threads
    return json.loads(done.stdout)


def _assert_cut_back_to_complete_lines(report: dict[str, Any], count: int, path: Path, errno_text: str) -> None:
    assert report["statuses"] == [200] * count  # the agent did nothing wrong: every request answered normally
    assert report["texts"] == [f"turn {n}" for n in range(count)]
    assert report["write_error"] == f"cannot write the journal {path}: {errno_text}"
    assert report["in_memory"] == count and report["internal_errors"] == []
    raw = report["file"]
    assert raw.endswith("\n"), raw[-200:]  # valid JSONL: cut back to the end of its last complete line
    lines = [json.loads(line) for line in raw.split("\n") if line]
    assert 0 < len(lines) < count
    assert [line["seq"] for line in lines] == list(range(1, len(lines) + 1))


def test_a_disk_that_fills_mid_run_leaves_valid_jsonl_and_the_agent_answered(tmp_path):
    """A 16 KiB tmpfs in a private mount namespace (unshare --mount): nothing of it is visible outside the helper."""
    if not shutil.which("unshare"):
        pytest.fail("this test needs unshare (util-linux) to mount a tiny tmpfs where only it sees it")
    folder = tmp_path / "tiny"
    folder.mkdir()
    become_root = [] if os.geteuid() == 0 else ["--map-root-user"]
    mount = ["unshare", "--mount", "--propagation", "private", *become_root, "sh", "-c",
             'mount -t tmpfs -o size=16k tmpfs "$0" && exec "$@"', str(folder)]
    probe = subprocess.run([*mount, "true"], capture_output=True, text=True, timeout=30)
    assert probe.returncode == 0, f"cannot mount a tmpfs in a private mount namespace here: {probe.stderr.strip()}"
    count = 12  # about 3 KiB of body each, journaled twice (raw and normalized): well past 16 KiB
    report = _disk_fault_run(tmp_path, mount, folder, 3000, count)
    _assert_cut_back_to_complete_lines(report, count, folder / "journal.jsonl", "[Errno 28] No space left on device")
    assert not (folder / "journal.jsonl").exists()  # the tmpfs was private to the helper: the host never saw it


def test_a_file_size_limit_mid_run_leaves_valid_jsonl_and_the_agent_answered(tmp_path):
    """RLIMIT_FSIZE (EFBIG): a write that stops part-way through a line, on any machine, without root."""
    import resource

    limit = 20000

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    count = 12
    report = _disk_fault_run(tmp_path, [], tmp_path, 3000, count, preexec_fn=limited)
    _assert_cut_back_to_complete_lines(report, count, tmp_path / "journal.jsonl", "[Errno 27] File too large")
    assert len(report["file"].encode()) < limit


# --------------------------------------------------------------------------- property: the SDK reassembles anything


json_values = st.recursive(
    st.none() | st.booleans() | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=50, deadline=None)
@given(text=st.text(), tool_input=st.dictionaries(st.text(), json_values, max_size=5))
def test_sdk_reassembles_arbitrary_text_and_tool_input(shared, text, tool_input):
    api = shared.api
    api.begin_step(step(Turn(blocks=(TextBlock(text), ToolUseBlock("tool", tool_input, "toolu_prop")))))
    try:
        with sdk(shared).messages.stream(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "go"}]) as stream:
            final = stream.get_final_message()
    finally:
        script = api.end_step()
    assert script.unused_turns == 0
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert final.content[0].text == text
    assert final.content[1].input == tool_input
    assert json.dumps(final.content[1].input, sort_keys=True) == json.dumps(tool_input, sort_keys=True)
    assert final.stop_reason == "tool_use"
    last = api.journal.exchanges()[-1]
    assert last.reply["content"][0]["text"] == text and last.reply["content"][1]["input"] == tool_input
