"""The one redactor: every output of the harness passes through it before anyone can read it.

Journals, reports and the console get shared (CI artifacts, pull requests),
and an agent under test prints and sends whatever credentials it holds. A
credential is recognised two ways: by the name it goes under (a header, a
query parameter, an environment variable, `NAME=value` or `NAME: value` in
text) and by the shape of its value (shapes.py: detect-secrets'
vendor formats and the few it lacks). Only the secret is replaced, by
`[redacted]`: the words around it stay readable, so a reviewer sees that
something was there and what it was called.

Evidence is never redacted at its source: checks read the journal's body
bytes, which are recorded as they arrived. What is redacted is what gets
written or shown: header and query values in the journal, an agent's output
tails, a launch's environment, and the text of every report and console line.
Structured outputs are redacted value by value (redact_json, redact_xml), so
a replacement can never break the JSON or XML around it.
"""

from __future__ import annotations

import bisect
import contextlib
import re
import sys
import threading
import xml.etree.ElementTree as ET
from functools import lru_cache
from typing import Any, Iterator, TextIO
from urllib.parse import unquote_plus

from harness.redaction.names import assignment_spans, is_secret_name, lowered
from harness.redaction.shapes import Span, all_shapes

REDACTED = "[redacted]"
__all__ = ["REDACTED", "is_secret_name", "redact", "redact_many", "redact_value", "redact_headers", "redact_query",
           "secret_spans", "redact_json", "redact_xml", "RedactingStream", "redacting_console", "TAIL_MARGIN", "redact_tail"]

# Every secret the rules know holds a run of 16 token characters (every vendor shape, detect-secrets' included,
# and a private key's body), or an `=` or `:` (a named value, a URL's password), or a bearer token. A text with
# none is passed by at once: most strings of a report are short words, numbers and verdicts.
_LONG_RUN = re.compile(r"[A-Za-z0-9_+/=.-]{16}")
# Joins the texts scanned together (_changes): no rule's match runs across it.
_JOIN = "\x00"


@lru_cache(maxsize=1)
def _shapes():
    return all_shapes()


def _may_hold_secret(text: str) -> bool:
    return bool(text) and ("=" in text or ":" in text or _LONG_RUN.search(text) is not None or "earer" in text.lower())


def secret_spans(text: str) -> list[Span]:
    """Where the secrets in a text are: merged, in order, never overlapping."""
    found = [span for shape in _shapes() for span in shape.spans(text)]
    found += assignment_spans(lowered(text))
    merged: list[list[int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def _replaced(text: str, spans: list[Span]) -> str:
    out, last = [], 0
    for start, end in spans:
        out += [text[last:start], REDACTED]
        last = end
    out.append(text[last:])
    return "".join(out)


def redact(text: str) -> str:
    """The text with every secret in it replaced by [redacted]; the rest of it unchanged."""
    if not _may_hold_secret(text):
        return text
    spans = secret_spans(text)
    return _replaced(text, spans) if spans else text


def _changes(texts) -> dict[str, str]:
    """What redact() makes of each of the texts it changes; the texts are scanned as one, each distinct text once.

    A report repeats the same strings thousands of times (check names, argv,
    paths), and one pass of each rule over them all costs a fraction of a
    pass per string.
    """
    candidates = [text for text in dict.fromkeys(texts) if _may_hold_secret(text)]
    if not candidates:
        return {}
    starts, position = [], 0
    for text in candidates:
        starts.append(position)
        position += len(text) + len(_JOIN)
    per_text: dict[int, list[Span]] = {}
    for start, end in secret_spans(_JOIN.join(candidates)):
        k = bisect.bisect_right(starts, start) - 1
        while k < len(starts) and starts[k] < end:  # a span is cut at the joins it crosses
            base = starts[k]
            piece = (max(start, base) - base, min(end, base + len(candidates[k])) - base)
            if piece[1] > piece[0]:
                per_text.setdefault(k, []).append(piece)
            k += 1
    return {candidates[k]: _replaced(candidates[k], spans) for k, spans in per_text.items()}


def redact_many(texts: list[str]) -> list[str]:
    """redact() of each text, at the cost of one scan of them all."""
    changed = _changes(texts)
    return [changed.get(text, text) for text in texts]


def redact_value(name: str, value: str) -> str:
    """A value under a name (a header, a variable, a JSON key): all of it when the name is credential-like."""
    if value and is_secret_name(name):
        return REDACTED
    return redact(value)


# --------------------------------------------------------------------------- the journal and the launches


REMEMBERED_HEADERS = 1024  # distinct (name, value) header lines whose redaction is kept
LONGEST_REMEMBERED = 512  # characters of a header value: a longer one (rare, or hostile) is redacted afresh, never held


@lru_cache(maxsize=REMEMBERED_HEADERS)
def _remembered_header(name: str, value: str) -> str:
    return redact_value(name, value)


def redact_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Lower-cased header map, credentials replaced by name and by shape; repeated headers are joined.

    A client sends the same few header lines with every request, so each distinct line is scanned once and
    remembered: scanning them all on every request was a seventh of the fake API's time per reply (`make bench`).
    """
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        shown = _remembered_header(key, value) if len(value) <= LONGEST_REMEMBERED else redact_value(key, value)
        out[key] = f"{out[key]}, {shown}" if key in out else shown
    return out


def redact_query(query: str) -> str:
    """A query string as sent, with each credential value replaced; names, order and separators kept."""
    if not query:
        return query
    parts = []
    for part in query.split("&"):
        name, sep, value = part.partition("=")
        if sep and value and (is_secret_name(unquote_plus(name)) or redact(unquote_plus(value)) != unquote_plus(value)):
            parts.append(f"{name}={REDACTED}")
        else:
            parts.append(redact(part))
    return "&".join(parts)


# --------------------------------------------------------------------------- structured outputs


def redact_json(document: Any) -> Any:
    """A JSON document with every string redacted, and every string under a credential-like key replaced whole.

    The document itself is returned when nothing in it is a secret, as is the
    case in almost every report.
    """
    strings: list[str] = []
    named: set[str] = set()  # keys holding a non-empty string

    def collect(value: Any, name: str | None) -> None:
        if isinstance(value, str):
            strings.append(value)
            if name is not None and value:
                named.add(name)
        elif isinstance(value, dict):
            for key, item in value.items():
                collect(key, None)
                collect(item, key if isinstance(key, str) else None)
        elif isinstance(value, (list, tuple)):
            for item in value:
                collect(item, None)
        elif value is not None and not isinstance(value, (bool, int, float)):
            collect(str(value), name)  # what json.dumps(default=str) would write

    collect(document, None)
    changed = _changes(strings)
    secret_names = {name for name in named if is_secret_name(name)}
    if not changed and not secret_names:
        return document

    def rebuild(value: Any, name: str | None) -> Any:
        if isinstance(value, dict):
            return {rebuild(key, None): rebuild(item, key if isinstance(key, str) else None) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [rebuild(item, None) for item in value]
        if value is None or isinstance(value, (bool, int, float)):
            return value
        text = value if isinstance(value, str) else str(value)
        return REDACTED if text and name in secret_names else changed.get(text, text)

    return rebuild(document, None)


def redact_xml(root: ET.Element) -> ET.Element:
    """Every text, tail and attribute of an element tree, redacted in place (before it is serialised)."""
    slots = [(element, part) for element in root.iter() for part in ("text", "tail") if getattr(element, part)]
    attributes = [(element, key) for element in root.iter() for key in element.attrib]
    shown = redact_many([getattr(e, part) for e, part in slots] + [e.attrib[key] for e, key in attributes])
    for (element, part), text in zip(slots, shown):
        setattr(element, part, text)
    for (element, key), text in zip(attributes, shown[len(slots):]):
        element.attrib[key] = text
    return root


# --------------------------------------------------------------------------- the console


class RedactingStream:
    """A text stream that redacts what is written to it, line by line, before the stream it wraps sees it.

    Whole lines are redacted (a secret split across two writes of one line is
    still found); a line without its newline waits for it, or for flush().
    """

    def __init__(self, stream: TextIO):
        self.wrapped = stream
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            cut = self._pending.rfind("\n") + 1
            if cut:
                ready, self._pending = self._pending[:cut], self._pending[cut:]
                self.wrapped.write(redact(ready))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self.wrapped.write(redact(self._pending))
                self._pending = ""
        self.wrapped.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno, buffer, ...: the wrapped stream's
        return getattr(self.wrapped, name)


@contextlib.contextmanager
def redacting_console() -> Iterator[None]:
    """sys.stdout and sys.stderr redacted for the duration (the CLI's whole run), then restored as they were."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (s if s is None or isinstance(s, RedactingStream) else RedactingStream(s) for s in saved)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, RedactingStream) and stream not in saved:
                stream.flush()
        sys.stdout, sys.stderr = saved


# How much more of a captured stream to read than a tail shows: a secret the cut runs through (a private-key block
# is about 3 KB) is redacted whole before the cut, instead of its end showing because its start was cut away.
TAIL_MARGIN = 8192


def redact_tail(text: str, limit: int) -> str:
    """The last `limit` characters of `text` once all of it is redacted; read `text` with TAIL_MARGIN to spare."""
    text = redact(text)
    if len(text) <= limit:
        return text
    return "…" + text[-limit:].lstrip("…")
