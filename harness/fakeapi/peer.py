"""Which process sent a request: the peer of a loopback TCP connection, looked up in /proc.

Clients rarely say who they are, but on Linux the kernel does: the client's
socket inode is listed in /proc/net/tcp{,6}, and the process holding it has a
matching fd link. Knowing the pid lets the journal prove that every step came
from a fresh process. Elsewhere (or when the lookup races an exit) the answer
is None, never a guess.
"""

from __future__ import annotations

import os
from typing import Iterable, Iterator


def pid_of_peer(client_port: int, server_port: int, roots: Iterable[int] = ()) -> int | None:
    inode = _socket_inode(client_port, server_port)
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


def _socket_inode(client_port: int, server_port: int) -> str | None:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as handle:
                next(handle, None)
                for line in handle:
                    fields = line.split()
                    if len(fields) < 10:
                        continue
                    local_port = int(fields[1].rsplit(":", 1)[1], 16)
                    remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                    # inode 0 is a socket no process holds any more (TIME_WAIT)
                    if local_port == client_port and remote_port == server_port and fields[9] != "0":
                        return fields[9]
        except OSError:
            continue
    return None


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
