"""Untrusted text into HTML: escaping, and byte-exact highlighting of spans in it.

Everything an agent, a journal or a scenario wrote passes through `esc`, so a
prompt that says `</script>` or `<img onerror=…>` reads as text. `marked`
wraps character spans in <mark> elements (nested when spans nest, split and
reopened when they only overlap) without adding or dropping a character of
the text itself: what a browser shows between two marks is exactly the bytes
in between, so the text before a first-difference mark is as long, in UTF-8,
as the offset it claims.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from harness.redaction import redact

# Characters a page cannot show as themselves: C0 controls other than tab and
# newline (a \r would be turned into \n by the HTML parser, a \x00 into U+FFFD),
# DEL, C1 controls, and lone surrogates (not encodable as UTF-8). They are shown
# as visible escapes, e.g. \r or \x1b, in a span of class "ctl".
_UNSHOWABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_ESCAPES = {"\r": "\\r", "\x0b": "\\v", "\x0c": "\\f"}


def _escape_char(char: str) -> str:
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def esc(text: object) -> str:
    """Escape any value for an element's content or a quoted attribute, credentials redacted first."""
    value = redact("" if text is None else str(text))
    out = []
    last = 0
    for match in _UNSHOWABLE.finditer(value):
        out.append(html.escape(value[last : match.start()], quote=True))
        out.append(f'<span class="ctl">{_escape_char(match.group(0))}</span>')
        last = match.end()
    out.append(html.escape(value[last:], quote=True))
    return "".join(out)


def attr(text: object) -> str:
    """Escape a value for a quoted attribute (no markup allowed there: unshowable characters become escapes)."""
    value = redact("" if text is None else str(text))
    return html.escape(_UNSHOWABLE.sub(lambda m: _escape_char(m.group(0)), value), quote=True)


def utf8(text: str) -> bytes:
    """The bytes of a text as the checks count them (a lone surrogate kept rather than crashing the report)."""
    return text.encode("utf-8", "surrogatepass")


def char_index_of_byte(text: str, offset: int) -> int:
    """The index of the character that holds byte `offset` of the text's UTF-8 (len(text) past the end)."""
    position = 0
    for index, char in enumerate(text):
        size = len(utf8(char))
        if offset < position + size:
            return index
        position += size
    return len(text)


def describe_char(text: str, index: int) -> str:
    """`'x' (U+0078)`, `'\\n' (U+000A)`, or `end of text`."""
    if index >= len(text):
        return "end of text"
    char = text[index]
    return f"{char!r} (U+{ord(char):04X})"


@dataclass(frozen=True)
class Span:
    """A highlighted character range [start, end) of a text; start == end marks a position (e.g. end of text)."""

    start: int
    end: int
    cls: str
    attrs: tuple[tuple[str, str], ...] = field(default=())
    order: int = 0  # among spans with the same start and end: lower is outer

    def open_tag(self) -> str:
        extra = "".join(f' {name}="{attr(value)}"' for name, value in self.attrs)
        return f'<mark class="{attr(self.cls)}"{extra}>'


def marked(text: str, spans: list[Span]) -> str:
    """The escaped text with every span wrapped in its <mark>."""
    spans = [s for s in spans if 0 <= s.start <= s.end <= len(text)]
    bounds = sorted({0, len(text), *(s.start for s in spans), *(s.end for s in spans)})
    out: list[str] = []
    stack: list[Span] = []
    for i, position in enumerate(bounds):
        # close what ends here; spans above a closing one are closed and reopened after it
        if any(s.end == position for s in stack):
            reopen = []
            while any(s.end == position for s in stack):
                top = stack.pop()
                out.append("</mark>")
                if top.end != position:
                    reopen.append(top)
            for span in reversed(reopen):
                out.append(span.open_tag())
                stack.append(span)
        starting = sorted((s for s in spans if s.start == position), key=lambda s: (-(s.end - s.start), s.order))
        for span in starting:
            out.append(span.open_tag())
            if span.end == span.start:
                out.append("</mark>")
            else:
                stack.append(span)
        if i + 1 < len(bounds):
            out.append(esc(text[position : bounds[i + 1]]))
    out.extend("</mark>" for _ in stack)
    return "".join(out)


def clip_spans(spans: list[Span], start: int, end: int) -> list[Span]:
    """Spans cut to the window [start, end] and shifted to it."""
    out = []
    for span in spans:
        s, e = max(span.start, start), min(span.end, end)
        if s < e or (span.start == span.end and start <= span.start <= end):
            out.append(Span(s - start, e - start, span.cls, span.attrs, span.order))
    return out
