"""Each agent step in a network namespace of its own: loopback only, with the fake API at its usual address.

The proxy variables catch only clients that honour them. Here the kernel does
the rest: a step runs where the only interface is `lo`, so a connection to any
other host fails at once with "network unreachable", a connection to another
port on loopback is refused (it is a different loopback), and the fake API is
still reachable at the same base URL, http://127.0.0.1:PORT.

How, per step (Linux):

1. The step's argv becomes `PYTHON -I -S harness/isolation/netns_launcher.py --port
   PORT --channel FD -- AGENT ARGV...`. That file, run as a script (standard
   library only), is the launcher: it enters a new network namespace
   (unshare(CLONE_NEWNET); without that privilege, CLONE_NEWUSER|CLONE_NEWNET
   with the caller's own uid and gid mapped onto themselves, so the agent keeps
   its identity), brings `lo` up (an ioctl, no `ip` needed), and listens on
   127.0.0.1:PORT there: the port the fake API has outside.
2. A listening socket belongs to the namespace it was created in, but any
   process holding it can accept on it. The launcher hands it to the harness
   over a socket pair (SCM_RIGHTS), with that namespace's /proc/net tables
   (tcp, tcp6 for the sending pid; snmp, snmp6 for the report) and a
   sock_diag socket opened there (the sending pid's connection, looked up
   exactly instead of by reading the tables: harness/fakeapi/peer.py). The harness
   gives the listener to the running fake API (FakeAPIServer.adopt_listener),
   so the agent's connections reach the same handler, script and journal, and
   acknowledges.
3. The launcher puts back what the interpreter changed at its start (the
   environment, from /proc/self/environ; SIGPIPE and SIGXFSZ) and execs the
   agent: the agent's pid is the launcher's, in the same process group and
   session, so harness/isolation/process.py's timeout and leftover cleanup cover it and
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

Private directories (`private_dirs`, e.g. {"/var/tmp": WORKSPACE/var-tmp}):
some agents write outside their workspace where the harness cannot redirect
them; `inspect eval` (Inspect AI) leaves /var/tmp/.<hex> and
/var/tmp/sandbox-services on the host. For such a step the launcher also enters
a mount namespace (in the same unshare), makes every mount in it private
(nothing propagates back to the host's) and binds each directory over its path
before exec; the notes say "private /var/tmp: bound to DIR". A bind that fails
fails the step, naming the paths. Where namespaces are unavailable or switched
off, the step runs without, and its notes say "/var/tmp not private: ...".

Where the harness is root, a run's steps share one namespace instead, made
once and entered per step without the launcher (harness/isolation/run_netns.py,
which says when); the guarantees above are the same.

The namespace keeps accidents in; it is not a jail: an agent running as real
root may still setns() back into the host's network namespace.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Mapping, Sequence

from harness.isolation import lifetime, run_netns, stopping
from harness.isolation import netns_launcher as launcher
from harness.isolation.netns_counters import attempts_note, read_counters
if TYPE_CHECKING:
    from harness.fakeapi.server import FakeAPIServer

SWITCH = "HARNESS_NETNS"  # "off" (or 0, false, no) runs steps without a namespace, with a note saying so
HANDSHAKE_TIMEOUT_S = 30.0  # launcher → harness: listener handed over; harness → launcher: acknowledged
LAUNCHER = [sys.executable, "-I", "-S", str(Path(launcher.__file__).resolve())]  # -I -S: no site, no PYTHON* variables
PROXY_ONLY = "outbound traffic only caught through the proxy variables"
PER_RUN = True  # False: a namespace per step, the launcher's way even as root (the bench's "before"; launcher tests)


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
    netns: str | None = None  # the run's namespace, as a path: the step is started in it (run_netns.py)


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
        with stopping.unblocked():  # the probe must not inherit the harness's blocked stop signals
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
def isolated_step(argv: Sequence[str], server: "FakeAPIServer",
                  private_dirs: Mapping[str, Path] | None = None) -> Iterator[StepIsolation]:
    """`with isolated_step(argv, server) as iso: run_process(iso.argv, ..., pass_fds=iso.pass_fds)`.

    Inside, the argv runs in a network namespace of its own whose 127.0.0.1:server.port
    is served by `server`; afterwards iso.error (if set) is the step's error and iso.notes
    go into the step's notes. Off or unavailable: the argv unchanged, and a note saying so.
    `private_dirs` maps an absolute path (e.g. "/var/tmp") to an existing host directory
    that the step sees there instead, in a mount namespace of its own.
    """
    binds = _binds(private_dirs)
    unbound = lifetime.binding_notes()  # whichever way the step runs, its processes die with the harness, or it says why not
    if switched_off():
        off = f"network isolation off ({SWITCH}={os.environ[SWITCH]})"
        yield StepIsolation(list(argv), notes=[f"{off}: {PROXY_ONLY}", *_not_private(binds, off), *unbound])
        return
    can = availability()
    if not can.available:
        yield StepIsolation(list(argv), notes=[f"network namespaces unavailable here: {can.reason}; {PROXY_ONLY}",
                                               *_not_private(binds, f"namespaces unavailable here: {can.reason}"),
                                               *unbound])
        return
    shared = run_netns.for_server(server) if PER_RUN and not binds and can.how == launcher.WAYS[0][0] else None
    if shared is not None:  # the run's namespace, entered as the step starts: no launcher, no handshake
        before = shared.counters()
        isolation = StepIsolation(list(argv), isolated=True, netns=shared.path, notes=list(unbound))
        try:
            yield isolation
        finally:
            note = attempts_note(run_netns.counted_since(before, shared.counters()))
            isolation.notes.extend([note] if note else [])
        return
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    handover = _Handover(ours, theirs, server, binds)
    isolation = StepIsolation(
        [*LAUNCHER, "--port", str(server.port), "--channel", str(theirs.fileno()),
         "--timeout", f"{HANDSHAKE_TIMEOUT_S:g}", *(arg for t, s in binds for arg in ("--bind", f"{t}={s}")),
         "--", *argv],
        pass_fds=(theirs.fileno(),), isolated=True, notes=list(unbound),
    )
    handover.start()
    try:
        yield isolation
    finally:
        handover.finish()
        isolation.error = handover.error
        isolation.notes.extend(handover.notes)


def _binds(private_dirs: Mapping[str, Path] | None) -> list[tuple[str, str]]:
    """(target, source) pairs for the launcher's `--bind TARGET=SOURCE`: absolute paths, no "=" in a target."""
    binds = []
    for target, source in (private_dirs or {}).items():
        if not os.path.isabs(target) or "=" in target:
            raise ValueError(f"a private directory's path must be absolute and without '=': {target!r}")
        binds.append((os.path.normpath(target), os.path.abspath(source)))
    return binds


def _not_private(binds: Sequence[tuple[str, str]], why: str) -> list[str]:
    return [f"{target} not private: {why}; the step shares the host's {target}" for target, _ in binds]


class _Handover:
    """The harness's half of one step's handshake: receive, adopt, acknowledge, then watch the exec."""

    def __init__(self, ours: socket.socket, theirs: socket.socket, server: "FakeAPIServer",
                 binds: Sequence[tuple[str, str]] = ()):
        self._thread = threading.Thread(target=self._run, name="netns-handover", daemon=True)
        self._ours, self._theirs, self._server, self._binds = ours, theirs, server, binds
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
        if "mount_error" in message:
            targets = ", ".join(target for target, _ in self._binds)
            self.error = (f"could not make {targets} private to the step: {message['mount_error']} "
                          "(the agent was not started)")
            return
        named = dict(zip(message["fds"], fds))
        from harness.fakeapi.peer import NamespaceTables

        self._tables = NamespaceTables([named[n] for n in ("tcp", "tcp6") if n in named], diag=named.get("diag"))
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
            self._ours.send(launcher.GO)
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
        if self.handed_over:  # the launcher bound the private directories before it handed over
            self.notes.extend(f"private {target}: bound to {source}" for target, source in self._binds)
            note = attempts_note(read_counters(self._counter_fds))
            if note:
                self.notes.append(note)
        if self._tables is not None:
            self._tables.close()
        for fd in self._counter_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._ours.close()
