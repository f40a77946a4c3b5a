"""Which process sent a request: the peer of a loopback TCP connection, looked up in /proc.

Clients rarely say who they are, but on Linux the kernel does: the client's
socket inode is listed in /proc/net/tcp{,6}, and the process holding it has a
matching fd link. Knowing the pid lets the journal prove that every step came
from a fresh process. Elsewhere (or when the lookup races an exit) the answer
is None, never a guess.

A step that runs in its own network namespace (harness/netns.py) connects
through a listener that namespace handed over; its sockets are listed only in
that namespace's tables, which the launcher opened there and passed along. The
thread serving such a connection names them (`connections_from`), so the
lookup reads exactly that namespace's tables and never mistakes a same-numbered
connection of the host (or of another step) for it. Socket inodes are global,
so the holder is found through /proc/<pid>/fd as before.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Iterable, Iterator, Sequence

_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
_current = threading.local()


class NamespaceTables:
    """The TCP tables (tcp, tcp6) of one network namespace, as open files that keep it readable.

    Re-read from the start on every lookup; closing makes later lookups find nothing
    (the file descriptors are never read after close, even if their numbers are reused).
    """

    def __init__(self, fds: Sequence[int]):
        self._fds = list(fds)
        self._lock = threading.Lock()

    def read(self) -> list[str]:
        texts = []
        with self._lock:
            for fd in self._fds:
                chunks = []
                try:
                    os.lseek(fd, 0, os.SEEK_SET)
                    while chunk := os.read(fd, 65536):
                        chunks.append(chunk)
                except OSError:
                    continue
                texts.append(b"".join(chunks).decode("ascii", errors="replace"))
        return texts

    def close(self) -> None:
        with self._lock:
            fds, self._fds = self._fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def connections_from(tables: NamespaceTables | None) -> Iterator[None]:
    """Within this block (on this thread), peers are looked up in `tables` instead of the host's."""
    previous = getattr(_current, "tables", None)
    _current.tables = tables
    try:
        yield
    finally:
        _current.tables = previous


def pid_of_peer(client_port: int, server_port: int, roots: Iterable[int] = ()) -> int | None:
    inode = _socket_inode(client_port, server_port, getattr(_current, "tables", None))
    if inode is None:
        return None
    link = f"socket:[{inode}]"
    seen: set[int] = set()
    for pid in _candidates(roots):
        if pid in seen:
            continue
        seen.add(pid)
        if _holds(pid, link):
            return pid
    return None


def _socket_inode(client_port: int, server_port: int, tables: NamespaceTables | None = None) -> str | None:
    for text in tables.read() if tables is not None else _host_tables():
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 10:
                continue
            try:
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            except (IndexError, ValueError):
                continue
            # inode 0 is a socket no process holds any more (TIME_WAIT)
            if local_port == client_port and remote_port == server_port and fields[9] != "0":
                return fields[9]
    return None


def _host_tables() -> Iterator[str]:
    for table in _TABLES:
        try:
            with open(table, encoding="ascii") as handle:
                yield handle.read()
        except OSError:
            continue


def _candidates(roots: Iterable[int]) -> Iterator[int]:
    """The step's own process tree first (cheap, usually right), then everything."""
    queue = [r for r in roots if r]
    while queue:
        pid = queue.pop(0)
        yield pid
        queue.extend(_children(pid))
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        if entry.isdigit():
            yield int(entry)


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as handle:
                out.extend(int(c) for c in handle.read().split())
        except OSError:
            continue
    return out


def _holds(pid: int, link: str) -> bool:
    fd_dir = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"{fd_dir}/{fd}") == link:
                return True
        except OSError:
            continue
    return False
