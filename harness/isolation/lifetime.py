"""No agent outlives the harness: every step is started by a step warden, a subreaper that cleans up when the harness dies.

A SIGKILLed harness cannot clean up after itself, so something else must: on
Linux, each harness process (`harness run`, each `-n N` worker, `harness diff`,
a pytest process) starts one small warden (harness/isolation/warden.py, standard library
only, started once per process, not per step). The warden forks every step
process (run_process asks it instead of starting the step itself), is their
child subreaper (PR_SET_CHILD_SUBREAPER), so whatever a step leaves behind,
children, grandchildren and double-forked daemons alike, becomes its child
rather than init's, and it holds one end of a socket whose other end only the
harness holds: when the harness goes, by SIGKILL, a crash or a normal exit,
the kernel closes it, and the warden kills every process in its tree, its
children until none is left, then exits. Each step process also gets
PR_SET_PDEATHSIG(SIGKILL) against the warden, so a warden killed itself takes
the step's root process with it.

Why not the other ways:
- PR_SET_PDEATHSIG alone (set by the netns launcher before exec) kills only the
  direct child, not its children or daemons; it fires when the *thread* that
  forked the child exits, and a harness starts steps from whatever thread runs
  them; and with HARNESS_NETNS=off there is no launcher to set it, while a
  Python preexec_fn in the harness is unsafe with its threads.
- The harness as its own child subreaper gathers the orphans, but a SIGKILLed
  subreaper hands them on to init, alive: it is the cleaner that must survive.
- A PID namespace per step kills everything in it when its init dies, double
  forks included; but the agent would see pid 1 or 2, not the pid the harness
  and the journal record (the step's pid is how the fake API tells the step's
  requests from anyone else's, and /proc/<getpid()> would name another
  process unless /proc were mounted anew per step), its init ignores SIGTERM
  without a handler (the timeout's first signal) and must reap orphans, and it
  needs namespaces, which HARNESS_NETNS=off and locked-down machines do not
  give. The warden works the same whether or not the step has a network
  namespace, and the agent keeps its pid, process group and session.

What is not covered: a warden killed by SIGKILL before the harness (its steps'
root processes die with it through the death signal; their children then go
to init); and the step is not a jail, as the namespace is not. An agent can
still name the harness's pid (from /proc; its parent is the warden):
harness/isolation/stopping.py reports a stop it sends as coming from a step.

Where the warden cannot run (not Linux, prctl refused, its start failed),
steps start as before, straight from the harness, and every step's notes say
that its processes are not bound to the harness's lifetime.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from harness.isolation import warden as warden_script
WARDEN = [sys.executable, "-I", "-S", str(Path(warden_script.__file__).resolve())]  # -I -S: no site, no PYTHON*
READY_TIMEOUT_S = 30.0
UNBOUND = "the step's processes are not bound to the harness's lifetime"


class WardenLost(Exception):
    """The warden went away while a step ran (killed, or it crashed): the step's end was not seen."""


class SpawnFailed(Exception):
    """The program could not start; the text is subprocess's ("[Errno 2] No such file or directory: 'x'")."""


@dataclass(frozen=True)
class Binding:
    bound: bool
    warden_pid: int | None = None
    reason: str = ""  # why not, when unbound


class StepProcess:
    """A step the warden started, as much of subprocess.Popen as run_process uses: pid, wait, returncode."""

    def __init__(self, step: socket.socket, pid: int, args: Sequence[str], warden_pid: int):
        self._step, self.pid, self.args, self.warden_pid = step, pid, list(args), warden_pid
        self.returncode: int | None = None
        self.orphans = 0  # processes it left that had come to the warden, killed when it ended
        self.cpu_s: float | None = None  # its user and system time, with the children it waited for
        self.signals: list[dict] = []  # stop signals the warden was sent while the step ran
        self.lost = False

    def exit_fd(self) -> int:
        """Readable when the warden has something to say about the step; its exit among them."""
        return self._step.fileno()

    def read_available(self) -> None:
        while self.returncode is None and not self.lost and select.select([self._step], [], [], 0)[0]:
            self._read_one()

    def _read_one(self) -> None:
        try:
            data = self._step.recv(65536)
        except OSError:
            data = b""
        if not data:
            self.lost = True
            return
        message = json.loads(data)
        if "exit" in message:
            self.returncode = os.waitstatus_to_exitcode(message["exit"])
            self.orphans = message.get("orphans", 0)
            self.cpu_s = message.get("cpu_s")
            self._step.close()
        elif "signal" in message:
            self.signals.append(message)

    def poll(self) -> int | None:
        self.read_available()
        if self.lost:
            raise WardenLost(f"the harness's step warden (pid {self.warden_pid}) went away while the step ran")
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise subprocess.TimeoutExpired(self.args, timeout)
            select.select([self._step], [], [], remaining)
        return self.returncode

    def close(self) -> None:
        self._step.close()


class _Warden:
    def __init__(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.process = subprocess.Popen(
                [*WARDEN, str(theirs.fileno())], pass_fds=(theirs.fileno(),), cwd="/", start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            theirs.close()
        self.control = ours
        self._lock = threading.Lock()
        ready = select.select([ours], [], [], READY_TIMEOUT_S)[0]
        said = json.loads(ours.recv(65536) or b"{}") if ready else {"error": f"no answer within {READY_TIMEOUT_S:g}s"}
        if "ready" not in said:
            self.close()
            raise OSError(said.get("error") or f"it exited with code {self.process.wait()} before it was ready")
        self.pid = said["ready"]

    def spawn(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path, stdout: int, stderr: int,
              pass_fds: Sequence[int] = (), terminal: str | None = None, netns: str | None = None) -> StepProcess:
        # As subprocess.Popen raises "subprocess.Popen" (PEP 578): the process is started by the warden, but it is
        # this process that starts it, and an audit hook watching for process starts must see it.
        sys.audit("harness.step.spawn", argv[0], list(argv), cwd)
        body = os.memfd_create("harness-step", os.MFD_CLOEXEC)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            os.write(body, json.dumps({"argv": list(argv), "env": dict(env), "cwd": str(cwd), "pass": list(pass_fds),
                                       "terminal": terminal, "netns": netns}).encode())
            with self._lock:
                try:
                    socket.send_fds(self.control, [b"spawn"], [theirs.fileno(), body, stdout, stderr, *pass_fds])
                except OSError as exc:
                    raise WardenLost(f"the harness's step warden (pid {self.pid}) is gone: {exc}") from None
        finally:
            theirs.close()
            os.close(body)
        return self._started(ours, argv)

    def _started(self, ours: socket.socket, argv: Sequence[str]) -> StepProcess:
        """The warden's first word on the step: started (its pid), or why it could not start."""
        try:
            data = ours.recv(65536)
        except KeyboardInterrupt:  # stopped while the step was starting: it must not run on unwatched
            try:
                said = json.loads(ours.recv(65536) or b"{}") if select.select([ours], [], [], 5)[0] else {}
                if "started" in said:
                    os.killpg(said["started"], signal.SIGKILL)
            except (OSError, ValueError):
                pass
            finally:
                ours.close()
            raise
        if not data:
            ours.close()
            raise WardenLost(f"the harness's step warden (pid {self.pid}) went away as the step started")
        said = json.loads(data)
        if "exec_error" in said:
            ours.close()
            raise SpawnFailed(said["exec_error"])
        return StepProcess(ours, said["started"], argv, self.pid)

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        self.control.close()


_lock = threading.Lock()
_current: _Warden | None = None
_failure: str | None = None


def warden() -> _Warden | None:
    """This process's warden, started on first use (again if the last one died); None where it cannot run."""
    global _current, _failure
    with _lock:
        if _current is not None and not _current.alive():
            _current.close()
            _current = None
        if _current is None and _failure is None:
            if not sys.platform.startswith("linux"):
                _failure = f"the step warden needs Linux's child subreapers (this is {sys.platform})"
            else:
                try:
                    _current = _Warden()
                except OSError as exc:
                    _failure = f"the step warden could not start: {exc}"
        return _current


def binding() -> Binding:
    current = warden()
    if current is None:
        return Binding(False, reason=_failure or "unknown")
    return Binding(True, warden_pid=current.pid)


def binding_notes() -> list[str]:
    """For a step's notes: nothing when its processes are bound to the harness's lifetime, else why not."""
    bound = binding()
    return [] if bound.bound else [f"{UNBOUND}: {bound.reason}; a SIGKILLed harness would leave them running"]


def spawn(argv: Sequence[str], env: Mapping[str, str], cwd: Path, stdout: int, stderr: int,
          pass_fds: Sequence[int] = (), terminal: str | None = None, netns: str | None = None) -> StepProcess | None:
    """The step started by this process's warden; None where there is none (the caller starts it itself).

    `terminal`: the path of a pseudo-terminal's slave, the step's stdin and controlling terminal (an interactive step).
    `netns`: a network namespace's path, the step started in it (a run's, harness/isolation/run_netns.py).
    A warden found dead is replaced once. Raises SpawnFailed when the program cannot start.
    """
    for attempt in (1, 2):
        current = warden()
        if current is None:
            return None
        try:
            return current.spawn(argv, env, cwd, stdout, stderr, pass_fds, terminal, netns)
        except WardenLost:
            if attempt == 2:
                raise
            _forget(current)
    raise AssertionError("not reached")


def _forget(dead: _Warden) -> None:
    """Drop a warden found dead: the next step starts a new one."""
    global _current
    with _lock:
        if _current is dead:
            _current.close()
            _current = None


def _forget_in_child() -> None:
    """A forked child (os.fork, multiprocessing's "fork") starts a warden of its own: the parent's serves the parent."""
    global _current, _failure, _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    if _current is not None:
        _current.close()
    _current, _failure = None, None


def _release_at_exit() -> None:
    """An orderly exit ends the warden as a SIGKILL would (its socket closes), then collects it, so a finished
    harness leaves neither its steps' leftovers nor a zombie warden behind for init to reap."""
    global _current
    with _lock:
        current, _current = _current, None
    if current is None:
        return
    current.close()
    try:
        current.process.wait(timeout=RELEASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        current.process.kill()
        current.process.wait()


RELEASE_TIMEOUT_S = 10.0  # the warden's last round of killing what the steps left, at the harness's exit
atexit.register(_release_at_exit)
os.register_at_fork(after_in_child=_forget_in_child)
