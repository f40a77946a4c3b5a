"""The fake model's lines in a scenario: `reply` turns, content blocks, tool calls, usage.

Validated like the rest of a scenario file (file, line, key path in every
error); kept apart because it is the one part that mirrors the wire format.
"""

from __future__ import annotations

import math
from typing import Any

from harness.scenario import STOP_REASONS, ApiError, Block, TextBlock, ThinkingBlock, ToolUseBlock, Turn, Usage
from harness.validation import Reader, quote_hint
from harness.yamlsource import LocatedDict, LocatedList, child_path, describe, item_path, unknown_key_error

_TURN_KEYS = ("text", "thinking", "tool_use", "content", "usage", "stop_reason", "error")
_ERROR_KEYS = ("status", "type", "message")
_BLOCK_KEYS = ("text", "thinking", "tool_use")
_TOOL_USE_KEYS = ("name", "input", "id")
# The provider's own error type for each status, so an agent's error handling sees what it would in the field.
_DEFAULT_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


class ReplyReader(Reader):
    def usage(self, value: Any, line: int | None, where: str) -> Usage:
        m = self.mapping(value, line, where, f"a mapping of token counts ({', '.join(_USAGE_KEYS)})")
        self.known_keys(m, _USAGE_KEYS, where)
        counts = {}
        for key, count in m.items():
            key_where = child_path(where, key)
            if isinstance(count, bool) or not isinstance(count, int):
                raise self.error(f"expected a non-negative integer, got {describe(count)}", m.key_line(key), key_where)
            if count < 0:
                raise self.error(f"expected a non-negative integer, got {count}", m.key_line(key), key_where)
            counts[key] = int(count)
        return Usage(**counts)

    # ------------------------------------------------------------------ replies

    def reply(self, value: Any, line: int | None, where: str) -> tuple[Turn, ...]:
        if isinstance(value, str):
            return (Turn(blocks=(TextBlock(value),)),)
        if not isinstance(value, LocatedList):
            raise self.error(
                f"expected a string or a non-empty list of turns, got {describe(value)}{quote_hint(value)}",
                line,
                where,
            )
        if not value:
            raise self.error("expected a string or a non-empty list of turns, got an empty list", line, where)
        return tuple(self.turn(value[i], value.item_line(i), item_path(where, i)) for i in range(len(value)))

    def turn(self, value: Any, line: int | None, where: str) -> Turn:
        if isinstance(value, str):
            return Turn(blocks=(TextBlock(value),))
        if not isinstance(value, LocatedDict):
            raise self.error(
                "expected a turn: a string or a mapping with keys among "
                f"{', '.join(_TURN_KEYS)}; got {describe(value)}{quote_hint(value)}",
                line,
                where,
            )
        m = value
        self.known_keys(m, _TURN_KEYS, where)
        if "error" in m:
            return self.error_turn(m, where)
        blocks: list[Block] = []
        if "content" in m:
            mixed = [k for k in ("text", "thinking", "tool_use") if k in m]
            if mixed:
                raise self.error(
                    f"'content' cannot be combined with {', '.join(repr(k) for k in mixed)}: "
                    "put every block in 'content', or use the shorthand keys without 'content'",
                    m.key_line("content"),
                    where,
                )
            content_where = child_path(where, "content")
            content = m["content"]
            if not isinstance(content, LocatedList):
                raise self.error(f"expected a list of content blocks, got {describe(content)}", m.key_line("content"), content_where)
            for i in range(len(content)):
                blocks.append(self.block(content[i], content.item_line(i), item_path(content_where, i)))
        else:
            if "thinking" in m:
                blocks.append(self.thinking(m["thinking"], m.key_line("thinking"), child_path(where, "thinking")))
            if "text" in m:
                blocks.append(TextBlock(self.string(m["text"], m.key_line("text"), child_path(where, "text"))))
            if "tool_use" in m:
                blocks.append(self.tool_use(m["tool_use"], m.key_line("tool_use"), child_path(where, "tool_use")))
        if not blocks:
            at = m.key_line("content") if "content" in m else m.line
            raise self.error(
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
            stop_reason = self.string(m["stop_reason"], m.key_line("stop_reason"), sr_where)
            if stop_reason not in STOP_REASONS:
                raise self.error(
                    f"expected one of {', '.join(STOP_REASONS)}, got {stop_reason!r}", m.key_line("stop_reason"), sr_where
                )
        return Turn(blocks=tuple(blocks), usage=usage, stop_reason=stop_reason)

    def error_turn(self, m: LocatedDict, where: str) -> Turn:
        """A turn `error: {status, type, message}`: the fake API answers this one request with an HTTP error."""
        others = [k for k in m if k != "error"]
        if others:
            raise self.error(
                f"'error' cannot be combined with {', '.join(repr(k) for k in others)}: an error reply has no content",
                m.key_line(others[0]),
                where,
            )
        return Turn(blocks=(), error=self.api_error(m["error"], m.key_line("error"), child_path(where, "error")))

    def api_error(self, value: Any, line: int | None, where: str) -> ApiError:
        e = self.mapping(value, line, where, f"a mapping with {', '.join(_ERROR_KEYS)}")
        self.known_keys(e, _ERROR_KEYS, where)
        status = self.require(e, "status", where)
        status_where = child_path(where, "status")
        if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
            raise self.error(f"expected an HTTP error status (400-599), got {describe(status)}", e.key_line("status"), status_where)
        kind = self.optional_string(e, "type", where, non_empty=True) or _DEFAULT_ERROR_TYPES.get(status, "api_error")
        message = self.optional_string(e, "message", where, non_empty=True) or f"scripted error {status} from the harness"
        return ApiError(int(status), kind, message)

    def block(self, value: Any, line: int | None, where: str) -> Block:
        expected = "a content block: a mapping with one key, text, thinking or tool_use"
        if isinstance(value, str):
            raise self.error(f"expected {expected}; got {describe(value)} (write 'text: ...')", line, where)
        m = self.mapping(value, line, where, expected)
        if len(m) != 1:
            got = "an empty mapping" if not m else "keys " + ", ".join(repr(k) for k in m)
            raise self.error(f"expected {expected}; got {got}", line, where)
        (key,) = m
        if key not in _BLOCK_KEYS:
            raise unknown_key_error(key, _BLOCK_KEYS, self.path, m.key_line(key), where)
        key_where = child_path(where, key)
        if key == "text":
            return TextBlock(self.string(m[key], m.key_line(key), key_where))
        if key == "thinking":
            return self.thinking(m[key], m.key_line(key), key_where)
        return self.tool_use(m[key], m.key_line(key), key_where)

    def thinking(self, value: Any, line: int | None, where: str) -> ThinkingBlock:
        return ThinkingBlock(thinking=self.string(value, line, where), signature=None)

    def tool_use(self, value: Any, line: int | None, where: str) -> ToolUseBlock:
        m = self.mapping(value, line, where, "a mapping with 'name' and optionally 'input' and 'id'")
        self.known_keys(m, _TOOL_USE_KEYS, where)
        name = self.string(self.require(m, "name", where), m.key_line("name"), child_path(where, "name"), non_empty=True)
        tool_input: dict = {}
        if "input" in m:
            input_where = child_path(where, "input")
            raw = m["input"]
            if not isinstance(raw, LocatedDict):
                raise self.error(f"expected a mapping of tool arguments, got {describe(raw)}", m.key_line("input"), input_where)
            tool_input = self.json_value(raw, m.key_line("input"), input_where, set())
        tool_id = self.optional_string(m, "id", where, non_empty=True)
        return ToolUseBlock(name=name, input=tool_input, id=tool_id)

    def json_value(self, value: Any, line: int | None, where: str, active: set[int]) -> Any:
        """A plain copy of ``value``, which must be JSON data (the wire format)."""
        if value is None or isinstance(value, (str, bool)):
            return value
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.error(f"expected a finite number (JSON has no {value}), got {value}", line, where)
            return value
        if isinstance(value, (dict, list)):
            if id(value) in active:
                raise self.error("a value contains itself (recursive YAML alias)", line, where)
            active.add(id(value))
            try:
                if isinstance(value, dict):
                    out = {}
                    for key, item in value.items():
                        key_line = value.key_line(key) if isinstance(value, LocatedDict) else line
                        if not isinstance(key, str):
                            raise self.error(
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
        raise self.error(
            f"expected JSON data (string, number, boolean, null, list or mapping), got {describe(value)}{quote_hint(value)}",
            line,
            where,
        )
