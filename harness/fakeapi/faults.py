"""Transport faults: what the fake API does to one reply when a scenario turn says `fault: {kind: ...}`.

The core decides (and journals) the fault before a byte is sent; the server
carries out the part that happens on the socket (WireFault). Faults break the
streams of the formats that are BreakableStreams (formats/base.py), today
Anthropic's; the events named below are its. On the wire, per
kind, for a streamed request (`"stream": true`) and for a JSON one:

- cut_stream (after_events N)
    stream: 200, text/event-stream, chunked; the reply's first N events, one
            chunk each; then the connection is closed (FIN) with no
            terminating `0\\r\\n\\r\\n` chunk: a truncated chunked body.
    JSON:   200, application/json, content-length of the whole message; only
            its first half is sent, then the connection is closed.
- reset: no byte at all: the request is read, then the socket is closed with
    SO_LINGER 0, so the client gets a TCP RST instead of a status line.
- slow_first_byte (seconds S): the complete, normal reply, after S seconds in
    which nothing is sent (not even the status line); keep-alive as usual.
- malformed_sse
    stream: 200, text/event-stream; the reply's full event sequence, except
            that the `data:` JSON of the first content_block_delta is cut in
            half (so it is not JSON); the stream then ends normally
            (message_stop, terminating chunk) and the connection stays usable.
    JSON:   200, application/json; the body is the first half of the message
            JSON (content-length matches: the HTTP message is complete, the
            JSON is not).

The journal keeps the request as what it was (class main, normalized view)
and, in `reply`: `fault` (a one-line summary), `error` ({fault: kind,
message}: what the client saw; it makes Exchange.scripted_error true, so an
agent's non-zero exit after a fault is foreseen), and what was sent: the full
`content`/`stop_reason`/`usage` for slow_first_byte (the reply was
delivered); `intended` (the reply the fault broke) plus `events_sent` or
`bytes_sent`/`bytes_total` for cut_stream, `broken_event` for malformed_sse.
Replies that never arrived whole carry no top-level `content`, so the
history check expects the next turn to continue from the request, not from
a reply the agent never got.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.fakeapi.formats.base import BreakableStream, Reply
from harness.scenario.model import Fault

RESET_STATUS = 0  # journaled status of a reset: no status line was ever sent


@dataclass(frozen=True)
class WireFault:
    """What the server does on the socket besides writing the response it was given."""

    delay_s: float = 0.0  # nothing is sent for this long first (slow_first_byte)
    reset: bool = False  # no byte at all: RST (reset)
    cut_after_chunks: int | None = None  # streamed: send this many chunks, then close without the last chunk
    cut_after_bytes: int | None = None  # JSON: send this many body bytes of the announced length, then close


@dataclass
class FaultedReply:
    status: int
    headers: list[tuple[str, str]]
    body: bytes = b""
    chunks: list[bytes] | None = None
    wire: WireFault | None = None
    summary: str = ""  # one line: "cut_stream after 3 of 7 events"
    journal: dict[str, Any] | None = None  # the exchange's `reply`


_SSE = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]
_JSON = [("content-type", "application/json")]


def apply(fault: Fault, reply: Reply, stream: bool, wire_format: BreakableStream) -> FaultedReply:
    """The response (and its journal entry) for a main request whose scripted turn is ``fault``, in `wire_format`."""
    if fault.kind == "reset":
        faulted = FaultedReply(RESET_STATUS, [], wire=WireFault(reset=True), summary="reset")
        message = "connection reset (TCP RST) before any byte of a response"
        sent: dict[str, Any] = {}
    elif fault.kind == "slow_first_byte":
        faulted = _normal(reply, stream, wire_format)
        faulted.wire = WireFault(delay_s=float(fault.seconds or 0))
        faulted.summary = fault.describe()
        message = f"nothing sent for {fault.seconds:g}s, then the complete reply"
        sent = dict(reply.journal_view)
    elif fault.kind == "cut_stream":
        faulted = _normal(reply, stream, wire_format)
        if stream:
            events = faulted.chunks or []
            n = min(fault.after_events or 0, len(events))
            faulted.wire = WireFault(cut_after_chunks=n)
            faulted.summary = f"cut_stream after {n} of {len(events)} events"
            message = f"stream cut after {n} of {len(events)} events: connection closed without the terminating chunk"
            sent = {"intended": reply.journal_view, "events_sent": [wire_format.event_name(e) for e in events[:n]]}
        else:
            half = len(faulted.body) // 2
            faulted.wire = WireFault(cut_after_bytes=half)
            faulted.summary = f"cut_stream after {half} of {len(faulted.body)} body bytes (a JSON request has no events)"
            message = f"body cut after {half} of {len(faulted.body)} bytes announced: connection closed"
            sent = {"intended": reply.journal_view, "bytes_sent": half, "bytes_total": len(faulted.body)}
    elif fault.kind == "malformed_sse":
        if stream:
            events, index = wire_format.render_sse_malformed(reply)
            faulted = FaultedReply(200, list(_SSE), chunks=events)
            name = wire_format.event_name(events[index])
            faulted.summary = f"malformed_sse: event {index + 1} of {len(events)} ({name}) has data that is not JSON"
            message = f"the data of event {index + 1} ({name}) is cut in half: not JSON"
            sent = {"intended": reply.journal_view, "broken_event": {"position": index + 1, "event": name}}
        else:
            body = wire_format.render_json(reply)
            half = len(body) // 2
            faulted = FaultedReply(200, list(_JSON), body=body[:half])
            faulted.summary = f"malformed_sse: JSON body cut to {half} of {len(body)} bytes (a JSON request has no events)"
            message = f"the body is the first {half} of {len(body)} bytes of the message: not JSON"
            sent = {"intended": reply.journal_view, "bytes_sent": half, "bytes_total": len(body)}
    else:  # pragma: no cover - the scenario reader only produces FAULT_KINDS
        raise ValueError(f"unknown fault kind {fault.kind!r}")
    faulted.journal = {"fault": faulted.summary, "error": {"fault": fault.kind, "message": message}, **sent}
    return faulted


def _normal(reply: Reply, stream: bool, wire_format: BreakableStream) -> FaultedReply:
    if stream:
        return FaultedReply(200, list(_SSE), chunks=list(wire_format.render_sse(reply)))
    return FaultedReply(200, list(_JSON), body=wire_format.render_json(reply))
