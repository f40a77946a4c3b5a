"""The step warden: the process that starts every agent step, and kills what is left of them when the harness dies.

Run as a script with the standard library only (`python -I -S warden.py FD`),
once per harness process, by harness/isolation/lifetime.py (which says why this design).
It is a child subreaper (PR_SET_CHILD_SUBREAPER): a step's processes that
lose their parent, double-forked daemons included, become its children instead
of init's, so the whole of what the steps started stays in its process tree.
It forks each step on request and reports the step's exit; when the harness
goes (its end of the control socket closes: a SIGKILL, a crash, a normal exit
alike), it kills every process left in its tree and exits.

The control socket (SOCK_SEQPACKET, the harness's other end):
  warden → harness, once: {"ready": PID} or {"error": WHY} (then it exits).
  harness → warden, per step: b"spawn" with the fds [step socket, body, stdout,
  stderr, pass fds...]; body is a memfd holding {"argv", "env", "cwd", "pass"}
  ("pass": the numbers the pass fds get in the step, as the harness had them).
The step socket (SOCK_SEQPACKET, one per step), warden → harness:
  {"started": PID} once the step has exec'd, or {"exec_error": TEXT};
  {"signal": SIGNO, "sender": PID} for a stop signal someone sent the warden
  while the step ran (it never stops the warden);
  {"exit": WAIT_STATUS, "orphans": N, "cpu_s": S} when the step's process ended, N being
  the processes it left that had come to the warden and were killed with it.

What a step's process gets is what subprocess.Popen(start_new_session=True,
restore_signals=True) would give it from the harness (see _start), with a
signal mask that has nothing blocked: the harness blocks its stop signals for
harness/isolation/stopping.py, and no agent must inherit that.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import select
import signal
import socket
import struct
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}  # drained and reported, never obeyed
_MAX_FDS = 64
_prctl = ctypes.CDLL(None, use_errno=True).prctl
_WAKE_MS = 200  # how often the warden looks for stop signals sent to it (blocked: they do not wake the poll)
_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000
_home_netns: list[int] = []  # the warden's own network namespace, opened at the first step started in another


class Warden:
    def __init__(self, control: socket.socket):
        self.control = control
        self.pid = os.getpid()
        self.steps: dict[int, socket.socket] = {}  # a running step's pid -> its step socket
        self.wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)  # SIGCHLD wakes the poll: a step's exit is reported at once
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)

    def serve(self) -> None:
        poller = select.poll()
        poller.register(self.control, select.POLLIN)
        poller.register(self.wake_r, select.POLLIN)
        while True:
            for fd, _ in poller.poll(_WAKE_MS):
                if fd == self.wake_r:
                    os.read(self.wake_r, 4096)
                elif not self._request():
                    self.kill_everything()
                    return
            self._reap()
            self._drain_signals()

    # ------------------------------------------------------------------ a step

    def _request(self) -> bool:
        """One spawn request; False once the harness is gone."""
        try:
            data, fds = _receive(self.control)
        except OSError:
            return False
        if not data:
            return False
        if data != b"spawn" or len(fds) < 4:
            for fd in fds:
                os.close(fd)
            return True
        step = socket.socket(fileno=fds[0])
        try:
            body = json.loads(_read_file(fds[1]))
            self._spawn(step, body, fds[2], fds[3], fds[4:])
        except Exception as exc:  # a fault of the warden's own: the step's error, never a silent hang
            _send(step, {"exec_error": f"the harness's step warden could not start it: {exc!r}"})
            step.close()
        finally:
            for fd in fds[1:]:
                try:
                    os.close(fd)
                except OSError:
                    pass
        return True

    def _spawn(self, step: socket.socket, body: dict, stdout: int, stderr: int, passed: list[int]) -> None:
        try:
            pid = _start(body, [(stdout, 1), (stderr, 2), *zip(passed, body.get("pass", []))])
        except _CannotStart as exc:
            _send(step, {"exec_error": str(exc)})
            step.close()
            return
        self.steps[pid] = step
        _send(step, {"started": pid})

    def _reap(self) -> None:
        while True:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            step = self.steps.pop(pid, None)
            if step is not None:
                orphans = 0 if self.steps else self._kill_orphans()
                # the step's own CPU time and that of the children it waited for: the agent's time, not the harness's
                _send(step, {"exit": status, "orphans": orphans, "cpu_s": usage.ru_utime + usage.ru_stime})
                step.close()

    def _kill_orphans(self) -> int:
        """No step runs now: every child of the warden is something an ended step left. Killed, counted."""
        left = [pid for pid in _children(self.pid) if pid not in self.steps]
        for pid in left:
            _kill(pid)
        return len(left)

    def _drain_signals(self) -> None:
        while True:
            try:
                info = signal.sigtimedwait(STOP_SIGNALS, 0)
            except OSError:
                return
            if info is None:
                return
            in_step = _descends_from(info.si_pid, self.pid)
            for step in self.steps.values():
                _send(step, {"signal": info.si_signo, "sender": info.si_pid, "in_step": in_step})

    # ------------------------------------------------------------------ the harness is gone

    def kill_everything(self) -> None:
        """Kill the warden's children until it has none: each kill hands their own children to it (subreaper)."""
        while True:
            children = _children(self.pid)
            for pid in children:
                _kill(pid)
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                return  # no child left, not even one on its way to being reparented here
            if not children:
                time.sleep(0.005)
            else:
                try:
                    os.waitpid(-1, 0)
                except ChildProcessError:
                    return


class _CannotStart(Exception):
    """In the words subprocess uses when a program cannot start: "[Errno 2] No such file or directory: 'x'"."""

    def __init__(self, exc: OSError, name: str):
        super().__init__(f"[Errno {exc.errno}] {exc.strerror}: {name!r}")


def _start(body: dict, wanted: list[tuple[int, int]]) -> int:
    """The step's process, by posix_spawn (a vfork: no copy of the warden to fault in): its pid.

    As Popen(start_new_session=True, restore_signals=True, pass_fds=...) would start it from the harness:
    the program looked up on the step environment's PATH, its own session, stdin from /dev/null (or the step's
    pseudo-terminal, `terminal` in the body),
    SIGPIPE and SIGXFSZ back to the default, and a signal mask with nothing blocked. Every descriptor
    of the warden's is close-on-exec, so the step gets stdio and the pass fds only.
    """
    argv, env, cwd = body["argv"], body["env"], body["cwd"]
    try:
        os.chdir(cwd)  # the warden has one thread: its working directory is the step's until the next spawn
    except OSError as exc:
        raise _CannotStart(exc, cwd) from None
    floor = max([target for _, target in wanted] + [2]) + 1  # sources above every target: no dup2 clobbers one
    moved = [(fcntl.fcntl(source, fcntl.F_DUPFD_CLOEXEC, floor), target) for source, target in wanted]
    # A step in a pseudo-terminal opens it as stdin after setsid (posix_spawn's order), so it is the session's
    # controlling terminal, as a shell's child has one; any other step reads /dev/null.
    terminal = body.get("terminal")
    actions = [(os.POSIX_SPAWN_OPEN, 0, terminal or os.devnull, os.O_RDWR if terminal else os.O_RDONLY, 0)]
    actions += [(os.POSIX_SPAWN_DUP2, source, target) for source, target in moved]
    entered = _enter_netns(body.get("netns"))  # the run's namespace (harness/isolation/run_netns.py): inherited
    try:
        first_error = None
        for program in _candidates(argv[0], env):
            try:
                return os.posix_spawn(program, argv, env, file_actions=actions, setsid=True, setsigmask=(),
                                      setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD))
            except OSError as exc:  # as subprocess: the first error that is not "not here", else the last
                if first_error is None or (first_error.errno in (errno.ENOENT, errno.ENOTDIR)
                                           and exc.errno not in (errno.ENOENT, errno.ENOTDIR)):
                    first_error = exc
        raise _CannotStart(first_error or FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT)), argv[0])
    finally:
        if entered and _libc.setns(_home_netns[0], CLONE_NEWNET) != 0:
            os._exit(70)  # never start a later step in this one's namespace: the harness sees the warden gone
        for source, _ in moved:
            os.close(source)
        os.chdir("/")


def _enter_netns(path: str | None) -> bool:
    """The warden itself into a run's network namespace for one spawn (the step inherits it); True when entered."""
    if not path:
        return False
    if not _home_netns:
        _home_netns.append(os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise _CannotStart(OSError(exc.errno, f"cannot open the run's network namespace ({exc.strerror})"), path)
    entered, code = _libc.setns(fd, CLONE_NEWNET) == 0, ctypes.get_errno()
    os.close(fd)
    if not entered:
        raise _CannotStart(OSError(code, f"cannot enter the run's network namespace ({os.strerror(code)})"), path)
    return True


def _candidates(program: str, env: dict) -> list[str]:
    """Where exec would look for `program`: itself if it names a path, else each folder of the step's PATH."""
    if os.sep in program:
        return [program]
    return [os.path.join(folder, program) for folder in os.get_exec_path(env)]


def _children(pid: int) -> list[int]:
    """The warden's children (it has one thread, so its task's list is all of them); /proc scanned where absent."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as handle:
            return [int(child) for child in handle.read().split()]
    except OSError:
        pass
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                    if int(handle.read().rsplit(")", 1)[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


def _descends_from(pid: int, ancestor: int) -> bool:
    """Whether `pid` is in the process tree under `ancestor`: for the warden, a process some step started."""
    seen = 0
    while pid > 1 and seen < 4096:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
        if pid == ancestor:
            return True
        seen += 1
    return False


def _kill(pid: int) -> None:
    """SIGKILL a child of the warden and, if it leads one, its process group (safe: an unreaped child's pid is not reused)."""
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            if kill is os.kill or os.getpgid(pid) == pid:
                kill(target, signal.SIGKILL)
        except OSError:
            pass


def _wait_for(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _read_all(fd: int) -> bytes:
    """A pipe to its end of file."""
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _read_file(fd: int) -> bytes:
    """A file from its start, whatever its shared offset (the harness wrote it through the same open file)."""
    chunks, offset = [], 0
    while True:
        chunk = os.pread(fd, 1 << 20, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def _receive(sock: socket.socket) -> tuple[bytes, list[int]]:
    """A message and its fds, close-on-exec: a spawned step must inherit none of them (socket.recv_fds drops the flag)."""
    data, ancillary, _, _ = sock.recvmsg(64, socket.CMSG_SPACE(_MAX_FDS * 4), socket.MSG_CMSG_CLOEXEC)
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(struct.unpack(f"{len(payload) // 4}i", payload[: len(payload) - len(payload) % 4]))
    for fd in fds:
        os.set_inheritable(fd, False)
    return data, fds


def _send(step: socket.socket, message: dict) -> None:
    try:
        step.send(json.dumps(message).encode())
    except OSError:  # the harness has stopped waiting for this step (it was interrupted): nothing to tell
        pass


def main(args: list[str]) -> int:
    control = socket.socket(fileno=int(args[0]))
    control.set_inheritable(False)  # passed to the warden; never on to a step
    signal.pthread_sigmask(signal.SIG_SETMASK, STOP_SIGNALS)  # drained by the loop, never obeyed
    if _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        _send(control, {"error": f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}"})
        return 1
    warden = Warden(control)
    _send(control, {"ready": os.getpid()})
    warden.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
