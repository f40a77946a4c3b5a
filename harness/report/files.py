"""A report file appears whole or not at all.

Reports are written after every run has ended, often on the disk that just
filled up with journals. Writing in place left a 0-byte results.json that a CI
step would read as a report. Each file is written beside its destination under
a temporary name and renamed over it only once complete (a rename within a
folder is atomic), so a reader sees the old file, the new one, or none; a
failed write removes its partial file and raises ReportWriteError, one line
naming the file and what the system said.
"""

from __future__ import annotations

import os
from pathlib import Path


class ReportWriteError(Exception):
    """A report could not be written (a full disk, say): the harness's failure, reported as one line."""


def write_text(path: Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def write_bytes(path: Path, data: bytes) -> Path:
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        with open(partial, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except OSError as exc:
        try:
            partial.unlink()
        except OSError:
            pass
        raise ReportWriteError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
