"""A `harness run -n N` worker: takes (scenario, target) runs from the parent's pipe, one at a time.

The parent's side (harness/run/pool.py) says what crosses the pipe and how a
stop spreads; this is the worker's end: it resolves targets itself from the
specs, runs each with `runner.run_scenario` as the serial path does, reports
each step as it ends, and turns the first SIGINT or SIGTERM into the orderly
stop of the run it is doing.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import traceback
from multiprocessing.connection import Connection
from typing import Sequence

from harness.results import RunResult, StepResult
from harness.run.attempts import Attempts
from harness.targets.base import Target

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
POLL_S = 0.2
_PR_SET_PDEATHSIG = 1


class _WorkerState:
    """The worker's side of the pipe, and how a signal becomes the stop of its current run.

    The first SIGINT or SIGTERM stops the worker: during a run it raises KeyboardInterrupt there (the
    CLI's SIGTERM handler, as run_scenario expects it), though never in the middle of a message on
    the pipe (it is raised right after); between runs the worker just takes no further run.
    """

    def __init__(self, conn: Connection, keep_workspace: bool, attempts: Attempts = Attempts()):
        self.conn = conn
        self.keep_workspace = keep_workspace
        self.attempts = attempts
        self.stopping = False
        self.in_run = False
        self.sending = False
        self.raised = False
        self._specs: dict[str, list[Target]] = {}

    def on_signal(self, signum, frame) -> None:
        self.stopping = True
        if not self.sending:
            self.raise_if_stopping()

    def raise_if_stopping(self) -> None:
        if self.stopping and self.in_run and not self.raised:
            self.raised = True
            raise KeyboardInterrupt

    def send(self, message: tuple) -> None:
        self.sending = True
        try:
            self.conn.send(message)
        finally:
            self.sending = False

    def target(self, specs: Sequence[str], name: str, target_file_from_working_tree: bool = False) -> Target:
        from harness.targets import resolve_target

        for spec in specs:
            if spec not in self._specs:
                self._specs[spec] = resolve_target(spec, target_file_from_working_tree=target_file_from_working_tree)
            for target in self._specs[spec]:
                if target.name == name:
                    return target
        raise LookupError(f"no target named {name!r} among {list(specs)}")

    def run(self, task: tuple) -> None:
        from harness.run.runner import Interrupted, run_attempts
        from harness.scenario.reader import load_scenario

        number, (specs, from_tree), name, (kind, payload), journal_path = task
        if self.stopping:  # stopped between receiving the run and starting it
            self.send(("lost", number, False))
            return
        try:
            scenario = pickle.loads(payload) if kind == "pickle" else load_scenario(payload)
            target = self.target(specs, name, from_tree)
        except Exception:
            self.send(("crashed", number, traceback.format_exc()))
            return
        self.send(("started", number))
        result, entered = None, False
        self.in_run = True
        try:
            self.raise_if_stopping()  # a stop that came while "started" was on its way: the run does not start
            entered = True
            result = run_attempts(scenario, target, journal_path, _Forward(self, number), self.keep_workspace,
                                  self.attempts)
            self.in_run = False
        except Interrupted as stop:
            self.in_run = False
            self.send(("interrupted", number, stop.result))
            return
        except KeyboardInterrupt:  # outside run_scenario's own handling (before it began, or as it returned)
            self.in_run = False
            if result is None:
                self.send(("lost", number, entered))
                return
        except Exception:
            self.in_run = False
            self.send(("crashed", number, traceback.format_exc()))
            return
        self.send(("finished", number, result))


class Silent:
    def run_started(self, scenario, target, number, total) -> None:
        pass

    def step_finished(self, scenario, target, step) -> None:
        pass

    def attempt_started(self, scenario, target, attempt, most, why) -> None:
        pass

    def run_finished(self, result) -> None:
        pass


class _Forward:
    """The Progress a worker's run_scenario reports to: each step goes to the parent as it ends."""

    def __init__(self, state: _WorkerState, number: int):
        self.state = state
        self.number = number

    def run_started(self, scenario, target, number, total) -> None:
        pass

    def step_finished(self, scenario, target, step: StepResult) -> None:
        self.state.send(("step", self.number, step))
        self.state.raise_if_stopping()  # a stop held back while the event was being sent

    def attempt_started(self, scenario, target, attempt: int, most: int, why: str) -> None:
        self.state.send(("attempt", self.number, attempt, most, why))
        self.state.raise_if_stopping()

    def run_finished(self, result: RunResult) -> None:
        pass


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL for this worker when the parent dies, even by SIGKILL; its step warden then ends what it started.

    The death signal follows the parent *thread* that started the worker: run_matrix_parallel starts
    them and waits for them in one thread, which ends only after the workers have. Where the parent
    is gone already (it died while this worker was starting), the worker does not start at all.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)


def worker_main(conn: Connection, keep_workspace: bool, parent_pid: int | None = None,
                attempts: Attempts = Attempts()) -> None:
    if parent_pid is not None:
        die_with_parent(parent_pid)
    # The parent may have blocked its stop signals for harness/isolation/stopping.py, and a started process inherits that
    # mask: this worker takes its stops through handlers, as before.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    state = _WorkerState(conn, keep_workspace, attempts)
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:  # a harness started with SIGINT ignored keeps ignoring it
            signal.signal(sig, state.on_signal)
    try:
        state.send(("ready",))
        while not state.stopping:
            if not conn.poll(POLL_S):
                continue
            task = conn.recv()
            if task is None:
                break
            state.run(task)
    except (EOFError, OSError):  # the parent is gone: nothing to report to
        pass
    finally:
        conn.close()
