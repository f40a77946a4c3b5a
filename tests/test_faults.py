"""Fault injection in the fake model API: `error` with `retry_after`, and `fault` turns.

Parsing (every bad input names file, line and key path); the wire, seen by the
official `anthropic` SDK and by raw sockets where the bytes matter (a truncated
chunked body, an RST, a silent first byte, broken event data); the journal;
the server ending faulted connections; and the runner with the reference agent, which does not
retry in-process, so a fault makes it exit non-zero as the scenario foresees.
"""

from __future__ import annotations

import importlib
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import anthropic
import pytest

from harness.fakeapi.server import FakeAPIServer
from harness.journal.exchange import MAIN
from harness.journal.requests import read_journal
from harness.fakeapi.formats.anthropic import stream_event_names
from harness.fakeapi.script import blocks_of
from harness.results import ERROR, PASS
from harness.scenario.model import ApiError, Fault, TextBlock, ToolUseBlock, Turn
from harness.scenario.reader import load_scenario
from harness.targets import resolve_target
from vocabulary import AGENTS, HEAD, assert_error, messages_body, parse, parse_error, post, reference, say, step_with

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "fault-overloaded-then-retry.yaml"
UNCAUGHT = ROOT / "scenarios" / "claude-code" / "uncaught-error-then-retry.yaml"
MODEL = "reference-model-1"  # a model the SDK does not warn about
LONG = "The answer is 56, and this sentence is long enough to stream in several text deltas."


def fault_turn(fault: Fault, text: str | None = LONG) -> Turn:
    return Turn(blocks=(TextBlock(text),) if text is not None else (), fault=fault)


def reply_lines(*turn_lines: str) -> tuple[str, ...]:
    """HEAD (lines 1-2), then lines 3-6; the turns start on line 7."""
    return (*HEAD, "steps:", "  - launch:", "      prompt: x", "      reply:", *turn_lines)


# ============================================================================ parsing


def test_each_fault_kind_parses_with_its_settings_and_content():
    sc = parse(*reply_lines(
        "        - fault: {kind: cut_stream, after_events: 3}",
        f"          text: '{LONG}'",
        "        - fault: {kind: reset}",
        "        - fault: {kind: slow_first_byte, seconds: 0.5}",
        "          text: '56'",
        "          usage: {output_tokens: 9}",
        "        - fault: {kind: malformed_sse}",
        "        - fault: {kind: cut_stream, after_events: 1}",
        "          tool_use: {name: Bash, input: {command: ls}}",
        "        - '56'",
    ))
    cut, reset, slow, malformed, cut_tool, good = sc.steps[0].turns
    assert cut == Turn(blocks=(TextBlock(LONG),), fault=Fault("cut_stream", after_events=3))
    assert reset == Turn(blocks=(), fault=Fault("reset"))
    assert slow.fault == Fault("slow_first_byte", seconds=0.5) and slow.blocks == (TextBlock("56"),)
    assert slow.usage is not None and slow.usage.output_tokens == 9
    assert malformed == Turn(blocks=(TextBlock("OK."),), fault=Fault("malformed_sse"))  # the default text
    assert cut_tool.blocks == (ToolUseBlock("Bash", {"command": "ls"}),) and cut_tool.effective_stop_reason == "tool_use"
    assert good.fault is None and good.error is None
    assert sc.steps[0].scripts_an_error
    assert [t.fault.describe() for t in (cut, reset, slow, malformed)] == [
        "cut_stream after 3 events", "reset", "slow_first_byte 0.5s", "malformed_sse"]


def test_a_step_with_only_good_turns_scripts_no_error():
    sc = parse(*reply_lines("        - '41'", "        - '42'"))
    assert not sc.steps[0].scripts_an_error


def test_retry_after_parses_and_defaults_by_status():
    sc = parse(*reply_lines(
        "        - error: {status: 529, retry_after: 2}",
        "        - error: {status: 429, retry_after: 0.25}",
        "        - error: {status: 500, retry_after: 0}",
        "        - error: {status: 529}",
        "        - error: {status: 500}",
        "        - error: {status: 429}",
    ))
    errors = [t.error for t in sc.steps[0].turns]
    assert [e.retry_after for e in errors] == [2, 0.25, 0, None, None, None]
    assert [e.retry_after_header for e in errors] == ["2", "0.25", "0", "0", None, "0"]
    assert errors[0] == ApiError(529, "overloaded_error", errors[0].message, 2)


def test_cut_stream_may_cut_after_the_last_event_but_not_beyond():
    n = len(stream_event_names(blocks_of(Turn(blocks=(TextBlock(LONG),)))))
    sc = parse(*reply_lines(f"        - fault: {{kind: cut_stream, after_events: {n}}}", f"          text: '{LONG}'"))
    assert sc.steps[0].turns[0].fault.after_events == n
    error = parse_error(*reply_lines(f"        - fault: {{kind: cut_stream, after_events: {n + 1}}}", f"          text: '{LONG}'"))
    assert_error(error, 7, f"steps[1].launch.reply[1].fault.after_events: expected at most {n}: this turn streams {n} events "
                           "(message_start, ping, content_block_start, content_block_delta,", f"got {n + 1}")


R = "steps[1].launch.reply[1]"
BAD_FAULTS = [
    # (id, turn lines (from line 7), line of the error, fragments)
    ("fault-a-kind-name", ["        - fault: reset"], 7,
     [(f"{R}.fault: expected a mapping with 'kind' (cut_stream, reset, slow_first_byte, malformed_sse), got a string ('reset'); "
      "write '{kind: reset}'")]),
    ("fault-an-integer", ["        - fault: 3"], 7, [f"{R}.fault: expected a mapping with 'kind'", "got an integer (3)"]),
    ("fault-no-kind", ["        - fault: {after_events: 3}"], 7, [f"{R}.fault: missing required key 'kind'"]),
    ("fault-unknown-kind", ["        - fault: {kind: cut}"], 7,
     [(f"{R}.fault.kind: unknown fault kind 'cut' (did you mean 'cut_stream'? "
      "known kinds: cut_stream, malformed_sse, reset, slow_first_byte)")]),
    ("fault-kind-not-string", ["        - fault:", "            kind: 7"], 8,
     [f"{R}.fault.kind: expected a fault kind (cut_stream, reset, slow_first_byte, malformed_sse), got an integer (7)"]),
    ("cut-no-after-events", ["        - fault: {kind: cut_stream}"], 7, [f"{R}.fault: missing required key 'after_events'"]),
    ("cut-zero", ["        - fault: {kind: cut_stream, after_events: 0}"], 7,
     [f"{R}.fault.after_events: expected a positive integer (events sent before the cut), got an integer (0)"]),
    ("cut-negative", ["        - fault: {kind: cut_stream, after_events: -2}"], 7,
     [f"{R}.fault.after_events: expected a positive integer", "got an integer (-2)"]),
    ("cut-float", ["        - fault: {kind: cut_stream, after_events: 1.5}"], 7,
     [f"{R}.fault.after_events: expected a positive integer", "got a number (1.5)"]),
    ("cut-string", ["        - fault:", "            kind: cut_stream", "            after_events: '3'"], 9,
     [f"{R}.fault.after_events: expected a positive integer", "got a string ('3')"]),
    ("cut-bool", ["        - fault: {kind: cut_stream, after_events: true}"], 7,
     [f"{R}.fault.after_events: expected a positive integer", "got a boolean (true)"]),
    ("cut-with-seconds", ["        - fault:", "            kind: cut_stream", "            after_events: 2",
                          "            seconds: 1"], 10,
     [f"{R}.fault: 'seconds' is not a setting of a cut_stream fault (it takes: kind, after_events)"]),
    ("cut-misspelt", ["        - fault: {kind: cut_stream, after: 2}"], 7,
     [f"{R}.fault: unknown key 'after' (did you mean 'after_events'? allowed: after_events, kind)"]),
    ("reset-with-after-events", ["        - fault: {kind: reset, after_events: 2}"], 7,
     [f"{R}.fault: 'after_events' is not a setting of a reset fault (it takes: kind)"]),
    ("reset-with-text", ["        - fault: {kind: reset}", "          text: never sent"], 8,
     [f"{R}: a reset fault sends no byte of a reply: 'text' would never be sent"]),
    ("slow-no-seconds", ["        - fault: {kind: slow_first_byte}", "          text: '56'"], 7,
     [f"{R}.fault: missing required key 'seconds'"]),
    ("slow-zero", ["        - fault: {kind: slow_first_byte, seconds: 0}", "          text: '56'"], 7,
     [f"{R}.fault.seconds: expected a positive number of seconds, got 0"]),
    ("slow-negative", ["        - fault: {kind: slow_first_byte, seconds: -1}", "          text: '56'"], 7,
     [f"{R}.fault.seconds: expected a positive number of seconds, got -1"]),
    ("slow-too-long", ["        - fault: {kind: slow_first_byte, seconds: 601}", "          text: '56'"], 7,
     [f"{R}.fault.seconds: expected at most 600 seconds, got 601"]),
    ("slow-infinite", ["        - fault: {kind: slow_first_byte, seconds: .inf}", "          text: '56'"], 7,
     [f"{R}.fault.seconds: expected a positive number of seconds, got inf"]),
    ("slow-string", ["        - fault: {kind: slow_first_byte, seconds: '1'}", "          text: '56'"], 7,
     [f"{R}.fault.seconds: expected a positive number of seconds, got a string ('1')"]),
    ("slow-without-content", ["        - fault: {kind: slow_first_byte, seconds: 1}"], 7,
     [f"{R}: a slow_first_byte fault delivers a complete reply after its delay: give it text"]),
    ("fault-and-error", ["        - error: {status: 529}", "          fault: {kind: reset}"], 8,
     [f"{R}: a turn has 'error' (an HTTP error reply) or 'fault' (a broken transport), not both"]),
    ("fault-bad-content", ["        - fault: {kind: cut_stream, after_events: 1}", "          text: [a]"], 8,
     [f"{R}.text: expected a string, got a list"]),
    ("fault-bad-stop-reason", ["        - fault: {kind: malformed_sse}", "          text: hi", "          stop_reason: done"], 9,
     [f"{R}.stop_reason: expected one of end_turn"]),
    ("retry-after-negative", ["        - error: {status: 529, retry_after: -1}"], 7,
     [f"{R}.error.retry_after: expected a non-negative number of seconds, got an integer (-1)"]),
    ("retry-after-string", ["        - error: {status: 529, retry_after: soon}"], 7,
     [f"{R}.error.retry_after: expected a non-negative number of seconds, got a string ('soon')"]),
    ("retry-after-bool", ["        - error: {status: 429, retry_after: true}"], 7,
     [f"{R}.error.retry_after: expected a non-negative number of seconds, got a boolean (true)"]),
    ("retry-after-nan", ["        - error: {status: 429, retry_after: .nan}"], 7,
     [f"{R}.error.retry_after: expected a non-negative number of seconds, got a number (nan)"]),
    ("error-misspelt-retry-after", ["        - error: {status: 429, retry-after: 1}"], 7,
     [f"{R}.error: unknown key 'retry-after' (did you mean 'retry_after'? allowed: message, status, type, retry_after)"]),
]


@pytest.mark.parametrize(("lines", "line", "fragments"), [c[1:] for c in BAD_FAULTS], ids=[c[0] for c in BAD_FAULTS])
def test_bad_fault_or_retry_after_is_rejected_with_file_line_and_key_path(lines, line, fragments):
    assert_error(parse_error(*reply_lines(*lines)), line, *fragments)


def test_fault_is_a_turn_key_not_a_step_key():
    error = parse_error(*HEAD, "steps:", "  - launch:", "      prompt: x", "      fault: {kind: reset}")
    assert_error(error, 6, "steps[1].launch: unknown key 'fault'")


def test_a_step_error_takes_retry_after_too():
    sc = parse(*HEAD, "steps:", "  - launch:", "      prompt: x", "      error: {status: 529, retry_after: 1.5}")
    assert sc.steps[0].error == ApiError(529, "overloaded_error", sc.steps[0].error.message, 1.5)


# ============================================================================ the wire: helpers


@pytest.fixture
def sdk(served):
    """sdk(max_retries=0) -> an official client of the served fake API; closed after the test."""
    made: list[anthropic.Anthropic] = []

    def make(max_retries: int = 0) -> anthropic.Anthropic:
        made.append(anthropic.Anthropic(base_url=served[1].base_url, api_key="sk-ant-test", max_retries=max_retries,
                                        timeout=10))
        return made[-1]

    yield make
    for client in made:
        client.close()


def sdk_transport(client: anthropic.Anthropic):
    """The HTTP library under the SDK (httpx, or the fork recent SDKs ship), for its exception classes."""
    base = next(c for c in type(client._client).__mro__ if not c.__module__.startswith("anthropic"))
    return importlib.import_module(base.__module__.split(".")[0])


def ask(text: str = "What is 7*8?") -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def raw_post(server, body: dict[str, Any], *, timeout: float = 5.0) -> dict[str, Any]:
    """One POST on a fresh socket, read until the response is complete or the server closes.

    Returns the raw bytes, the time to the first byte, how the read ended ("complete", "eof", or the
    exception), and the socket (still open when the response was complete: the caller closes it).
    """
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    sent = time.monotonic()
    sock.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                 b"content-length: %d\r\n\r\n%s" % (len(data), data))
    raw, first, end = b"", None, None
    try:
        while end is None:
            piece = sock.recv(65536)
            if first is None:
                first = time.monotonic() - sent
            if not piece:
                end = "eof"
            raw += piece
            if end is None and complete(raw):
                end = "complete"
    except OSError as exc:
        end = exc
    if end != "complete":
        sock.close()
    return {"raw": raw, "first_byte_s": first, "end": end, "sock": sock}


def split_response(raw: bytes) -> tuple[str, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return lines[0], headers, body


def dechunk(body: bytes) -> tuple[list[bytes], bool]:
    """The chunks of a chunked body, and whether the terminating zero-size chunk arrived."""
    chunks = []
    while body:
        size_line, sep, rest = body.partition(b"\r\n")
        if not sep:
            break
        size = int(size_line, 16)
        if size == 0:
            return chunks, rest.startswith(b"\r\n")
        if len(rest) < size + 2:
            break
        chunks.append(rest[:size])
        body = rest[size + 2:]
    return chunks, False


def complete(raw: bytes) -> bool:
    if b"\r\n\r\n" not in raw:
        return False
    _, headers, body = split_response(raw)
    if "chunked" in headers.get("transfer-encoding", ""):
        return dechunk(body)[1]
    return len(body) >= int(headers.get("content-length", "0"))


def events_of(chunks: list[bytes]) -> list[tuple[str, str]]:
    """(event name, raw data) for each chunk; the server writes one SSE event per chunk."""
    out = []
    for chunk in chunks:
        text = chunk.decode()
        assert text.endswith("\n\n"), text
        name_line, data_line = text[:-2].split("\n")
        assert name_line.startswith("event: ") and data_line.startswith("data: "), text
        out.append((name_line[len("event: "):], data_line[len("data: "):]))
    return out


def open_connections(server: FakeAPIServer) -> int:
    """Connections the server still serves (its event loop's), whoever's side they are open on."""
    return server._server.open_connections


def wait_for_connections(server: FakeAPIServer, baseline: int, within: float = 3.0) -> int:
    """How many connections more than `baseline` are still open after waiting up to `within` for them to end."""
    deadline = time.monotonic() + within
    while (extra := open_connections(server) - baseline) > 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    return extra


def only_exchange(api):
    (exchange,) = api.journal.exchanges()
    return exchange


# ============================================================================ error with retry_after


@pytest.mark.parametrize(
    ("status", "kind", "sdk_error"),
    [(429, "rate_limit_error", anthropic.RateLimitError), (500, "api_error", anthropic.InternalServerError),
     (529, "overloaded_error", anthropic.OverloadedError)],
)
def test_429_500_529_reach_the_sdk_in_the_providers_error_shape_with_retry_after(served, status, kind, sdk_error, sdk):
    api, _, _ = served
    sc = parse(*reply_lines(f"        - error: {{status: {status}, retry_after: 7}}", f"        - error: {{status: {status}}}"))
    api.begin_step(sc.steps[0])
    client = sdk()
    caught = []
    for _ in range(2):
        with pytest.raises(sdk_error) as error:
            client.messages.create(model=MODEL, max_tokens=64, messages=ask())
        caught.append(error.value)
    api.end_step()
    given, default = caught
    for error in caught:
        assert error.status_code == status
        assert error.body["type"] == "error" and error.body["error"]["type"] == kind
        assert error.response.headers["request-id"] == error.body["request_id"]
    assert given.response.headers["retry-after"] == "7"
    assert default.response.headers.get("retry-after") == ("0" if status in (429, 529) else None)
    first, second = api.journal.exchanges()
    assert first.reply["error"]["retry_after"] == 7 and first.scripted_error
    assert ("retry_after" in second.reply["error"]) is (status != 500)


def test_the_sdk_retries_a_529_after_the_retry_after_it_was_given_and_gets_the_next_turn(served, sdk):
    api, _, path = served
    sc = parse(*reply_lines("        - error: {status: 529, message: Overloaded, retry_after: 1.2}", "        - '56'"))
    api.begin_step(sc.steps[0])
    message = sdk(max_retries=2).messages.create(model=MODEL, max_tokens=64, messages=ask())
    script = api.end_step()
    assert message.content[0].text == "56"
    assert script.unused_turns == 0
    for journal in (api.journal.exchanges(), read_journal(path)):
        assert [(e.klass, e.status, e.step) for e in journal] == [(MAIN, 529, 1), (MAIN, 200, 1)]
        assert journal[0].reply == {"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded",
                                              "retry_after": 1.2}}
        # the SDK waited as told: its own first backoff, without the header (or with "0"), is at most 0.5 s
        assert journal[1].time_s - journal[0].time_s >= 1.2
        assert journal[0].normalized == journal[1].normalized  # the same request, twice


# ============================================================================ cut_stream


def test_cut_stream_sends_exactly_n_events_then_closes_without_the_terminating_chunk(served):
    api, server, path = served
    api.begin_step(step_with(fault_turn(Fault("cut_stream", after_events=3))))
    got = raw_post(server, messages_body(stream=True))
    api.end_step()
    assert got["end"] == "eof"  # the server closed the connection
    status_line, headers, body = split_response(got["raw"])
    assert status_line == "HTTP/1.1 200 OK"
    assert headers["content-type"].startswith("text/event-stream") and headers["transfer-encoding"] == "chunked"
    chunks, terminated = dechunk(body)
    assert not terminated and not body.endswith(b"0\r\n\r\n")
    assert [name for name, _ in events_of(chunks)] == ["message_start", "ping", "content_block_start"]
    assert all(json.loads(data) for _, data in events_of(chunks))  # what was sent is intact, there is just not enough of it
    total = len(stream_event_names(blocks_of(Turn(blocks=(TextBlock(LONG),)))))
    for exchange in (only_exchange(api), read_journal(path)[0]):
        assert (exchange.klass, exchange.status, exchange.stream) == (MAIN, 200, True)
        assert exchange.normalized is not None and exchange.normalized["messages"][0]["content"][0]["text"] == "What is 6*7?"
        assert exchange.scripted_error
        assert exchange.error == f"scripted fault: cut_stream after 3 of {total} events"
        assert exchange.reply["fault"] == f"cut_stream after 3 of {total} events"
        assert exchange.reply["error"]["fault"] == "cut_stream"
        assert exchange.reply["events_sent"] == ["message_start", "ping", "content_block_start"]
        assert exchange.reply["intended"]["content"] == [{"type": "text", "text": LONG}]
        assert "content" not in exchange.reply and exchange.reply_text() == ""  # never delivered as a reply


def test_the_sdk_stream_raises_at_a_cut_stream_after_the_events_it_got(served, sdk):
    api, _, _ = served
    api.begin_step(step_with(fault_turn(Fault("cut_stream", after_events=4))))
    client = sdk()
    seen = []
    with (pytest.raises((anthropic.APIError, sdk_transport(client).RemoteProtocolError)) as error,
          client.messages.stream(model=MODEL, max_tokens=64, messages=ask()) as stream):
        for event in stream:
            seen.append(event.type)
    api.end_step()
    assert "incomplete chunked read" in str(error.value) or isinstance(error.value, anthropic.APIConnectionError)
    assert "message_start" in seen and "message_stop" not in seen
    assert "content_block_delta" in seen or "text" in seen  # the fourth event, a text delta, did arrive


def test_cut_stream_on_a_json_request_cuts_the_body_under_its_announced_length(served):
    api, server, _ = served
    api.begin_step(step_with(fault_turn(Fault("cut_stream", after_events=2))))
    got = raw_post(server, messages_body())
    api.end_step()
    assert got["end"] == "eof"
    status_line, headers, body = split_response(got["raw"])
    assert status_line == "HTTP/1.1 200 OK" and headers["content-type"] == "application/json"
    announced = int(headers["content-length"])
    assert len(body) == announced // 2 < announced
    reply = only_exchange(api).reply
    assert (reply["bytes_sent"], reply["bytes_total"]) == (announced // 2, announced)
    assert reply["fault"].startswith("cut_stream after") and "JSON request" in reply["fault"]


# ============================================================================ reset


def test_reset_answers_with_a_tcp_rst_and_not_one_byte(served):
    api, server, path = served
    api.begin_step(step_with(fault_turn(Fault("reset"), text=None)))
    got = raw_post(server, messages_body(stream=True))
    api.end_step()
    assert isinstance(got["end"], ConnectionResetError), got["end"]  # an RST, not an orderly close (that would be "eof")
    assert got["raw"] == b""
    for exchange in (only_exchange(api), read_journal(path)[0]):
        assert (exchange.klass, exchange.status, exchange.stream) == (MAIN, 0, True)
        assert exchange.normalized is not None and exchange.scripted_error
        assert exchange.reply == {"fault": "reset", "error": {"fault": "reset",
                                                             "message": "connection reset (TCP RST) before any byte of a response"}}


def test_the_sdk_sees_a_reset_as_a_connection_error_and_its_retry_gets_the_next_turn(served, sdk):
    api, _, _ = served
    api.begin_step(step_with(fault_turn(Fault("reset"), text=None), say("56"), fault_turn(Fault("reset"), text=None)))
    message = sdk(max_retries=1).messages.create(model=MODEL, max_tokens=64, messages=ask())
    with pytest.raises(anthropic.APIConnectionError) as error:
        sdk().messages.create(model=MODEL, max_tokens=64, messages=ask())
    api.end_step()
    assert message.content[0].text == "56"
    assert isinstance(error.value.__cause__, sdk_transport(sdk()).ReadError) or "reset" in repr(error.value.__cause__)
    assert [e.status for e in api.journal.exchanges()] == [0, 200, 0]


# ============================================================================ slow_first_byte


def test_slow_first_byte_keeps_silent_then_sends_the_complete_reply(served):
    api, server, path = served
    api.begin_step(step_with(fault_turn(Fault("slow_first_byte", seconds=0.5))))
    got = raw_post(server, messages_body(stream=True))
    api.end_step()
    got["sock"].close()
    assert got["first_byte_s"] >= 0.5
    assert got["end"] == "complete"  # terminating chunk received, connection still open (keep-alive)
    _, _headers, body = split_response(got["raw"])
    chunks, terminated = dechunk(body)
    assert terminated
    events = events_of(chunks)
    assert events[0][0] == "message_start" and events[-1][0] == "message_stop"
    text = "".join(json.loads(d)["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == LONG
    exchange = read_journal(path)[0]
    assert (exchange.klass, exchange.status) == (MAIN, 200) and exchange.scripted_error
    assert exchange.reply["fault"] == "slow_first_byte 0.5s"
    assert exchange.reply_text() == LONG  # delivered: the history check expects it in the next turn


def test_the_sdk_waits_out_a_slow_first_byte(served, sdk):
    api, _, _ = served
    api.begin_step(step_with(fault_turn(Fault("slow_first_byte", seconds=0.5))))
    started = time.monotonic()
    message = sdk().messages.create(model=MODEL, max_tokens=64, messages=ask())
    elapsed = time.monotonic() - started
    api.end_step()
    assert message.content[0].text == LONG and elapsed >= 0.5


def test_a_slow_first_byte_delays_only_its_own_connection(served):
    api, server, _ = served
    api.begin_step(step_with(fault_turn(Fault("slow_first_byte", seconds=2)), say("fast")))
    slow = threading.Thread(target=lambda: raw_post(server, messages_body())["sock"].close())
    slow.start()
    deadline = time.monotonic() + 2
    while not api.journal.exchanges() and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    status, _, body = post(server, messages_body())
    fast_s = time.monotonic() - started
    slow.join(timeout=5)
    api.end_step()
    assert status == 200 and json.loads(body)["content"][0]["text"] == "fast"
    assert fast_s < 1.0, fast_s


def test_a_client_that_gives_up_during_a_slow_first_byte_frees_its_connection(served):
    api, server, _ = served
    baseline = open_connections(server)
    api.begin_step(step_with(fault_turn(Fault("slow_first_byte", seconds=30))))
    data = json.dumps(messages_body()).encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data))
    deadline = time.monotonic() + 2
    while not api.journal.exchanges() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert open_connections(server) - baseline == 1  # the reply is held back
    sock.close()
    assert not wait_for_connections(server, baseline, within=3.0)  # long before the 30 s are over
    api.end_step()


# ============================================================================ malformed_sse


def test_malformed_sse_breaks_the_data_of_the_first_content_block_delta_and_ends_normally(served):
    api, server, path = served
    api.begin_step(step_with(fault_turn(Fault("malformed_sse")), say("after")))
    got = raw_post(server, messages_body(stream=True))
    conn_sock = got["sock"]
    assert got["end"] == "complete"
    status_line, headers, body = split_response(got["raw"])
    assert status_line == "HTTP/1.1 200 OK" and headers["content-type"].startswith("text/event-stream")
    chunks, terminated = dechunk(body)
    assert terminated
    events = events_of(chunks)
    names = [n for n, _ in events]
    assert names == stream_event_names(blocks_of(Turn(blocks=(TextBlock(LONG),))))
    broken = names.index("content_block_delta")
    for i, (name, data) in enumerate(events):
        if i == broken:
            with pytest.raises(json.JSONDecodeError):
                json.loads(data)
        else:
            assert json.loads(data)["type"] == name
    # the connection stays usable: the next request on it gets the next turn
    data = json.dumps(messages_body()).encode()
    conn_sock.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data))
    raw = b""
    while not complete(raw):
        raw += conn_sock.recv(65536)
    conn_sock.close()
    api.end_step()
    assert json.loads(split_response(raw)[2])["content"][0]["text"] == "after"
    exchange = read_journal(path)[0]
    assert (exchange.klass, exchange.status) == (MAIN, 200) and exchange.scripted_error
    assert exchange.reply["broken_event"] == {"position": broken + 1, "event": "content_block_delta"}
    assert exchange.reply["fault"] == f"malformed_sse: event {broken + 1} of {len(events)} (content_block_delta) has data that is not JSON"
    assert "content" not in exchange.reply


def test_the_sdk_raises_while_parsing_a_malformed_stream(served, sdk):
    api, _, _ = served
    api.begin_step(step_with(fault_turn(Fault("malformed_sse"))))
    seen = []
    with (pytest.raises(ValueError),  # json.JSONDecodeError from the SDK's event decoding
          sdk().messages.stream(model=MODEL, max_tokens=64, messages=ask()) as stream):
        for event in stream:
            seen.append(event.type)
    api.end_step()
    assert "message_start" in seen and "message_stop" not in seen


def test_malformed_sse_on_a_json_request_is_a_complete_body_that_is_not_json(served):
    api, server, _ = served
    api.begin_step(step_with(fault_turn(Fault("malformed_sse"))))
    status, headers, body = post(server, messages_body())
    api.end_step()
    assert status == 200 and headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body) > 0
    with pytest.raises(json.JSONDecodeError):
        json.loads(body)
    assert body.startswith(b'{"id": "msg_')


# ============================================================================ connections ended


@pytest.mark.parametrize("fault", [Fault("cut_stream", after_events=2), Fault("reset")], ids=["cut_stream", "reset"])
def test_the_server_ends_a_cut_or_reset_connection(served, fault):
    """The server ends the connection, though the client keeps its socket open."""
    api, server, _ = served
    baseline = open_connections(server)
    api.begin_step(step_with(fault_turn(fault)))
    data = json.dumps(messages_body(stream=True)).encode()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    sock.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(data), data))
    try:
        raw = b""
        while not complete(raw):
            piece = sock.recv(65536)
            if not piece:
                break
            raw += piece
        assert fault.kind == "cut_stream" and not complete(raw)
        assert not wait_for_connections(server, baseline)
    except ConnectionResetError:
        assert fault.kind == "reset"
        assert not wait_for_connections(server, baseline)
    finally:
        sock.close()
        api.end_step()


# ============================================================================ the runner, with the reference agent

FAULT_THEN_GOOD = {
    "error-529": "{error: {status: 529, message: Overloaded, retry_after: 0}}",
    "cut_stream": f"{{fault: {{kind: cut_stream, after_events: 3}}, text: '{LONG}'}}",
    "reset": "{fault: {kind: reset}}",
    "malformed_sse": "{fault: {kind: malformed_sse}, text: '56'}",
}


def fault_then_retry(first_turn: str) -> tuple[str, ...]:
    return (
        *HEAD,
        "steps:",
        "  - launch: {prompt: 'What is 6*7?', reply: '42'}",
        "  - resume:",
        "      prompt: 'And 7*8?'",
        f"      reply: [{first_turn}, '56']",
        "  - retry: {prompt: 'And 7*8?', reply: '56'}",
    )


@pytest.mark.parametrize("first", list(FAULT_THEN_GOOD), ids=list(FAULT_THEN_GOOD))
def test_the_reference_agent_exits_non_zero_on_a_fault_as_foreseen_and_the_retry_is_judged(run, first):
    """The reference agent does not retry in-process: the good turn after the fault is never requested."""
    result = run(parse(*fault_then_retry(FAULT_THEN_GOOD[first])), reference())
    assert result.error is None, result.error
    assert result.status == PASS and result.as_expected
    launch, failed, retry = result.steps
    assert (launch.exit_code, retry.exit_code) == (0, 0)
    assert failed.exit_code == 1 and failed.error is None
    assert any("scripted API error" in note for note in failed.notes), failed.notes
    assert failed.unused_turns == 1 and failed.classes == {MAIN: 1}
    journal = read_journal(Path(result.journal))
    assert [(e.step, e.klass) for e in journal] == [(1, MAIN), (2, MAIN), (3, MAIN)]
    faulted = journal[1]
    assert faulted.scripted_error and faulted.normalized is not None
    if first == "error-529":
        assert faulted.status == 529 and "Overloaded" in failed.stderr_tail
    else:
        assert faulted.reply["fault"].startswith(first) and faulted.error.startswith("scripted fault: ")
        assert failed.stderr_tail.strip()  # the agent said why it failed


def test_the_reference_agent_waits_out_a_slow_first_byte_and_the_slow_reply_is_history(run):
    sc = parse(*HEAD, "steps:", "  - launch: {prompt: 'What is 6*7?', reply: '42'}", "  - resume:",
               "      prompt: 'And 7*8?'", "      reply: [{fault: {kind: slow_first_byte, seconds: 0.5}, text: '56'}]",
               "  - resume: {prompt: 'And 8*9?', reply: '72'}")
    result = run(sc, reference())
    assert result.error is None and result.status == PASS, (result.error, [c.message for c in result.checks])
    assert [s.exit_code for s in result.steps] == [0, 0, 0]
    assert result.steps[1].duration_s >= 0.5
    journal = read_journal(Path(result.journal))
    assert journal[1].reply["fault"] == "slow_first_byte 0.5s"
    assert any(b.get("text") == "56" for m in journal[2].normalized["messages"] for b in m["content"])


def test_a_fault_never_answered_does_not_excuse_a_failure_of_the_agents_own(run):
    """The fault is scripted for the second request; the agent makes one, gets its reply, and exits 1."""
    sc = parse(*HEAD, "steps:", "  - launch: {prompt: 'What is 6*7?', reply: '42'}", "  - resume:",
               "      prompt: 'And 7*8?'", "      reply: ['56', {fault: {kind: reset}}]")
    result = run(sc, resolve_target(str(AGENTS / "fail-after-reply.yaml"))[0])
    assert result.status == ERROR
    assert result.error and result.error.startswith("step 2 (resume): the agent exited with code 1"), result.error


def test_the_library_scenario_is_the_uncaught_error_retry_with_a_529(run):
    sc = load_scenario(SCENARIO)
    assert [s.kind for s in sc.steps] == ["launch", "resume", "retry"]
    assert sc.steps[1].prompt == sc.steps[2].prompt
    assert sc.steps[1].error == ApiError(529, "overloaded_error", "Overloaded", 0)
    uncaught = load_scenario(UNCAUGHT)
    assert {t: v for t, v in sc.expect.items()} == {t: v for t, v in uncaught.expect.items() if t.startswith("reference")}
    result = run(sc, reference())
    assert result.error is None and result.status == PASS, result.error
    assert result.steps[1].exit_code == 1
    journal = read_journal(Path(result.journal))
    assert journal[1].status == 529 and journal[1].reply["error"]["retry_after"] == 0
