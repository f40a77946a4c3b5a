"""The launcher that puts one agent step in a network namespace of its own (see harness/netns.py).

Run as a script with the standard library only (`python -I -S netns_launcher.py`):
it enters a new network namespace, brings `lo` up, listens on the fake API's
port there, hands that listener and the namespace's /proc/net tables to the
harness over a socket pair, waits for the acknowledgement, then execs the agent.
With `--bind TARGET=SOURCE` (repeatable) it also enters a mount namespace, makes
every mount in it private, and binds each SOURCE over its TARGET first.
It must not import the harness: `-I` keeps the checkout off sys.path.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import select
import signal
import socket
import struct
import sys
from collections.abc import Sequence

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_EXIT_ISOLATION, _EXIT_CANNOT_EXEC, _EXIT_NOT_FOUND = 125, 126, 127  # as env(1) and unshare(1)
TABLES = ("tcp", "tcp6", "snmp", "snmp6")  # sent in this order: tcp tables for the sending pid, snmp for the report
GO = b"go"  # the harness's acknowledgement: the listener is served, exec the agent


class _Refused(Exception):
    pass


class _MountFailed(Exception):
    """A namespace was had, but a private directory could not be bound: the step fails, naming the paths."""


_WAYS = (("network namespace", CLONE_NEWNET, "CLONE_NEWNET"),
         ("user and network namespace", CLONE_NEWUSER | CLONE_NEWNET, "CLONE_NEWUSER|CLONE_NEWNET"))


def _enter_namespace(mounts: bool = False) -> str:
    """A network namespace with lo up: as root; else (or where root may not bring lo up) inside a user namespace.

    `mounts`: a mount namespace too, in the same unshare (in a user namespace, one it owns).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    failures = []
    for how, flags, name in _WAYS:
        if mounts:
            flags, name = flags | CLONE_NEWNS, f"{name}|CLONE_NEWNS"
        uid, gid = os.geteuid(), os.getegid()
        if libc.unshare(flags) != 0:
            failures.append(f"unshare({name}): {os.strerror(ctypes.get_errno())}")
            continue
        try:
            if flags & CLONE_NEWUSER:  # the agent keeps its own uid and gid (mapped onto themselves), not root
                for file, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                    with open(f"/proc/self/{file}", "w", encoding="ascii") as handle:
                        handle.write(text)
            _loopback_up()
        except OSError as exc:  # e.g. a container's root without CAP_NET_ADMIN: try the next way
            failures.append(f"in a new {how}: {exc}")
            continue
        return how
    raise _Refused("; ".join(failures))


def _loopback_up() -> None:
    import fcntl  # POSIX only: imported where it is used, so that importing this module works anywhere

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack_from("16sh", fcntl.ioctl(probe, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, _SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | _IFF_UP))


def _bind_private(binds: Sequence[tuple[str, str]]) -> None:
    """In the new mount namespace: nothing propagates to the host's, then each source over its target."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p)
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise _MountFailed(f"cannot make the mounts under / private: {os.strerror(ctypes.get_errno())}")
    for target, source in binds:
        if libc.mount(os.fsencode(source), os.fsencode(target), None, MS_BIND | MS_REC, None) != 0:
            code = ctypes.get_errno()
            raise _MountFailed(f"cannot bind {source} over {target}: [Errno {code}] {os.strerror(code)}")


def _isolate(port: int, binds: Sequence[tuple[str, str]] = ()) -> tuple[str, socket.socket, dict[str, int]]:
    try:
        how = _enter_namespace(mounts=bool(binds))
        if binds:
            _bind_private(binds)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
    except _Refused:
        raise
    except OSError as exc:
        raise _Refused(str(exc)) from None
    tables = {}
    for name in TABLES:
        with contextlib.suppress(FileNotFoundError):  # tcp6, snmp6: absent without IPv6
            tables[name] = os.open(f"/proc/self/net/{name}", os.O_RDONLY | os.O_CLOEXEC)
    return how, listener, tables


def _probe_main() -> int:
    """Prints {"ok": true, "how": ...} when a namespace works here as steps need it."""
    try:
        how, listener, _ = _isolate(0)
        with socket.create_connection(listener.getsockname(), timeout=5):
            listener.accept()[0].close()
        outside = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        outside.setblocking(False)
        code = outside.connect_ex(("10.255.255.1", 80))
        if code != errno.ENETUNREACH:
            raise _Refused(f"a connection to 10.255.255.1:80 got {errno.errorcode.get(code, code)}, not ENETUNREACH")
    except (_Refused, OSError) as exc:
        print(json.dumps({"ok": False, "reason": str(exc)}))
        return 1
    print(json.dumps({"ok": True, "how": how}))
    return 0


def _original_environment() -> dict[bytes, bytes]:
    """The environment as exec'd: the interpreter may have added to its own (LC_CTYPE, PEP 538)."""
    try:
        with open("/proc/self/environ", "rb") as handle:
            entries = handle.read().split(b"\0")
    except OSError:
        return dict(os.environb)
    return dict(entry.split(b"=", 1) for entry in entries if b"=" in entry)


def _fail(channel: socket.socket, key: str, message: str, code: int) -> int:
    print(f"harness.netns: {message}", file=sys.stderr, flush=True)
    with contextlib.suppress(OSError):
        channel.send(json.dumps({key: message}).encode())
    return code


def _launch(port: int, channel_fd: int, timeout_s: float, argv: list[str],
            binds: Sequence[tuple[str, str]] = ()) -> int:
    os.set_inheritable(channel_fd, False)  # the agent never sees the pair
    channel = socket.socket(fileno=channel_fd)
    try:
        how, listener, tables = _isolate(port, binds)
    except _Refused as exc:
        return _fail(channel, "error", str(exc), _EXIT_ISOLATION)
    except _MountFailed as exc:
        return _fail(channel, "mount_error", str(exc), _EXIT_ISOLATION)
    names = ["listener", *tables]
    fds = [listener.fileno(), *tables.values()]
    try:
        socket.send_fds(channel, [json.dumps({"how": how, "pid": os.getpid(), "fds": names}).encode()], fds)
        poller = select.poll()
        poller.register(channel, select.POLLIN)
        ack = channel.recv(16) if poller.poll(int(timeout_s * 1000)) else None
    except OSError as exc:
        ack, reason = None, str(exc)
    else:
        reason = "no answer" if ack is None else "it hung up"
    if ack != GO:
        print(f"harness.netns: the harness did not take the listener within {timeout_s:g}s ({reason})",
              file=sys.stderr, flush=True)
        return _EXIT_ISOLATION
    listener.close()  # the harness holds the listener now; the agent must not
    for fd in tables.values():
        os.close(fd)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # ignored by the interpreter, as subprocess's restore_signals undoes
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvpe(argv[0], argv, _original_environment())
    except OSError as exc:  # the same words as harness/process.py's when Popen cannot start a program
        code = _EXIT_NOT_FOUND if exc.errno == errno.ENOENT else _EXIT_CANNOT_EXEC
        return _fail(channel, "exec_error", f"cannot start {argv[0]!r}: [Errno {exc.errno}] {exc.strerror}: {argv[0]!r}", code)
    return _EXIT_CANNOT_EXEC  # not reached


def _launcher_main(args: list[str]) -> int:
    if args == ["--probe"]:
        return _probe_main()
    options: dict[str, str] = {}
    binds: list[tuple[str, str]] = []
    while args and args[0] != "--":
        if len(args) < 2:
            break
        if args[0] == "--bind" and "=" in args[1]:
            target, source = args[1].split("=", 1)
            binds.append((target, source))
        else:
            options[args[0]] = args[1]
        args = args[2:]
    argv = args[1:]
    if set(options) != {"--port", "--channel", "--timeout"} or not argv:
        print("usage: netns_launcher.py --port PORT --channel FD --timeout SECONDS [--bind TARGET=SOURCE]... "
              "-- ARGV... | --probe", file=sys.stderr)
        return 2
    return _launch(int(options["--port"]), int(options["--channel"]), float(options["--timeout"]), argv, binds)


if __name__ == "__main__":
    sys.exit(_launcher_main(sys.argv[1:]))
