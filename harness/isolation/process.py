"""One agent step as one fresh OS process, in its own process group, bounded in time.

A hung agent is killed with its whole group (children included), and anything
an agent leaves running after it exits is killed too, so no step can leak into
the next or outlive the run. The process is started by this harness process's
step warden (harness/isolation/lifetime.py), so that none of it outlives a harness that
was killed before it could clean up; where there is no warden, by the harness.
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from harness.isolation import lifetime, stopping
from harness.isolation.terminal import strip_escapes

GRACE_S = 2.0
# Set by the harness's own SIGINT/SIGTERM handler (harness/cli.py). The handler also raises KeyboardInterrupt,
# but Python drops an exception raised while a garbage-collector callback or a __del__ runs (Hypothesis times
# its gc with one), so a stop could be lost and the run go on: every wait for a step looks here as well.
_stop_requested = False


def request_stop() -> None:
    global _stop_requested
    _stop_requested = True


def check_stop() -> None:
    """Raises KeyboardInterrupt once a stop was asked for, however the handler's own raise fared."""
    if _stop_requested:
        raise KeyboardInterrupt
_SIGNAL_CHECK_MS = 50  # how long a wait for a step's exit goes without running signal handlers


@dataclass
class ProcessOutcome:
    exit_code: int | None
    duration_s: float
    pid: int
    timed_out: bool = False
    leftovers_killed: bool = False
    launch_error: str | None = None
    notes: list[str] = field(default_factory=list)  # what the step's notes should say about how it ran
    cpu_s: float | None = None  # the process's user + system time (with children it waited for), where the warden saw it


def run_process(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    timeout_s: float,
    stdout_path: Path,
    stderr_path: Path,
    on_start: Callable[[int], None] = lambda pid: None,
    pass_fds: Sequence[int] = (),
    label: str = "",
    terminal: str | None = None,
    netns: str | None = None,
) -> ProcessOutcome:
    """`pass_fds`: descriptors the process inherits beyond stdio (harness/isolation/netns.py's handshake with its launcher).

    `label`: what a stop sent from the step's processes calls its root ("the agent of step 2 (resume)"; harness/isolation/stopping.py).
    `terminal`: a pseudo-terminal's slave path, the process's stdin, stdout and stderr (its controlling terminal where
    the warden starts it); the output paths are then left to whoever reads the terminal (harness/execution/pty.py).
    `netns`: the run's network namespace (harness/isolation/run_netns.py), the process started in it.
    """
    started = time.monotonic()
    with contextlib.ExitStack() as files:
        if terminal is None:
            out = files.enter_context(stdout_path.open("wb")).fileno()
            err = files.enter_context(stderr_path.open("wb")).fileno()
        else:
            out = err = os.open(terminal, os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
            files.callback(os.close, out)
        try:
            proc = _start(argv, env, cwd, out, err, pass_fds, terminal, netns)
        except (OSError, lifetime.SpawnFailed, lifetime.WardenLost) as exc:
            return ProcessOutcome(None, time.monotonic() - started, 0, launch_error=f"cannot start {argv[0]!r}: {exc}")
        on_start(proc.pid)
        stopping.step_started(proc.pid, label or f"the step's process {os.path.basename(argv[0])}")
        timed_out = False
        try:
            try:
                wait_for_exit(proc, timeout_s)
            except KeyboardInterrupt:  # the harness is being stopped: the step's whole group goes first
                _kill_group(proc.pid, signal.SIGKILL)
                raise
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc.pid, signal.SIGTERM)
                try:
                    wait_for_exit(proc, GRACE_S)
                except subprocess.TimeoutExpired:
                    _kill_group(proc.pid, signal.SIGKILL)
                    proc.wait()
        except lifetime.WardenLost as exc:
            _kill_group(proc.pid, signal.SIGKILL)
            return ProcessOutcome(None, time.monotonic() - started, proc.pid,
                                  launch_error=f"{exc}; the step's process group was killed")
        finally:
            stopping.step_ended(proc.pid)
        duration = time.monotonic() - started
        leftovers = _group_alive(proc.pid)
        if leftovers:
            _kill_group(proc.pid, signal.SIGKILL)
    return ProcessOutcome(
        exit_code=None if timed_out else proc.returncode,
        duration_s=duration,
        pid=proc.pid,
        timed_out=timed_out,
        leftovers_killed=leftovers or getattr(proc, "orphans", 0) > 0,
        notes=_signal_notes(proc),
        cpu_s=getattr(proc, "cpu_s", None),
    )


def _start(argv: Sequence[str], env: Mapping[str, str], cwd: Path, stdout: int, stderr: int,
           pass_fds: Sequence[int], terminal: str | None = None,
           netns: str | None = None) -> "subprocess.Popen | lifetime.StepProcess":
    """By the warden (harness/isolation/lifetime.py); by this process where there is none (the step's notes say so).

    In `netns`: the warden enters it for the spawn; without a warden, util-linux nsenter enters it and execs the argv.

    Without the warden a terminal is the process's stdio but not its controlling terminal (that needs code between
    fork and exec, which Popen runs only as an unsafe preexec_fn).
    """
    proc = lifetime.spawn(argv, env, cwd, stdout, stderr, pass_fds, terminal, netns)
    if proc is not None:
        return proc
    if netns:
        from harness.isolation.run_netns import NSENTER

        argv = [NSENTER, f"--net={netns}", "--", *argv]
    with stopping.unblocked():
        return subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL if terminal is None else stdout,
                                stdout=stdout, stderr=stderr, start_new_session=True, pass_fds=tuple(pass_fds))


def _signal_notes(proc) -> list[str]:
    """Stop signals sent to the warden (a step's parent) while the step ran: ignored, and said."""
    notes = []
    for sent in getattr(proc, "signals", []):
        name = signal.Signals(sent["signal"]).name
        who = f"the step's own process {sent['sender']}" if sent.get("in_step") else f"pid {sent['sender']}"
        notes.append(f"{name} from {who} reached the harness's step warden (pid {proc.warden_pid}, the step's "
                     "parent) and was ignored: a step cannot stop the harness through its parent")
    return notes


def wait_for_exit(proc: subprocess.Popen, timeout_s: float) -> int:
    """`proc.wait(timeout=timeout_s)`, woken by the exit itself.

    Popen.wait with a timeout polls, sleeping twice as long each time up to 50 ms, so a step was seen
    to end up to 50 ms after it had (25 ms on average, a fifth of a reference-agent step). A pidfd
    becomes readable the moment the process exits; where there is none (not Linux 5.3+), Popen's own.
    The wait still wakes every 50 ms: a stop signal the kernel handed to another thread of the harness
    (the fake API's) does not interrupt this one's poll, and its Python handler, which raises here,
    runs only when this thread runs Python again.
    """
    if isinstance(proc, lifetime.StepProcess):  # started by the warden, which says when it has ended
        return _wait_for_word(proc, timeout_s)
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd here, or the process was reaped already
        return proc.wait(timeout=timeout_s)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        deadline = time.monotonic() + timeout_s
        while not poller.poll(max(0, min(_SIGNAL_CHECK_MS, math.ceil((deadline - time.monotonic()) * 1000)))):
            check_stop()
            if time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(proc.args, timeout_s)
    finally:
        os.close(pidfd)
    return proc.wait()


def _wait_for_word(proc: "lifetime.StepProcess", timeout_s: float) -> int:
    poller = select.poll()
    poller.register(proc.exit_fd(), select.POLLIN)
    deadline = time.monotonic() + timeout_s
    while proc.poll() is None:
        if time.monotonic() >= deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
        poller.poll(max(0, min(_SIGNAL_CHECK_MS, math.ceil((deadline - time.monotonic()) * 1000))))
        check_stop()
    return proc.returncode


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def tail(path: Path, limit: int = 2000) -> str:
    """The end of a captured stream, for error messages and reports."""
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    text = strip_escapes(data[-limit:].decode("utf-8", errors="replace"))
    return ("…" + text) if len(data) > limit else text
