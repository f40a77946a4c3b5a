"""The side-by-side view of a failing check: the run's first main request against the one the check points at.

Both panels show the cacheable system prefix exactly as prefix_stable compares
it (prefix_blocks joined by the block separator, so offsets are the check's
offsets), the first differing byte marked on both sides, the identity line the
target's pattern finds (block by block, as identity_stable reads it) and every
occurrence of the scenario's appended text (counted per block, as
appended_exactly_once counts it). System text outside the cache prefix (after
the last breakpoint, or metadata blocks) is shown below it, marked the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.checks.appended import count_in_instructions
from harness.checks.context import main_requests
from harness.checks.evidence import ByteDifference, first_difference
from harness.checks.prefix import (
    BLOCK_SEPARATOR,
    breakpoint_index,
    prefix_blocks,
    tools_bytes,
)
from harness.journal.conversation import message_text
from harness.journal.exchange import Exchange
from harness.report.html_text import (
    Span,
    attr,
    char_index_of_byte,
    clip_spans,
    describe_char,
    esc,
    find_all,
    marked,
    utf8,
)
from harness.results import CheckResult
from harness.scenario.model import Scenario
from harness.targets.base import Target

WINDOW = 300  # characters of context either side of the first difference
LONG = 2 * WINDOW + 200  # texts longer than this are shown as a window, the full text folded below


def first_main(exchanges: list[Exchange]) -> Exchange | None:
    """The run's first main request, as the checks see it (class main, answered 200, parsed)."""
    return next(iter(main_requests(exchanges)), None)


def where(exchange: Exchange) -> str:
    step = f"step {exchange.step} ({exchange.step_kind})" if exchange.step is not None else "outside any step"
    return f"{step}, request #{exchange.seq}"


@dataclass
class _Request:
    """One request's system text, split as the prefix check splits it, with the spans to mark."""

    exchange: Exchange
    prefix: str  # the kept blocks joined: the cache prefix, as text
    kept: list[tuple[int, str, int]]  # (block index, text, char start in prefix)
    outside: list[tuple[int, str, str]]  # (block index, text, why it is outside the prefix)
    system_messages: list[str]
    prefix_spans: list[Span]
    outside_spans: dict[int, list[Span]]
    message_spans: list[list[Span]]
    identity: str | None
    appended: int | None  # count_in_instructions, or None when the scenario appends nothing
    appended_in_prefix: int


def _request(exchange: Exchange, target: Target, append: str | None) -> _Request:
    normalized = exchange.normalized or {}
    blocks = normalized.get("system", [])
    kept_blocks = prefix_blocks(exchange)
    kept, position = [], 0
    for index, text in kept_blocks:
        kept.append((index, text, position))
        position += len(text) + len(BLOCK_SEPARATOR)
    prefix = BLOCK_SEPARATOR.join(text for _, text in kept_blocks)
    kept_index = {index for index, _ in kept_blocks}
    last = breakpoint_index(exchange)
    outside = []
    for index, block in enumerate(blocks):
        if index in kept_index:
            continue
        why = ("metadata, outside the cache key" if not block.get("cache_key", True)
               else f"after the last cache breakpoint (block {last})")
        outside.append((index, block["text"], why))
    system_messages = [message_text(m) for m in normalized.get("messages", []) if m.get("role") == "system"]
    request = _Request(exchange, prefix, kept, outside, system_messages, [], {i: [] for i, _, _ in outside},
                       [[] for _ in system_messages], None, None, 0)
    # identity: the first match, block by block, as identity_of reads it
    for index, block in enumerate(blocks):
        match = target.identity_pattern.search(block["text"])
        if match:
            request.identity = match.group(0)
            span = (match.start(), match.end())
            request_spans = _block_spans(request, index)
            if request_spans is not None:
                base, spans = request_spans
                spans.append(Span(base + span[0], base + span[1], "identity", order=0))
            break
    # appended text: every occurrence, block by block, as appended_exactly_once counts it
    text = (append or "").strip()
    if text:
        request.appended = count_in_instructions(exchange, text)
        for index, block in enumerate(blocks):
            base, spans = _block_spans(request, index) or (0, [])
            for s, e in find_all(block["text"], text):
                spans.append(Span(base + s, base + e, "appended", order=1))
                request.appended_in_prefix += index in kept_index
        for i, message in enumerate(system_messages):
            request.message_spans[i].extend(Span(s, e, "appended", order=1) for s, e in find_all(message, text))
    return request


def _block_spans(request: _Request, index: int) -> tuple[int, list[Span]] | None:
    """Where a system block's spans go: (offset of the block in that text, the span list)."""
    for block_index, _, start in request.kept:
        if block_index == index:
            return start, request.prefix_spans
    if index in request.outside_spans:
        return 0, request.outside_spans[index]
    return None


def _diff_span(text: str, offset: int) -> Span:
    """The first differing byte's character (or the end of the text), as a <mark class="first-diff">."""
    index = char_index_of_byte(text, offset)
    attrs = [("data-offset", str(offset)), ("title", f"first differing byte, offset {offset}: {describe_char(text, index)}")]
    if index >= len(text):
        return Span(index, index, "first-diff at-end", tuple(attrs + [("data-end", "true")]), order=9)
    char = text[index]
    kind = {"\n": " nl", "\t": " tab", " ": " sp"}.get(char, "")
    attrs.append(("data-char", f"U+{ord(char):04X}"))
    return Span(index, index + 1, "first-diff" + kind, tuple(attrs), order=9)


def _bytes_block(text: str, spans: list[Span], focus: int | None, part: str, label: str) -> str:
    """The text with its marks; a long one as a window around `focus`, the full text folded in <details>."""
    size = len(utf8(text))
    full = f'<div class="bytes" data-part="{attr(part)}" data-start-byte="0">{marked(text, spans)}</div>'
    if len(text) <= LONG:
        return full
    centre = focus if focus is not None else 0
    start, end = max(0, centre - WINDOW), min(len(text), centre + WINDOW + 1)
    start_byte, end_byte = len(utf8(text[:start])), len(utf8(text[:end]))
    cut = (" cut-start" if start > 0 else "") + (" cut-end" if end < len(text) else "")
    window = (f'<p class="window-note">bytes {start_byte}–{end_byte} of {size} shown; the full {esc(label)} is below</p>'
              f'<div class="bytes window{cut}" data-part="{attr(part)}" data-start-byte="{start_byte}">'
              f"{marked(text[start:end], clip_spans(spans, start, end))}</div>")
    return window + f"<details><summary>full {esc(label)} ({size} bytes)</summary>{full}</details>"


def _panel(request: _Request, role: str, title: str, tools: tuple[str, list[Span], int | None] | None,
           focus: int | None) -> str:
    exchange = request.exchange
    count = request.appended
    if count is None:
        appended = "appended text: none in this scenario"
    else:
        appended = f"appended text: {count} occurrence{'' if count == 1 else 's'}"
        if count:
            appended += f" ({request.appended_in_prefix} in the cache prefix)"
    identity = esc(repr(request.identity)) if request.identity is not None else "none found"
    blocks = ", ".join(str(i) for i, _, _ in request.kept) or "none"
    if focus is None:
        firsts = [s.start for s in request.prefix_spans if s.cls in ("appended", "identity")]
        focus = min(firsts) if firsts else None
    parts = [
        f'<div class="side {role}" data-role="{"first" if role == "left" else "pointed"}" data-request="{exchange.seq}">',
        f"<h5>{esc(title)}: {esc(where(exchange))}</h5>",
        f'<p class="identity-line">identity: {identity}</p>',
        f'<p class="appended-count" data-count="{"" if count is None else count}">{esc(appended)}</p>',
        f'<p class="prefix-note">cache prefix: {len(utf8(request.prefix))} bytes (system blocks {blocks})</p>',
        _bytes_block(request.prefix, request.prefix_spans, focus, "system-prefix", "cache prefix"),
    ]
    if tools is not None:
        text, spans, tools_focus = tools
        parts.append('<p class="prefix-note">tool definitions (canonical JSON, as prefix_stable compares them)</p>')
        parts.append(_bytes_block(text, spans, tools_focus, "tools", "tool definitions"))
    for index, text, why in request.outside:
        parts.append(f'<p class="outside-note">system block {index}: {esc(why)}</p>')
        parts.append(_bytes_block(text, request.outside_spans[index], None, f"system-block-{index}", f"system block {index}"))
    for i, text in enumerate(request.system_messages):
        parts.append(f'<p class="outside-note">system-role message {i + 1}</p>')
        parts.append(_bytes_block(text, request.message_spans[i], None, f"system-message-{i + 1}", "system message"))
    parts.append("</div>")
    return "".join(parts)


def _difference_line(diff: ByteDifference | None, left: str, right: str, what: str) -> str:
    if diff is None:
        return f"{what}: byte-identical in both requests ({len(utf8(left))} bytes)"
    return (f"{what}: first differing byte at offset {diff.offset}: "
            f"{describe_char(left, char_index_of_byte(left, diff.offset))} vs "
            f"{describe_char(right, char_index_of_byte(right, diff.offset))}; "
            f"lengths {diff.expected_length} vs {diff.observed_length} bytes")


def diff_view(scenario: Scenario, side: str, target: Target, exchanges: list[Exchange], result: CheckResult,
              anchor: str) -> str:
    """One failing check on one side: the first main request (left) against the request the check points at (right)."""
    head = (f'<section class="diff-view" id="{attr(anchor)}" data-check="{attr(result.check)}" data-side="{attr(side)}" '
            f'data-scenario="{attr(scenario.name)}" data-verdict="{attr(result.verdict)}">'
            f"<h4>{esc(side)} <code>{esc(target.name)}</code>: {esc(result.check)} {esc(result.verdict)}</h4>")
    message = (f'<pre class="message">{esc(result.message)}</pre>'
               '<p class="key">marked: <span class="key-first-diff">first differing byte</span> '
               '<span class="key-identity">identity line</span> <span class="key-appended">appended text</span></p>')
    first = first_main(exchanges)
    pointed = next((e for e in exchanges if e.seq == result.request), None) if result.request is not None else None
    if first is None or pointed is None:
        missing = "no main request in the journal" if first is None else (
            "the check points at no request" if result.request is None
            else f"request #{result.request} is not in the journal")
        return head + f'<p class="diff-summary">nothing to compare: {esc(missing)}</p>' + message + "</section>"
    left, right = _request(first, target, scenario.append), _request(pointed, target, scenario.append)
    notes = []
    if first.seq == pointed.seq:
        notes.append("the check points at the first main request itself: both panels show the same request")
    diff = first_difference(utf8(left.prefix), utf8(right.prefix))
    notes.append(_difference_line(diff, left.prefix, right.prefix, "cache prefix"))
    focus_left = focus_right = None
    tools_left = tools_right = None
    if diff is not None:
        left.prefix_spans.append(_diff_span(left.prefix, diff.offset))
        right.prefix_spans.append(_diff_span(right.prefix, diff.offset))
        focus_left = char_index_of_byte(left.prefix, diff.offset)
        focus_right = char_index_of_byte(right.prefix, diff.offset)
    else:
        left_tools, right_tools = tools_bytes(first), tools_bytes(pointed)
        tools_diff = first_difference(left_tools, right_tools)
        if tools_diff is not None:
            lt, rt = left_tools.decode("utf-8", "surrogatepass"), right_tools.decode("utf-8", "surrogatepass")
            notes.append(_difference_line(tools_diff, lt, rt, "tool definitions"))
            tools_left = (lt, [_diff_span(lt, tools_diff.offset)], char_index_of_byte(lt, tools_diff.offset))
            tools_right = (rt, [_diff_span(rt, tools_diff.offset)], char_index_of_byte(rt, tools_diff.offset))
    summary = "".join(f'<p class="diff-summary">{esc(n)}</p>' for n in notes)
    sides = ('<div class="sides">'
             + _panel(left, "left", "first main request", tools_left, focus_left)
             + _panel(right, "right", "request the check points at", tools_right, focus_right)
             + "</div>")
    return head + summary + message + sides + "</section>"
