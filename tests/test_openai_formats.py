"""The fake API's OpenAI wire formats: Chat Completions and Responses, through a real FakeAPIServer.

Two independent clients read the replies: the stdlib (`http.client` for the
bytes and a strict SSE reader written here) and OpenAI's own SDK, streaming,
which must assemble the same text, tool calls and cached-token figures.
Nothing parses replies with the harness's own code. The conversation tests
then run the unchanged checks over the journal read back from disk.
"""

from __future__ import annotations

import http.client
import json
import re
from typing import Any

import openai  # the test extra brings it (pydantic-ai-slim[openai]): an independent client, never skipped
import pytest
from vocabulary import say, step_with

from harness.checks import CheckContext, run_check
from harness.journal.requests import read_journal
from harness.scenario.model import ApiError, Fault, Step, TextBlock, ToolUseBlock, Turn, Usage

MODEL = "gpt-test-1"
CHAT = "/v1/chat/completions"
RESPONSES = "/v1/responses"
IDENTITY = "You are Agent X, a coding assistant."
APPEND = "APPENDED RULES: answer with one number."
IDENTITY_PATTERN = re.compile(r"You are Agent \w+")
COMPACT_PROMPT = (
    "Your task is to create a detailed summary of the conversation so far.\n"
    "<summary>\n1. Primary Request and Intent:\n</summary>"
)


# --------------------------------------------------------------------------- client side (stdlib only)


def post(server, path: str, body: dict | bytes) -> tuple[int, dict[str, str], bytes]:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    try:
        conn.request("POST", path, body=raw, headers={"content-type": "application/json", "authorization": "Bearer sk-test"})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def chat_chunks(raw: bytes) -> list[Any]:
    """Strict: every event is one `data:` line and a blank line; the last is `[DONE]`."""
    text = raw.decode()
    assert text.endswith("\n\n")
    events = text[:-2].split("\n\n")
    assert all(e.startswith("data: ") and "\n" not in e for e in events), events
    assert events[-1] == "data: [DONE]"
    return [json.loads(e[len("data: "):]) for e in events[:-1]]


def responses_events(raw: bytes) -> list[dict[str, Any]]:
    """Strict: `event: NAME` + `data: JSON` + blank line, NAME == data.type, sequence numbers 0, 1, 2, …"""
    text = raw.decode()
    assert text.endswith("\n\n")
    out = []
    for i, block in enumerate(text[:-2].split("\n\n")):
        name_line, data_line = block.split("\n")
        assert name_line.startswith("event: ") and data_line.startswith("data: ")
        data = json.loads(data_line[len("data: "):])
        assert data["type"] == name_line[len("event: "):]
        assert data["sequence_number"] == i
        out.append(data)
    return out


def accumulate_chat(chunks: list[dict]) -> dict[str, Any]:
    """What a client reassembles from the deltas: text, tool calls, finish reason, usage."""
    text, calls, finish, usage = "", {}, None, None
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk["choices"]:
            delta = choice["delta"]
            text += delta.get("content") or ""
            for call in delta.get("tool_calls", []):
                slot = calls.setdefault(call["index"], {"id": None, "name": "", "arguments": ""})
                slot["id"] = call.get("id", slot["id"])
                slot["name"] += call.get("function", {}).get("name", "")
                slot["arguments"] += call.get("function", {}).get("arguments", "")
            finish = choice["finish_reason"] or finish
    return {"text": text, "calls": [calls[i] for i in sorted(calls)], "finish": finish, "usage": usage}


def accumulate_responses(events: list[dict]) -> dict[str, Any]:
    """Rebuild the output from the item/part/delta events, as the SDK's accumulator does."""
    output: list[dict] = []
    for event in events:
        kind = event["type"]
        if kind == "response.output_item.added":
            assert event["output_index"] == len(output)
            output.append(dict(event["item"]))
        elif kind == "response.content_part.added":
            output[event["output_index"]]["content"].append(dict(event["part"]))
        elif kind == "response.output_text.delta":
            output[event["output_index"]]["content"][event["content_index"]]["text"] += event["delta"]
        elif kind == "response.function_call_arguments.delta":
            output[event["output_index"]]["arguments"] += event["delta"]
        elif kind == "response.output_item.done":
            output[event["output_index"]]["status"] = event["item"]["status"]
    return {"output": output, "final": events[-1]["response"]}


def turn(*blocks, usage: Usage | None = None, stop_reason: str | None = None) -> Turn:
    return Turn(blocks=tuple(blocks), usage=usage, stop_reason=stop_reason)


def chat_body(*messages: dict, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": list(messages) or [{"role": "user", "content": "What is 6*7?"}], **extra}


# --------------------------------------------------------------------------- chat completions


def test_chat_json_reply_and_normalized_view(served):
    api, server, journal_path = served
    api.begin_step(step_with(turn(TextBlock("The answer is 42."), usage=Usage(input_tokens=10, output_tokens=5))))
    tools = [{"type": "function", "function": {"name": "calc", "description": "math", "parameters": {"type": "object"}}}]
    status, headers, raw = post(server, CHAT, chat_body(
        {"role": "system", "content": IDENTITY},
        {"role": "developer", "content": [{"type": "text", "text": APPEND}]},
        {"role": "user", "content": [{"type": "text", "text": "What is 6*7?"}]},
        tools=tools, max_completion_tokens=50,
    ))
    assert status == 200 and headers["content-type"] == "application/json"
    reply = json.loads(raw)
    assert reply["object"] == "chat.completion" and reply["model"] == MODEL
    (choice,) = reply["choices"]
    assert choice["message"] == {"role": "assistant", "content": "The answer is 42.", "refusal": None}
    assert choice["finish_reason"] == "stop"
    assert reply["usage"]["prompt_tokens"] == 10 and reply["usage"]["completion_tokens"] == 5
    assert reply["usage"]["total_tokens"] == 15

    (line,) = read_journal(journal_path)
    assert (line.protocol, line.klass, line.status, line.path, line.stream) == ("openai-chat", "main", 200, CHAT, False)
    assert line.headers["authorization"] == "[redacted]"
    assert line.normalized["system"] == [{"text": IDENTITY, "cache_control": None}, {"text": APPEND, "cache_control": None}]
    assert line.normalized["tools"] == tools
    assert line.normalized["messages"] == [{"role": "user", "content": [{"type": "text", "text": "What is 6*7?"}]}]
    assert (line.normalized["model"], line.normalized["max_tokens"]) == (MODEL, 50)
    assert line.reply["content"] == [{"type": "text", "text": "The answer is 42."}]
    assert line.reply["finish_reason"] == "stop"


def test_chat_stream_with_include_usage_shows_cached_tokens(served):
    api, server, _ = served
    text = "Forty-two, the answer to everything asked here today."
    api.begin_step(step_with(turn(TextBlock(text), usage=Usage(input_tokens=20, output_tokens=9, cache_read_input_tokens=300))))
    status, headers, raw = post(server, CHAT, chat_body(stream=True, stream_options={"include_usage": True}))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    chunks = chat_chunks(raw)
    assert len([c for c in chunks if c["choices"] and "content" in c["choices"][0]["delta"]]) > 2  # really in pieces
    got = accumulate_chat(chunks)
    assert (got["text"], got["finish"], got["calls"]) == (text, "stop", [])
    assert chunks[-1]["choices"] == [] and all(c["usage"] is None for c in chunks[:-1])
    assert got["usage"]["prompt_tokens_details"]["cached_tokens"] == 300
    assert got["usage"]["prompt_tokens"] == 320 and got["usage"]["completion_tokens"] == 9
    assert got["usage"]["total_tokens"] == 329
    assert len({c["id"] for c in chunks}) == 1
    assert api.journal.exchanges()[0].stream is True


def test_chat_stream_without_include_usage_has_no_usage(served):
    api, server, _ = served
    api.begin_step(step_with(say("hi")))
    chunks = chat_chunks(post(server, CHAT, chat_body(stream=True))[2])
    assert all("usage" not in c for c in chunks) and accumulate_chat(chunks)["text"] == "hi"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_chat_tool_call_round_trip(served, stream):
    api, server, journal_path = served
    api.begin_step(step_with(
        turn(TextBlock("Let me compute."), ToolUseBlock("calc", {"expr": "6*7", "digits": [4, 2]})),
        say("It is 42."),
    ))
    first = [{"role": "system", "content": IDENTITY}, {"role": "user", "content": "What is 6*7?"}]
    status, _, raw = post(server, CHAT, chat_body(*first, stream=stream))
    assert status == 200
    if stream:
        got = accumulate_chat(chat_chunks(raw))
        text, calls, finish = got["text"], got["calls"], got["finish"]
        calls = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
    else:
        message = json.loads(raw)["choices"][0]
        text, calls, finish = message["message"]["content"], message["message"]["tool_calls"], message["finish_reason"]
    assert (text, finish) == ("Let me compute.", "tool_calls")
    (call,) = calls
    assert call["id"].startswith("call_") and call["function"]["name"] == "calc"
    assert json.loads(call["function"]["arguments"]) == {"expr": "6*7", "digits": [4, 2]}

    second = first + [
        {"role": "assistant", "content": text, "tool_calls": calls},
        {"role": "tool", "tool_call_id": call["id"], "content": "42"},
    ]
    status, _, raw = post(server, CHAT, chat_body(*second, stream=stream))
    assert status == 200
    messages = read_journal(journal_path)[1].normalized["messages"]
    assert messages[1:] == [
        {"role": "assistant", "content": [{"type": "text", "text": "Let me compute."},
                                          {"type": "tool_use", "id": call["id"], "name": "calc",
                                           "input": {"expr": "6*7", "digits": [4, 2]}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": "42"}]},
    ]
    context = CheckContext(tuple(read_journal(journal_path)), APPEND, IDENTITY_PATTERN)
    assert run_check("history_preserved", context).verdict == "pass"


# --------------------------------------------------------------------------- responses


def test_responses_json_reply_and_normalized_view(served):
    api, server, journal_path = served
    api.begin_step(step_with(turn(TextBlock("42."), usage=Usage(input_tokens=7, output_tokens=2, cache_read_input_tokens=5))))
    tools = [{"type": "function", "name": "calc", "description": "math", "parameters": {"type": "object"}}]
    status, headers, raw = post(server, RESPONSES, {"model": MODEL, "instructions": IDENTITY, "tools": tools, "input": [
        {"role": "developer", "content": APPEND},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is 6*7?"}]},
    ]})
    assert status == 200 and headers["content-type"] == "application/json"
    reply = json.loads(raw)
    assert (reply["object"], reply["status"], reply["model"], reply["instructions"]) == ("response", "completed", MODEL, IDENTITY)
    (item,) = reply["output"]
    assert (item["type"], item["role"], item["status"]) == ("message", "assistant", "completed")
    assert item["content"] == [{"type": "output_text", "text": "42.", "annotations": [], "logprobs": []}]
    assert reply["usage"] == {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 5}, "output_tokens": 2,
                              "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 14}
    (line,) = read_journal(journal_path)
    assert (line.protocol, line.klass, line.status) == ("openai-responses", "main", 200)
    assert line.normalized["system"] == [{"text": IDENTITY, "cache_control": None}, {"text": APPEND, "cache_control": None}]
    assert line.normalized["tools"] == tools
    assert line.normalized["messages"] == [{"role": "user", "content": [{"type": "text", "text": "What is 6*7?"}]}]


def test_responses_string_input(served):
    api, server, journal_path = served
    api.begin_step(step_with(say("ok")))
    assert post(server, RESPONSES, {"model": MODEL, "input": "hello"})[0] == 200
    assert read_journal(journal_path)[0].normalized["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]


def test_responses_stream_event_sequence_and_accumulated_response(served):
    api, server, _ = served
    text = "The answer, computed carefully and at length, is 42."
    api.begin_step(step_with(turn(TextBlock(text), ToolUseBlock("calc", {"expr": "6*7"}),
                                  usage=Usage(input_tokens=3, output_tokens=4, cache_read_input_tokens=11))))
    status, headers, raw = post(server, RESPONSES, {"model": MODEL, "input": "q", "stream": True})
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = responses_events(raw)
    kinds = [e["type"] for e in events]
    deltas = kinds.count("response.output_text.delta")
    assert deltas > 1
    assert kinds == [
        "response.created", "response.in_progress",
        "response.output_item.added", "response.content_part.added", *["response.output_text.delta"] * deltas,
        "response.output_text.done", "response.content_part.done", "response.output_item.done",
        "response.output_item.added", *["response.function_call_arguments.delta"] * kinds.count("response.function_call_arguments.delta"),
        "response.function_call_arguments.done", "response.output_item.done",
        "response.completed",
    ]
    assert events[0]["response"]["status"] == "in_progress" and events[0]["response"]["output"] == []
    got = accumulate_responses(events)
    assert got["output"] == got["final"]["output"]  # the deltas add up to the final response
    message, call = got["final"]["output"]
    assert message["content"][0]["text"] == text
    assert (call["type"], call["name"], json.loads(call["arguments"])) == ("function_call", "calc", {"expr": "6*7"})
    assert got["final"]["status"] == "completed"
    assert got["final"]["usage"]["input_tokens_details"]["cached_tokens"] == 11
    assert got["final"]["usage"]["total_tokens"] == 3 + 11 + 4


def test_responses_max_tokens_is_incomplete(served):
    api, server, _ = served
    api.begin_step(step_with(turn(TextBlock("cut"), stop_reason="max_tokens"), turn(TextBlock("cut"), stop_reason="max_tokens")))
    reply = json.loads(post(server, RESPONSES, {"model": MODEL, "input": "q"})[2])
    assert (reply["status"], reply["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
    assert responses_events(post(server, RESPONSES, {"model": MODEL, "input": "q", "stream": True})[2])[-1]["type"] == "response.incomplete"


def test_responses_function_call_round_trip(served):
    api, server, journal_path = served
    api.begin_step(step_with(turn(ToolUseBlock("calc", {"expr": "6*7"})), say("42")))
    first = [{"role": "user", "content": "q"}]
    reply = json.loads(post(server, RESPONSES, {"model": MODEL, "input": first})[2])
    (call,) = reply["output"]  # no text: no message item
    assert call["type"] == "function_call" and call["call_id"].startswith("call_")
    second = first + reply["output"] + [{"type": "function_call_output", "call_id": call["call_id"], "output": "42"}]
    assert post(server, RESPONSES, {"model": MODEL, "input": second})[0] == 200
    exchanges = read_journal(journal_path)
    assert exchanges[1].normalized["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "tool_use", "id": call["call_id"], "name": "calc", "input": {"expr": "6*7"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["call_id"], "content": "42"}]},
    ]
    assert run_check("history_preserved", CheckContext(tuple(exchanges), APPEND, IDENTITY_PATTERN)).verdict == "pass"


# --------------------------------------------------------------------------- errors, classification, faults


@pytest.mark.parametrize("path,body", [
    (CHAT, chat_body()), (RESPONSES, {"model": MODEL, "input": "q"}),
], ids=["chat", "responses"])
@pytest.mark.parametrize("status,kind,retry_after", [(429, "rate_limit_error", "0"), (500, "api_error", None)])
def test_scripted_error_in_openai_shape_and_journaled_as_main(served, path, body, status, kind, retry_after):
    api, server, journal_path = served
    api.begin_step(step_with(error=ApiError(status, kind, "scripted trouble")))
    got, headers, raw = post(server, path, body)
    assert got == status
    assert json.loads(raw) == {"error": {"message": "scripted trouble", "type": kind, "param": None, "code": None}}
    assert headers.get("retry-after") == retry_after
    (line,) = read_journal(journal_path)
    assert (line.klass, line.status, line.protocol, line.scripted_error) == ("main", status, api.journal.exchanges()[0].protocol, True)
    assert line.protocol == ("openai-chat" if path == CHAT else "openai-responses")
    assert line.normalized is not None


def _raw(body: dict) -> bytes:
    return json.dumps(body).encode()


MALFORMED = [
    (CHAT, b'{"model": ', None, "We could not parse the JSON body"),
    (CHAT, b"[1]", None, "The request body must be a JSON object"),
    (CHAT, _raw({"messages": [{"role": "user", "content": "q"}]}), "model", "you must provide a model parameter"),
    (CHAT, _raw({"model": MODEL}), "messages", "Missing required parameter: 'messages'."),
    (CHAT, _raw({"model": MODEL, "messages": []}), "messages", "messages: expected an array with minimum length 1"),
    (CHAT, _raw({"model": "", "messages": [{"role": "user", "content": "q"}]}), "model", "model: expected a non-empty string"),
    (CHAT, _raw(chat_body({"role": "robot", "content": "q"})), "messages[0].role", "Invalid value for 'messages[0].role'"),
    (CHAT, _raw(chat_body({"role": "tool", "content": "42"})), "messages[0].tool_call_id", "Missing required parameter"),
    (CHAT, _raw(chat_body({"role": "user", "content": 7})), "messages[0].content", "Invalid type for 'messages[0].content'"),
    (CHAT, _raw(chat_body(stream_options={"include_usage": True})), "stream_options", "The 'stream_options' parameter"),
    (CHAT, _raw(chat_body(tools=[{"type": "function", "function": {}}])), "tools[0].function.name", "Missing required"),
    (RESPONSES, _raw({"input": "q"}), "model", "you must provide a model parameter"),
    (RESPONSES, _raw({"model": MODEL}), "input", "Missing required parameter: 'input'."),
    (RESPONSES, _raw({"model": MODEL, "input": 3}), "input", "input: expected a string or an array of items"),
    (RESPONSES, _raw({"model": MODEL, "input": [{"type": "bogus"}]}), "input[0].type", "Invalid value for 'input[0].type'"),
    (RESPONSES, _raw({"model": MODEL, "input": [{"type": "function_call", "name": "x"}]}), "input[0].call_id", "Missing"),
    (RESPONSES, _raw({"model": MODEL, "input": "q", "previous_response_id": "resp_1"}), "previous_response_id", "previous_response_id is not supported"),
]


@pytest.mark.parametrize("path,body,param,message", MALFORMED, ids=[f"{m[0].rsplit('/', 1)[-1]}-{i}" for i, m in enumerate(MALFORMED)])
def test_malformed_body_refused_in_openai_shape_and_journaled(served, path, body, param, message):
    api, server, journal_path = served
    api.begin_step(step_with(say("never given")))
    status, _, raw = post(server, path, body)
    assert status == 400
    error = json.loads(raw)
    assert set(error) == {"error"} and set(error["error"]) == {"message", "type", "param", "code"}
    assert (error["error"]["type"], error["error"]["param"], error["error"]["code"]) == ("invalid_request_error", param, None)
    assert error["error"]["message"].startswith(message), error
    (line,) = read_journal(journal_path)
    assert (line.klass, line.status, line.error, line.body) == ("malformed", 400, error["error"]["message"], body)
    assert line.protocol == ("openai-chat" if path == CHAT else "openai-responses")
    assert api.end_step().unused_turns == 1  # a refused request never consumes the script


@pytest.mark.parametrize("path", [CHAT, RESPONSES])
def test_compaction_request_classified_and_answered_with_summary(served, path):
    api, server, journal_path = served
    api.begin_step(Step(index=1, kind="compact", turns=(say("never given"),), summary="The user asked for 6*7."))
    if path == CHAT:
        reply = json.loads(post(server, path, chat_body({"role": "user", "content": COMPACT_PROMPT}))[2])
        text = reply["choices"][0]["message"]["content"]
    else:
        reply = json.loads(post(server, path, {"model": MODEL, "input": COMPACT_PROMPT})[2])
        text = reply["output"][0]["content"][0]["text"]
    assert "<summary>\nThe user asked for 6*7.\n</summary>" in text
    (line,) = read_journal(journal_path)
    assert line.klass == "compaction"
    assert api.end_step().unused_turns == 1


def test_fault_is_not_carried_out_on_openai_formats_and_is_noted(served):
    api, server, journal_path = served
    api.begin_step(step_with(Turn(blocks=(TextBlock("whole"),), fault=Fault(kind="reset"))))
    status, _, raw = post(server, CHAT, chat_body())
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "whole"
    (line,) = read_journal(journal_path)
    assert line.error is None and any("faults are Anthropic-only" in n for n in line.notes)


def test_anthropic_route_unchanged_alongside(served):
    api, server, journal_path = served
    api.begin_step(step_with(say("anthropic still")))
    status, _, raw = post(server, "/v1/messages", {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]})
    assert status == 200 and json.loads(raw)["content"][0]["text"] == "anthropic still"
    assert read_journal(journal_path)[0].protocol == "anthropic"


# --------------------------------------------------------------------------- the checks, unchanged


def _chat_turn(server, system: list[str], history: list[dict], prompt: str) -> list[dict]:
    """One request in the Chat format; returns the history the client would keep (prompt + reply)."""
    messages = history + [{"role": "user", "content": prompt}]
    body = chat_body(*[{"role": "system", "content": s} for s in system], *messages, stream=True)
    got = accumulate_chat(chat_chunks(post(server, CHAT, body)[2]))
    return messages + [{"role": "assistant", "content": got["text"]}]


def _responses_turn(server, system: list[str], history: list[dict], prompt: str) -> list[dict]:
    items = history + [{"role": "user", "content": [{"type": "input_text", "text": prompt}]}]
    body = {"model": MODEL, "instructions": system[0], "input": [{"role": "developer", "content": s} for s in system[1:]] + items}
    reply = json.loads(post(server, RESPONSES, body)[2])
    return items + reply["output"]  # the output items sent back as they came


CHECK_NAMES = ("identity_stable", "appended_exactly_once", "prefix_stable", "history_preserved")
DEFECTS = {  # what the client does wrong in step 2 → the checks that must fail
    "keeps-everything": set(),
    "drops-append": {"appended_exactly_once", "prefix_stable"},
    "new-identity": {"identity_stable", "prefix_stable"},
    "forgets-last-reply": {"history_preserved"},
}


@pytest.mark.parametrize("defect", list(DEFECTS))
@pytest.mark.parametrize("fmt", ["chat", "responses"])
def test_checks_judge_a_two_step_conversation(served, fmt, defect):
    api, server, journal_path = served
    send = _chat_turn if fmt == "chat" else _responses_turn
    system = [IDENTITY, APPEND]
    api.begin_step(step_with(say("6*7 is 42."), index=1))
    history = send(server, system, [], "What is 6*7?")
    api.end_step()
    api.begin_step(step_with(say("7*8 is 56."), index=2))
    if defect == "drops-append":
        system = [IDENTITY]
    elif defect == "new-identity":
        system = ["You are Agent Y, a coding assistant.", APPEND]
    elif defect == "forgets-last-reply":
        history = history[:-1]
    send(server, system, history, "And 7*8?")
    api.end_step()

    exchanges = read_journal(journal_path)
    assert [(e.step, e.klass, e.protocol) for e in exchanges] == [(1, "main", f"openai-{fmt}"), (2, "main", f"openai-{fmt}")]
    context = CheckContext(tuple(exchanges), APPEND, IDENTITY_PATTERN)
    verdicts = {name: run_check(name, context).verdict for name in CHECK_NAMES}
    assert verdicts == {name: "fail" if name in DEFECTS[defect] else "pass" for name in CHECK_NAMES}


# ---------------------------------------------------------------------------------------- OpenAI's own SDK


def test_the_openai_sdk_streams_chat_completions_with_cached_tokens(served):
    api, server, _ = served
    api.begin_step(step_with(turn(TextBlock("The answer is 42."), usage=Usage(input_tokens=20, output_tokens=5,
                                                                          cache_read_input_tokens=12))))
    client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="sk-fake", max_retries=0)
    chunks = list(client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "6*7?"}],
                                                 stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "The answer is 42."
    # OpenAI counts cached tokens inside prompt_tokens: 20 uncached + 12 cached.
    assert chunks[-1].usage.prompt_tokens == 32 and chunks[-1].usage.prompt_tokens_details.cached_tokens == 12


def test_the_openai_sdk_streams_a_response_with_a_tool_call(served):
    api, server, _ = served
    api.begin_step(step_with(turn(ToolUseBlock("calculator", {"expression": "6*7"}, id="call_1"))))
    client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="sk-fake", max_retries=0)
    with client.responses.stream(model=MODEL, instructions=IDENTITY, input="6*7?") as stream:
        final = stream.get_final_response()
    (call,) = [item for item in final.output if item.type == "function_call"]
    assert (call.name, json.loads(call.arguments)) == ("calculator", {"expression": "6*7"})
    assert final.usage.input_tokens_details.cached_tokens == 0
