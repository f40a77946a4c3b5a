"""The fake model's lines in a scenario: `reply` turns, content blocks, tool calls, usage.

Validated like the rest of a scenario file (file, line, key path in every
error); kept apart because it is the one part that mirrors the wire format.
A turn that fails instead of answering is read by harness/scenario/failures.py.
"""

from __future__ import annotations

import math
from typing import Any

from harness.documents.located import LocatedDict, LocatedList, child_path, describe, item_path, unknown_key_error
from harness.documents.reader import Reader, quote_hint
from harness.scenario import installed_rules
from harness.scenario.failures import FailureReader
from harness.scenario.model import (
    DEFAULT_REPLY,
    STOP_REASONS,
    Block,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Turn,
    Usage,
)

_CONTENT_KEYS = ("text", "thinking", "tool_use", "content", "usage", "stop_reason")
_TURN_KEYS = (*_CONTENT_KEYS, "error", "fault")
_BLOCK_KEYS = ("text", "thinking", "tool_use")
_TOOL_USE_KEYS = ("name", "input", "id")
_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


class ReplyReader:
    """Reads `reply:` values and `usage:` mappings; errors name ``file``'s path."""

    def __init__(self, file: Reader, failures: FailureReader):
        self.file = file
        self.failures = failures

    def usage(self, value: Any, line: int | None, where: str) -> Usage:
        m = self.file.mapping(value, line, where, f"a mapping of token counts ({', '.join(_USAGE_KEYS)})")
        self.file.known_keys(m, _USAGE_KEYS, where)
        counts = {}
        for key, count in m.items():
            key_where = child_path(where, key)
            if isinstance(count, bool) or not isinstance(count, int):
                raise self.file.error(f"expected a non-negative integer, got {describe(count)}", m.key_line(key), key_where)
            if count < 0:
                raise self.file.error(f"expected a non-negative integer, got {count}", m.key_line(key), key_where)
            counts[key] = int(count)
        return Usage(**counts)

    def reply(self, value: Any, line: int | None, where: str) -> tuple[Turn, ...]:
        if isinstance(value, str):
            return (Turn(blocks=(TextBlock(value),)),)
        if not isinstance(value, LocatedList):
            raise self.file.error(
                f"expected a string or a non-empty list of turns, got {describe(value)}{quote_hint(value)}",
                line,
                where,
            )
        if not value:
            raise self.file.error("expected a string or a non-empty list of turns, got an empty list", line, where)
        return tuple(self.turn(value[i], value.item_line(i), item_path(where, i)) for i in range(len(value)))

    def turn(self, value: Any, line: int | None, where: str) -> Turn:
        if isinstance(value, str):
            return Turn(blocks=(TextBlock(value),))
        if not isinstance(value, LocatedDict):
            raise self.file.error(
                "expected a turn: a string or a mapping with keys among "
                f"{', '.join(_TURN_KEYS)}; got {describe(value)}{quote_hint(value)}",
                line,
                where,
            )
        m = value
        self.file.known_keys(m, _TURN_KEYS, where)
        if "error" in m and "fault" in m:
            raise self.file.error(
                "a turn has 'error' (an HTTP error reply) or 'fault' (a broken transport), not both",
                m.key_line("fault"),
                where,
            )
        if "error" in m:
            return self.error_turn(m, where)
        if "fault" in m:
            return self.fault_turn(m, where)
        blocks, usage, stop_reason = self.content(m, where)
        return Turn(blocks=blocks, usage=usage, stop_reason=stop_reason)

    def content(self, m: LocatedDict, where: str) -> tuple[tuple[Block, ...], Usage | None, str | None]:
        """The blocks, usage and stop reason of a turn mapping; at least one block."""
        blocks: list[Block] = []
        if "content" in m:
            mixed = [k for k in ("text", "thinking", "tool_use") if k in m]
            if mixed:
                raise self.file.error(
                    f"'content' cannot be combined with {', '.join(repr(k) for k in mixed)}: "
                    "put every block in 'content', or use the shorthand keys without 'content'",
                    m.key_line("content"),
                    where,
                )
            content_where = child_path(where, "content")
            content = m["content"]
            if not isinstance(content, LocatedList):
                raise self.file.error(f"expected a list of content blocks, got {describe(content)}", m.key_line("content"), content_where)
            for i in range(len(content)):
                blocks.append(self.block(content[i], content.item_line(i), item_path(content_where, i)))
        else:
            if "thinking" in m:
                blocks.append(self.thinking(m["thinking"], m.key_line("thinking"), child_path(where, "thinking")))
            if "text" in m:
                blocks.append(TextBlock(self.file.string(m["text"], m.key_line("text"), child_path(where, "text"))))
            if "tool_use" in m:
                blocks.append(self.tool_use(m["tool_use"], m.key_line("tool_use"), child_path(where, "tool_use")))
        if not blocks:
            at = m.key_line("content") if "content" in m else m.line
            raise self.file.error(
                "a turn needs at least one block: give text, thinking or tool_use, or a non-empty content list",
                at,
                where,
            )
        usage = None
        if "usage" in m:
            usage = self.usage(m["usage"], m.key_line("usage"), child_path(where, "usage"))
        stop_reason = None
        if "stop_reason" in m:
            sr_where = child_path(where, "stop_reason")
            stop_reason = self.file.string(m["stop_reason"], m.key_line("stop_reason"), sr_where)
            if stop_reason not in STOP_REASONS:
                raise self.file.error(
                    f"expected one of {', '.join(STOP_REASONS)}, got {stop_reason!r}", m.key_line("stop_reason"), sr_where
                )
        return tuple(blocks), usage, stop_reason

    def fault_turn(self, m: LocatedDict, where: str) -> Turn:
        """A turn `fault: {kind, ...}`, with the content the faulted reply carries (reset: none).

        cut_stream and malformed_sse default to the fake API's default text; slow_first_byte delivers a
        complete reply, so the scenario must say what it is; a reset sends nothing, so it takes no content.
        """
        fault_where = child_path(where, "fault")
        fault = self.failures.fault(m["fault"], m.key_line("fault"), fault_where)
        given = [k for k in m if k != "fault"]
        if fault.kind == "reset":
            if given:
                raise self.file.error(
                    f"a reset fault sends no byte of a reply: {', '.join(repr(k) for k in given)} would never be sent",
                    m.key_line(given[0]),
                    where,
                )
            return Turn(blocks=(), fault=fault)
        if not given:
            if fault.kind == "slow_first_byte":
                raise self.file.error(
                    "a slow_first_byte fault delivers a complete reply after its delay: give it text, thinking, "
                    "tool_use or content beside 'fault'",
                    m.line,
                    where,
                )
            blocks: tuple[Block, ...] = (TextBlock(DEFAULT_REPLY),)
            usage, stop_reason = None, None
        else:
            blocks, usage, stop_reason = self.content(m, where)
        if fault.kind == "cut_stream":
            events = installed_rules.streamed_event_names(blocks)
            if fault.after_events > len(events):
                raise self.file.error(
                    f"expected at most {len(events)}: this turn streams {len(events)} events "
                    f"({', '.join(events)}), got {fault.after_events}",
                    m["fault"].key_line("after_events"),
                    child_path(fault_where, "after_events"),
                )
        return Turn(blocks=blocks, usage=usage, stop_reason=stop_reason, fault=fault)

    def error_turn(self, m: LocatedDict, where: str) -> Turn:
        """A turn `error: {status, type, message, retry_after}`: the fake API answers this one request with an HTTP error."""
        others = [k for k in m if k != "error"]
        if others:
            raise self.file.error(
                f"'error' cannot be combined with {', '.join(repr(k) for k in others)}: an error reply has no content",
                m.key_line(others[0]),
                where,
            )
        return Turn(blocks=(), error=self.failures.api_error(m["error"], m.key_line("error"), child_path(where, "error")))

    def block(self, value: Any, line: int | None, where: str) -> Block:
        expected = "a content block: a mapping with one key, text, thinking or tool_use"
        if isinstance(value, str):
            raise self.file.error(f"expected {expected}; got {describe(value)} (write 'text: ...')", line, where)
        m = self.file.mapping(value, line, where, expected)
        if len(m) != 1:
            got = "an empty mapping" if not m else "keys " + ", ".join(repr(k) for k in m)
            raise self.file.error(f"expected {expected}; got {got}", line, where)
        (key,) = m
        if key not in _BLOCK_KEYS:
            raise unknown_key_error(key, _BLOCK_KEYS, self.file.path, m.key_line(key), where)
        key_where = child_path(where, key)
        if key == "text":
            return TextBlock(self.file.string(m[key], m.key_line(key), key_where))
        if key == "thinking":
            return self.thinking(m[key], m.key_line(key), key_where)
        return self.tool_use(m[key], m.key_line(key), key_where)

    def thinking(self, value: Any, line: int | None, where: str) -> ThinkingBlock:
        return ThinkingBlock(thinking=self.file.string(value, line, where), signature=None)

    def tool_use(self, value: Any, line: int | None, where: str) -> ToolUseBlock:
        m = self.file.mapping(value, line, where, "a mapping with 'name' and optionally 'input' and 'id'")
        self.file.known_keys(m, _TOOL_USE_KEYS, where)
        name = self.file.string(self.file.require(m, "name", where), m.key_line("name"), child_path(where, "name"), non_empty=True)
        tool_input: dict = {}
        if "input" in m:
            input_where = child_path(where, "input")
            raw = m["input"]
            if not isinstance(raw, LocatedDict):
                raise self.file.error(f"expected a mapping of tool arguments, got {describe(raw)}", m.key_line("input"), input_where)
            tool_input = self.json_value(raw, m.key_line("input"), input_where, set())
        tool_id = self.file.optional_string(m, "id", where, non_empty=True)
        return ToolUseBlock(name=name, input=tool_input, id=tool_id)

    def json_value(self, value: Any, line: int | None, where: str, active: set[int]) -> Any:
        """A plain copy of ``value``, which must be JSON data (the wire format)."""
        if value is None or isinstance(value, (str, bool)):
            return value
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.file.error(f"expected a finite number (JSON has no {value}), got {value}", line, where)
            return value
        if isinstance(value, (dict, list)):
            if id(value) in active:
                raise self.file.error("a value contains itself (recursive YAML alias)", line, where)
            active.add(id(value))
            try:
                if isinstance(value, dict):
                    out = {}
                    for key, item in value.items():
                        key_line = value.key_line(key) if isinstance(value, LocatedDict) else line
                        if not isinstance(key, str):
                            raise self.file.error(
                                f"JSON object keys must be strings, got {describe(key)}{quote_hint(key)}", key_line, where
                            )
                        out[key] = self.json_value(item, key_line, child_path(where, key), active)
                    return out
                out_list = []
                for i, item in enumerate(value):
                    item_line = value.item_line(i) if isinstance(value, LocatedList) else line
                    out_list.append(self.json_value(item, item_line, item_path(where, i), active))
                return out_list
            finally:
                active.discard(id(value))
        raise self.file.error(
            f"expected JSON data (string, number, boolean, null, list or mapping), got {describe(value)}{quote_hint(value)}",
            line,
            where,
        )
