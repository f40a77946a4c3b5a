"""The record of every request a run made, kept in memory and on disk as it happens.

Append-only and flushed per request (Jepsen's discipline: record first, judge
later), so a run that is killed midway still leaves every request it saw.

A disk that fails under it is the harness's failure, never the agent's
(append_only.py): appending never raises into the fake API's thread, the file
stays valid JSONL, later exchanges are kept in memory only, and `write_error`
says why in one line, for the run to report.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Callable, Iterable

from harness.journal.append_only import AppendOnlyLines
from harness.journal.exchange import Exchange


class Journal:
    def __init__(self, path: Path | None = None, on_append: Callable[[Exchange], None] | None = None):
        self._lock = threading.Lock()
        self._on_append = on_append
        self._exchanges: list[Exchange] = []
        self.path = path
        self._file = AppendOnlyLines(path, "journal") if path is not None else None

    @property
    def write_error(self) -> str | None:
        """Set once the disk refused a line: the file holds the complete lines before it, and no later ones."""
        return self._file.write_error if self._file is not None else None

    def append(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)
            if self._file is not None:
                self._file.write_line((exchange.dumps() + "\n").encode("utf-8"))
        if self._on_append is not None:
            self._on_append(exchange)

    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    def for_step(self, step: int) -> list[Exchange]:
        return [e for e in self.exchanges() if e.step == step]

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()

    def __enter__(self) -> "Journal":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_journal(path: Path) -> list[Exchange]:
    """Load a journal file; a torn last line (a killed run) is ignored, not fatal."""
    exchanges: list[Exchange] = []
    # Split on b"\n" only: str.splitlines() would also break lines at U+2028, U+0085 and
    # friends, which JSON leaves unescaped; and decode per line, since a torn last line
    # may end inside a multi-byte character.
    lines: Iterable[bytes] = path.read_bytes().split(b"\n")
    for line in lines:
        if not line.strip():
            continue
        try:
            exchanges.append(Exchange.from_json(json.loads(line.decode("utf-8"))))
        except (UnicodeDecodeError, json.JSONDecodeError):
            break
    return exchanges
