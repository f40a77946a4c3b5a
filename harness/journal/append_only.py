"""An append-only file of lines that a failing disk can stop but never tear: the writer both journals share.

A disk that fails under a journal (full, an I/O error, a file-size limit) is
the harness's failure, never the agent's: writing never raises into the thread
that appends (the fake API's, which would drop the agent's connection and get
the agent blamed). The file is cut back to its last complete line, so it stays
valid JSONL; later lines are not written; `write_error` says, in one line,
which file and what the system said, for the run to report.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import BinaryIO


class AppendOnlyLines:
    """Not thread-safe by itself: each journal calls it under its own lock."""

    def __init__(self, path: Path, what: str):
        self.path, self._what = path, what
        self.write_error: str | None = None  # set once writing failed; the file then holds what came before
        path.parent.mkdir(parents=True, exist_ok=True)
        # Unbuffered: a write the disk refused half-way is never retried from a buffer at close.
        self._sink: BinaryIO | None = path.open("ab", buffering=0)
        self._complete_bytes = os.fstat(self._sink.fileno()).st_size  # what a failed write is cut back to

    def write_line(self, line: bytes) -> None:
        """The whole line, or (on an OSError) the file cut back and writing stopped."""
        if self._sink is None:
            return
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
        self.write_error = f"cannot write the {self._what} {self.path}: {exc}"
        try:
            os.ftruncate(sink.fileno(), self._complete_bytes)
        except OSError as cut:
            self.write_error += f"; cutting it back to its last complete line failed too: {cut}"
        try:
            sink.close()
        except OSError:
            pass

    def close(self) -> None:
        sink, self._sink = self._sink, None
        if sink is not None:
            try:
                sink.close()
            except OSError as exc:  # nothing is buffered, but a filesystem may still report a late error here
                self.write_error = self.write_error or f"cannot write the {self._what} {self.path}: {exc}"
