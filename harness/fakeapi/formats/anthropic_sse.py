"""The Anthropic Messages stream: the server-sent event sequence of one reply, and the one a fault breaks.

Apart from anthropic.py because the sequence is its own idea: which events a
reply consists of is what a scenario's `cut_stream.after_events` counts and
what the journal of a faulted stream names (harness/fakeapi/faults.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterator

TEXT_CHUNK = 24  # characters per text_delta, so clients must really accumulate
JSON_CHUNK = 16  # characters per input_json_delta


@dataclass
class RenderedReply:
    message: dict[str, Any]  # the complete message object, as the JSON reply would carry it

    @property
    def journal_view(self) -> dict[str, Any]:
        return {
            "content": self.message["content"],
            "stop_reason": self.message["stop_reason"],
            "usage": self.message["usage"],
        }


def render_sse(reply: RenderedReply) -> Iterator[bytes]:
    """The full streaming event sequence, one SSE event per yielded chunk."""
    message = reply.message
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    yield _event("message_start", {"type": "message_start", "message": start})
    yield _event("ping", {"type": "ping"})
    for index, block in enumerate(message["content"]):
        yield from _block_events(index, block)
    yield _event(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": usage,
        },
    )
    yield _event("message_stop", {"type": "message_stop"})


def event_name(event: bytes) -> str:
    """The `event:` field of one rendered event."""
    first = event.split(b"\n", 1)[0].decode()
    return first.removeprefix("event: ")


MALFORMED_EVENT = "content_block_delta"  # every block streams at least one


def render_sse_malformed(reply: RenderedReply) -> tuple[list[bytes], int]:
    """The full event sequence, except that the `data:` JSON of the first content_block_delta is cut in half.

    Returns the events and the 0-based position of the broken one. The event keeps its name and its
    blank-line terminator, so only a client that parses the data notices; the stream ends normally.
    """
    events = list(render_sse(reply))
    index = next(i for i, e in enumerate(events) if event_name(e) == MALFORMED_EVENT)
    head, data = events[index].decode().rstrip("\n").split("\ndata: ", 1)
    events[index] = f"{head}\ndata: {data[: len(data) // 2]}\n\n".encode()
    return events, index


def _block_events(index: int, block: dict[str, Any]) -> Iterator[bytes]:
    kind = block["type"]
    if kind == "text":
        yield _start(index, {"type": "text", "text": ""})
        for piece in _pieces(block["text"], TEXT_CHUNK):
            yield _delta(index, {"type": "text_delta", "text": piece})
    elif kind == "thinking":
        yield _start(index, {"type": "thinking", "thinking": "", "signature": ""})
        for piece in _pieces(block["thinking"], TEXT_CHUNK):
            yield _delta(index, {"type": "thinking_delta", "thinking": piece})
        yield _delta(index, {"type": "signature_delta", "signature": block["signature"]})
    elif kind == "tool_use":
        yield _start(index, {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}})
        yield _delta(index, {"type": "input_json_delta", "partial_json": ""})
        for piece in _pieces(json.dumps(block["input"]), JSON_CHUNK):
            yield _delta(index, {"type": "input_json_delta", "partial_json": piece})
    else:  # pragma: no cover - scripts only produce the three kinds above
        raise ValueError(f"cannot stream a {kind} block")
    yield _event("content_block_stop", {"type": "content_block_stop", "index": index})


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _start(index: int, block: dict[str, Any]) -> bytes:
    return _event("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return _event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
