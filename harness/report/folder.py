"""The report folder of one command: proved writable, held by one harness at a time, and never a user's file.

Everything is checked before any agent runs, so a folder that cannot take the
reports fails as bad input (exit 2) instead of after an hour of runs: a path
the command will write as a file must not be a folder and the reverse, and
the journal folder must take a file.

Two runs given the same `--report-dir` at once used to unlink each other's
journals and interleave one launch journal. The folder is therefore locked
(flock on `.harness.lock`, which holds the holder's pid) for as long as the
command runs; the kernel drops the lock when the holder dies, however it dies,
so a SIGKILLed run never leaves the folder locked. A second run on a held
folder exits 2 naming the holder.

`reports/latest` is the harness's own symlink to the newest default folder; a
regular file or folder of that name is someone else's and is left alone: the
command refuses rather than delete it.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import os
from pathlib import Path
from typing import Iterable

from harness.errors import InputError

DEFAULT_REPORTS = Path("reports")
LOCK_NAME = ".harness.lock"
JOURNAL_DIR = "journal"

_held: list[int] = []  # lock descriptors of this process, open until it exits


def prepare(given: Path | str | None, prefix: str, files: Iterable[str], reports: Path | str = DEFAULT_REPORTS) -> Path:
    """The folder the reports go to, created, checked and locked; InputError (exit 2) when it cannot be used.

    Without `given`, a new `<prefix>-<time>-<pid>` folder under `reports` (the project's configured report folder),
    linked as `reports/latest`.
    """
    if given is not None and str(given).strip() == "":
        raise InputError("--report-dir is empty: name a folder (an empty path would write into the current folder)")
    latest = Path(reports) / "latest"
    if given is None:
        _refuse_foreign_latest(latest)
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        report_dir = Path(reports) / f"{prefix}-{stamp}-{os.getpid()}"
    else:
        report_dir = Path(given)
    try:
        report_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError("is a file, not a folder: reports need a folder (pass another --report-dir)", report_dir) from None
    except OSError as exc:
        raise InputError(f"cannot write reports there: {exc.strerror or exc}", report_dir) from None
    _lock(report_dir)
    _check_layout(report_dir, files)
    if given is None:
        _link_latest(latest, report_dir)
    return report_dir


def lock_folder(folder: Path) -> None:
    """Hold `folder` for this process (the pytest plugin's journal folder, say); InputError if another harness does."""
    folder.mkdir(parents=True, exist_ok=True)
    _lock(folder)


def _lock(folder: Path) -> None:
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise InputError(f"cannot write reports there: {exc.strerror or exc}", folder) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = _holder(fd)
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EACCES):
            raise InputError(f"is in use by another harness run ({holder}); wait for it, or pass another --report-dir "
                             "(two runs in one folder would overwrite each other's journals)", folder) from None
        raise InputError(f"cannot lock the report folder: {exc.strerror or exc}", folder) from None
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as exc:  # a full disk, say: the folder cannot take reports either
        os.close(fd)
        raise InputError(f"cannot write reports there: {exc.strerror or exc}", folder) from None
    _held.append(fd)


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", errors="replace").strip()
    except OSError:
        text = ""
    return f"pid {text}" if text.isdigit() else "pid unknown"


def _check_layout(folder: Path, files: Iterable[str]) -> None:
    """What the command will write must fit what is there: files where files go, a writable journal folder."""
    for name in files:
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            raise InputError(f"{name} there is a folder; the report writes it as a file (remove it or pass another "
                             "--report-dir)", folder)
    journal = folder / JOURNAL_DIR
    if journal.exists() and not journal.is_dir():
        raise InputError(f"{JOURNAL_DIR} there is a file; the journals go into a folder of that name (remove it or "
                         "pass another --report-dir)", folder)
    try:
        journal.mkdir(exist_ok=True)
        probe = journal / f".write-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"cannot write journals there: {exc.strerror or exc}", journal) from None


def _refuse_foreign_latest(latest: Path) -> None:
    if (latest.exists() or latest.is_symlink()) and not latest.is_symlink():
        kind = "folder" if latest.is_dir() else "file"
        raise InputError(f"is a {kind}, not the harness's link to the newest report; move it away or pass "
                         "--report-dir (the harness replaces only its own symlink there)", latest)


def _link_latest(latest: Path, report_dir: Path) -> None:
    try:
        if latest.is_symlink():
            latest.unlink()
        latest.symlink_to(report_dir.name)
    except OSError:
        pass  # a convenience link; the report itself is written regardless
