"""The side-by-side view of a failing check: the run's first main request against the one the check points at.

Both panels show the cacheable system prefix exactly as prefix_stable compares
it (prefix_blocks joined by the block separator, so offsets are the check's
offsets), the first differing byte marked on both sides, the identity line the
target's pattern finds (block by block, as identity_stable reads it) and every
occurrence of the scenario's appended text (counted per block, as
appended_exactly_once counts it). System text outside the cache prefix (after
the last breakpoint, or metadata blocks) is shown below it, marked the same way.

What is marked is the verdict's own evidence (CheckResult.request_pair, filled in
by checks/request_pair.py where the check judged): this module only renders it.
"""

from __future__ import annotations

from harness.report.html_text import (
    Span,
    attr,
    char_index_of_byte,
    clip_spans,
    describe_char,
    esc,
    marked,
    utf8,
)
from harness.results import CheckResult, Difference, RequestPair, ShownRequest, ShownText

WINDOW = 300  # characters of context either side of the first difference
LONG = 2 * WINDOW + 200  # texts longer than this are shown as a window, the full text folded below


_ORDER = {"identity": 0, "appended": 1}  # among marks over the same characters: the identity outermost


def _spans(shown: ShownText) -> list[Span]:
    return [Span(m.start, m.end, m.kind, order=_ORDER.get(m.kind, 2)) for m in shown.marks]


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


def _panel(request: ShownRequest, role: str, title: str, extra: list[Span],
           tools: tuple[str, list[Span], int | None] | None, focus: int | None) -> str:
    count = request.appended
    if count is None:
        appended = "appended text: none in this scenario"
    else:
        appended = f"appended text: {count} occurrence{'' if count == 1 else 's'}"
        if count:
            appended += f" ({request.appended_in_prefix} in the cache prefix)"
    identity = esc(repr(request.identity)) if request.identity is not None else "none found"
    blocks = ", ".join(str(i) for i in request.prefix_blocks) or "none"
    prefix_spans = _spans(request.prefix)
    if focus is None:
        firsts = [s.start for s in prefix_spans]
        focus = min(firsts) if firsts else None
    prefix = request.prefix.text
    parts = [
        f'<div class="side {role}" data-role="{"first" if role == "left" else "pointed"}" data-request="{request.seq}">',
        f"<h5>{esc(title)}: {esc(request.where)}</h5>",
        f'<p class="identity-line">identity: {identity}</p>',
        f'<p class="appended-count" data-count="{"" if count is None else count}">{esc(appended)}</p>',
        f'<p class="prefix-note">cache prefix: {len(utf8(prefix))} bytes (system blocks {blocks})</p>',
        _bytes_block(prefix, prefix_spans + extra, focus, "system-prefix", "cache prefix"),
    ]
    if tools is not None:
        text, spans, tools_focus = tools
        parts.append('<p class="prefix-note">tool definitions (canonical JSON, as prefix_stable compares them)</p>')
        parts.append(_bytes_block(text, spans, tools_focus, "tools", "tool definitions"))
    for block in request.outside:
        parts.append(f'<p class="outside-note">system block {block.index}: {esc(block.why)}</p>')
        parts.append(_bytes_block(block.shown.text, _spans(block.shown), None, f"system-block-{block.index}",
                                  f"system block {block.index}"))
    for i, message in enumerate(request.system_messages):
        parts.append(f'<p class="outside-note">system-role message {i + 1}</p>')
        parts.append(_bytes_block(message.text, _spans(message), None, f"system-message-{i + 1}", "system message"))
    parts.append("</div>")
    return "".join(parts)


def _difference_line(diff: Difference | None, left: str, right: str, what: str) -> str:
    if diff is None:
        return f"{what}: byte-identical in both requests ({len(utf8(left))} bytes)"
    return (f"{what}: first differing byte at offset {diff.offset}: "
            f"{describe_char(left, char_index_of_byte(left, diff.offset))} vs "
            f"{describe_char(right, char_index_of_byte(right, diff.offset))}; "
            f"lengths {diff.expected_length} vs {diff.observed_length} bytes")


def diff_view(scenario: str, side: str, target: str, result: CheckResult, anchor: str) -> str:
    """One failing check on one side: the first main request (left) against the request the check points at (right)."""
    head = (f'<section class="diff-view" id="{attr(anchor)}" data-check="{attr(result.check)}" data-side="{attr(side)}" '
            f'data-scenario="{attr(scenario)}" data-verdict="{attr(result.verdict)}">'
            f"<h4>{esc(side)} <code>{esc(target)}</code>: {esc(result.check)} {esc(result.verdict)}</h4>")
    message = (f'<pre class="message">{esc(result.message)}</pre>'
               '<p class="key">marked: <span class="key-first-diff">first differing byte</span> '
               '<span class="key-identity">identity line</span> <span class="key-appended">appended text</span></p>')
    pair = result.request_pair or RequestPair(missing="the verdict carries no requests")
    left, right = pair.first, pair.pointed
    if left is None or right is None:
        return head + f'<p class="diff-summary">nothing to compare: {esc(pair.missing)}</p>' + message + "</section>"
    notes = []
    if left.seq == right.seq:
        notes.append("the check points at the first main request itself: both panels show the same request")
    diff = pair.prefix_difference
    notes.append(_difference_line(diff, left.prefix.text, right.prefix.text, "cache prefix"))
    focus_left = focus_right = None
    tools_left = tools_right = None
    extra_left: list[Span] = []
    extra_right: list[Span] = []
    if diff is not None:
        extra_left.append(_diff_span(left.prefix.text, diff.offset))
        extra_right.append(_diff_span(right.prefix.text, diff.offset))
        focus_left = char_index_of_byte(left.prefix.text, diff.offset)
        focus_right = char_index_of_byte(right.prefix.text, diff.offset)
    elif pair.tools is not None and pair.tools_difference is not None:
        (lt, rt), offset = pair.tools, pair.tools_difference.offset
        notes.append(_difference_line(pair.tools_difference, lt, rt, "tool definitions"))
        tools_left = (lt, [_diff_span(lt, offset)], char_index_of_byte(lt, offset))
        tools_right = (rt, [_diff_span(rt, offset)], char_index_of_byte(rt, offset))
    summary = "".join(f'<p class="diff-summary">{esc(n)}</p>' for n in notes)
    sides = ('<div class="sides">'
             + _panel(left, "left", "first main request", extra_left, tools_left, focus_left)
             + _panel(right, "right", "request the check points at", extra_right, tools_right, focus_right)
             + "</div>")
    return head + summary + message + sides + "</section>"
