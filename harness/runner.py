"""Drive one scenario through one target: each step a fresh process against a fresh fake API.

Record first, judge after (Jepsen): steps run until one fails to complete; the
journal is the only input to the checks; a run whose history is incomplete is
an error whose checks are not judged, never a pass.
"""

from __future__ import annotations

import re
import sys
import time
import traceback
from pathlib import Path
from typing import Protocol, Sequence

from harness import launcher_run, netns, workdir
from harness.checks import CheckContext, run_check
from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.exchange import Exchange, redact_text
from harness.fakeapi.journal import Journal
from harness.fakeapi.server import FakeAPIServer
from harness.launches import RUNNER, Launch, LaunchJournal, launch_journal_path
from harness.process import run_process, tail
from harness.results import ERROR, FAIL, PASS, CheckResult, RunResult, StepResult
from harness.scenario import Scenario, Step
from harness.step_requests import exit_problem, record_requests
from harness.targets.base import MissingValue, Target, render
from harness.terminal import strip_escapes
from harness.workspace import FAKE_API_KEY, Workspace, step_environment


class Progress(Protocol):
    def run_started(self, scenario: Scenario, target: Target, number: int, total: int) -> None: ...
    def step_finished(self, scenario: Scenario, target: Target, step: StepResult) -> None: ...
    def run_finished(self, result: RunResult) -> None: ...


class Interrupted(Exception):
    """The harness was stopped mid-run; carries the partial result, already marked and judged as an error."""

    def __init__(self, result: RunResult):
        super().__init__(result.error)
        self.result = result


class SilentProgress:
    def run_started(self, scenario: Scenario, target: Target, number: int, total: int) -> None:
        pass

    def step_finished(self, scenario: Scenario, target: Target, step: StepResult) -> None:
        pass

    def run_finished(self, result: RunResult) -> None:
        pass


def journal_name(scenario: Scenario, target: Target) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", f"{scenario.name}__{target.name}") + ".jsonl"


def run_matrix(
    scenarios: Sequence[Scenario],
    targets: Sequence[Target],
    journal_dir: Path | None = None,
    progress: Progress | None = None,
    keep_workspace: bool = False,
) -> list[RunResult]:
    progress = progress or SilentProgress()
    pairs = [(s, t) for s in scenarios for t in targets]
    results: list[RunResult] = []
    for number, (scenario, target) in enumerate(pairs, 1):
        progress.run_started(scenario, target, number, len(pairs))
        journal_path = journal_dir / journal_name(scenario, target) if journal_dir else None
        try:
            result = run_scenario(scenario, target, journal_path, progress, keep_workspace)
        except Interrupted as stop:
            results.append(stop.result)
            results += [not_run(s, t) for s, t in pairs[number:]]
            return results
        progress.run_finished(result)
        results.append(result)
    return results


def not_run(scenario: Scenario, target: Target) -> RunResult:
    """A planned run the harness was stopped before: listed in every report, never counted as a verdict."""
    result = RunResult(scenario=scenario.name, target=target.name, status=ERROR, interrupted=True,
                       scenario_path=str(scenario.path) if scenario.path else None,
                       error="not run: the harness was interrupted before this run")
    result.checks = judge(scenario, target, [], result.error)
    return result


def run_scenario(
    scenario: Scenario,
    target: Target,
    journal_path: Path | None = None,
    progress: Progress | None = None,
    keep_workspace: bool = False,
) -> RunResult:
    progress = progress or SilentProgress()
    started = time.monotonic()
    if journal_path is not None and journal_path.exists():
        journal_path.unlink()  # a journal describes one run, never two appended
    journal = Journal(journal_path)
    launches_path = launch_journal_path(journal_path) if journal_path is not None else None
    if launches_path is not None and launches_path.exists():
        launches_path.unlink()
    launches = LaunchJournal(launches_path)
    api = FakeModelAPI(journal, side_calls=target.side_calls, compaction_calls=target.compaction_calls)
    workspace = Workspace.create(f"{scenario.name}-{target.name}")
    result = RunResult(
        scenario=scenario.name,
        target=target.name,
        status=ERROR,
        scenario_path=str(scenario.path) if scenario.path else None,
        journal=str(journal_path) if journal_path else None,
        launch_journal=str(launches_path) if launches_path else None,
    )
    stopped = False
    try:
        with FakeAPIServer(api) as server:
            session_id: str | None = None
            try:
                workdir.prepare(workspace.workdir, scenario, workspace.home)
            except workdir.WorkdirError as exc:
                result.error = f"preparing the git working directory: {exc}"
            if target.launcher is not None and not result.error:  # one launcher process, one launch per step
                result.error = launcher_run.run_steps(
                    scenario, target, api, journal, launches, server, workspace,
                    lambda step_result: _step_done(result, progress, scenario, target, step_result),
                )
            for step in scenario.steps if not result.error and target.launcher is None else ():
                step_result, session_id = _run_step(scenario, target, step, api, journal, launches, server, workspace, session_id)
                _step_done(result, progress, scenario, target, step_result)
                if step_result.error:
                    result.error = f"step {step.index} ({step.kind}): {step_result.error}"
                    break
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM turned into one by the CLI
        stopped = True
        step = scenario.steps[len(result.steps)] if len(result.steps) < len(scenario.steps) else scenario.steps[-1]
        result.error = (f"interrupted during step {step.index} ({step.kind}): the run is incomplete; "
                        f"the journal keeps the {len(journal.exchanges())} request(s) it saw")
        result.interrupted = True
    finally:
        journal.close()
        launches.close()
        if keep_workspace:
            result.workspace = str(workspace.root)
        else:
            workspace.remove()
    result.checks = judge(scenario, target, journal.exchanges(), result.error, launches.launches())
    result.status = _status(result)
    result.duration_s = time.monotonic() - started
    if stopped:
        raise Interrupted(result)
    return result


def _step_done(result: RunResult, progress: Progress, scenario: Scenario, target: Target, step_result: StepResult) -> None:
    result.steps.append(step_result)
    progress.step_finished(scenario, target, step_result)


def _run_step(
    scenario: Scenario,
    target: Target,
    step: Step,
    api: FakeModelAPI,
    journal: Journal,
    launches: LaunchJournal,
    server: FakeAPIServer,
    workspace: Workspace,
    session_id: str | None,
) -> tuple[StepResult, str | None]:
    result = StepResult(index=step.index, kind=step.kind)
    base_url = server.base_url
    template = target.command_for(step.kind)
    if template is None:
        result.error = f"target {target.name!r} has no command for a {step.kind!r} step"
        return result, session_id
    values = {
        "prompt": step.prompt or "",
        "append": scenario.append or "",
        "temporary": step.temporary or "",
        "session_id": session_id,
        "base_url": base_url,
        "api_key": FAKE_API_KEY,
        "home": str(workspace.home),
        "workdir": str(workspace.workdir),
        "target_dir": str(target.target_dir),
        "python": sys.executable,
        "checkout": str(target.checkout) if target.checkout else None,
    }
    try:
        argv = [render(part, values) for part in template]
        extra_env = {name: render(value, values) for name, value in target.env.items()}
    except MissingValue as exc:
        result.error = f"cannot build the command: {exc} (no earlier step produced a session id)"
        return result, session_id
    result.argv = argv
    if step.kind == "launch":
        _write_home_files(target, values, workspace)
    try:
        result.notes.extend(workdir.apply(workspace.workdir, step, workspace.home))
    except workdir.WorkdirError as exc:
        result.error = f"changing the working directory before the step: {exc}"
        return result, session_id
    env = step_environment(workspace, base_url, extra_env)
    stdout_path = workspace.logs / f"step-{step.index}.stdout"
    stderr_path = workspace.logs / f"step-{step.index}.stderr"
    api.begin_step(step)
    launch = launches.start(argv, str(workspace.workdir), env, step=step.index, step_kind=step.kind, pid=None, recorded_by=RUNNER)
    outcome = None
    try:
        if target.in_process is not None:  # the step is a call in this process, not a process (pydantic-ai +in-process)
            isolation = netns.StepIsolation(argv=argv, notes=["ran in the harness process: no subprocess, no network namespace"])
            outcome = target.in_process(
                argv, env, workspace.workdir, step.timeout_s or target.timeout_s, stdout_path, stderr_path, api,
            )
        else:
            # Its own network namespace: the fake API at the same base URL, nothing else (harness/netns.py).
            with netns.isolated_step(argv, server) as isolation:
                outcome = run_process(
                    isolation.argv, env, workspace.workdir, step.timeout_s or target.timeout_s, stdout_path, stderr_path,
                    on_start=api.set_step_pid, pass_fds=isolation.pass_fds,
                )
    finally:
        pid = api.step_pid
        script = api.end_step()
        launches.finish(launch.seq, outcome.exit_code if outcome is not None else None, pid)
    if isolation.error and not outcome.launch_error:
        outcome.launch_error = isolation.error  # the step never became the agent: say why, not "exited with code 125"
    result.notes.extend(isolation.notes)
    exchanges = journal.for_step(step.index)
    stdout = strip_escapes(stdout_path.read_text(encoding="utf-8", errors="replace")) if stdout_path.exists() else ""
    result.exit_code = outcome.exit_code
    result.duration_s = round(outcome.duration_s, 3)
    result.timed_out = outcome.timed_out
    result.stdout_tail = redact_text(tail(stdout_path))  # reports quote these: no credential an agent printed
    result.stderr_tail = redact_text(tail(stderr_path))
    if outcome.leftovers_killed:
        result.notes.append("processes of the step were still running after it exited; their group was killed")
    record_requests(result, exchanges, script)
    result.error = _step_error(outcome, result, step, target, exchanges)
    if result.error:
        return result, session_id
    new_id = target.session_id.read(stdout, exchanges)
    if new_id is None and step.kind == "launch":
        result.error = (
            f"could not read the session id ({target.session_id.describe()}) from the launch; "
            f"stdout ends with: {redact_text(tail(stdout_path, 300))!r}"
        )
        return result, session_id
    result.session_id = new_id or session_id
    return result, result.session_id


def _write_home_files(target: Target, values: dict, workspace: Workspace) -> None:
    """The agent's own configuration (model entries pointing at this run's fake API), before its first process."""
    for relative, template in target.home_files.items():
        path = workspace.home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(template, values), encoding="utf-8")


def _step_error(outcome, result: StepResult, step: Step, target: Target, exchanges: list[Exchange]) -> str | None:
    # Agents that report errors as JSON on stdout (Claude Code's `is_error` result) leave stderr empty.
    if result.stderr_tail.strip():
        stderr = f"; stderr ends with: {tail_line(result.stderr_tail)!r}"
    elif result.stdout_tail.strip():
        stderr = f"; stderr is empty, stdout ends with: {tail_line(result.stdout_tail)!r}"
    else:
        stderr = ""
    if outcome.launch_error:
        return outcome.launch_error
    if outcome.timed_out:
        return f"timed out after {step.timeout_s or target.timeout_s:g}s; its process group was killed{stderr}"
    return exit_problem(result, step, exchanges, stderr)


def tail_line(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


def judge(scenario: Scenario, target: Target, exchanges: list[Exchange], run_error: str | None,
          launches: Sequence[Launch] = ()) -> list[CheckResult]:
    context = CheckContext.of(scenario, exchanges, target.identity_pattern, launches, target.prompt_flags)
    verdicts = []
    for name in scenario.checks:
        if run_error:
            verdict = CheckResult(name, ERROR, f"not judged: the run did not complete ({run_error})")
        else:
            try:
                verdict = run_check(name, context)
            except Exception:  # a crashing check is a harness bug, reported as such, never a pass
                verdict = CheckResult(name, ERROR, "the check itself crashed:\n" + traceback.format_exc())
        verdict.expected_verdict = scenario.expected_verdict(target.expected_as or target.name, name)
        verdict.as_expected = verdict.verdict == verdict.expected_verdict
        verdicts.append(verdict)
    return verdicts


def _status(result: RunResult) -> str:
    if result.error or any(c.verdict == ERROR for c in result.checks):
        return ERROR
    return FAIL if any(c.verdict == FAIL for c in result.checks) else PASS
