"""The harness's overhead: a scenario's wall time through the runner against the bare agent processes alone.

"Bare" means exactly what the runner started for each step, and nothing
around it: the argv, environment and working directory of every step are
taken from one recorded run (the launch journal's argv and working directory,
checked against what reached run_process, whose environment is the whole one
and not the journal's redacted extract), then started directly with
subprocess, one after another, against a fake API already listening at the
same address and serving the same script. Only the processes are timed.
The session id a launch mints differs from the recording's, so later argv get
the bare launch's own id in its place; nothing else changes.

The harness's figure is run_scenario's wall time: workspace, fake API server,
each step in its own network namespace (harness/isolation/netns.py), the journals on
disk, the checks, the cleanup. A third variant runs the same with
HARNESS_NETNS=off, to show how much of the difference is the namespace, and a
fourth isolates each step the way it was before the run's shared namespace
(harness/isolation/run_netns.py): a namespace of its own per step, made by the
per-step launcher interpreter (netns.PER_RUN off: a switch only this uses).
The variants alternate round by round; the ratio reported is the median of
the per-round ratios harness / bare.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from harness.execution import subprocess as step_process
from harness.bench.stats import alternate, median, summary
from harness.fakeapi.core import FakeModelAPI
from harness.journal.requests import Journal
from harness.fakeapi.server import FakeAPIServer
from harness.journal.launches import steering_env
from harness.run.session import LiveRun
from harness.isolation import netns
from harness.isolation.process import wait_for_exit
from harness.run.runner import run_scenario
from harness.scenario.model import Scenario, Step
from harness.targets.base import Target

BARE, HARNESS, HARNESS_NO_NETNS, HARNESS_PER_STEP = "bare", "harness", "harness_no_netns", "harness_per_step_netns"


class BenchError(Exception):
    """The measurement itself could not be taken (the agent failed, a port was taken): never a figure."""


@dataclass
class BareStep:
    step: Step
    argv: list[str]  # the agent's own argv, as the launch journal recorded it
    env: dict[str, str]  # the whole environment run_process was given
    cwd: str
    exit_code: int | None
    session_id: str | None  # what the recorded step left for the next one


@dataclass
class Recording:
    scenario: Scenario
    target: Target
    root: Path  # the recorded run's workspace, kept: the bare steps run in it again
    snapshot: Path  # the workspace as it was when the first step started
    port: int  # the recorded fake API's port: the bare runs' fake API listens there too
    steps: list[BareStep] = field(default_factory=list)


@contextlib.contextmanager
def _capturing_processes(on_call: Callable[[list, dict, str], None]) -> Iterator[None]:
    """Every run_process call of the runner, seen before it starts (the recording run only, never a timed one)."""
    real = step_process.run_process

    def capture(argv, env, cwd, *args, **kwargs):
        on_call(list(argv), dict(env), str(cwd))
        return real(argv, env, cwd, *args, **kwargs)

    step_process.run_process = capture
    try:
        yield
    finally:
        step_process.run_process = real


def record(scenario: Scenario, target: Target, scratch: Path) -> Recording:
    """Run the scenario once through a LiveRun, keeping what each step's process was given."""
    changing = [s.index for s in scenario.steps if s.edits or s.commit is not None]
    if changing:
        raise BenchError(f"{scenario.name}: steps {changing} change the working directory between processes; "
                         "the bare replay restores only the first step's workspace")
    snapshot = scratch / f"snapshot-{os.getpid()}-{time.monotonic_ns()}"
    calls: list[tuple[list, dict, str]] = []
    run = LiveRun(scenario, target, keep_workspace=True)

    def on_call(argv: list, env: dict, cwd: str) -> None:
        if not calls:
            shutil.copytree(run.workspace.root, snapshot, symlinks=True)
        calls.append((argv, env, cwd))

    results = []
    try:
        with _capturing_processes(on_call), run:
            problem = run.prepare()
            if problem:
                raise BenchError(f"{scenario.name} on {target.name}: {problem}")
            port = run.server.port
            for step in scenario.steps:
                result = run.run_step(step)
                if result.error:
                    raise BenchError(f"{scenario.name} on {target.name}: step {step.index} ({step.kind}): {result.error}")
                results.append(result)
    except BaseException:
        shutil.rmtree(run.workspace.root, ignore_errors=True)
        shutil.rmtree(snapshot, ignore_errors=True)
        raise
    launches = [launch for launch in run.recorded_launches() if launch.step is not None]
    if len(launches) != len(calls) or len(calls) != len(scenario.steps):
        raise BenchError(f"{scenario.name} on {target.name}: {len(scenario.steps)} steps, {len(calls)} processes "
                         f"started, {len(launches)} launches recorded; expected one of each per step")
    recording = Recording(scenario, target, run.workspace.root, snapshot, port)
    for step, result, launch, (argv, env, cwd) in zip(scenario.steps, results, launches, calls):
        # The launch journal's argv is the agent's; what run_process got may be wrapped by the namespace launcher.
        if argv[len(argv) - len(launch.argv):] != launch.argv or cwd != launch.cwd or steering_env(env) != launch.env:
            raise BenchError(f"step {step.index}: the launch journal and the process started disagree")
        recording.steps.append(BareStep(step, list(launch.argv), env, cwd, launch.exit_code, result.session_id))
    return recording


def discard(recording: Recording) -> None:
    shutil.rmtree(recording.root, ignore_errors=True)
    shutil.rmtree(recording.snapshot, ignore_errors=True)


def run_bare(recording: Recording) -> list[float]:
    """The recorded steps as bare processes, in a workspace put back as it was; each process's wall time."""
    shutil.rmtree(recording.root, ignore_errors=True)
    shutil.copytree(recording.snapshot, recording.root, symlinks=True)
    target = recording.target
    api = FakeModelAPI(Journal(), side_calls=target.side_calls, compaction_calls=target.compaction_calls)
    try:
        server = FakeAPIServer(api, port=recording.port)
    except OSError as exc:
        raise BenchError(f"the recorded fake API's port {recording.port} is taken: {exc}") from None
    logs = recording.root / "bench-logs"
    logs.mkdir(exist_ok=True)
    ids: dict[str, str] = {}  # recorded session id -> the one this replay's launch minted
    walls = []
    with server:
        for bare in recording.steps:
            argv = [_swap_ids(arg, ids) for arg in bare.argv]
            out, err = logs / f"step-{bare.step.index}.stdout", logs / f"step-{bare.step.index}.stderr"
            api.begin_step(bare.step)
            try:
                wall, code = _timed_process(argv, bare.env, bare.cwd, out, err, bare.step.timeout_s or target.timeout_s,
                                            on_start=api.set_step_pid)
            finally:
                api.end_step()
            if code != bare.exit_code:
                raise BenchError(f"bare step {bare.step.index} exited {code}, the recorded run's {bare.exit_code}; "
                                 f"stderr: {err.read_text(errors='replace')[-300:]!r}")
            walls.append(wall)
            minted = target.session_id.read(out.read_text(encoding="utf-8", errors="replace"),
                                            api.journal.for_step(bare.step.index))
            if bare.session_id and minted:
                ids[bare.session_id] = minted
    return walls


def _swap_ids(arg: str, ids: dict[str, str]) -> str:
    for recorded, minted in ids.items():
        arg = arg.replace(recorded, minted)
    return arg


def _timed_process(argv: list[str], env: dict, cwd: str, out: Path, err: Path, timeout_s: float,
                   on_start: Callable[[int], None]) -> tuple[float, int | None]:
    """As harness/isolation/process.py starts a step (own session, no stdin, output to files), timed from start to exit.

    `on_start` tells the fake API the step's pid, as the runner does: without it the API would look for
    the sending process through all of /proc while the agent waits for its reply.
    """
    with out.open("wb") as stdout, err.open("wb") as stderr:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                                start_new_session=True)
        on_start(proc.pid)
        try:
            code = wait_for_exit(proc, timeout_s)  # the exit as it happens: Popen.wait(timeout) polls
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise BenchError(f"bare step timed out after {timeout_s:g}s: {argv[:3]}") from None
        wall = time.perf_counter() - started
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # anything the step left running, as the runner does
    return wall, code


def run_harness(scenario: Scenario, target: Target, journal_dir: Path, netns_off: bool = False,
                per_step: bool = False) -> dict:
    """run_scenario's wall time, and how much of it the steps took as the runner measured them.

    `per_step`: each step in a namespace of its own made by the launcher interpreter, as before the run's shared one.
    """
    journal = journal_dir / f"{scenario.name}-{time.monotonic_ns()}.jsonl"
    saved = os.environ.get("HARNESS_NETNS")
    if netns_off:
        os.environ["HARNESS_NETNS"] = "off"
    netns.PER_RUN = not per_step
    try:
        started = time.perf_counter()
        result = run_scenario(scenario, target, journal)
        wall = time.perf_counter() - started
    finally:
        netns.PER_RUN = True
        if netns_off:
            if saved is None:
                os.environ.pop("HARNESS_NETNS", None)
            else:
                os.environ["HARNESS_NETNS"] = saved
    if result.error:
        raise BenchError(f"{scenario.name} on {target.name} through the runner: {result.error}")
    return {"wall_s": wall, "steps_s": sum(step.duration_s for step in result.steps)}


def measure(scenario: Scenario, target: Target, rounds: int, scratch: Path,
            progress: Callable[[str], None] = lambda line: None) -> dict:
    """Alternating rounds of bare, harness and harness without namespaces; the figures and their medians."""
    journal_dir = scratch / "journals"
    journal_dir.mkdir(parents=True, exist_ok=True)
    recording = record(scenario, target, scratch)
    try:
        run_harness(scenario, target, journal_dir)  # warm: imports, page cache, the namespace probe
        run_bare(recording)

        def said(number: int, got: dict) -> None:
            progress(f"round {number}/{rounds}: bare {sum(got[BARE]):.3f}s, harness {got[HARNESS]['wall_s']:.3f}s, "
                     f"without namespaces {got[HARNESS_NO_NETNS]['wall_s']:.3f}s, "
                     f"a namespace per step {got[HARNESS_PER_STEP]['wall_s']:.3f}s")

        runs = alternate({
            BARE: lambda: run_bare(recording),
            HARNESS: lambda: run_harness(scenario, target, journal_dir),
            HARNESS_NO_NETNS: lambda: run_harness(scenario, target, journal_dir, netns_off=True),
            HARNESS_PER_STEP: lambda: run_harness(scenario, target, journal_dir, per_step=True),
        }, rounds, said)
    finally:
        discard(recording)
    return figures(scenario, target, runs)


def figures(scenario: Scenario, target: Target, runs: dict) -> dict:
    bare = [sum(walls) for walls in runs[BARE]]
    harness = [r["wall_s"] for r in runs[HARNESS]]
    no_netns = [r["wall_s"] for r in runs[HARNESS_NO_NETNS]]
    per_step = [r["wall_s"] for r in runs[HARNESS_PER_STEP]]
    in_steps = [r["steps_s"] for r in runs[HARNESS]]
    ratios = [h / b for h, b in zip(harness, bare)]
    ratios_no_netns = [h / b for h, b in zip(no_netns, bare)]
    steps = len(scenario.steps)
    return {
        "scenario": scenario.name,
        "scenario_path": str(scenario.path) if scenario.path else None,
        "target": target.name,
        "steps": steps,
        "rounds": len(bare),
        "bare_s": summary(bare),
        "bare_per_step_s": [round(median([walls[i] for walls in runs[BARE]]), 6) for i in range(steps)],
        "harness_s": summary(harness),
        "harness_steps_s": summary(in_steps),  # the steps as the runner timed them (namespace launcher included)
        "harness_no_netns_s": summary(no_netns),
        "ratio": round(median(ratios), 4),  # the headline: median over rounds of harness / bare
        "ratio_of_medians": round(median(harness) / median(bare), 4),
        "ratio_no_netns": round(median(ratios_no_netns), 4),
        "harness_per_step_netns_s": summary(per_step),  # before: a launcher interpreter and a namespace per step
        "ratio_per_step_netns": round(median([h / b for h, b in zip(per_step, bare)]), 4),
        "overhead_per_step_ms": round(1000 * (median(harness) - median(bare)) / steps, 2),
        "in_steps_per_step_ms": round(1000 * (median(in_steps) - median(bare)) / steps, 2),
        "around_steps_ms": round(1000 * (median(harness) - median(in_steps)), 2),
        "raw": {"bare_s": [round(x, 6) for x in bare], "harness_s": [round(x, 6) for x in harness],
                "harness_no_netns_s": [round(x, 6) for x in no_netns],
                "harness_per_step_netns_s": [round(x, 6) for x in per_step]},
    }
