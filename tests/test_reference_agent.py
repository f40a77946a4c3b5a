"""The reference agent: its pure parts directly, and the whole CLI against a live HTTP server.

The harness validates its checks by running this agent clean and with each known
defect, so these tests pin down exactly what each variant sends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from datetime import date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.reference_agent import DEFECT_DESCRIPTIONS, KNOWN_DEFECTS
from harness.reference_agent import defects as d
from harness.reference_agent.agent import AgentConfig, run_compact, run_prompt
from harness.reference_agent.client import build_request_body, with_cache_breakpoint
from harness.reference_agent.compaction import (
    COMPACTION_INSTRUCTION,
    CONTINUATION_PREFIX,
    compact_session,
    needs_autocompact,
)
from harness.reference_agent.errors import (
    ApiError,
    CompactionError,
    ProtocolError,
    SessionNotFound,
    ToolLoopLimit,
    UsageError,
)
from harness.reference_agent.prompt import (
    HEADLESS_TEXT,
    INSTRUCTION_LINES,
    ProcessContext,
    resume_session,
    start_session,
    system_blocks,
)
from harness.reference_agent.session import (
    add_assistant_reply,
    add_user_text,
    load_session,
    save_session,
    session_path,
)
from harness.reference_agent.sse import (
    SSEDecoder,
    SSEEvent,
    message_from_sse,
    parse_sse,
)
from harness.reference_agent.tools import (
    CalculatorError,
    calculate,
    run_tool,
    run_tool_loop,
)

IDENTITY = "You are Reference Agent, a small test agent for launcher harnesses (agent id {}).".format
HEADLESS = HEADLESS_TEXT
APPEND = "Always answer in French."
CC = {"type": "ephemeral"}
INSTRUCTIONS = "\n".join(INSTRUCTION_LINES)
COMPACTION_SYSTEM = [{"type": "text", "text": "You are a helpful AI assistant tasked with summarizing conversations."}]


# --------------------------------------------------------------------------- defect names


def test_known_defects_are_the_documented_names_in_order():
    assert KNOWN_DEFECTS == (
        "drop-append-on-resume",
        "duplicate-append-on-resume",
        "fresh-identity-per-process",
        "growing-prompt-fragment",
        "append-lost-after-compaction",
        "temporary-text-frozen-into-prefix",
        "timestamp-in-prefix",
        "forget-last-reply",
        "temporary-text-in-history",
    )
    assert set(DEFECT_DESCRIPTIONS) == set(KNOWN_DEFECTS)
    assert all(desc and "\n" not in desc for desc in DEFECT_DESCRIPTIONS.values())


def test_unknown_defect_is_a_usage_error_listing_the_known_ones():
    assert d.parse_defects(["timestamp-in-prefix"]) == frozenset({"timestamp-in-prefix"})
    with pytest.raises(UsageError) as info:
        d.parse_defects(["timestamp-in-prefix", "no-such-defect"])
    assert info.value.exit_code == 2
    assert "no-such-defect" in str(info.value)
    assert all(name in str(info.value) for name in KNOWN_DEFECTS)


@pytest.mark.parametrize("argv, says", [
    (["-p", "hi", "--continue", "--resume", "S"], "--continue resumes the session saved last"),
    (["-p", "hi", "--fork-session"], "--fork-session needs a session"),
    (["--compact"], "--compact requires --resume SESSION_ID (or --continue)"),
])
def test_session_options_that_contradict_each_other_are_usage_errors(argv, says, capsys):
    from harness.reference_agent.cli import parse_args

    with pytest.raises(SystemExit) as exited:
        parse_args(argv)
    assert exited.value.code == 2 and says in capsys.readouterr().err


# --------------------------------------------------------------------------- prompt assembly


def body(*, date_line="Session date: 2024-05-01", notes="Recalled notes: none.", extra=(), appends=(APPEND,)):
    text = "\n".join([INSTRUCTIONS, date_line, notes, *extra])
    return "\n\n".join([text, *appends])


def blocks(agent_id, durable, headless=True):
    out = [
        {"type": "text", "text": IDENTITY(agent_id)},
        {"type": "text", "text": durable, "cache_control": CC},
    ]
    if headless:
        out.append({"type": "text", "text": HEADLESS})
    return out


def persisted(session):
    """What the next process would load: JSON round trip, no shared objects."""
    return json.loads(json.dumps(session))


def summary_send(summary="The user asked three things."):
    sent = []

    def send(messages):
        sent.append(messages)
        return {"content": [{"type": "text", "text": f"<analysis>a</analysis><summary>{summary}</summary>"}]}

    return send, sent


def journey(defects, *, append=APPEND, resume_append=APPEND):
    """launch -> resume -> resume -> compact -> resume, as pure calls; system blocks per prompt step."""
    ids = iter(["aaaaaaaa", "bbbbbbbb", "cccccccc", "dddddddd", "eeeeeeee"])
    ticks = iter(datetime(2024, 5, 1, 12, 0, 0, 1) + timedelta(seconds=i) for i in range(10))

    def ctx(resumed, flag):
        return ProcessContext(
            defects=frozenset(defects),
            resumed=resumed,
            append_flag=flag,
            now=lambda: next(ticks),
            today=lambda: date(2024, 5, 1),
            new_agent_id=lambda: next(ids),
        )

    seen = []
    c = ctx(False, append)
    session = start_session(c, session_id="s1")
    add_user_text(session["messages"], "first prompt")
    seen.append(system_blocks(session, c))
    add_assistant_reply(session["messages"], {"content": [{"type": "text", "text": "one"}]})
    for prompt in ("second prompt", "third prompt"):
        session = persisted(session)
        c = ctx(True, resume_append)
        resume_session(session, c)
        add_user_text(session["messages"], prompt)
        seen.append(system_blocks(session, c))
        add_assistant_reply(session["messages"], {"content": [{"type": "text", "text": "ok"}]})
    session = persisted(session)
    c = ctx(True, resume_append)
    resume_session(session, c)
    compact_session(session, summary_send()[0])
    session = persisted(session)
    c = ctx(True, resume_append)
    resume_session(session, c)
    add_user_text(session["messages"], "fourth prompt")
    seen.append(system_blocks(session, c))
    return seen, session


def test_clean_prompt_is_identical_in_every_process_with_the_append_once():
    seen, session = journey(())
    assert seen == [blocks("aaaaaaaa", body())] * 4
    assert session["append"] == APPEND and session["agent_id"] == "aaaaaaaa"


def test_clean_resume_uses_a_new_append_flag_and_otherwise_the_stored_one():
    seen, session = journey((), resume_append="Be brief.")
    assert [b[1]["text"] for b in seen] == [body()] + [body(appends=("Be brief.",))] * 3
    assert session["append"] == "Be brief."
    seen, _ = journey((), resume_append=None)
    assert seen == [blocks("aaaaaaaa", body())] * 4


def test_clean_without_append_has_no_trailing_text():
    seen, _ = journey((), append=None, resume_append=None)
    assert seen == [blocks("aaaaaaaa", body(appends=()))] * 4


def test_drop_append_on_resume():
    seen, _ = journey([d.DROP_APPEND_ON_RESUME])
    assert seen == [blocks("aaaaaaaa", body())] + [blocks("aaaaaaaa", body(appends=()))] * 3


def test_duplicate_append_on_resume():
    seen, _ = journey([d.DUPLICATE_APPEND_ON_RESUME])
    assert seen == [blocks("aaaaaaaa", body())] + [blocks("aaaaaaaa", body(appends=(APPEND, APPEND)))] * 3


def test_fresh_identity_per_process():
    seen, _ = journey([d.FRESH_IDENTITY_PER_PROCESS])
    # The compaction process minted "dddddddd"; it just sent no agent prompt.
    assert seen == [blocks(i, body()) for i in ("aaaaaaaa", "bbbbbbbb", "cccccccc", "eeeeeeee")]


def test_growing_prompt_fragment():
    seen, _ = journey([d.GROWING_PROMPT_FRAGMENT])
    assert seen == [
        blocks("aaaaaaaa", body()),
        blocks("aaaaaaaa", body(notes="Recalled notes:\n- first prompt")),
        blocks("aaaaaaaa", body(notes="Recalled notes:\n- first prompt\n- second prompt")),
        # Compaction replaced the history; the summary is not a user prompt.
        blocks("aaaaaaaa", body()),
    ]


def test_append_lost_after_compaction():
    seen, session = journey([d.APPEND_LOST_AFTER_COMPACTION])
    assert seen == [blocks("aaaaaaaa", body())] * 3 + [blocks("aaaaaaaa", body(appends=()))]
    assert session["history_meta"] == {}


def test_append_lost_after_compaction_ignores_the_resume_flag():
    seen, _ = journey([d.APPEND_LOST_AFTER_COMPACTION], resume_append="Be brief.")
    assert [b[1]["text"] for b in seen] == [body()] * 3 + [body(appends=())]


def test_temporary_text_frozen_into_prefix():
    seen, _ = journey([d.TEMPORARY_TEXT_FROZEN_INTO_PREFIX])
    assert seen == [blocks("aaaaaaaa", body())] + [blocks("aaaaaaaa", body(extra=(HEADLESS,)))] * 3


def test_timestamp_in_prefix_is_reread_per_request():
    seen, _ = journey([d.TIMESTAMP_IN_PREFIX])
    assert seen == [
        blocks("aaaaaaaa", body(date_line=f"Current time: 2024-05-01T12:00:0{i}.000001")) for i in range(4)
    ]


def test_forget_last_reply_does_not_touch_the_prompt():
    assert journey([d.FORGET_LAST_REPLY])[0] == journey(())[0]


def test_headless_block_is_only_for_prompt_runs_and_never_persisted():
    ctx = ProcessContext(append_flag=APPEND, today=lambda: date(2024, 5, 1), new_agent_id=lambda: "aaaaaaaa")
    session = start_session(ctx)
    assert system_blocks(session, ctx, headless=False) == blocks("aaaaaaaa", body(), headless=False)
    assert json.dumps(HEADLESS)[1:-1] not in json.dumps(session)
    frozen = start_session(ProcessContext(defects=frozenset({d.TEMPORARY_TEXT_FROZEN_INTO_PREFIX})))
    assert json.dumps(HEADLESS)[1:-1] in json.dumps(frozen)


# --------------------------------------------------------------------------- SSE parsing


def sse(*events):
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


START = ("message_start", {"type": "message_start", "message": {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
    "stop_reason": None, "stop_sequence": None,
    "usage": {"input_tokens": 25, "output_tokens": 1, "cache_read_input_tokens": 7}}})
STOP = ("message_stop", {"type": "message_stop"})


def text_reply(text, *, stop="end_turn", usage=None):
    return sse(
        START,
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": usage or {"output_tokens": 5}}),
        STOP,
    )


FULL_STREAM = (
    b": a comment line\r\n"
    + sse(START)
    + b"event: ping\ndata: {\"type\": \"ping\"}\n\n"
    + sse(
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "add."}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c2ln"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Comp"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "uting."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("content_block_start", {"type": "content_block_start", "index": 2,
                                 "content_block": {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"expres"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "sion\": \"2 + "}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "3\"}"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 2}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                           "usage": {"output_tokens": 42}}),
        STOP,
    )
)


def test_sse_accumulates_every_event_type():
    message = message_from_sse(FULL_STREAM)
    assert message["content"] == [
        {"type": "thinking", "thinking": "Let me add.", "signature": "c2ln"},
        {"type": "text", "text": "Computing."},
        {"type": "tool_use", "id": "toolu_1", "name": "calculator", "input": {"expression": "2 + 3"}},
    ]
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == {"input_tokens": 25, "output_tokens": 42, "cache_read_input_tokens": 7}
    assert message["id"] == "msg_1" and message["role"] == "assistant"


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_sse_decoder_is_independent_of_chunking(size):
    decoder = SSEDecoder()
    events = []
    for i in range(0, len(FULL_STREAM), size):
        events += decoder.feed(FULL_STREAM[i : i + size])
    events += decoder.close()
    assert events == parse_sse(FULL_STREAM)
    assert len(events) == 19


def test_sse_field_rules():
    raw = (
        b"\xef\xbb\xbfevent: one\r\ndata: a\r\ndata:b\r\ndata:  c\r\n\r\n"  # BOM, CRLF, space rules
        b"id: 7\rretry: 10\revent: two\rdata\r\r"  # bare CR endings, field without colon
        b"event: nothing\n\n"  # no data: not dispatched, event name reset
        b"data: {}\n\n"  # default event name
        b"event: unfinished\ndata: lost"  # no blank line before EOF: discarded
    )
    assert parse_sse(raw) == [
        SSEEvent("one", "a\nb\n c"),
        SSEEvent("two", ""),
        SSEEvent("message", "{}"),
    ]


def test_sse_error_event_and_truncated_stream_are_errors():
    error = sse(START, ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}))
    with pytest.raises(ApiError, match="overloaded_error"):
        message_from_sse(error)
    with pytest.raises(ProtocolError, match="message_stop"):
        message_from_sse(text_reply("hi")[: -len(sse(STOP))])
    with pytest.raises(ProtocolError, match="not open"):
        message_from_sse(sse(START, ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                             "delta": {"type": "text_delta", "text": "x"}})))


# --------------------------------------------------------------------------- calculator and tool loop


@pytest.mark.parametrize(
    ("expression", "value"),
    [("2 + 3", 5), ("(1 + 2) * -3", -9), ("7 / 2", 3.5), ("7 // 2", 3), ("7 % 4", 3), ("2 ** 10", 1024), ("1.5*2", 3.0)],
)
def test_calculator(expression, value):
    assert calculate(expression) == value


@pytest.mark.parametrize(
    "expression",
    ["1/0", "__import__('os')", "x + 1", "[1, 2]", "2 ** 99999", "9 ** 9 ** 9", "1 if 1 else 2", "True + 1", "",
     "1 | 2", "~1", "1 << 2", "1 < 2", "(-8) ** 0.5", "1e308 * 10"],
)
def test_calculator_rejects(expression):
    with pytest.raises(CalculatorError):
        calculate(expression)


def test_run_tool_results():
    ok = run_tool({"type": "tool_use", "id": "t1", "name": "calculator", "input": {"expression": "6*7"}})
    assert ok == {"type": "tool_result", "tool_use_id": "t1", "content": "42"}
    bad = run_tool({"type": "tool_use", "id": "t2", "name": "calculator", "input": {"expression": "1/0"}})
    assert bad == {"type": "tool_result", "tool_use_id": "t2", "content": "Error: division by zero", "is_error": True}
    assert run_tool({"type": "tool_use", "id": "t3", "name": "shell", "input": {}})["is_error"] is True
    assert run_tool({"type": "tool_use", "id": "t4", "name": "calculator", "input": {}})["is_error"] is True


def tool_use_reply(*exprs):
    content = [{"type": "tool_use", "id": f"toolu_{i}", "name": "calculator", "input": {"expression": e}}
               for i, e in enumerate(exprs)]
    return {"content": content, "stop_reason": "tool_use", "usage": {"input_tokens": 1}}


def test_tool_loop_runs_every_tool_use_and_stops_on_a_non_tool_reply():
    replies = iter([tool_use_reply("2+2", "1/0"), tool_use_reply("3*3"),
                    {"content": [{"type": "text", "text": "4 and 9"}], "stop_reason": "end_turn"}])
    snapshots = []

    def send(messages):
        snapshots.append(json.loads(json.dumps(messages)))
        return next(replies)

    messages = [{"role": "user", "content": [{"type": "text", "text": "q"}]}]
    final, sent = run_tool_loop(messages, send)
    assert sent == 3 and final["content"][0]["text"] == "4 and 9"
    assert messages[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_0", "content": "4"},
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Error: division by zero", "is_error": True},
    ]}
    assert messages[4] == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_0", "content": "9"}]}
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]  # final not appended
    assert [len(s) for s in snapshots] == [1, 3, 5]


def test_tool_loop_gives_up_after_ten_requests():
    calls = []

    def send(messages):
        calls.append(1)
        return tool_use_reply("1+1")

    with pytest.raises(ToolLoopLimit):
        run_tool_loop([{"role": "user", "content": [{"type": "text", "text": "q"}]}], send)
    assert len(calls) == 10


# --------------------------------------------------------------------------- requests and sessions


def test_cache_breakpoint_is_on_a_copy_of_the_last_block_only():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
        {"role": "user", "content": [{"type": "text", "text": "c"}, {"type": "text", "text": "d"}]},
    ]
    original = json.loads(json.dumps(messages))
    marked = with_cache_breakpoint(messages)
    assert messages == original
    assert marked[2]["content"][1] == {"type": "text", "text": "d", "cache_control": CC}
    assert "cache_control" not in json.dumps(marked[:2]) + json.dumps(marked[2]["content"][0])
    body_ = build_request_body(model="m", system=[], messages=messages, tools=None, stream=False)
    assert "tools" not in body_ and body_["max_tokens"] == 1024 and body_["stream"] is False


def test_user_text_keeps_roles_alternating():
    messages = []
    add_user_text(messages, "a")
    add_user_text(messages, "b")
    assert messages == [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]
    add_assistant_reply(messages, {"content": [{"type": "text", "text": "c"}]})
    add_user_text(messages, "d")
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]


def test_session_save_is_atomic_and_ids_cannot_escape(tmp_path):
    session = start_session(ProcessContext())
    path = save_session(tmp_path, session)
    assert path == tmp_path / ".reference-agent" / "sessions" / f"{session['session_id']}.json"
    assert load_session(tmp_path, session["session_id"]) == session
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left behind
    with pytest.raises(SessionNotFound):
        session_path(tmp_path, "../../etc/passwd")
    with pytest.raises(SessionNotFound, match="no such session: nope"):
        load_session(tmp_path, "nope")


class FakeClient:
    """Records bodies; answers compaction requests with a summary, others from a script."""

    def __init__(self, replies=(), summaries=("<summary>Earlier: hello.</summary>",)):
        self.bodies = []
        self.replies = list(replies)
        self.summaries = list(summaries)
        self.requests_sent = 0

    def create(self, body):
        self.bodies.append(json.loads(json.dumps(body)))
        self.requests_sent += 1
        if body["system"] == COMPACTION_SYSTEM:
            return {"content": [{"type": "text", "text": self.summaries.pop(0)}], "stop_reason": "end_turn",
                    "usage": {"input_tokens": 1}}
        if self.replies:
            return self.replies.pop(0)
        return {"content": [{"type": "text", "text": f"reply {self.requests_sent}"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 10, "output_tokens": 2}}


def run(tmp_path, prompt, *, resume=None, defects=(), append=APPEND, client=None, limit=160_000):
    client = client or FakeClient()
    config = AgentConfig(home=tmp_path, autocompact_tokens=limit)
    ctx = ProcessContext(defects=frozenset(defects), append_flag=append)
    return run_prompt(prompt, client=client, config=config, ctx=ctx, resume_id=resume), client


def test_history_is_saved_exactly_as_sent_without_cache_control(tmp_path):
    first, _ = run(tmp_path, "hello", client=FakeClient(replies=[
        tool_use_reply("2+3"), {"content": [{"type": "text", "text": "5"}], "stop_reason": "end_turn", "usage": {}}]))
    assert (first.result, first.num_requests) == ("5", 2)
    _, c2 = run(tmp_path, "again", resume=first.session_id)
    sent = c2.bodies[0]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    assert sent[3]["content"] == [{"type": "text", "text": "5"}]
    assert sent[-1]["content"][-1] == {"type": "text", "text": "again", "cache_control": CC}
    assert c2.bodies[0]["tools"][0]["name"] == "calculator"
    saved = load_session(tmp_path, first.session_id)
    assert "cache_control" not in json.dumps(saved["messages"])
    assert saved["messages"][-1]["content"] == [{"type": "text", "text": "reply 1"}]
    assert saved["last_usage"] == {"input_tokens": 10, "output_tokens": 2}


def test_forget_last_reply_saves_before_the_answer(tmp_path):
    first, _ = run(tmp_path, "hello", defects=[d.FORGET_LAST_REPLY])
    assert first.result == "reply 1"
    saved = load_session(tmp_path, first.session_id)
    assert saved["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hello"}]}]
    _, c2 = run(tmp_path, "again", resume=first.session_id, defects=[d.FORGET_LAST_REPLY])
    assert c2.bodies[0]["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "hello"}, {"type": "text", "text": "again", "cache_control": CC}]}]


def test_compaction_replaces_history_and_asks_again_once(tmp_path):
    first, _ = run(tmp_path, "hello")
    client = FakeClient(summaries=["no tags here", "<summary>Said hello.</summary>"])
    result = run_compact(first.session_id, client=client, config=AgentConfig(home=tmp_path), ctx=ProcessContext())
    assert (result.result, result.compacted, result.num_requests) == ("Compacted.", True, 2)
    request = client.bodies[0]
    assert request["system"] == COMPACTION_SYSTEM and "tools" not in request
    assert request["messages"][-1]["content"][-1] == {"type": "text", "text": COMPACTION_INSTRUCTION, "cache_control": CC}
    assert len(client.bodies[1]["messages"]) == len(request["messages"]) + 2
    saved = load_session(tmp_path, first.session_id)
    assert saved["messages"] == [{"role": "user", "content": [{"type": "text", "text": CONTINUATION_PREFIX + "Said hello."}]}]
    failing = FakeClient(summaries=["nope", "still nope"])
    with pytest.raises(CompactionError):
        run_compact(first.session_id, client=failing, config=AgentConfig(home=tmp_path), ctx=ProcessContext())


def test_auto_compaction_runs_before_the_turn_when_the_context_is_full(tmp_path):
    big = {"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 60, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 20}}
    first, _ = run(tmp_path, "hello", client=FakeClient(replies=[big]))
    assert needs_autocompact(load_session(tmp_path, first.session_id), 109)
    assert not needs_autocompact(load_session(tmp_path, first.session_id), 110)
    second, client = run(tmp_path, "next", resume=first.session_id, limit=100)
    assert (second.auto_compacted, second.num_requests) == (True, 2)
    assert client.bodies[0]["system"] == COMPACTION_SYSTEM
    assert client.bodies[1]["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": CONTINUATION_PREFIX + "Earlier: hello."},
        {"type": "text", "text": "next", "cache_control": CC}]}]
    third, _ = run(tmp_path, "more", resume=first.session_id, limit=100)
    assert third.auto_compacted is False


# --------------------------------------------------------------------------- end to end over HTTP


def sse_for(text, usage):
    return text_reply(text, usage=usage)


class FakeAPI:
    """A real HTTP server on 127.0.0.1 that journals requests and answers canned SSE."""

    def __init__(self):
        self.requests = []
        self.status = 200
        self.input_tokens = 10
        self.stream_override: bytes | None = None
        self.queue: list[bytes] = []  # canned SSE replies to main requests, used first
        self.chunked = False
        self.close_each = False
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers["content-length"]))
                body = json.loads(raw)
                api.requests.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                     "peer": self.client_address})
                if api.status != 200:
                    payload, ctype = b'{"type":"error","error":{"type":"api_error","message":"boom"}}', "application/json"
                    self.send_response(api.status)
                else:
                    is_compaction = body["system"] == COMPACTION_SYSTEM
                    text = "<summary>We said hello.</summary>" if is_compaction else f"answer {len(api.requests)}"
                    usage = {"output_tokens": 3, "input_tokens": api.input_tokens}
                    if not body["stream"]:
                        payload, ctype = json.dumps({
                            "id": "msg", "type": "message", "role": "assistant", "model": body["model"],
                            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                            "stop_sequence": None, "usage": usage}).encode(), "application/json"
                    elif api.queue and not is_compaction:
                        payload, ctype = api.queue.pop(0), "text/event-stream"
                    else:
                        payload = api.stream_override or sse_for(text, usage)
                        ctype = "text/event-stream"
                    self.send_response(200)
                self.send_header("content-type", ctype)
                if api.close_each:
                    self.send_header("connection", "close")
                    self.close_connection = True
                if api.chunked:
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    for i in range(0, len(payload), 50):
                        piece = payload[i : i + 50]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def bodies(self):
        return [r["body"] for r in self.requests]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api():
    server = FakeAPI()
    yield server
    server.close()


def agent(home, base_url, *args, extra_env=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "REFERENCE_AGENT_"))}
    env.update({"HOME": str(home), "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "test-key"})
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "harness.reference_agent", *args],
        check=False, env=env, capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[1],
    )


def result_of(proc):
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0])


def test_e2e_launch_then_resume_in_fresh_processes(api, tmp_path):
    launch = result_of(agent(tmp_path, api.url + "/prefix", "-p", "hello", "--append-system-prompt", APPEND,
                             "--output-format", "json"))
    assert launch == {"type": "result", "session_id": launch["session_id"], "result": "answer 1",
                      "is_error": False, "num_requests": 1, "auto_compacted": False}
    resumed = result_of(agent(tmp_path, api.url + "/prefix", "-p", "again", "--resume", launch["session_id"],
                              "--append-system-prompt", APPEND, "--output-format", "json"))
    assert resumed["session_id"] == launch["session_id"] and resumed["result"] == "answer 2"
    first, second = api.requests
    assert first["path"] == second["path"] == "/prefix/v1/messages"
    headers = {k.lower(): v for k, v in first["headers"].items()}
    assert headers["x-api-key"] == "test-key" and headers["anthropic-version"] == "2023-06-01"
    assert headers["user-agent"] == "reference-agent/0.1" and headers["content-type"] == "application/json"
    b1, b2 = first["body"], second["body"]
    assert b1["model"] == "reference-model-1" and b1["stream"] is True and b1["max_tokens"] == 1024
    assert b1["system"][0] == b2["system"][0]
    assert b1["system"][0]["text"].startswith("You are Reference Agent") and "cache_control" not in b1["system"][0]
    assert b1["system"][1] == b2["system"][1] and b1["system"][1]["cache_control"] == CC
    assert b1["system"][1]["text"].endswith("\n\n" + APPEND)
    assert json.dumps(b2["system"]).count(APPEND) == 1
    assert b2["system"][2] == {"type": "text", "text": HEADLESS}
    assert b2["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "answer 1"}]},
        {"role": "user", "content": [{"type": "text", "text": "again", "cache_control": CC}]},
    ]
    assert (tmp_path / ".reference-agent" / "sessions" / f"{launch['session_id']}.json").is_file()


def test_e2e_defect_shows_up_on_the_wire(api, tmp_path):
    launch = result_of(agent(tmp_path, api.url, "-p", "hi", "--append-system-prompt", APPEND, "--output-format",
                             "json", "--defect", "duplicate-append-on-resume"))
    agent(tmp_path, api.url, "-p", "again", "--resume", launch["session_id"], "--append-system-prompt", APPEND,
          "--defect", "duplicate-append-on-resume")
    assert [json.dumps(b["system"]).count(APPEND) for b in api.bodies()] == [1, 2]


def test_e2e_compaction_round_trip_and_no_stream(api, tmp_path):
    launch = result_of(agent(tmp_path, api.url, "-p", "hello", "--append-system-prompt", APPEND,
                             "--output-format", "json"))
    compact = result_of(agent(tmp_path, api.url, "--compact", "--resume", launch["session_id"],
                              "--output-format", "json", "--no-stream"))
    assert compact == {"type": "result", "session_id": launch["session_id"], "result": "Compacted.",
                       "is_error": False, "num_requests": 1, "auto_compacted": False, "compacted": True}
    text = agent(tmp_path, api.url, "-p", "after", "--resume", launch["session_id"])
    assert (text.returncode, text.stdout) == (0, "answer 3\n")
    b_launch, b_compact, b_after = api.bodies()
    assert b_compact["system"] == COMPACTION_SYSTEM and "tools" not in b_compact and b_compact["stream"] is False
    assert b_compact["messages"][:2] == [
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "answer 1"}]}]
    assert b_compact["messages"][-1]["content"][-1]["text"] == COMPACTION_INSTRUCTION
    assert b_after["messages"][0]["content"][0]["text"] == CONTINUATION_PREFIX + "We said hello."
    assert b_after["system"] == b_launch["system"]  # append kept once, identity and prefix unchanged


def test_e2e_auto_compaction(api, tmp_path):
    api.input_tokens = 500
    launch = result_of(agent(tmp_path, api.url, "-p", "hello", "--output-format", "json"))
    resumed = result_of(agent(tmp_path, api.url, "-p", "next", "--resume", launch["session_id"], "--output-format",
                              "json", extra_env={"REFERENCE_AGENT_AUTOCOMPACT_TOKENS": "100"}))
    assert (resumed["auto_compacted"], resumed["num_requests"]) == (True, 2)
    assert [b["system"] == COMPACTION_SYSTEM for b in api.bodies()] == [False, True, False]
    assert len({r["peer"] for r in api.requests[1:]}) == 1  # one keep-alive connection per process


def tool_use_sse(expression):
    return sse(
        START,
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "tool_use", "id": "toolu_9", "name": "calculator", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta", "partial_json": json.dumps({"expression": expression})[:9]}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "input_json_delta", "partial_json": json.dumps({"expression": expression})[9:]}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        STOP,
    )


@pytest.mark.parametrize("transport", ["keep-alive", "chunked", "close-each"])
def test_e2e_tool_loop_over_one_process(api, tmp_path, transport):
    api.chunked = transport == "chunked"
    api.close_each = transport == "close-each"
    api.queue = [tool_use_sse("6 * 7"), tool_use_sse("1 / 0"), text_reply("42, and 1/0 fails.")]
    out = result_of(agent(tmp_path, api.url, "-p", "compute", "--output-format", "json"))
    assert (out["result"], out["num_requests"]) == ("42, and 1/0 fails.", 3)
    last = api.bodies()[2]["messages"]
    assert last[1] == {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_9", "name": "calculator", "input": {"expression": "6 * 7"}}]}
    assert last[2] == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "42"}]}
    assert last[4] == {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9",
                                                    "content": "Error: division by zero", "is_error": True,
                                                    "cache_control": CC}]}
    peers = {r["peer"] for r in api.requests}
    assert len(peers) == (3 if transport == "close-each" else 1)
    saved = load_session(tmp_path, out["session_id"])
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant", "user", "assistant", "user", "assistant"]


# defect -> (identity stable, append count per prompt request, body stable, headless in body, last reply kept)
WIRE_EXPECTATIONS = {
    None: (True, [1, 1, 1], True, [0, 0, 0], True),
    "drop-append-on-resume": (True, [1, 0, 0], False, [0, 0, 0], True),
    "duplicate-append-on-resume": (True, [1, 2, 2], False, [0, 0, 0], True),
    "fresh-identity-per-process": (False, [1, 1, 1], True, [0, 0, 0], True),
    "growing-prompt-fragment": (True, [1, 1, 1], False, [0, 0, 0], True),
    "append-lost-after-compaction": (True, [1, 1, 0], False, [0, 0, 0], True),
    "temporary-text-frozen-into-prefix": (True, [1, 1, 1], False, [0, 1, 1], True),
    "timestamp-in-prefix": (True, [1, 1, 1], False, [0, 0, 0], True),
    "forget-last-reply": (True, [1, 1, 1], True, [0, 0, 0], False),
    "temporary-text-in-history": (True, [1, 1, 1], True, [0, 0, 0], True),  # no --temporary here: nothing to copy
}


def test_wire_expectations_cover_every_defect():
    assert set(WIRE_EXPECTATIONS) == {None, *KNOWN_DEFECTS}


@pytest.mark.parametrize("defect", list(WIRE_EXPECTATIONS), ids=lambda x: x or "clean")
def test_e2e_each_defect_changes_only_what_its_name_says(api, tmp_path, defect):
    flags = ["--append-system-prompt", APPEND, "--output-format", "json"] + (["--defect", defect] if defect else [])
    sid = result_of(agent(tmp_path, api.url, "-p", "hello", *flags))["session_id"]
    result_of(agent(tmp_path, api.url, "-p", "again", "--resume", sid, *flags))
    result_of(agent(tmp_path, api.url, "--compact", "--resume", sid, *flags))
    result_of(agent(tmp_path, api.url, "-p", "after", "--resume", sid, *flags))
    prompt_bodies = [b for b in api.bodies() if b["system"] != COMPACTION_SYSTEM]
    assert len(prompt_bodies) == 3
    identities = {b["system"][0]["text"] for b in prompt_bodies}
    durable = [b["system"][1]["text"] for b in prompt_bodies]
    observed = (
        len(identities) == 1,
        [text.count(APPEND) for text in durable],
        len(set(durable)) == 1,
        [text.count(HEADLESS) for text in durable],
        {"role": "assistant", "content": [{"type": "text", "text": "answer 1"}]} in prompt_bodies[1]["messages"],
    )
    assert observed == WIRE_EXPECTATIONS[defect]
    assert all(b["system"][2] == {"type": "text", "text": HEADLESS} for b in prompt_bodies)


def test_e2e_bad_input_exit_codes(api, tmp_path):
    unknown = agent(tmp_path, api.url, "-p", "x", "--defect", "not-a-defect")
    assert unknown.returncode == 2 and "forget-last-reply" in unknown.stderr and unknown.stdout == ""
    missing = agent(tmp_path, api.url, "-p", "x", "--resume", "0123-missing")
    assert missing.returncode == 1 and "no such session: 0123-missing" in missing.stderr
    no_key = agent(tmp_path, api.url, "-p", "x", extra_env={"ANTHROPIC_API_KEY": ""})
    assert no_key.returncode == 2 and "ANTHROPIC_API_KEY" in no_key.stderr
    assert agent(tmp_path, api.url, "--compact").returncode == 2
    assert api.requests == []


def test_e2e_api_failures_exit_1(api, tmp_path):
    api.status = 529
    failed = agent(tmp_path, api.url, "-p", "x")
    assert failed.returncode == 1 and "529" in failed.stderr and "boom" in failed.stderr and failed.stdout == ""
    api.status = 200
    api.stream_override = sse(START, ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "x"}}))
    streamed = agent(tmp_path, api.url, "-p", "x")
    assert streamed.returncode == 1 and "overloaded_error" in streamed.stderr
    api.close()
    refused = agent(tmp_path, api.url, "-p", "x")
    assert refused.returncode == 1 and "connection" in refused.stderr
    assert not (tmp_path / ".reference-agent" / "sessions").exists()
