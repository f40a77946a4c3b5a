"""`harness run -n N`: the matrix on N worker processes, with the results a serial run gives.

Each worker is a process of its own (start method "spawn": nothing of the
parent's state is inherited, threads and open servers included), in the
parent's process group, so Ctrl-C at a terminal reaches every worker the way
it reaches a serial harness. A worker takes one (scenario, target) pair at a
time and runs it with `runner.run_scenario`, exactly as the serial path does:
its own fake API on its own free port, its own disposable HOME and working
folder, its journal under REPORT_DIR/journal/.

What crosses the process boundary:

- parent → worker: the scenario (frozen dataclasses, pickled; a scenario that
  does not pickle goes as its file path and is loaded again), the `--target`
  specs and the name of the target to run. A Target's executor may hold
  an in-process call or a launcher object, so targets never cross: each
  worker resolves the specs itself (once per spec, cached) and picks the
  target by name.
- worker → parent: run_started / step_finished / run_finished events as they
  happen, so the parent's progress (ConsoleProgress) shows every step live,
  and the RunResult at the end. Results are put back in the serial order
  (scenario-major, as run_matrix orders the pairs) whatever order they finish in.

Stopping (Ctrl-C, or SIGTERM to the parent, e.g. a cancelled CI job): the
parent stops handing out runs and sends SIGTERM to every worker (Ctrl-C has
already sent each one SIGINT). A worker turns the first SIGINT or SIGTERM
into a KeyboardInterrupt inside the run it is doing, as the CLI's handler does
for the serial harness, so run_scenario kills the step's process group and
raises `Interrupted` with the partial result; the worker sends that result and
exits. Further signals to a worker that is already stopping are ignored (a
second KeyboardInterrupt would tear the partial result apart), and a signal
never interrupts a message half-written on the pipe. Runs that never started
are `not_run(...)`. Workers that do not stop within STOP_GRACE_S are killed,
with the process groups their runs started (noted from /proc while they run:
a step's agent has a session of its own and would outlive its worker).

A parent that cannot stop in order (SIGKILL) takes its workers with it: each
worker asks for SIGKILL when the parent dies (PR_SET_PDEATHSIG), and a killed
worker's step warden kills what its run had started (harness/isolation/lifetime.py).

Called from Python rather than `harness run`: as with any "spawn" process,
each worker imports the caller's main module again, so a script calling
run_matrix_parallel needs the usual `if __name__ == "__main__":` guard.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Collection, Sequence

from harness.run.pool_groups import descendant_groups, kill_groups, process_table
from harness.run.pool_worker import STOP_SIGNALS, Silent, worker_main
from harness.results import RunResult
from harness.run.attempts import Attempts
from harness.scenario.model import Scenario
from harness.isolation.stopping import block_again as block_stop_signals_again
from harness.targets.base import Target

START_METHOD = "spawn"
STOP_GRACE_S = 30.0  # after a stop, how long the workers get to end their runs in order before they are killed
_POLL_S = 0.2
_LOOK_S = 1.0  # how often the parent notes the process groups each run has started


def run_matrix_parallel(
    scenarios: Sequence[Scenario],
    targets: Sequence[Target],
    specs: Sequence[str],
    journal_dir: Path | None,
    progress=None,
    keep_workspace: bool = False,
    workers: int = 2,
    target_file_from_working_tree: bool = False,
    attempts: Attempts = Attempts(),
    only: Collection[tuple[str, str]] | None = None,
) -> list[RunResult]:
    """run_matrix on `workers` processes: the same results, in the same order.

    `specs` are the `--target` strings `targets` were resolved from; workers resolve them again, the same way
    (`target_file_from_working_tree` as the parent's: two targets of one name must not be two files).
    With `only` (a shard's runs), just those (scenario, target) names.
    """
    progress = progress or Silent()
    pairs = [(s, t) for s in scenarios for t in targets if only is None or (s.name, t.name) in only]
    if not pairs:
        return []
    payloads = {id(s): _scenario_payload(s) for s in scenarios}
    tasks = [
        (number, (tuple(specs), target_file_from_working_tree), target.name, payloads[id(scenario)],
         journal_dir / _journal_name(scenario, target) if journal_dir else None)
        for number, (scenario, target) in enumerate(pairs, 1)
    ]
    return _Pool(pairs, tasks, progress, keep_workspace, min(workers, len(pairs)), attempts).run()


def _journal_name(scenario: Scenario, target: Target) -> str:
    from harness.run.runner import journal_name

    return journal_name(scenario, target)


def _scenario_payload(scenario: Scenario) -> tuple[str, Any]:
    """("pickle", bytes) when the scenario survives a pickle round trip unchanged, else ("path", its file)."""
    try:
        blob = pickle.dumps(scenario)
        if pickle.loads(blob) == scenario:
            return ("pickle", blob)
    except Exception:
        pass
    if scenario.path is None:
        raise ValueError(f"scenario {scenario.name!r} can be neither pickled nor reloaded (it has no file)")
    return ("path", str(scenario.path))


# --------------------------------------------------------------------------- the parent


@dataclass
class _Worker:
    process: Any  # multiprocessing.Process
    conn: Connection
    task: int | None = None  # the number of the run it was given and has not reported on
    alive: bool = True
    signalled: bool = False
    exit_code: int | None = None
    groups: set = field(default_factory=set)  # process groups its current run started, as last seen (descendant_groups)


@dataclass
class _Pool:
    pairs: list
    tasks: list
    progress: Any
    keep_workspace: bool
    count: int
    attempts: Attempts = Attempts()
    workers: list[_Worker] = field(default_factory=list)
    results: dict[int, RunResult] = field(default_factory=dict)
    started: set[int] = field(default_factory=set)
    stopping: bool = False
    deadline: float | None = None  # set at the stop: when workers still running are killed
    halted: str | None = None  # the harness's own failure (a full disk): no further run is handed out

    def run(self) -> list[RunResult]:
        pending = deque(range(len(self.tasks)))
        previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
        for sig, handler in previous.items():
            if handler is not signal.SIG_IGN:  # a harness started with SIGINT ignored (a background job) keeps ignoring it
                signal.signal(sig, self._on_signal)
        try:
            context = multiprocessing.get_context(START_METHOD)
            for index in range(self.count):
                parent_end, child_end = context.Pipe()
                process = context.Process(target=worker_main, args=(child_end, self.keep_workspace, os.getpid(), self.attempts),
                                          name=f"harness-worker-{index + 1}")
                process.start()
                child_end.close()
                self.workers.append(_Worker(process, parent_end))
                if self.stopping:
                    break
            block_stop_signals_again()  # starting a worker starts multiprocessing's resource tracker, which unblocks them
            self._loop(pending)
        finally:
            self._reap()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return self._ordered()

    def _on_signal(self, signum, frame) -> None:
        """Ctrl-C or SIGTERM: stop handing out runs and tell every worker; never raise in the parent."""
        self.stopping = True
        self._signal_workers()

    def _signal_workers(self) -> None:
        for worker in self.workers:
            if worker.alive and not worker.signalled:
                worker.signalled = True
                try:
                    os.kill(worker.process.pid, signal.SIGTERM)
                except (ProcessLookupError, TypeError):
                    pass

    def _loop(self, pending: deque) -> None:
        next_look = time.monotonic() + _LOOK_S
        while any(w.alive for w in self.workers):
            if self.stopping:
                self._signal_workers()  # workers started after the signal, too
                self.deadline = self.deadline or time.monotonic() + STOP_GRACE_S
                if time.monotonic() > self.deadline:
                    return  # _reap kills what is left
            live = [w for w in self.workers if w.alive]
            if time.monotonic() >= next_look:  # what each run has started, should its worker be killed
                table = process_table()
                for worker in live:
                    worker.groups = descendant_groups(worker.process.pid, table) if worker.task is not None else set()
                next_look = time.monotonic() + _LOOK_S
            ready = wait([w.conn for w in live] + [w.process.sentinel for w in live], timeout=_POLL_S)
            for worker in live:
                if worker.conn in ready or worker.process.sentinel in ready:
                    self._drain(worker, pending)
                if worker.process.sentinel in ready:
                    self._ended(worker)

    def _drain(self, worker: _Worker, pending: deque) -> None:
        """Every message the worker has sent so far."""
        while True:
            try:
                if not worker.conn.poll():
                    return
                message = worker.conn.recv()
            except (EOFError, OSError):
                return
            self._handle(worker, message, pending)

    def _handle(self, worker: _Worker, message: tuple, pending: deque) -> None:
        kind = message[0]
        if kind == "ready":
            self._dispatch(worker, pending)
            return
        number = message[1]
        scenario, target = self.pairs[number - 1]
        if kind == "started":
            self.started.add(number)
            self.progress.run_started(scenario, target, number, len(self.pairs))
        elif kind == "step":
            self.progress.step_finished(scenario, target, message[2])
        elif kind == "attempt":
            self.progress.attempt_started(scenario, target, *message[2:])
        elif kind == "finished":
            self.results[number] = message[2]
            worker.task = None
            self.progress.run_finished(message[2])
            if message[2].harness_failure is not None:  # as run_matrix: a full disk stays full; runs begun end
                self.halted = self.halted or message[2].harness_failure
            self._dispatch(worker, pending)
        elif kind == "interrupted":  # its run was stopped: the whole matrix stops, as in a serial run
            self.results[number] = message[2]
            worker.task = None
            self.stopping = True
        elif kind == "lost":
            self.results[number] = _lost(scenario, target, message[2])
            worker.task = None
            self.stopping = True
        elif kind == "crashed":
            self.results[number] = _failed(scenario, target, f"the harness crashed running it:\n{message[2]}")
            worker.task = None
            if number not in self.started:
                self.progress.run_started(scenario, target, number, len(self.pairs))
            self.progress.run_finished(self.results[number])
            self._dispatch(worker, pending)

    def _dispatch(self, worker: _Worker, pending: deque) -> None:
        """The next run for an idle worker, or None: no more runs (the worker exits)."""
        task = None
        if not self.stopping and self.halted is None and pending:
            index = pending.popleft()
            task = self.tasks[index]
        try:
            worker.conn.send(task)
        except OSError:  # the worker is gone; _ended accounts for it
            if task is not None:
                pending.appendleft(task[0] - 1)
            return
        worker.task = task[0] if task is not None else None

    def _ended(self, worker: _Worker) -> None:
        worker.process.join()
        worker.alive = False
        worker.exit_code = worker.process.exitcode
        if worker.task is not None:
            kill_groups(worker.groups)  # it died mid-run (killed): what its step started must not outlive it
        if worker.task is not None and worker.task not in self.results:
            scenario, target = self.pairs[worker.task - 1]
            if self.stopping:
                self.results[worker.task] = _lost(scenario, target, True)
            else:
                self.results[worker.task] = _failed(
                    scenario, target, f"the worker process running it died (exit code {worker.exit_code}) without a result")
                self.progress.run_finished(self.results[worker.task])
            worker.task = None

    def _reap(self) -> None:
        """No worker outlives the matrix: those still running are stopped in order, then killed after the grace time.

        Workers are all gone already when the matrix ran to its end; some are left when the stop's grace
        time ran out, or when the parent itself failed.
        """
        if any(w.process.is_alive() for w in self.workers):
            self.stopping = True
            self._signal_workers()
            self.deadline = self.deadline or time.monotonic() + STOP_GRACE_S
            for worker in self.workers:
                worker.process.join(timeout=max(0.0, self.deadline - time.monotonic()))
        for worker in self.workers:
            if worker.process.is_alive():
                worker.groups = descendant_groups(worker.process.pid)
                worker.process.kill()
                worker.process.join()
            if worker.alive:
                self._ended(worker)
            worker.conn.close()

    def _ordered(self) -> list[RunResult]:
        from harness.run.runner import not_run

        results = []
        for number, (scenario, target) in enumerate(self.pairs, 1):
            if number in self.results:
                results.append(self.results[number])
            elif self.stopping:
                results.append(not_run(scenario, target))
            elif self.halted is not None:
                results.append(not_run(scenario, target, f"not run: the harness could not go on ({self.halted})"))
            else:
                results.append(_failed(scenario, target, "not run: every worker process ended before this run"))
        return results


def _lost(scenario: Scenario, target: Target, started: bool) -> RunResult:
    """A run stopped at a moment when run_scenario could not hand back its partial result."""
    from harness.run.runner import not_run

    result = not_run(scenario, target)
    if started:
        result.error = "interrupted: the run was stopped where its partial result could not be recorded"
        for check in result.checks:
            check.message = f"not judged: the run did not complete ({result.error})"
    return result


def _failed(scenario: Scenario, target: Target, error: str) -> RunResult:
    """A run that errored for a reason of the harness's own (not an interruption): an error, its checks not judged."""
    from harness.run.runner import not_run

    result = not_run(scenario, target)
    result.interrupted = False
    result.error = error
    for check in result.checks:
        check.message = f"not judged: the run did not complete ({error})"
    return result
