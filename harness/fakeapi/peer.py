"""Which process sent a request: the peer of a loopback TCP connection, looked up in /proc.

Clients rarely say who they are, but on Linux the kernel does: the client's
socket inode is listed in /proc/net/tcp{,6}, and the process holding it has a
matching fd link. Knowing the pid lets the journal prove that every step came
from a fresh process. Elsewhere (or when the lookup races an exit) the answer
is None, never a guess.

A step that runs in its own network namespace (harness/isolation/netns.py) connects
through a listener that namespace handed over; its sockets are listed only in
that namespace's tables, which the launcher opened there and passed along. The
lookup for such a connection names them (`connections_from`), so the
lookup reads exactly that namespace's tables and never mistakes a same-numbered
connection of the host (or of another step) for it. Socket inodes are global,
so the holder is found through /proc/<pid>/fd as before.

The socket is found by asking the kernel for exactly that connection over
NETLINK_SOCK_DIAG (in the namespace the connection lives in: the launcher
hands over a sock_diag socket it opened there, beside the tables). Reading
/proc/net/tcp walks the kernel's whole TCP hash table however few connections
there are: about 5 ms here, and as much again for tcp6, before the fake API
could answer a new connection's first request. The tables remain the way
when sock_diag is refused or unavailable; tcp6 is read only when tcp did not
have the connection.

Whether that process is the running step's (`belongs_to_step`) is read from
/proc too: the step's root process, anything in its session (each step
starts a session of its own, so a child reparented when its parent exited
still counts), any descendant of either (the ppid chain), or anything in a
PID namespace the root made for its children.
"""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
from typing import Iterable, Iterator, Sequence

_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
_current = threading.local()
_MAX_ANCESTORS = 4096  # a ppid chain longer than any real one: a loop read from a racing /proc ends here

# NETLINK_SOCK_DIAG: one exact lookup of an IPv4 TCP connection (linux/inet_diag.h, linux/sock_diag.h).
NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NO_COOKIE = 0xFFFFFFFF
_LOOPBACK = socket.inet_aton("127.0.0.1") + bytes(12)
_INODE_OFFSET = 16 + 4 + 48 + 16  # nlmsghdr, inet_diag_msg's four bytes, its sockid, expires..uid


class NamespaceTables:
    """The TCP tables (tcp, tcp6) of one network namespace, as open files that keep it readable.

    Re-read from the start on every lookup; closing makes later lookups find nothing
    (the file descriptors are never read after close, even if their numbers are reused).
    """

    def __init__(self, fds: Sequence[int], diag: int | None = None):
        self._fds = list(fds)
        self._diag = socket.socket(fileno=diag) if diag is not None else None  # sock_diag, opened in the namespace
        self._lock = threading.Lock()

    def read(self) -> Iterator[str]:
        """Each table in turn (tcp, then tcp6), read when the caller asks for it."""
        for index in range(len(self._fds)):
            with self._lock:
                if index >= len(self._fds):
                    return
                fd = self._fds[index]
                chunks = []
                try:
                    os.lseek(fd, 0, os.SEEK_SET)
                    while chunk := os.read(fd, 65536):
                        chunks.append(chunk)
                except OSError:
                    continue
            yield b"".join(chunks).decode("ascii", errors="replace")

    def diag_inode(self, client_port: int, server_port: int) -> str | None:
        """The connection's socket inode as sock_diag in the namespace reports it; None when it cannot say."""
        with self._lock:
            if self._diag is None:
                return None
            return _diag_inode(self._diag, client_port, server_port)

    def close(self) -> None:
        with self._lock:
            fds, self._fds = self._fds, []
            diag, self._diag = self._diag, None
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        if diag is not None:
            diag.close()


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
    if tables is not None:
        inode = tables.diag_inode(client_port, server_port)
    else:
        inode = _host_diag_inode(client_port, server_port)
    if inode is not None:
        return inode
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


def _host_diag_inode(client_port: int, server_port: int) -> str | None:
    try:
        diag = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
    except (OSError, AttributeError):  # not Linux, or netlink refused here
        return None
    with diag:
        return _diag_inode(diag, client_port, server_port)


def _diag_inode(diag: socket.socket, client_port: int, server_port: int) -> str | None:
    """The inode of the IPv4 TCP socket 127.0.0.1:client_port -> 127.0.0.1:server_port, or None.

    None also when sock_diag says nothing useful (no such socket, an error, inode 0 for a socket no
    process holds any more): the tables are then asked, as before."""
    sockid = struct.pack("!HH", client_port, server_port) + _LOOPBACK + _LOOPBACK + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
    request = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    header = struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0)
    try:
        diag.settimeout(1.0)
        diag.send(header + request)
        reply = diag.recv(65536)
    except OSError:
        return None
    if len(reply) < _INODE_OFFSET + 4:
        return None
    length, kind = struct.unpack_from("=IH", reply)
    if kind != _SOCK_DIAG_BY_FAMILY or length < _INODE_OFFSET + 4:
        return None
    family, _state = struct.unpack_from("=BB", reply, 16)
    sport, dport = struct.unpack_from("!HH", reply, 20)
    inode, = struct.unpack_from("=I", reply, _INODE_OFFSET)
    if family != socket.AF_INET or (sport, dport) != (client_port, server_port) or inode == 0:
        return None
    return str(inode)


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


def belongs_to_step(pid: int, root: int) -> bool | None:
    """Whether process `pid` is the step's whose root process is `root`; None when `pid` is gone from /proc.

    The step's: the root itself, or a process in its session (run_process starts each step with a
    session of its own: the session id is the root's pid), or a descendant of either, or a process
    in a PID namespace the root made for its children. A descendant of a process in the session
    counts because launchers start their helpers so: Inspect's sandbox tools server stays in the
    step's session but is reparented (its parent exited), and runs each command in a session of
    its own (setsid), so neither the command's session nor its parent chain reaches the root.
    """
    stat = _ppid_and_session(pid)
    if stat is None:
        return True if pid == root else None
    if _in_pid_namespace_of(pid, root):
        return True
    seen: set[int] = set()
    while len(seen) < _MAX_ANCESTORS:
        ppid, session = stat
        if pid == root or session == root:
            return True
        seen.add(pid)
        if ppid <= 1 or ppid in seen:
            return False
        parent = _ppid_and_session(ppid)
        if parent is None:  # the parent exited meanwhile: read the child again, as reparented
            again = _ppid_and_session(pid)
            if again is None or again[0] == ppid:
                return None
            stat = again
            continue
        pid, stat = ppid, parent
    return False


def _ppid_and_session(pid: int) -> tuple[int, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # pid (comm) state ppid pgrp session ...: comm may hold spaces and parentheses, so split after the last ")"
    fields = stat[stat.rfind(b")") + 1:].split()
    try:
        return int(fields[1]), int(fields[3])
    except (IndexError, ValueError):
        return None


def _in_pid_namespace_of(pid: int, root: int) -> bool:
    """True when the root's children live in a PID namespace other than the harness's, and `pid` lives in it."""
    try:
        made = os.readlink(f"/proc/{root}/ns/pid_for_children")
        if made == os.readlink("/proc/self/ns/pid"):
            return False  # the step's children share the harness's namespace: being in it proves nothing
        return os.readlink(f"/proc/{pid}/ns/pid") == made
    except OSError:
        return False
