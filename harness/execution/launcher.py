"""Steps that are launches of one launcher process: an eval framework starting the agent CLI once per step.

inspect_swe's claude_code() runs a whole sample inside one `inspect eval`:
it launches Claude Code, scores the answer, launches it again with --resume
for another attempt, a second turn, a retry after a crash. The harness cannot
start those processes itself, so it starts the launcher once and watches the
launches: a recording shim first on PATH under the agent binary's name
reports each one to the fake API's control path, which moves the fake API's
script to the next step before the launch sends its first request. Step k of
the scenario is the k-th launch; a launch the scenario did not foresee, or a
step that was never launched, is an error of the run, never a pass.

What a launcher is to the harness is the ScenarioLauncher protocol, defined
here and implemented by its family (harness/inspect_swe/launcher.py); the
launcher's own verdict (an eval that errored, a sample that failed) is read
by it and reported with the run.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Protocol, Sequence

from harness.errors import InputError
from harness.execution.base import StepSession
from harness.execution.step_requests import exit_problem, record_requests, turn_problem
from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.launch_control import CONTROL_PATH, LaunchControl
from harness.fakeapi.script import StepScript
from harness.fakeapi.server import FakeAPIServer
from harness.isolation import netns
from harness.isolation.launch_shim import write_shim
from harness.isolation.process import run_process, tail
from harness.isolation.workspace import Workspace, step_environment
from harness.journal.launches import Launch, LaunchJournal
from harness.journal.requests import Journal
from harness.redaction import TAIL_MARGIN, redact_tail
from harness.results import StepResult
from harness.scenario.model import Scenario, Step


STARTUP_ALLOWANCE_S = 120.0  # the launcher's own start and teardown, on top of the steps' timeouts


@dataclass
class LauncherCall:
    argv: list[str]
    env: Mapping[str, str]  # on top of the step environment; the shim folder is put first on PATH
    cwd: Path
    private_dirs: Mapping[str, Path] = field(default_factory=dict)  # host path -> folder bound over it for the run


@dataclass
class LauncherOutcome:
    error: str | None = None  # the launcher's own account of a failure (an eval log's error), if any
    notes: list[str] = field(default_factory=list)


class ScenarioLauncher(Protocol):
    name: str  # what reports call the launcher ("inspect eval")
    binary: str  # the name the launcher finds the agent by on PATH

    def real_binary(self) -> list[str]: ...
    def describe(self) -> str: ...  # what it runs, for `harness install`
    def session_of(self, argv: list[str]) -> str | None: ...  # the session a launch's argv names, for the report
    def problems(self, scenario: Scenario) -> list[str]: ...  # what in the scenario this launcher cannot express
    def prepare(self, scenario: Scenario, workspace: Workspace, base_url: str) -> LauncherCall: ...
    def outcome(self, workspace: Workspace) -> LauncherOutcome: ...


@dataclass(frozen=True)
class LauncherSteps:
    """The executor of a target whose steps are launches of one `launcher` process; the Target's `commands` unused."""

    launcher: ScenarioLauncher
    in_harness_process = False

    def serve(self, api: FakeModelAPI) -> FakeAPIServer:
        return FakeAPIServer(api).__enter__()

    def describe(self, commands: Mapping[str, Sequence[str]]) -> str:
        return self.launcher.describe()

    def why_not_one_at_a_time(self) -> str | None:
        return "runs a whole scenario in one launcher process"

    def cannot_express(self, scenario: Scenario) -> str | None:
        """The launcher's own account of what it cannot be made to do (a step kind its loop has no way to make)."""
        problems = self.launcher.problems(scenario)
        return f"{self.launcher.name}: " + "; ".join(problems) if problems else None

    def run_steps(self, session: StepSession, on_step: Callable[[StepResult], None]) -> str | None:
        """Run the launcher once; report one StepResult per scenario step; return the run's error, if any."""
        return _run_launcher(self.launcher, session, on_step)


def _run_launcher(launcher: ScenarioLauncher, session: StepSession, on_step: Callable[[StepResult], None]) -> str | None:
    scenario, api, journal, launches = session.scenario, session.api, session.journal, session.launches
    server, workspace = session.server, session.workspace
    problems = launcher.problems(scenario)
    if problems:
        return f"{session.target.name} cannot run this scenario: " + "; ".join(problems)
    steps = _StepAdvance(scenario, api, journal, launches, on_step, launcher.session_of)
    api.control = LaunchControl(launches, steps.next_launch, on_ended=steps.launch_ended).handle
    shim_dir = workspace.root / "launch-bin"
    write_shim(shim_dir, launcher.binary, launcher.real_binary(), server.base_url + CONTROL_PATH)
    try:
        call = launcher.prepare(scenario, workspace, server.base_url)
    except InputError as exc:
        return f"{launcher.name}: cannot prepare the run: {exc}"
    env = step_environment(workspace, server.base_url, call.env)
    env["PATH"] = os.pathsep.join([str(shim_dir), call.env.get("PATH", env.get("PATH", ""))])
    timeout = STARTUP_ALLOWANCE_S + sum(step.timeout_s or session.target.timeout_s for step in scenario.steps)
    stdout_path, stderr_path = workspace.logs / "launcher.stdout", workspace.logs / "launcher.stderr"
    try:
        with netns.isolated_step(call.argv, server, private_dirs=call.private_dirs) as isolation:
            outcome = run_process(isolation.argv, env, call.cwd, timeout, stdout_path, stderr_path,
                                  on_start=steps.launcher_started, pass_fds=isolation.pass_fds, netns=isolation.netns,
                                  label=f"the {launcher.name} process that launches every step")
    finally:
        steps.finish()
        api.control = None
    told = launcher.outcome(workspace)
    made = launches.launches()
    results = [_step_result(step, made, journal, steps.scripts.get(step.index), launcher.session_of)
               for step in scenario.steps if step.index not in steps.reported]
    results[-1].notes += [f"{launcher.name}: {note}" for note in [*isolation.notes, *outcome.notes, *told.notes]]
    if outcome.cpu_s is not None:  # one process carried every step: its time (and its agents') is the last step's
        results[-1].cpu_s = round(outcome.cpu_s, 3)
        results[-1].cpu_of_steps = [step.index for step in scenario.steps if step.index != results[-1].index]
        results[-1].notes.append(f"cpu_s: the whole {launcher.name} process's, every step's agents included")
    for result in results:
        on_step(result)
    every = sorted([*steps.reported.values(), *results], key=lambda r: r.index)
    failed = next((r for r in every if r.error), None)
    stderr = redact_tail(tail(stderr_path, 400 + TAIL_MARGIN), 400).strip()
    said = f"; its stderr ends with: {stderr[-400:]!r}" if stderr else ""
    if isolation.error and not outcome.launch_error:
        return f"{launcher.name} could not start: {isolation.error}"
    if outcome.launch_error:
        return f"{launcher.name} could not start: {outcome.launch_error}"
    if outcome.timed_out:
        return f"{launcher.name} timed out after {timeout:g}s (its process group was killed) after {len(made)} launch(es){said}"
    extra = [launch for launch in made if launch.step is None]
    if extra:
        first = extra[0]
        return (f"{launcher.name} made {len(made)} launches where the scenario has {len(scenario.steps)} steps; "
                f"launch {first.seq} was not foreseen: {_brief(first.argv)}")
    if outcome.exit_code != 0:
        return f"{launcher.name} exited with code {outcome.exit_code}: {told.error or 'its log reports no error'}{said}"
    if told.error:
        return f"{launcher.name} exited with code 0, but {told.error}"
    if failed is not None:
        return f"step {failed.index} ({failed.kind}): {failed.error}"
    return None


class _StepAdvance:
    """Step k runs from the k-th launch's start to its end: the fake API's script follows, and the step is reported
    as soon as its launch ends (the last one once the launcher has exited, with the launcher's own notes)."""

    def __init__(self, scenario: Scenario, api: FakeModelAPI, journal: Journal, launches: LaunchJournal,
                 on_step: Callable[[StepResult], None], session_of: Callable[[list[str]], str | None]):
        self._steps = scenario.steps
        self._api, self._journal, self._launches, self._on_step = api, journal, launches, on_step
        self._session_of = session_of
        self._lock = threading.Lock()
        self._launched = 0
        self._open: Step | None = None
        self._launcher_pid: int | None = None
        self.scripts: dict[int, StepScript] = {}
        self.reported: dict[int, StepResult] = {}  # step index -> what was reported as its launch ended

    def launcher_started(self, pid: int) -> None:
        """Every step's requests come from the launcher's process tree (the server looks their sender up there)."""
        with self._lock:
            self._launcher_pid = pid
            self._api.set_step_pid(pid)

    def next_launch(self) -> tuple[int | None, str | None]:
        with self._lock:
            self._close()
            self._launched += 1
            if self._launched > len(self._steps):
                return None, None  # its requests fall outside any step: unforeseen, default replies
            self._open = self._steps[self._launched - 1]
            self._api.begin_step(self._open)
            if self._launcher_pid is not None:
                self._api.set_step_pid(self._launcher_pid)
            return self._open.index, self._open.kind

    def launch_ended(self, launch: Launch) -> None:
        with self._lock:
            step = self._open
            if step is None or launch.step != step.index:
                return
            self._close()  # a request between two launches belongs to no step
            if step is not self._steps[-1]:
                result = _step_result(step, self._launches.launches(), self._journal, self.scripts.get(step.index),
                                      self._session_of)
                self.reported[step.index] = result
                self._on_step(result)

    def finish(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._open is not None:
            script = self._api.end_step()
            if script is not None:
                self.scripts[self._open.index] = script
            self._open = None


def _step_result(step, launches: list[Launch], journal: Journal, script: StepScript | None,
                 session_of: Callable[[list[str]], str | None]) -> StepResult:
    result = StepResult(index=step.index, kind=step.kind)
    launch = next((launch for launch in launches if launch.step == step.index), None)
    if launch is None:
        result.error = f"never launched: the launcher made {len(launches)} launch(es) for {step.index - 1} earlier step(s)"
        return result
    result.argv = launch.argv
    result.exit_code = launch.exit_code
    result.duration_s = launch.duration_s or 0.0
    result.session_id = session_of(launch.argv)
    exchanges = journal.for_step(step.index)
    record_requests(result, exchanges, script)
    if launch.exit_code is None:
        result.error = "the launch never reported its end (killed together with its launcher?)"
    else:
        result.error = exit_problem(result, step, exchanges) or turn_problem(result, step, exchanges, script)
    return result


def _brief(argv: list[str], limit: int = 200) -> str:
    text = " ".join(argv)
    return text if len(text) <= limit else text[:limit] + "…"
