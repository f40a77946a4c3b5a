"""Who made a workspace, so the workspaces of dead runs are swept at the next start and no one else's are touched.

A harness killed by SIGKILL (or a crash, or a power cut) cannot remove its
workspaces. Each one therefore holds a mark, `.harness-owner`, naming the
process that made it: its pid, that process's start time (field 22 of
/proc/PID/stat) and the boot it ran in, so that a pid reused by another process,
or by a process after a reboot, is never mistaken for a live owner. At the start
of a command that makes workspaces, `sweep_stale_workspaces` removes those in the
temporary folder and /dev/shm whose owner is dead. Never touched: workspaces of
live runs (another harness running at the same time), kept ones (marked
`kept` when made under --keep-workspace), folders without a mark (half made
before the mark, or from an older harness), and folders of other users.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

MARK = ".harness-owner"
KEPT = "kept"
PREFIX = "harness-"
RAM = Path("/dev/shm")  # where in-process explorations make theirs (harness/explore/machine.py)


def mark(root: Path, keep: bool = False) -> None:
    """Written as the workspace's first file; raises OSError (a full disk) for the caller to clean up."""
    (root / MARK).write_text((KEPT if keep else _identity(os.getpid())) + "\n", encoding="ascii")


def owner_alive(text: str) -> bool:
    """Whether the mark's owner still runs; a kept mark counts as alive (never swept)."""
    text = text.strip()
    if text == KEPT:
        return True
    try:
        pid = int(text.split()[0])
    except (ValueError, IndexError):
        return True  # not a mark this harness wrote: leave the folder alone
    return _identity(pid) == text


def sweep_stale_workspaces(parents: Iterable[Path] | None = None) -> list[Path]:
    """Remove the workspaces of runs whose harness is dead; the folders removed.

    Call at the start of every command that makes workspaces (run, diff, explore, minimize, the pytest
    plugin's session); cheap: one listing of each folder and one small read per harness workspace.
    """
    return remove(stale_workspaces(parents))


def stale_workspaces(parents: Iterable[Path] | None = None, include_kept: bool = False) -> list[Path]:
    """This user's workspaces whose harness is dead (and, with `include_kept`, the kept ones too)."""
    found = []
    for parent in parents if parents is not None else _default_parents():
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        found += [Path(e.path) for e in entries if e.name.startswith(PREFIX) and _stale(e, include_kept)]
    return found


def remove(folders: Iterable[Path]) -> list[Path]:
    """Delete each folder; the ones that are gone afterwards."""
    removed = []
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            removed.append(folder)
    return removed


def _stale(entry: os.DirEntry, include_kept: bool = False) -> bool:
    try:
        if not entry.is_dir(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_uid != os.geteuid():
            return False
        text = (Path(entry.path) / MARK).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return False  # no mark (an older harness's, or one made by someone else): never touched
    return (include_kept and text.strip() == KEPT) or not owner_alive(text)


def temporary_folder() -> Path:
    """The folder the user named (TMPDIR, TEMP, TMP), else the system's.

    tempfile.gettempdir() moves on to /tmp, in silence, when the named folder is full or unwritable
    (it tries to write a file there first): a workspace would land where nobody asked for it.
    """
    for name in ("TMPDIR", "TEMP", "TMP"):
        if os.environ.get(name):
            return Path(os.environ[name])
    return Path(tempfile.gettempdir())


def _default_parents() -> list[Path]:
    parents = [temporary_folder()]
    if RAM.is_dir() and RAM.resolve() != parents[0].resolve():
        parents.append(RAM)
    return parents


def _identity(pid: int) -> str:
    """"PID START BOOT" of a running process, or "" when none runs with that pid."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()
    except OSError:
        return ""
    if len(fields) < 20 or fields[0] in ("Z", "X"):  # a zombie has exited: its parent has only not reaped it yet
        return ""
    return f"{pid} {fields[19]} {_boot_id()}"


_boot: str | None = None


def _boot_id() -> str:
    global _boot
    if _boot is None:
        try:
            _boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        except OSError:
            _boot = "unknown-boot"
    return _boot
