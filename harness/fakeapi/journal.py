"""The record of every request a run made, kept in memory and on disk as it happens.

Append-only and flushed per request (Jepsen's discipline: record first, judge
later), so a run that is killed midway still leaves every request it saw.

A disk that fails under it (full, an I/O error, a file-size limit) is the
harness's failure, never the agent's: appending never raises into the fake
API's thread (which would drop the agent's connection and get the agent
blamed). The file is cut back to its last complete line, so it stays valid
JSONL; later exchanges are kept in memory only; `write_error` says, in one
line, which file and what the system said, for the run to report.
"""

from __future__ import annotations

import errno
import json
import os
import threading
from pathlib import Path
from typing import BinaryIO, Callable, Iterable

from harness.fakeapi.exchange import Exchange


class Journal:
    def __init__(self, path: Path | None = None, on_append: Callable[[Exchange], None] | None = None):
        self._lock = threading.Lock()
        self._on_append = on_append
        self._exchanges: list[Exchange] = []
        self._sink: BinaryIO | None = None
        self._complete_bytes = 0  # where the file's last complete line ends: what a failed write is cut back to
        self.path = path
        self.write_error: str | None = None  # set once writing failed; the file then holds what came before
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Unbuffered: a write the disk refused half-way is never retried from a buffer at close.
            self._sink = path.open("ab", buffering=0)
            self._complete_bytes = os.fstat(self._sink.fileno()).st_size

    def append(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)
            if self._sink is not None:
                self._write((exchange.dumps() + "\n").encode("utf-8"))
        if self._on_append is not None:
            self._on_append(exchange)

    def _write(self, line: bytes) -> None:
        """Called with the lock held: the whole line, or (on an OSError) the file cut back and writing stopped."""
        assert self._sink is not None
        try:
            view = memoryview(line)
            while view:  # a raw write may take only part of it (a disk about to fill)
                written = self._sink.write(view)
                if not written:
                    raise OSError(errno.EIO, "the file took none of the line")
                view = view[written:]
        except OSError as exc:
            self._stop_writing(exc)
            return
        self._complete_bytes += len(line)

    def _stop_writing(self, exc: OSError) -> None:
        sink, self._sink = self._sink, None
        assert sink is not None
        self.write_error = f"cannot write the journal {self.path}: {exc}"
        try:
            os.ftruncate(sink.fileno(), self._complete_bytes)
        except OSError as cut:
            self.write_error += f"; cutting it back to its last complete line failed too: {cut}"
        try:
            sink.close()
        except OSError:
            pass

    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    def for_step(self, step: int) -> list[Exchange]:
        return [e for e in self.exchanges() if e.step == step]

    def close(self) -> None:
        with self._lock:
            sink, self._sink = self._sink, None
        if sink is not None:
            try:
                sink.close()
            except OSError as exc:  # nothing is buffered, but a filesystem may still report a late error here
                self.write_error = self.write_error or f"cannot write the journal {self.path}: {exc}"

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
