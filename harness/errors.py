"""Errors that mean "the user's input is wrong", as opposed to "the agent failed".

The distinction drives exit codes: bad input exits 2 with a message naming the
file, line and key, and is never mistaken for a verdict about the agent.
"""

from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """A scenario, target file or command line that cannot be used as given."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        return where + self.message
