"""Validating located YAML: the small vocabulary every file reader shares.

Each method either returns the value in the expected shape or raises an
InputError naming the file, the line and the key path, with expected vs found.
One Reader is made per file read and handed to the readers of that file's
sections (harness/scenario/), so every section words its errors alike.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

from harness.errors import InputError
from harness.documents.located import LocatedDict, LocatedList, child_path, describe, type_name, unknown_key_error


ARGUMENT = "it reaches the agent as a process argument"


def quote_hint(value: Any) -> str:
    if isinstance(value, (bool, int, float)) or type_name(value) in ("a date", "a timestamp"):
        return "; quote it to make it text"
    return ""


class Reader:
    """Shared checks for located YAML, bound to one file: ``self.path`` goes into every error."""

    def __init__(self, path: str | Path | None):
        self.path = path

    def error(self, message: str, line: int | None, where: str) -> InputError:
        return InputError(f"{where}: {message}" if where else message, self.path, line)

    def mapping(self, value: Any, line: int | None, where: str, expected: str = "a mapping") -> LocatedDict:
        if isinstance(value, LocatedDict):
            return value
        raise self.error(f"expected {expected}, got {describe(value)}", line, where)

    def known_keys(self, m: LocatedDict, allowed: Iterable[str], where: str) -> None:
        allowed = tuple(allowed)
        for key in m:
            if key not in allowed:
                raise unknown_key_error(key, allowed, self.path, m.key_line(key), where)

    def require(self, m: LocatedDict, key: str, where: str) -> Any:
        if key not in m:
            raise self.error(f"missing required key {key!r}", m.line, where)
        return m[key]

    def string(self, value: Any, line: int | None, where: str, *, non_empty: bool = False) -> str:
        if not isinstance(value, str):
            expected = "a non-empty string" if non_empty else "a string"
            raise self.error(f"expected {expected}, got {describe(value)}{quote_hint(value)}", line, where)
        if non_empty and not value.strip():
            raise self.error(f"expected a non-empty string, got {describe(value)}", line, where)
        return value

    def optional_string(self, m: LocatedDict, key: str, where: str, *, non_empty: bool = False) -> str | None:
        if key not in m:
            return None
        return self.string(m[key], m.key_line(key), child_path(where, key), non_empty=non_empty)

    def argument(self, value: Any, line: int | None, where: str, *, carried_as: str = ARGUMENT) -> str:
        """A non-empty string that reaches the agent as a process argument (or a path): exec cannot carry a NUL.

        YAML's "\\0" and "\\x00" write one; refused here, it would stop the run mid-step with a traceback.
        """
        text = self.string(value, line, where, non_empty=True)
        self.no_nul(text, line, where, carried_as=carried_as)
        return text

    def no_nul(self, text: str, line: int | None, where: str, *, carried_as: str = ARGUMENT) -> None:
        """Process arguments, environment values and paths are C strings: a NUL cannot be passed, only refused."""
        nul = text.find("\0")
        if nul >= 0:
            raise self.error(
                f"contains a NUL character (character {nul + 1} of {len(text)}): {carried_as}, which cannot hold "
                "one (in YAML, \"\\0\", \"\\x00\" and \"\\u0000\" each write one)",
                line,
                where,
            )

    def optional_argument(self, m: LocatedDict, key: str, where: str, *, carried_as: str = ARGUMENT) -> str | None:
        if key not in m:
            return None
        return self.argument(m[key], m.key_line(key), child_path(where, key), carried_as=carried_as)

    def list_(self, value: Any, line: int | None, where: str, expected: str) -> LocatedList:
        if not isinstance(value, LocatedList):
            raise self.error(f"expected {expected}, got {describe(value)}", line, where)
        if not value:
            raise self.error(f"expected {expected}, got an empty list", line, where)
        return value

    def positive_number(self, value: Any, line: int | None, where: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"expected a positive number of seconds, got {describe(value)}", line, where)
        if not math.isfinite(value) or value <= 0:
            raise self.error(f"expected a positive number of seconds, got {value}", line, where)
        return float(value)
