"""The launcher that puts one agent step in a network namespace of its own (see harness/isolation/netns.py).

Run as a script with the standard library only (`python -I -S netns_launcher.py`):
it enters a new network namespace, brings `lo` up, listens on the fake API's
port there, hands that listener and the namespace's /proc/net tables to the
harness over a socket pair, waits for the acknowledgement, then execs the agent.
With `--bind TARGET=SOURCE` (repeatable) it also enters a mount namespace, makes
every mount in it private, and binds each SOURCE over its TARGET first.
It must not import the harness: `-I` keeps the checkout off sys.path.

Every step pays for this interpreter's start before the agent's own, so it
imports as little as it can: its few messages are written by `_json` below
rather than by the json module, whose import (and re's) took about a quarter
of the launcher's time, and it uses the C modules under socket and signal
(_socket, _signal), whose Python wrappers import enum, functools and selectors
for another fifth. The probe, run once per harness process, uses socket itself.
"""

from __future__ import annotations

import _signal
import _socket
import ctypes
import errno
import os
import select
import struct
import sys

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_EXIT_ISOLATION, _EXIT_CANNOT_EXEC, _EXIT_NOT_FOUND = 125, 126, 127  # as env(1) and unshare(1)
TABLES = ("tcp", "tcp6", "snmp", "snmp6")  # sent in this order: tcp tables for the sending pid, snmp for the report
_NETLINK_SOCK_DIAG = 4  # sent after them as "diag": a sock_diag socket of the namespace, for the sending pid
GO = b"go"  # the harness's acknowledgement: the listener is served, exec the agent


class _Refused(Exception):
    pass


class _MountFailed(Exception):
    """A namespace was had, but a private directory could not be bound: the step fails, naming the paths."""


WAYS = (("network namespace", CLONE_NEWNET, "CLONE_NEWNET"),
         ("user and network namespace", CLONE_NEWUSER | CLONE_NEWNET, "CLONE_NEWUSER|CLONE_NEWNET"))


def _enter_namespace(mounts: bool = False) -> str:
    """A network namespace with lo up: as root; else (or where root may not bring lo up) inside a user namespace.

    `mounts`: a mount namespace too, in the same unshare (in a user namespace, one it owns).
    """
    libc = ctypes.CDLL(None, use_errno=True)
    failures = []
    for how, flags, name in WAYS:
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
            loopback_up()
        except OSError as exc:  # e.g. a container's root without CAP_NET_ADMIN: try the next way
            failures.append(f"in a new {how}: {exc}")
            continue
        return how
    raise _Refused("; ".join(failures))


def loopback_up() -> None:
    import fcntl  # POSIX only: imported where it is used, so that importing this module works anywhere

    probe = _socket.socket(_socket.AF_INET, _socket.SOCK_DGRAM)
    try:
        request = struct.pack("16sh22x", b"lo", 0)
        flags = struct.unpack_from("16sh", fcntl.ioctl(probe.fileno(), _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe.fileno(), _SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | _IFF_UP))
    finally:
        probe.close()


def _bind_private(binds: list[tuple[str, str]]) -> None:
    """In the new mount namespace: nothing propagates to the host's, then each source over its target."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p)
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise _MountFailed(f"cannot make the mounts under / private: {os.strerror(ctypes.get_errno())}")
    for target, source in binds:
        if libc.mount(os.fsencode(source), os.fsencode(target), None, MS_BIND | MS_REC, None) != 0:
            code = ctypes.get_errno()
            raise _MountFailed(f"cannot bind {source} over {target}: [Errno {code}] {os.strerror(code)}")


def _isolate(port: int, binds: list[tuple[str, str]] | None = None) -> tuple[str, _socket.socket, dict[str, int]]:
    try:
        how = _enter_namespace(mounts=bool(binds))
        if binds:
            _bind_private(binds)
        listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
    except _Refused:
        raise
    except OSError as exc:
        raise _Refused(str(exc)) from None
    tables = {}
    for name in TABLES:
        try:
            tables[name] = os.open(f"/proc/self/net/{name}", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:  # tcp6, snmp6: absent without IPv6
            pass
    try:  # sock_diag in this namespace: the harness finds a connection's socket without reading whole tables
        tables["diag"] = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW, _NETLINK_SOCK_DIAG).detach()
    except (OSError, AttributeError):  # refused here: the harness reads the tables instead
        pass
    return how, listener, tables


def _probe_main() -> int:
    """Prints {"ok": true, "how": ...} when a namespace works here as steps need it."""
    import socket

    try:
        how, bare_listener, _ = _isolate(0)
        listener = socket.socket(fileno=bare_listener.detach())
        with socket.create_connection(listener.getsockname(), timeout=5):
            listener.accept()[0].close()
        outside = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        outside.setblocking(False)
        code = outside.connect_ex(("10.255.255.1", 80))
        if code != errno.ENETUNREACH:
            raise _Refused(f"a connection to 10.255.255.1:80 got {errno.errorcode.get(code, code)}, not ENETUNREACH")
    except (_Refused, OSError) as exc:
        print(_json({"ok": False, "reason": str(exc)}))
        return 1
    print(_json({"ok": True, "how": how}))
    return 0


def _json(value: object) -> str:
    """JSON as json.dumps writes it by default (ASCII only): for the launcher's own small messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return '"' + "".join(_json_char(c) for c in value) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_json(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_json(str(k))}: {_json(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not written by the launcher: {type(value).__name__}")


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _json_char(char: str) -> str:
    if char in _JSON_ESCAPES:
        return _JSON_ESCAPES[char]
    code = ord(char)
    if 0x20 <= code < 0x7F:
        return char
    if code > 0xFFFF:  # a surrogate pair, as json.dumps writes it
        code -= 0x10000
        return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def _original_environment() -> dict[bytes, bytes]:
    """The environment as exec'd: the interpreter may have added to its own (LC_CTYPE, PEP 538)."""
    try:
        with open("/proc/self/environ", "rb") as handle:
            entries = handle.read().split(b"\0")
    except OSError:
        return dict(os.environb)
    return dict(entry.split(b"=", 1) for entry in entries if b"=" in entry)


def _fail(channel: _socket.socket, key: str, message: str, code: int) -> int:
    print(f"harness.isolation.netns: {message}", file=sys.stderr, flush=True)
    try:
        channel.send(_json({key: message}).encode())
    except OSError:
        pass
    return code


def _launch(port: int, channel_fd: int, timeout_s: float, argv: list[str],
            binds: list[tuple[str, str]] | None = None) -> int:
    os.set_inheritable(channel_fd, False)  # the agent never sees the pair
    channel = _socket.socket(fileno=channel_fd)
    try:
        how, listener, tables = _isolate(port, binds)
    except _Refused as exc:
        return _fail(channel, "error", str(exc), _EXIT_ISOLATION)
    except _MountFailed as exc:
        return _fail(channel, "mount_error", str(exc), _EXIT_ISOLATION)
    names = ["listener", *tables]
    fds = [listener.fileno(), *tables.values()]
    try:
        message = _json({"how": how, "pid": os.getpid(), "fds": names}).encode()
        channel.sendmsg([message], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))])
        poller = select.poll()
        poller.register(channel, select.POLLIN)
        ack = channel.recv(16) if poller.poll(int(timeout_s * 1000)) else None
    except OSError as exc:
        ack, reason = None, str(exc)
    else:
        reason = "no answer" if ack is None else "it hung up"
    if ack != GO:
        print(f"harness.isolation.netns: the harness did not take the listener within {timeout_s:g}s ({reason})",
              file=sys.stderr, flush=True)
        return _EXIT_ISOLATION
    listener.close()  # the harness holds the listener now; the agent must not
    for fd in tables.values():
        os.close(fd)
    for sig in (_signal.SIGPIPE, _signal.SIGXFSZ):  # ignored by the interpreter, as subprocess's restore_signals undoes
        _signal.signal(sig, _signal.SIG_DFL)
    try:
        os.execvpe(argv[0], argv, _original_environment())
    except OSError as exc:  # the same words as harness/isolation/process.py's when Popen cannot start a program
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
