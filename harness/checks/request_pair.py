"""A failing verdict's requests as a reviewer compares them, computed by the checks' own rules.

The HTML report shows the run's first main request beside the request a
failing check points at. Every span, count and offset it marks comes from
here, through the functions the checks judge with (prefix_blocks, the block
separator, count_in_instructions, identity_match,
first_difference), so the page can only ever show what the verdict saw.
"""

from __future__ import annotations

from dataclasses import replace

from harness.checks.appended import count_in_instructions
from harness.checks.context import CheckContext
from harness.checks.evidence import first_difference, where
from harness.checks.identity import identity_match
from harness.checks.prefix import BLOCK_SEPARATOR, breakpoint_index, prefix_blocks, system_prefix, tools_bytes
from harness.journal.conversation import message_text
from harness.journal.exchange import Exchange
from harness.results import (
    APPENDED, IDENTITY, CheckResult, Difference, Mark, OutsideBlock, RequestPair, ShownRequest, ShownText,
)


def request_pair(context: CheckContext, result: CheckResult) -> RequestPair:
    """The first main request of the judged journal against the one `result` points at."""
    mains = context.main_requests
    first = mains[0] if mains else None
    pointed = next((e for e in context.exchanges if e.seq == result.request), None) if result.request is not None else None
    if first is None or pointed is None:
        missing = "no main request in the journal" if first is None else (
            "the check points at no request" if result.request is None
            else f"request #{result.request} is not in the journal")
        return RequestPair(missing=missing)
    pair = RequestPair(_shown(first, context), _shown(pointed, context))
    prefix_diff = first_difference(system_prefix(first), system_prefix(pointed))
    if prefix_diff is not None:
        return replace(pair, prefix_difference=_difference(prefix_diff))
    left, right = tools_bytes(first), tools_bytes(pointed)
    tools_diff = first_difference(left, right)
    if tools_diff is None:
        return pair
    return replace(pair, tools=(left.decode("utf-8", "surrogatepass"), right.decode("utf-8", "surrogatepass")),
                 tools_difference=_difference(tools_diff))


def _difference(diff) -> Difference:
    return Difference(diff.offset, diff.expected_length, diff.observed_length)


def _shown(exchange: Exchange, context: CheckContext) -> ShownRequest:
    normalized = exchange.normalized or {}
    blocks = normalized.get("system", [])
    kept = prefix_blocks(exchange)
    starts, position = {}, 0
    for index, text in kept:
        starts[index] = position - blocks[index].get("cache_key_from", 0)  # marks count from the block's first byte
        position += len(text) + len(BLOCK_SEPARATOR)
    prefix_text = BLOCK_SEPARATOR.join(text for _, text in kept)
    last = breakpoint_index(exchange)
    prefix_marks: list[Mark] = []
    outside_marks: dict[int, list[Mark]] = {i: [] for i in range(len(blocks)) if i not in starts}

    def marks_of(index: int) -> tuple[int, list[Mark]]:
        """Where a block's marks go: (the block's offset in that text, the list)."""
        return (starts[index], prefix_marks) if index in starts else (0, outside_marks[index])

    identity = None
    found = identity_match(exchange, context)  # the line identity_stable compares
    if found is not None:
        index, match = found
        identity = match.group(0)
        base, marks = marks_of(index)
        marks.append(Mark(base + match.start(), base + match.end(), IDENTITY))
    messages = [message_text(m) for m in normalized.get("messages", []) if m.get("role") == "system"]
    message_marks: list[list[Mark]] = [[] for _ in messages]
    text = (context.append_at(exchange.step) or "").strip()
    appended, in_prefix = None, 0
    if text:  # every occurrence, as appended_exactly_once counts them
        appended = count_in_instructions(exchange, text)
        for index, block in enumerate(blocks):
            base, marks = marks_of(index)
            for start, end in _occurrences(block["text"], text):
                marks.append(Mark(base + start, base + end, APPENDED))
                in_prefix += index in starts
        for i, message in enumerate(messages):
            message_marks[i].extend(Mark(start, end, APPENDED) for start, end in _occurrences(message, text))
    outside = tuple(
        OutsideBlock(index, "metadata, outside the cache key" if not block.get("cache_key", True)
                     else f"after the last cache breakpoint (block {last})",
                     ShownText(block["text"], tuple(outside_marks[index])))
        for index, block in enumerate(blocks) if index not in starts)
    return ShownRequest(
        exchange.seq, where(exchange), ShownText(prefix_text, tuple(prefix_marks)), tuple(starts), outside,
        tuple(ShownText(m, tuple(marks)) for m, marks in zip(messages, message_marks)), identity, appended, in_prefix,
    )


def _occurrences(text: str, needle: str) -> list[tuple[int, int]]:
    """Non-overlapping occurrences, left to right: the ones str.count counts."""
    found, start = [], 0
    while (index := text.find(needle, start)) >= 0:
        found.append((index, index + len(needle)))
        start = index + len(needle)
    return found
