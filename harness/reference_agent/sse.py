"""Server-sent events and the Anthropic streaming event sequence.

The harness's fake API is only as good as the clients it has been tested
against, so this is a real, incremental parser (WHATWG event-stream rules:
any line ending, comments, multi-line data, split chunks) feeding a strict
accumulator that rejects streams the official API would never send.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import ApiError, ProtocolError


@dataclass(frozen=True)
class SSEEvent:
    event: str
    data: str


class SSEDecoder:
    """Bytes in (any chunking), complete events out."""

    def __init__(self) -> None:
        self._buffer = b""
        self._event = ""
        self._data: list[str] = []
        self._started = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buffer += chunk
        events = []
        while True:
            line, rest = self._split_line(self._buffer)
            if line is None:
                break
            self._buffer = rest
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        return events

    def close(self) -> list[SSEEvent]:
        """At end of stream a lone trailing CR ends its line; an unfinished event is dropped."""
        events = []
        if self._buffer.endswith(b"\r"):
            events = self.feed(b"\n")
        self._buffer = b""
        self._event, self._data = "", []
        return events

    @staticmethod
    def _split_line(buffer: bytes) -> tuple[bytes | None, bytes]:
        cr, lf = buffer.find(b"\r"), buffer.find(b"\n")
        if cr == -1 and lf == -1:
            return None, buffer
        if cr == -1 or (lf != -1 and lf < cr):
            return buffer[:lf], buffer[lf + 1 :]
        if cr == len(buffer) - 1:
            return None, buffer  # CR at the end: wait to see whether LF follows
        end = cr + 2 if buffer[cr + 1 : cr + 2] == b"\n" else cr + 1
        return buffer[:cr], buffer[end:]

    def _process_line(self, raw: bytes) -> SSEEvent | None:
        line = raw.decode("utf-8", errors="replace")
        if not self._started:
            self._started = True
            line = line.removeprefix("\ufeff")
        if line == "":
            if not self._data:
                self._event = ""
                return None
            event = SSEEvent(self._event or "message", "\n".join(self._data))
            self._event, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None  # id, retry and unknown fields do not matter here


def parse_sse(data: bytes) -> list[SSEEvent]:
    decoder = SSEDecoder()
    return decoder.feed(data) + decoder.close()


class MessageAccumulator:
    """Rebuild the final Message from message_start ... message_stop."""

    def __init__(self) -> None:
        self.message: dict | None = None
        self.done = False
        self._blocks: dict[int, dict] = {}
        self._json_parts: dict[int, list[str]] = {}
        self._open: set[int] = set()

    def feed(self, event: SSEEvent) -> None:
        if event.event == "ping":
            return
        try:
            payload = json.loads(event.data)
        except json.JSONDecodeError as exc:
            raise ProtocolError(f"SSE {event.event!r} event data is not JSON: {exc}: {event.data!r}") from None
        kind = event.event if event.event != "message" else payload.get("type", "")
        if kind == "error" or payload.get("type") == "error":
            raise ApiError(f"API stream error event: {event.data}")
        handler = getattr(self, f"_on_{kind}", None)
        if handler is None:
            return  # event types added after this agent was written
        if kind != "message_start" and self.message is None:
            raise ProtocolError(f"{kind} before message_start")
        if self.done:
            raise ProtocolError(f"{kind} after message_stop")
        try:
            handler(payload)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ProtocolError(f"malformed {kind} event ({exc!r}): {event.data}") from None

    def _on_message_start(self, payload: dict) -> None:
        if self.message is not None:
            raise ProtocolError("second message_start in one stream")
        message = copy.deepcopy(payload["message"])
        for index, block in enumerate(message.get("content") or []):
            self._blocks[index] = block
        message["content"] = []
        message["usage"] = dict(message.get("usage") or {})
        self.message = message

    def _on_content_block_start(self, payload: dict) -> None:
        index = payload["index"]
        if index in self._blocks:
            raise ProtocolError(f"content_block_start for index {index} twice")
        self._blocks[index] = copy.deepcopy(payload["content_block"])
        self._open.add(index)
        if self._blocks[index].get("type") == "tool_use":
            self._json_parts[index] = []

    def _on_content_block_delta(self, payload: dict) -> None:
        index = payload["index"]
        if index not in self._open:
            raise ProtocolError(f"content_block_delta for index {index} that is not open")
        block, delta = self._blocks[index], payload["delta"]
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta["text"]
        elif kind == "input_json_delta":
            if index not in self._json_parts:
                raise ProtocolError(f"input_json_delta for non-tool_use block {index}")
            self._json_parts[index].append(delta["partial_json"])
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta":
            block["signature"] = (block.get("signature") or "") + delta["signature"]

    def _on_content_block_stop(self, payload: dict) -> None:
        index = payload["index"]
        if index not in self._open:
            raise ProtocolError(f"content_block_stop for index {index} that is not open")
        self._open.discard(index)
        parts = self._json_parts.pop(index, None)
        if parts:
            raw = "".join(parts)
            try:
                self._blocks[index]["input"] = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ProtocolError(f"tool_use input is not JSON: {exc}: {raw!r}") from None

    def _on_message_delta(self, payload: dict) -> None:
        delta = payload.get("delta") or {}
        for key in ("stop_reason", "stop_sequence"):
            if key in delta:
                self.message[key] = delta[key]
        usage = payload.get("usage") or {}
        self.message["usage"].update({k: v for k, v in usage.items() if v is not None})

    def _on_message_stop(self, payload: dict) -> None:
        if self._open:
            raise ProtocolError(f"message_stop with blocks still open: {sorted(self._open)}")
        self.done = True

    def result(self) -> dict:
        if self.message is None:
            raise ProtocolError("stream ended without message_start")
        if not self.done:
            raise ProtocolError("stream ended before message_stop")
        indices = sorted(self._blocks)
        if indices != list(range(len(indices))):
            raise ProtocolError(f"content block indices are not contiguous: {indices}")
        message = dict(self.message)
        message["content"] = [self._blocks[i] for i in indices]
        return message


def accumulate(events: Iterable[SSEEvent]) -> dict:
    acc = MessageAccumulator()
    for event in events:
        acc.feed(event)
    return acc.result()


def message_from_sse(data: bytes) -> dict:
    return accumulate(parse_sse(data))
