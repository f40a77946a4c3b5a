"""The WireFormat seam: every registered format implements the whole protocol, and the core serves them alike.

The core names no format (harness/fakeapi/core.py asks the registry in
harness/fakeapi/formats/), so a format that lacks a member, spells one
differently or is missing from the registry would only fail on the first
request of its kind in a run. These tests fail first: each registered format
has every member with the protocol's parameters, one request of each
endpoint it serves goes through its members and through FakeModelAPI.handle,
and a format the core has never heard of is served the same way.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from types import SimpleNamespace
from typing import Protocol

import pytest

from harness.fakeapi import formats
from harness.fakeapi.cache_sim import CacheFigures, PromptCache
from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.formats import anthropic, gemini, openai_chat, openai_responses
from harness.fakeapi.formats.base import (
    COUNT_TOKENS, ENDPOINTS, GENERATE, MODEL_INFO, BadRequest, BreakableStream, WireFormat,
)
from harness.fakeapi.transport import HTTPRequest
from harness.journal.exchange import MAIN, MALFORMED, PROTOCOLS, SIDE
from harness.scenario.model import Step, TextBlock, Turn

PROMPT = [{"role": "user", "content": "hi"}]
# One request per endpoint each format serves: (method, path, body).
REQUESTS = {
    anthropic: {
        GENERATE: ("POST", "/v1/messages", {"model": "claude-sonnet-4-5", "max_tokens": 16, "messages": PROMPT}),
        COUNT_TOKENS: ("POST", "/v1/messages/count_tokens", {"model": "claude-sonnet-4-5", "messages": PROMPT}),
        MODEL_INFO: ("GET", "/v1/models/claude-sonnet-4-5", None),
    },
    openai_chat: {GENERATE: ("POST", "/v1/chat/completions", {"model": "gpt-x", "messages": PROMPT})},
    openai_responses: {GENERATE: ("POST", "/v1/responses", {"model": "gpt-x", "input": "hi"})},
    gemini: {
        GENERATE: ("POST", "/v1beta/models/gemini-x:generateContent", {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
        COUNT_TOKENS: ("POST", "/v1beta/models/gemini-x:countTokens", {"contents": []}),
        MODEL_INFO: ("GET", "/v1beta/models/gemini-x", None),
    },
}
OPTIONAL_ENDPOINTS = {COUNT_TOKENS: "count_tokens", MODEL_INFO: "models_body"}  # members that are None where not served
USAGE = {"input_tokens": 3, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def members(protocol: type) -> dict[str, inspect.Signature | None]:
    """The protocol's own members: a signature for each method, None for each attribute."""
    found: dict[str, inspect.Signature | None] = {}
    for klass in reversed(protocol.__mro__):
        if klass is Protocol or not getattr(klass, "_is_protocol", False):
            continue
        found.update({name: None for name in vars(klass).get("__annotations__", {})})
        found.update({name: inspect.signature(value) for name, value in vars(klass).items()
                      if inspect.isfunction(value) and not name.startswith("_")})
    return found


def format_modules() -> list:
    """Every module in harness/fakeapi/formats/ that says it is a format (it has a NAME)."""
    package = importlib.import_module("harness.fakeapi.formats")
    modules = [importlib.import_module(f"{package.__name__}.{info.name}") for info in pkgutil.iter_modules(package.__path__)]
    return [module for module in modules if hasattr(module, "NAME")]


def body_bytes(body) -> bytes:
    return b"" if body is None else json.dumps(body).encode()


def test_the_protocol_lists_what_the_core_uses():
    assert set(members(WireFormat)) == {
        "NAME", "REQUEST_ID_HEADER", "CARRIES_FAULTS", "count_tokens", "models_body", "endpoint", "owns_path",
        "parse_request", "cache_figures", "build_reply", "render_json", "render_sse", "error_body", "refusal_body",
    }
    assert set(members(BreakableStream)) - set(members(WireFormat)) == {"event_name", "render_sse_malformed"}


def test_the_registry_holds_every_format_once_one_per_journaled_protocol():
    assert sorted(f.NAME for f in formats.FORMATS) == sorted(PROTOCOLS)
    assert set(formats.FORMATS) == set(format_modules()) == set(REQUESTS)
    assert formats.DEFAULT in formats.FORMATS


@pytest.mark.parametrize("wire_format", formats.FORMATS, ids=lambda f: f.NAME)
def test_every_format_has_every_member_with_the_protocols_parameters(wire_format):
    assert isinstance(wire_format, WireFormat)
    for name, signature in members(WireFormat).items():
        assert hasattr(wire_format, name), f"{wire_format.NAME} lacks {name}"
        value = getattr(wire_format, name)
        if signature is None:
            continue
        assert callable(value), f"{wire_format.NAME}.{name} is not callable"
        wanted = [p for p in signature.parameters if p != "self"]
        given = list(inspect.signature(value).parameters.values())
        assert [p.name for p in given[: len(wanted)]] == wanted, f"{wire_format.NAME}.{name} takes {given}"
        assert all(p.default is not inspect.Parameter.empty for p in given[len(wanted):]), f"{wire_format.NAME}.{name}"
    assert isinstance(wire_format.CARRIES_FAULTS, bool)
    assert isinstance(wire_format, BreakableStream) is wire_format.CARRIES_FAULTS
    for endpoint, member in OPTIONAL_ENDPOINTS.items():
        assert (getattr(wire_format, member) is not None) is (endpoint in REQUESTS[wire_format]), member


@pytest.mark.parametrize("wire_format", formats.FORMATS, ids=lambda f: f.NAME)
def test_one_request_of_each_endpoint_goes_through_the_formats_members(wire_format):
    for endpoint, (method, path, body) in REQUESTS[wire_format].items():
        assert endpoint in ENDPOINTS
        assert wire_format.endpoint(method, path) == endpoint
        assert formats.serving(method, path) == (wire_format, endpoint)
    method, path, body = REQUESTS[wire_format][GENERATE]
    assert formats.owning(path) is wire_format
    normalized = wire_format.parse_request(body_bytes(body), path)
    assert normalized["messages"][-1]["content"] == [{"type": "text", "text": "hi"}] and normalized["stream"] is False
    assert isinstance(wire_format.cache_figures(PromptCache(), normalized), CacheFigures)
    reply = wire_format.build_reply(1, normalized, [{"type": "text", "text": "Hello."}], "end_turn", USAGE)
    assert reply.journal_view["content"] == [{"type": "text", "text": "Hello."}]
    assert "Hello." in json.dumps(json.loads(wire_format.render_json(reply)))
    assert b"Hello." in b"".join(wire_format.render_sse(reply))
    assert "overloaded" in json.dumps(json.loads(wire_format.error_body("overloaded", "overloaded_error", "req_1")))
    assert "bad" in json.dumps(json.loads(wire_format.refusal_body(BadRequest("bad"), "req_1")))
    with pytest.raises(BadRequest):
        wire_format.parse_request(b"{not json", path)
    if COUNT_TOKENS in REQUESTS[wire_format]:
        _, _, body = REQUESTS[wire_format][COUNT_TOKENS]
        normalized, counted = wire_format.count_tokens(body_bytes(body))
        assert json.loads(counted)
    if MODEL_INFO in REQUESTS[wire_format]:
        assert json.loads(wire_format.models_body(REQUESTS[wire_format][MODEL_INFO][1]))
    if wire_format.CARRIES_FAULTS:
        events, broken = wire_format.render_sse_malformed(reply)
        assert wire_format.event_name(events[broken]) in [wire_format.event_name(e) for e in wire_format.render_sse(reply)]


@pytest.mark.parametrize("wire_format", formats.FORMATS, ids=lambda f: f.NAME)
def test_the_core_serves_each_format_through_its_members_and_journals_its_name(wire_format):
    api = FakeModelAPI()
    api.begin_step(Step(index=1, kind="launch", prompt="hi", turns=(Turn(blocks=(TextBlock("Hello."),)),)))
    for endpoint, (method, path, body) in REQUESTS[wire_format].items():
        response = api.handle(HTTPRequest(method, path, [("content-type", "application/json")], body_bytes(body)))
        assert response.status == 200, response.body
        if endpoint == GENERATE:
            assert dict(response.headers)[wire_format.REQUEST_ID_HEADER] == "req_harness000000000001"
            assert b"Hello." in response.read_all()
    method, path, _ = REQUESTS[wire_format][GENERATE]
    refused = api.handle(HTTPRequest(method, path, [], b"{not json"))
    with pytest.raises(BadRequest) as caught:
        wire_format.parse_request(b"{not json", path)
    request_id = f"req_harness{len(REQUESTS[wire_format]) + 1:012d}"
    assert (refused.status, refused.body) == (400, wire_format.refusal_body(caught.value, request_id))
    generated, *side, malformed = api.journal.exchanges()
    assert (generated.klass, generated.protocol, generated.reply["content"]) == (MAIN, wire_format.NAME, [{"type": "text", "text": "Hello."}])
    assert [e.klass for e in side] == [SIDE] * len(side)
    assert (malformed.klass, malformed.protocol) == (MALFORMED, wire_format.NAME)


def toy_format() -> SimpleNamespace:
    """A format the core has never heard of: plain text in and out, on POST /toy/say."""

    class ToyReply:
        def __init__(self, text: str):
            self.text = text
            self.journal_view = {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": {}}

    def parse_request(body: bytes, path: str) -> dict:
        if not body:
            raise BadRequest("say something", 422, "toy_error")
        return {"system": [], "tools": [], "messages": [{"role": "user", "content": [{"type": "text", "text": body.decode()}]}],
                "model": "toy", "stream": False}

    return SimpleNamespace(
        NAME="toy", REQUEST_ID_HEADER="toy-request", CARRIES_FAULTS=False, count_tokens=None, models_body=None,
        endpoint=lambda method, path: GENERATE if (method, path) == ("POST", "/toy/say") else None,
        owns_path=lambda path: path == "/toy/say",
        parse_request=parse_request,
        cache_figures=lambda cache, normalized: CacheFigures(1),
        build_reply=lambda seq, normalized, blocks, stop_reason, usage: ToyReply("".join(b["text"] for b in blocks)),
        render_json=lambda reply: reply.text.encode(),
        render_sse=lambda reply: iter([b"data: " + reply.text.encode() + b"\n\n"]),
        error_body=lambda message, error_type, request_id: f"{error_type}: {message}".encode(),
        refusal_body=lambda exc, request_id: f"refused ({exc.error_type}): {exc}".encode(),
    )


def test_a_format_added_to_the_registry_is_served_journaled_and_refused_by_the_core_unchanged(monkeypatch):
    toy = toy_format()
    assert isinstance(toy, WireFormat)
    monkeypatch.setattr(formats, "FORMATS", (*formats.FORMATS, toy))
    api = FakeModelAPI()
    api.begin_step(Step(index=1, kind="launch", prompt="hi", turns=(Turn(blocks=(TextBlock("Hello."),)),)))
    served = api.handle(HTTPRequest("POST", "/toy/say/", [], b"hi"))
    refused = api.handle(HTTPRequest("POST", "/toy/say", [], b""))
    malformed = api.refuse_malformed(HTTPRequest("POST", "/toy/say", [], b""), 413, "too big")
    assert (served.status, dict(served.headers)["toy-request"], served.body) == (200, "req_harness000000000001", b"Hello.")
    assert (refused.status, refused.body) == (422, b"refused (toy_error): say something")
    assert (malformed.status, malformed.body) == (413, b"refused (request_too_large): too big")
    assert [(e.klass, e.protocol) for e in api.journal.exchanges()] == [(MAIN, "toy"), (MALFORMED, "toy"), (MALFORMED, "toy")]
