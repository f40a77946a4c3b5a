"""One network namespace per run, entered by each of its steps: the isolation of harness/isolation/netns.py, cheaper.

Starting the per-step launcher (netns_launcher.py, a Python interpreter) cost
about 14 ms a step, a quarter of a reference-agent step. The kernel's
guarantee does not need a new namespace per step, only that the agent runs in
one whose sole interface is `lo` and whose 127.0.0.1:PORT is the fake API. So,
where the harness runs as root:

- At the run's first step, a short-lived thread of the harness unshares a new
  network namespace for itself (unshare(CLONE_NEWNET) is per thread), brings
  `lo` up, listens on 127.0.0.1:PORT there, and opens the namespace
  (/proc/thread-self/ns/net), its TCP tables, snmp counters and a sock_diag
  socket; then it ends. Those descriptors are all that keep the namespace:
  no process holds it, so nothing can outlive the harness: a SIGKILLed
  harness's descriptors close with it, and its steps die with its warden.
- The fake API adopts that listener once, for the whole run.
- Each step is started inside it: the step warden (warden.py) setns()es into
  the namespace, posix_spawn()s the step (which inherits it), and setns()es
  back; without a warden, util-linux `nsenter --net=...` is put before the
  argv. No interpreter starts, and the agent's pid, group and session are the
  warden's child's as without a namespace.
- A step's note on failed attempts is the difference of the namespace's
  counters between its start and its end.
- The run's end (its server stopping: harness/execution/subprocess.py) closes
  the descriptors, and the namespace goes.

Two runs never share one; two steps of a run do. What one step leaves
running is killed when it ends (process.py, the warden), as before.

Not used, so each step gets the launcher's namespace of its own as before:
without root (the launcher's user namespace fallback: a user namespace cannot
be entered and left by the warden), for a step with private directories (a
mount namespace per step, made by the launcher), where the thread's unshare
is refused, and where PER_RUN is off (the bench's "before" figure).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import socket
import threading
import weakref
from typing import TYPE_CHECKING

from harness.isolation import netns_launcher as launcher
from harness.isolation.netns_counters import read_counters
if TYPE_CHECKING:
    from harness.fakeapi.server import FakeAPIServer

NSENTER = shutil.which("nsenter") or "/usr/bin/nsenter"  # only where the harness has no step warden


class Refused(Exception):
    """The namespace could not be made here: the run's steps take the per-step launcher instead."""


class RunNamespace:
    """The run's namespace, held by descriptors only; `path` names it for setns or nsenter while it is open."""

    def __init__(self, server: "FakeAPIServer"):
        made: dict = {}
        thread = threading.Thread(target=_make, args=(server.port, made), name="netns-run", daemon=True)
        thread.start()
        thread.join()
        if "error" in made:
            raise Refused(made["error"])
        self._fds = made["fds"]  # name -> descriptor: ns, tcp, tcp6, snmp, snmp6, diag
        self.inode = os.fstat(self._fds["ns"]).st_ino
        self.path = f"/proc/{os.getpid()}/fd/{self._fds['ns']}"
        from harness.fakeapi.peer import NamespaceTables

        self._tables = NamespaceTables([self._fds.pop(n) for n in ("tcp", "tcp6") if n in self._fds],
                                       diag=self._fds.pop("diag", None))
        self._adopted = server.adopt_listener(socket.socket(fileno=made["listener"]), self._tables)
        self._lock = threading.Lock()
        self._closed = False

    def counters(self) -> dict[str, int]:
        return read_counters([self._fds[n] for n in ("snmp", "snmp6") if n in self._fds])

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._adopted.close()
        self._tables.close()
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)


def counted_since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What the namespace counted during one step."""
    return {name: value - before.get(name, 0) for name, value in after.items()}


def _make(port: int, made: dict) -> None:
    """In a thread of its own, which ends here: its namespace is kept by the descriptors it leaves in `made`."""
    fds: dict[str, int] = {}
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(launcher.CLONE_NEWNET) != 0:
            raise Refused(f"unshare(CLONE_NEWNET) in a thread: {os.strerror(ctypes.get_errno())}")
        launcher.loopback_up()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
        made["listener"] = listener.detach()
        fds["ns"] = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        for name in launcher.TABLES:
            with contextlib.suppress(FileNotFoundError):  # tcp6, snmp6: absent without IPv6
                fds[name] = os.open(f"/proc/thread-self/net/{name}", os.O_RDONLY | os.O_CLOEXEC)
        with contextlib.suppress(OSError, AttributeError):  # refused: peers are looked up in the tables instead
            fds["diag"] = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, launcher._NETLINK_SOCK_DIAG).detach()
        made["fds"] = fds
    except (Refused, OSError) as exc:
        made["error"] = str(exc)
        for fd in [*fds.values(), *([made.pop("listener")] if "listener" in made else [])]:
            os.close(fd)


# ============================================================================ one per run: made at its first step

_lock = threading.Lock()
_runs: "weakref.WeakKeyDictionary[FakeAPIServer, RunNamespace | str | None]" = weakref.WeakKeyDictionary()


def share_per_run(server: "FakeAPIServer") -> None:
    """The steps served by `server` may share one namespace, made at the first of them; `release` ends it."""
    with _lock:
        _runs[server] = None


def for_server(server: "FakeAPIServer") -> RunNamespace | None:
    """The run's namespace, made now if need be; None where the run did not opt in or it cannot be made here."""
    with _lock:
        if server not in _runs:
            return None
        held = _runs[server]
        if held is None:
            try:
                held = RunNamespace(server)
                weakref.finalize(server, held.close)  # a run that never released it: closed with its server
            except (Refused, OSError) as exc:
                held = f"refused: {exc}"  # not tried again for this run
            _runs[server] = held
        return held if isinstance(held, RunNamespace) else None


def release(server: "FakeAPIServer") -> None:
    """The run is over: its namespace goes (once its descriptors are closed, nothing holds it)."""
    with _lock:
        held = _runs.pop(server, None)
    if isinstance(held, RunNamespace):
        held.close()
