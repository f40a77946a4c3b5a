"""The record of every request a run made, kept in memory and on disk as it happens.

Append-only and flushed per request (Jepsen's discipline: record first, judge
later), so a run that is killed midway still leaves every request it saw.

A disk that fails under it is the harness's failure, never the agent's
(append_only.py): appending never raises into the fake API's thread, the file
stays valid JSONL, later exchanges are kept in memory only, and `write_error`
says why in one line, for the run to report.

Appending is two halves, so that the disk never holds up the fake API's other
connections: `record` (in memory, the line made and queued; called under the
fake API's lock, which gives exchanges their seq) and `write_recorded` (every
queued line written, in the order recorded, before it returns; called after
that lock, before the reply is sent). One thread at a time writes whatever is
queued while the others wait to be told their lines are in (group commit), and
no lock is held across the write. The file's lines are in seq order, each on
disk before its reply leaves, as with one lock around both (`append`): that
lock, held across the write, made every concurrent connection queue behind
the disk (ten thread switches per reply at 16 clients, `make bench`, issue 23).
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
        # Guards the exchanges in memory and the queue of lines; never held across a write.
        self._lock = threading.Lock()
        self._written = threading.Condition(self._lock)  # notified when a writer has written a batch
        self._writer_busy = False  # one writer at a time, taking the queue in the order recorded
        self._on_append = on_append
        self._exchanges: list[Exchange] = []
        self._unwritten: list[tuple[Exchange, bytes]] = []
        self._recorded = 0  # exchanges recorded so far ...
        self._done = 0  # ... and how many of them are written (and passed to on_append)
        self.path = path
        self._file = AppendOnlyLines(path, "journal") if path is not None else None

    @property
    def write_error(self) -> str | None:
        """Set once the disk refused a line: the file holds the complete lines before it, and no later ones."""
        return self._file.write_error if self._file is not None else None

    def append(self, exchange: Exchange) -> None:
        """Recorded and on disk when it returns."""
        self.record(exchange)
        self.write_recorded()

    def record(self, exchange: Exchange) -> None:
        """In memory at once, its line made (as the exchange is now) and queued for the file; nothing waits on the disk.

        Calls in seq order make a file in seq order: the fake API records under the lock that hands out seq.
        """
        line = (exchange.dumps() + "\n").encode("utf-8") if self._file is not None else b""
        with self._lock:
            self._exchanges.append(exchange)
            self._unwritten.append((exchange, line))
            self._recorded += 1

    def write_recorded(self) -> None:
        """Every line recorded so far on disk, in the order recorded, when it returns; then on_append for each.

        Group commit: one thread writes whatever is queued while the others wait to be told their lines are in.
        """
        failures: list[Exception] = []
        with self._written:
            target = self._recorded
            while self._done < target:
                if self._writer_busy:
                    self._written.wait()
                    continue
                self._writer_busy = True
                batch, self._unwritten = self._unwritten, []
                self._lock.release()
                try:
                    failures += self._write(batch)
                finally:
                    self._lock.acquire()
                    self._writer_busy = False
                    self._done += len(batch)
                    self._written.notify_all()
        if failures:
            raise failures[0]

    def _write(self, batch: list[tuple[Exchange, bytes]]) -> list[Exception]:
        """The lines, in order, then on_append for each; what on_append raised, for the writing thread to raise."""
        if self._file is not None:
            for _, line in batch:
                self._file.write_line(line)
        failures = []
        if self._on_append is not None:
            for exchange, _ in batch:  # one failing call does not skip the others' (another thread's exchanges)
                try:
                    self._on_append(exchange)
                except Exception as exc:  # noqa: BLE001 - raised by the caller, after the rest
                    failures.append(exc)
        return failures

    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return list(self._exchanges)

    def for_step(self, step: int) -> list[Exchange]:
        return [e for e in self.exchanges() if e.step == step]

    def close(self) -> None:
        """What was recorded is written first: a reply still on its way out does not lose its line."""
        self.write_recorded()
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
