"""Who stopped the harness: the sender of a SIGINT or SIGTERM, told apart where the kernel says who it was.

An agent that sends SIGTERM to the harness stops the run exactly as a user
would; the report should not blame the user. Python's signal handlers are not
told the sender, but the kernel keeps it with the signal (siginfo), and a
thread waiting in sigwaitinfo() receives it whole. So `install()`, called at
the start of a command before any other thread exists, blocks SIGINT and
SIGTERM in the calling thread (every thread started later inherits the mask)
and starts one thread that waits for them: it notes who sent each one (its pid,
its command line, whether it is a process of a running step, and which step),
then hands the stop to the main thread as if the signal had arrived there
(`_thread.interrupt_main`), so the command's own handler runs as before.
`last_stop()` says what the last stop was, `stop_message()` in a sentence.

The blocked mask is inherited across fork and exec: no process the harness
starts may keep it. Steps are started by the warden (harness/isolation/lifetime.py) with
an empty mask, the -n workers unblock, and every subprocess.Popen of the
process (git, npm, pip, the netns probe, an eval's launcher) is started inside
`unblocked()` by install() itself; a stop that arrives meanwhile reaches the
main thread the ordinary way (its sender then unknown, the stop itself the same).

Steps run without a PID namespace (harness/isolation/lifetime.py says why), so an agent
can name the harness's pid: its parent is the warden, whose parent is the
harness. A stop signal sent to the warden is never obeyed; the step's notes say
who sent it.

The stop reaches the main thread when it next runs Python: the harness's own
waits wake every 50 ms, so this is at once in practice; a long blocking call
of the main thread outside `unblocked()` would delay it.
"""

from __future__ import annotations

import _thread
import contextlib
import functools
import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_SI_KERNEL = 0x80  # si_code of a signal the kernel raised itself: Ctrl-C at a terminal, a parent's death signal


@dataclass(frozen=True)
class Stop:
    signal: str  # "SIGTERM"
    sender_pid: int | None  # None: raised by the kernel (Ctrl-C at a terminal), or the sender was not seen
    sender: str  # the sender's command line, as it was when the signal came ("" when unknown)
    from_step: bool  # a process of a running step (an agent, its children, what they left behind)
    step: str | None = None  # the step's root process as run_process was told to call it ("the agent of step 2 (resume)")
    step_root: bool = False  # the sender is that root process itself, not one it started

    def describe(self) -> str:
        """E.g. "stopped by SIGTERM from pid 4242 (the agent of step 2 (resume): python agent.py)"."""
        if self.sender_pid is None:
            return f"stopped by {self.signal} from the terminal or the kernel (Ctrl-C, or a parent's death)"
        command = f": {self.sender}" if self.sender else ""
        if self.step:
            whose = self.step if self.step_root else f"a process started by {self.step}"
        else:
            whose = "a process of a running step" if self.from_step else "outside the harness"
        return f"stopped by {self.signal} from pid {self.sender_pid} ({whose}{command})"


_lock = threading.Lock()
_installed = False
_last: Stop | None = None
_steps: dict[int, str] = {}  # a running step's root pid -> what to call it


def install() -> bool:
    """Block the stop signals in this thread and wait for them in one of their own; True where that works here.

    Call from the main thread at the start of a command (run, diff, explore, minimize), after its
    handlers are set and before any thread starts: a thread started earlier keeps its own mask
    and could take a signal without telling who sent it.
    """
    global _installed
    with _lock:
        if _installed:
            return True
        if not hasattr(signal, "sigwaitinfo") or threading.current_thread() is not threading.main_thread():
            return False
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        threading.Thread(target=_wait_for_stops, name="harness-stop-signals", daemon=True).start()
        _unblock_every_popen()
        _installed = True
        return True


def _unblock_every_popen() -> None:
    """Every subprocess.Popen of this process (git, npm, pip, an eval's launcher…) starts with the stop signals
    unblocked: one place, rather than a wrapper at each call site that a new call site could forget. The
    blocked mask is inherited across exec, and a program that cannot be stopped by SIGTERM is the one thing
    the harness must never start."""
    start = subprocess.Popen.__init__
    if getattr(start, "_harness_unblocked", False):
        return

    @functools.wraps(start)
    def started_unblocked(self, *args, **kwargs):
        with unblocked():
            start(self, *args, **kwargs)

    started_unblocked._harness_unblocked = True  # type: ignore[attr-defined]
    subprocess.Popen.__init__ = started_unblocked  # type: ignore[method-assign]


def last_stop() -> Stop | None:
    """The last stop signal this process received (through install()'s thread), or None."""
    return _last


def stop_message() -> str | None:
    """The last stop in a sentence, for the run's error; None when none was seen."""
    return _last.describe() if _last is not None else None


@contextlib.contextmanager
def unblocked() -> Iterator[None]:
    """Around a call that starts a program: the program must not inherit the blocked stop signals."""
    if not _installed:
        yield
        return
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def block_again() -> None:
    """After a library call that unblocked the stop signals in this thread (multiprocessing starting its resource
    tracker does): blocked again, so the next stop is still told apart."""
    if _installed:
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def step_started(pid: int, label: str) -> None:
    """Called by run_process: a stop sent from this step's process tree is reported with the step's name.

    `label` names the root process: "the agent of step 2 (resume)".
    """
    with _lock:
        _steps[pid] = label


def step_ended(pid: int) -> None:
    with _lock:
        _steps.pop(pid, None)


def _wait_for_stops() -> None:
    global _last
    while True:
        info = signal.sigwaitinfo(STOP_SIGNALS)
        _last = _identify(info)
        handler = signal.getsignal(info.si_signo)
        if handler == signal.SIG_IGN:
            continue
        if handler in (signal.SIG_DFL, None):  # nobody handles it: the default, on this thread, ends the process
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [info.si_signo])
            signal.raise_signal(info.si_signo)
        _thread.interrupt_main(info.si_signo)


def _identify(info) -> Stop:
    name = signal.Signals(info.si_signo).name
    if info.si_code == _SI_KERNEL or info.si_pid <= 0:
        return Stop(name, None, "", False)
    ancestry = _ancestry(info.si_pid)
    with _lock:
        steps = dict(_steps)
    root = next((pid for pid in ancestry if pid in steps), None)
    from_step = root is not None or _under_a_warden(ancestry)
    return Stop(name, info.si_pid, _command(info.si_pid), from_step, steps.get(root), root == info.si_pid)


def _ancestry(pid: int) -> list[int]:
    """The pid, its parent, its parent's parent... up to (not including) this process or init."""
    chain, me = [], os.getpid()
    while pid > 1 and pid != me and len(chain) < 1024:
        chain.append(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text(errors="replace").rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return chain


def _under_a_warden(ancestry: list[int]) -> bool:
    """Started by a step warden (this process's, or a -n worker's): a step's process, or one it left behind."""
    from harness.isolation.lifetime import WARDEN

    script = WARDEN[-1].encode()
    for pid in ancestry[1:]:
        try:
            if script in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                return True
        except OSError:
            continue
    return False


def _command(pid: int, limit: int = 120) -> str:
    """The sender's command line, paths by their last part: "python agent.py --mode x"."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return ""
    text = " ".join(os.path.basename(word) if word.startswith("/") else word for word in words if word)
    return text if len(text) <= limit else text[:limit] + "…"
