"""A request's headers as the journal shows them, each distinct header line scanned for secrets once.

A client sends the same few header lines with every request (its user agent,
its key, the API version); only a few values change (the body's length). Scanning
every value against every secret shape (harness/redaction) on every request
was about a seventh of the fake API's time per reply (`make bench`, issue 23),
so each (name, value) pair is redacted once and remembered. The result is
redaction.redact_headers's, which tests/test_fakeapi_concurrency.py holds it to.
"""

from __future__ import annotations

from functools import lru_cache

from harness import redaction

REMEMBERED_PAIRS = 1024
LONGEST_REMEMBERED = 512  # characters of a value: a longer one (rare, or hostile) is redacted afresh, never held


@lru_cache(maxsize=REMEMBERED_PAIRS)
def _remembered(name: str, value: str) -> str:
    return redaction.redact_value(name, value)


def journaled_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    """As redaction.redact_headers: names lower-cased, credentials replaced, a repeated header's values joined."""
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        shown = _remembered(key, value) if len(value) <= LONGEST_REMEMBERED else redaction.redact_value(key, value)
        out[key] = f"{out[key]}, {shown}" if key in out else shown
    return out
