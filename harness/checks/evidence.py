"""Turning bytes into evidence a reviewer can act on: where, what was expected, what was seen."""

from __future__ import annotations

from dataclasses import dataclass

from harness.journal.exchange import Exchange

CONTEXT_BYTES = 48


def where(exchange: Exchange) -> str:
    step = f"step {exchange.step} ({exchange.step_kind})" if exchange.step is not None else "outside any step"
    return f"{step}, request #{exchange.seq}"


def series(values: list) -> str:
    return " → ".join(str(v) for v in values)


def per_step_first(exchanges: list[Exchange]) -> list[Exchange]:
    """The first main request of each step: the natural unit for "at every step" series."""
    seen: set = set()
    out = []
    for exchange in exchanges:
        if exchange.step not in seen:
            seen.add(exchange.step)
            out.append(exchange)
    return out


def clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class ByteDifference:
    offset: int  # first differing byte
    expected_context: str
    observed_context: str
    expected_length: int
    observed_length: int

    def render(self, expected_label: str, observed_label: str) -> str:
        return (
            f"first differing byte at offset {self.offset} "
            f"(lengths {self.expected_length} vs {self.observed_length})\n"
            f"  {expected_label}: {self.expected_context}\n"
            f"  {observed_label}: {self.observed_context}"
        )


def first_difference(expected: bytes, observed: bytes) -> ByteDifference | None:
    if expected == observed:
        return None
    limit = min(len(expected), len(observed))
    offset = next((i for i in range(limit) if expected[i] != observed[i]), limit)
    return ByteDifference(
        offset,
        _context(expected, offset),
        _context(observed, offset),
        len(expected),
        len(observed),
    )


def _context(data: bytes, offset: int) -> str:
    """Bytes either side of the offset, with ⟦…⟧ around the first differing byte."""
    start = max(0, offset - CONTEXT_BYTES)
    before = data[start:offset].decode("utf-8", errors="replace")
    at = data[offset : offset + 1].decode("utf-8", errors="replace") if offset < len(data) else "<end>"
    after = data[offset + 1 : offset + 1 + CONTEXT_BYTES].decode("utf-8", errors="replace")
    return marked(before, at, after, start > 0, offset + 1 + CONTEXT_BYTES < len(data))


def around(text: str, start: int, length: int) -> str:
    """A found span of text with ⟦…⟧ around it (clipped) and context either side."""
    before = text[max(0, start - CONTEXT_BYTES) : start]
    after = text[start + length : start + length + CONTEXT_BYTES]
    return marked(before, clip(text[start : start + length], 60), after,
                  start > CONTEXT_BYTES, start + length + CONTEXT_BYTES < len(text))


def marked(before: str, inner: str, after: str, more_before: bool, more_after: bool) -> str:
    """One line for a message: escapes shown, ⟦…⟧ around what matters, … where the text goes on."""
    lead, tail = ("…" if more_before else ""), ("…" if more_after else "")
    return repr(lead + before)[1:-1] + "⟦" + repr(inner)[1:-1] + "⟧" + repr(after + tail)[1:-1]
