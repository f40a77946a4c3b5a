"""Where a key of a TOML file was written: tomllib gives values without lines, and an error must name its line.

Good enough for what people write in a configuration table: `[a.b]` headers,
`[[a.b]]` arrays of tables, `key = value` lines, dotted and quoted keys, and
inline tables of a key of the table above (`suites.ci = {...}`, then the
key's own line is named). Anything it cannot place is named by its table's
header line, or by no line at all.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*\[\[?\s*(?P<name>[^\]]+?)\s*\]\]?\s*(?:#.*)?$")
_ASSIGN = re.compile(r"^\s*(?P<key>(?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)(?:\s*\.\s*(?:\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+))*)\s*=")
_PART = re.compile(r"\"([^\"]*)\"|'([^']*)'|([A-Za-z0-9_-]+)")


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(m.group(1) if m.group(1) is not None else m.group(2) if m.group(2) is not None else m.group(3)
                 for m in _PART.finditer(dotted))


def key_line(text: str, table: tuple[str, ...], key: str | None) -> int | None:
    """The 1-based line of `key` in `table` (its header's line when `key` is None or not found), or None."""
    current: tuple[str, ...] = ()
    header_line: int | None = None if table else 1
    for number, line in enumerate(text.splitlines(), 1):
        header = _HEADER.match(line)
        if header and not _ASSIGN.match(line):
            current = _parts(header.group("name"))
            if key is not None and current[:len(table) + 1] == (*table, key):
                return number  # the key is a table of its own: `[tool.harness.suites.ci]` for suites.ci
            if current == table and header_line is None:
                header_line = number
            continue
        assign = _ASSIGN.match(line)
        if assign is None:
            continue
        full = current + _parts(assign.group("key"))
        if key is None:
            if full[:len(table)] == table and len(full) > len(table) and header_line is None:
                header_line = number  # the table written as dotted keys or an inline table
            continue
        if full[:len(table) + 1] == (*table, key):
            return number
        if len(full) <= len(table) and table[:len(full)] == full and header_line is None:
            header_line = number  # inside an inline table: the line that opens it
    return header_line
