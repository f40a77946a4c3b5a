"""Each agent step in a network namespace of its own: loopback only, with the fake API at its usual address.

The proxy variables catch only clients that honour them. Here the kernel does
the rest: a step runs where the only interface is `lo`, so a connection to any
other host fails at once with "network unreachable", a connection to another
port on loopback is refused (it is a different loopback), and the fake API is
still reachable at the same base URL, http://127.0.0.1:PORT.

How, per step (Linux):

1. The step's argv becomes `PYTHON -I -S harness/netns.py --port PORT
   --channel FD -- AGENT ARGV...`. This file, run as a script (standard library
   only), is the launcher: it enters a new network namespace
   (unshare(CLONE_NEWNET); without that privilege, CLONE_NEWUSER|CLONE_NEWNET
   with the caller's own uid and gid mapped onto themselves, so the agent keeps
   its identity), brings `lo` up (an ioctl, no `ip` needed), and listens on
   127.0.0.1:PORT there: the port the fake API has outside.
2. A listening socket belongs to the namespace it was created in, but any
   process holding it can accept on it. The launcher hands it to the harness
   over a socket pair (SCM_RIGHTS), with that namespace's /proc/net tables
   (tcp, tcp6 for the sending pid; snmp, snmp6 for the report). The harness
   gives the listener to the running fake API (FakeAPIServer.adopt_listener),
   so the agent's connections reach the same handler, script and journal, and
   acknowledges.
3. The launcher puts back what the interpreter changed at its start (the
   environment, from /proc/self/environ; SIGPIPE and SIGXFSZ) and execs the
   agent: the agent's pid is the launcher's, in the same process group and
   session, so harness/process.py's timeout and leftover cleanup cover it and
   its children exactly as before. If exec fails, the launcher says so over the
   pair (which exec would otherwise close) and exits 127.
4. When the step has ended, the harness closes the listener and reports, from
   the namespace's counters, the attempts to reach elsewhere that failed.

If the launcher fails before exec (unshare refused, no handover within
HANDSHAKE_TIMEOUT_S), the step fails with the cause; it never hangs: both
sides wait for each other with a timeout.

Where namespaces are unavailable (not Linux, or unshare refused for both
variants: probed once per process), and when HARNESS_NETNS=off, steps run as
before (the proxy variables point at the fake API, which journals and refuses
other hosts) and every step's notes say so.

The namespace keeps accidents in; it is not a jail: an agent running as real
root may still setns() back into the host's network namespace.
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
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Sequence

if TYPE_CHECKING:  # the launcher runs this file with the standard library only
    from harness.fakeapi.server import FakeAPIServer

SWITCH = "HARNESS_NETNS"  # "off" (or 0, false, no) runs steps without a namespace, with a note saying so
HANDSHAKE_TIMEOUT_S = 30.0  # launcher → harness: listener handed over; harness → launcher: acknowledged
LAUNCHER = [sys.executable, "-I", "-S", str(Path(__file__).resolve())]  # -I -S: no site, no PYTHON* variables
PROXY_ONLY = "outbound traffic only caught through the proxy variables"

CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1
_EXIT_ISOLATION, _EXIT_CANNOT_EXEC, _EXIT_NOT_FOUND = 125, 126, 127  # as env(1) and unshare(1)
_TABLES = ("tcp", "tcp6", "snmp", "snmp6")
_GO = b"go"


# ============================================================================ harness side


@dataclass(frozen=True)
class Availability:
    available: bool
    how: str = ""  # "network namespace" or "user and network namespace"
    reason: str = ""  # why not, when unavailable


@dataclass
class StepIsolation:
    """What the runner needs around run_process; `notes` and `error` are final once the `with` block has ended."""

    argv: list[str]
    pass_fds: tuple[int, ...] = ()
    isolated: bool = False
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # the step could not be isolated or started: the step's error, naming the cause


_probe_lock = threading.Lock()
_probe_result: Availability | None = None


def switched_off() -> bool:
    return os.environ.get(SWITCH, "").strip().lower() in ("off", "0", "false", "no")


def availability() -> Availability:
    """Whether this machine lets a step have its own network namespace: probed once per process, then cached."""
    global _probe_result
    with _probe_lock:
        if _probe_result is None:
            _probe_result = _probe()
        return _probe_result


def _probe() -> Availability:
    if not sys.platform.startswith("linux"):
        return Availability(False, reason=f"network namespaces are Linux only (this is {sys.platform})")
    try:
        done = subprocess.run([*LAUNCHER, "--probe"], stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=HANDSHAKE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability(False, reason=f"the probe could not run: {exc}")
    try:
        answer = json.loads(done.stdout.decode("utf-8", errors="replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        said = (done.stderr or done.stdout).decode("utf-8", errors="replace").strip()[-300:]
        return Availability(False, reason=f"the probe exited with code {done.returncode}: {said or 'no output'}")
    if answer.get("ok"):
        return Availability(True, how=answer["how"])
    return Availability(False, reason=answer.get("reason") or "unknown")


@contextlib.contextmanager
def isolated_step(argv: Sequence[str], server: "FakeAPIServer") -> Iterator[StepIsolation]:
    """`with isolated_step(argv, server) as iso: run_process(iso.argv, ..., pass_fds=iso.pass_fds)`.

    Inside, the argv runs in a network namespace of its own whose 127.0.0.1:server.port
    is served by `server`; afterwards iso.error (if set) is the step's error and iso.notes
    go into the step's notes. Off or unavailable: the argv unchanged, and a note saying so.
    """
    if switched_off():
        yield StepIsolation(list(argv), notes=[f"network isolation off ({SWITCH}={os.environ[SWITCH]}): {PROXY_ONLY}"])
        return
    can = availability()
    if not can.available:
        yield StepIsolation(list(argv), notes=[f"network namespaces unavailable here: {can.reason}; {PROXY_ONLY}"])
        return
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    handover = _Handover(ours, theirs, server)
    isolation = StepIsolation(
        [*LAUNCHER, "--port", str(server.port), "--channel", str(theirs.fileno()),
         "--timeout", f"{HANDSHAKE_TIMEOUT_S:g}", "--", *argv],
        pass_fds=(theirs.fileno(),), isolated=True,
    )
    handover.start()
    try:
        yield isolation
    finally:
        handover.finish()
        isolation.error = handover.error
        isolation.notes.extend(handover.notes)


class _Handover:
    """The harness's half of one step's handshake: receive, adopt, acknowledge, then watch the exec."""

    def __init__(self, ours: socket.socket, theirs: socket.socket, server: "FakeAPIServer"):
        self._thread = threading.Thread(target=self._run, name="netns-handover", daemon=True)
        self._ours, self._theirs, self._server = ours, theirs, server
        self._over = threading.Event()
        self._lock = threading.Lock()
        self._adopted = None
        self._tables = None
        self._counter_fds: list[int] = []
        self.handed_over = False
        self.error: str | None = None
        self.notes: list[str] = []

    # --------------------------------------------------------------- the thread

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            self._handshake()
        except Exception as exc:  # a fault here must fail the step with its cause, never hang it
            self.error = f"network isolation failed in the harness: {exc!r}"
            self._kill_step()

    def _handshake(self) -> None:
        deadline = time.monotonic() + HANDSHAKE_TIMEOUT_S
        message, fds, why = self._receive(deadline)
        if message is None:
            if why == "late":
                self.error = (f"could not isolate the step's network: the launcher did not hand over its listener "
                              f"within {HANDSHAKE_TIMEOUT_S:g}s; the step was killed")
                self._kill_step()
            else:
                self.error = ("could not isolate the step's network: the launcher exited before handing over "
                              "its listener (the agent was not started)")
            return
        if "error" in message:
            self.error = f"could not isolate the step's network: {message['error']} (the agent was not started)"
            return
        named = dict(zip(message["fds"], fds))
        from harness.fakeapi.peer import NamespaceTables

        self._tables = NamespaceTables([named[n] for n in ("tcp", "tcp6") if n in named])
        self._counter_fds = [named[n] for n in ("snmp", "snmp6") if n in named]
        listener = socket.socket(fileno=named["listener"])
        with self._lock:
            if self._over.is_set():  # the step is over already: nobody left to serve
                listener.close()
                return
            self._adopted = self._server.adopt_listener(listener, self._tables)
        self.handed_over = True
        self._close_theirs()  # the launcher holds its own copy; exec closes it: end of file means exec worked
        try:
            self._ours.send(_GO)
        except OSError:  # killed (a timeout, Ctrl-C) between handing over and being acknowledged
            self.error = ("could not isolate the step's network: the launcher exited during the handover "
                          "(the agent was not started)")
            return
        message, _, _ = self._receive(None)
        if message and "exec_error" in message:
            self.error = message["exec_error"]

    def _receive(self, deadline: float | None) -> tuple[dict | None, list[int], str]:
        """One message and its fds; or None, and why: "eof", "late" (past the deadline), "over" (the step ended)."""
        poller = select.poll()
        poller.register(self._ours, select.POLLIN)
        while not poller.poll(50):
            if self._over.is_set():
                if poller.poll(0):  # the launcher's last word, sent before it exited
                    break
                return None, [], "over"
            if deadline is not None and time.monotonic() > deadline:
                return None, [], "late"
        data, fds, _, _ = socket.recv_fds(self._ours, 65536, 8, socket.MSG_CMSG_CLOEXEC)
        if not data:
            return None, [], "eof"
        return json.loads(data), fds, "message"

    def _kill_step(self) -> None:
        pid = self._server.api.step_pid
        if pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self._ours.shutdown(socket.SHUT_RDWR)  # a launcher still waiting for its acknowledgement gives up

    def _close_theirs(self) -> None:
        with self._lock:
            self._theirs.close()

    # --------------------------------------------------------------- after the step

    def finish(self) -> None:
        with self._lock:
            self._over.set()
            self._theirs.close()
        self._thread.join(timeout=HANDSHAKE_TIMEOUT_S)
        if self._thread.is_alive():
            self.error = self.error or "network isolation: the handover thread did not finish"
        if self._adopted is not None:
            self._adopted.close()
        if self.handed_over:
            note = _attempts_note(_read_counters(self._counter_fds))
            if note:
                self.notes.append(note)
        if self._tables is not None:
            self._tables.close()
        for fd in self._counter_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._ours.close()


def _read_counters(fds: Sequence[int]) -> dict[str, int]:
    """The namespace's /proc/net/snmp ("Ip: names" / "Ip: values" line pairs) and snmp6 ("Name value" lines)."""
    counters: dict[str, int] = {}
    for fd in fds:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            text = b"".join(iter(lambda: os.read(fd, 65536), b"")).decode("ascii", errors="replace")
        except OSError:
            continue
        lines = text.splitlines()
        if lines and ":" in lines[0]:
            for names, values in zip(lines[::2], lines[1::2]):
                prefix, names = names.split(":", 1)
                for name, value in zip(names.split(), values.split(":", 1)[-1].split()):
                    counters[f"{prefix}.{name}"] = int(value)
        else:
            for line in lines:
                parts = line.split()
                if len(parts) == 2 and parts[1].lstrip("-").isdigit():
                    counters[parts[0]] = int(parts[1])
    return counters


def _attempts_note(counters: dict[str, int]) -> str | None:
    """What failed inside the namespace; the kernel counts, the harness cannot see where to."""
    no_route = counters.get("Ip.OutNoRoutes", 0) + counters.get("Ip6OutNoRoutes", 0)
    refused = counters.get("Tcp.AttemptFails", 0)
    closed = counters.get("Udp.NoPorts", 0) + counters.get("Udp6NoPorts", 0)
    parts = []
    if no_route:
        parts.append(f"{no_route} direct attempt(s) to reach another host failed at once (no route; DNS lookups included)")
    if refused:
        parts.append(f"{refused} TCP connection attempt(s) to another loopback port refused")
    if closed:
        parts.append(f"{closed} datagram(s) to a closed loopback port")
    return "network namespace: " + "; ".join(parts) if parts else None


# ============================================================================ launcher side (this file as a script)


class _Refused(Exception):
    pass


_WAYS = (("network namespace", CLONE_NEWNET, "CLONE_NEWNET"),
         ("user and network namespace", CLONE_NEWUSER | CLONE_NEWNET, "CLONE_NEWUSER|CLONE_NEWNET"))


def _enter_namespace() -> str:
    """A network namespace with lo up: as root; else (or where root may not bring lo up) inside a user namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    failures = []
    for how, flags, name in _WAYS:
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


def _isolate(port: int) -> tuple[str, socket.socket, dict[str, int]]:
    try:
        how = _enter_namespace()
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(128)
    except _Refused:
        raise
    except OSError as exc:
        raise _Refused(str(exc)) from None
    tables = {}
    for name in _TABLES:
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


def _launch(port: int, channel_fd: int, timeout_s: float, argv: list[str]) -> int:
    os.set_inheritable(channel_fd, False)  # the agent never sees the pair
    channel = socket.socket(fileno=channel_fd)
    try:
        how, listener, tables = _isolate(port)
    except _Refused as exc:
        return _fail(channel, "error", str(exc), _EXIT_ISOLATION)
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
    if ack != _GO:
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
    while args and args[0] != "--":
        if len(args) < 2:
            break
        options[args[0]] = args[1]
        args = args[2:]
    argv = args[1:]
    if set(options) != {"--port", "--channel", "--timeout"} or not argv:
        print("usage: netns.py --port PORT --channel FD --timeout SECONDS -- ARGV... | --probe", file=sys.stderr)
        return 2
    return _launch(int(options["--port"]), int(options["--channel"]), float(options["--timeout"]), argv)


if __name__ == "__main__":
    sys.exit(_launcher_main(sys.argv[1:]))
