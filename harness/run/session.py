"""One run as it happens: a fake API, a journal, a disposable workspace, and steps taken one at a time.

`harness run` takes a scenario's steps in order; `harness explore` decides the
next step only after seeing the last one. Both step through a LiveRun, so a
step the explorer generates is run exactly as a step read from a file: a fresh
process (or an in-process call rebuilt from what the last step persisted),
against this run's own fake API, in its own network namespace.

How a built step is carried out is the target's executor's business
(harness/execution/): it says whether the fake API gets an HTTP server (an
in-process agent reaches the same FakeModelAPI through respx, at a base URL
that nothing on the network answers) and runs each step the session builds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from harness.execution.base import IN_PROCESS_BASE_URL, StepCall
from harness.execution.pty import keep_transcript
from harness.isolation import workdir
from harness.fakeapi.core import FakeModelAPI
from harness.journal.exchange import Exchange
from harness.journal.requests import Journal
from harness.fakeapi.script import MAX_REQUESTS_PER_STEP
from harness.fakeapi.server import FakeAPIServer
from harness.journal.launches import RUNNER, Launch, LaunchJournal, launch_journal_path
from harness.isolation.process import check_stop, tail
from harness.redaction import TAIL_MARGIN, redact_tail
from harness.results import StepResult
from harness.scenario.model import Scenario, Step
from harness.execution.step_requests import exit_problem, own_requests, record_requests, turn_problem
from harness.targets.base import MissingValue, Target, render, template_fields
from harness.isolation.terminal import strip_escapes
from harness.isolation.workspace import FAKE_API_KEY, Workspace, step_environment

TAIL_LIMIT = 2000  # characters of an agent's stdout and stderr a step result keeps


class LiveRun:
    """The fake API, journals and workspace of one scenario × target run; a context manager around its steps.

    `scenario` supplies what every step shares (the appended text, the working-directory
    kind); the steps themselves are passed one by one to `run_step`.
    """

    def __init__(self, scenario: Scenario, target: Target, journal_path: Path | None = None,
                 keep_workspace: bool = False, workspace_parent: Path | None = None):
        """`workspace_parent`: where the disposable workspace is made (default: the temporary folder).

        Raises WorkspaceError (one line) when the workspace cannot be made, a full disk say: made first, so
        nothing is left open or half written when it fails.
        """
        self.scenario, self.target, self.keep_workspace = scenario, target, keep_workspace
        self.workspace = Workspace.create(f"{scenario.name}-{target.name}", workspace_parent, keep=keep_workspace)
        if journal_path is not None and journal_path.exists():
            journal_path.unlink()  # a journal describes one run, never two appended
        self.journal = Journal(journal_path)
        self.launches_path = launch_journal_path(journal_path) if journal_path is not None else None
        if self.launches_path is not None and self.launches_path.exists():
            self.launches_path.unlink()
        self.launches = LaunchJournal(self.launches_path)
        self.api = FakeModelAPI(self.journal, side_calls=target.side_calls, compaction_calls=target.compaction_calls)
        self.server: FakeAPIServer | None = None
        self.session_id: str | None = None

    def __enter__(self) -> "LiveRun":
        try:
            self.server = self.target.executor.serve(self.api)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        """Stop the server and close the journals; the workspace goes unless it is to be kept."""
        try:
            if self.server is not None:
                server, self.server = self.server, None
                server.__exit__(None, None, None)
        finally:
            self.journal.close()
            self.launches.close()
            if not self.keep_workspace:
                self.workspace.remove()

    @property
    def base_url(self) -> str:
        return self.server.base_url if self.server is not None else IN_PROCESS_BASE_URL

    def prepare(self) -> str | None:
        """Make the working directory the scenario asks for (a git repository, say); the reason it failed, or None."""
        try:
            workdir.prepare(self.workspace.workdir, self.scenario, self.workspace.home)
        except workdir.WorkdirError as exc:
            return f"preparing the git working directory: {exc}"
        return None

    def exchanges(self) -> list[Exchange]:
        return self.journal.exchanges()

    def record_error(self) -> str | None:
        """Why the record of this run cannot be trusted through the harness's own fault: a journal the disk refused,
        or the fake API failing on a request (answered 500: the agent saw the harness's bug, not a scripted reply)."""
        if self.api.internal_errors:
            return f"the fake API failed on its own: {self.api.internal_errors[0]}"
        return self.journal.write_error or self.launches.write_error

    def recorded_launches(self) -> list[Launch]:
        return self.launches.launches()

    def run_step(self, step: Step) -> StepResult:
        """One step built from the target and carried out by its executor (one taking steps one at a time: its
        `why_not_one_at_a_time()` is None); its session id carries over to the next step."""
        result = _run_step(self, step)
        if not result.error:
            self.session_id = result.session_id
        return result


def _run_step(run: LiveRun, step: Step) -> StepResult:
    check_stop()  # a stop whose KeyboardInterrupt was lost (see harness/isolation/process.py) ends the run here
    target, workspace, api = run.target, run.workspace, run.api
    result = StepResult(index=step.index, kind=step.kind)
    interactive = target.interactive if step.interactive else None  # run_scenario checked it exists
    template = (interactive or target).command_for(step.kind, step.session)
    if template is None:
        how = f" reaching its session by {step.session!r}" if step.session else ""
        result.error = f"target {target.name!r} has no command for a {step.kind!r} step{how}"
        return result
    values = {
        "prompt": step.prompt or "",
        "append": run.scenario.append_at(step.index) or "",
        "temporary": step.temporary or "",
        "session_id": run.session_id,
        "base_url": run.base_url,
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
        return result
    result.argv = argv
    if step.kind == "launch":
        _write_home_files(target, values, workspace)
    elif step.append is not None:  # the caller's text changed: files that carry it are written anew
        _write_home_files(target, values, workspace, only_with="append")
    if interactive is not None:
        _merge_home_json(interactive.home_json, workspace)
    try:
        result.notes.extend(workdir.apply(workspace.workdir, step, workspace.home))
    except workdir.WorkdirError as exc:
        result.error = f"changing the working directory before the step: {exc}"
        return result
    env = step_environment(workspace, run.base_url, extra_env)
    stdout_path = workspace.logs / f"step-{step.index}.stdout"
    stderr_path = workspace.logs / f"step-{step.index}.stderr"
    api.begin_step(step)
    # The step's process is the agent's launch, unless the executor records the launches that process makes (an
    # SDK script starting the agent CLI): the launch checks judge what reached the agent binary.
    launch = None if target.executor.records_launches else run.launches.start(
        argv, str(workspace.workdir), env, step=step.index, step_kind=step.kind, pid=None, recorded_by=RUNNER)
    call = StepCall(argv, env, workspace.workdir, step.timeout_s or target.timeout_s, stdout_path, stderr_path,
                    label=f"the agent of step {step.index} ({step.kind})", step=step,
                    terminal=interactive.ui if interactive is not None else None)
    outcome = None
    try:
        isolation, outcome = target.executor.carry_out(call, run)
    finally:
        pid = api.step_pid
        script = api.end_step()
        if launch is not None:
            run.launches.finish(launch.seq, outcome.exit_code if outcome is not None else None, pid)
    if isolation.error and not outcome.launch_error:
        outcome.launch_error = isolation.error  # the step never became the agent: say why, not "exited with code 125"
    result.notes.extend(isolation.notes)
    result.notes.extend(outcome.notes)  # how the step was held (harness/isolation/lifetime.py), a stop signal it sent
    if interactive is not None:
        result.notes.append(f"ran interactively in a pseudo-terminal; its transcript: {keep_transcript(stdout_path, run.journal.path)}")
    exchanges = run.journal.for_step(step.index)
    stdout = strip_escapes(stdout_path.read_text(encoding="utf-8", errors="replace")) if stdout_path.exists() else ""
    result.exit_code = outcome.exit_code
    result.duration_s = round(outcome.duration_s, 3)
    result.cpu_s = None if outcome.cpu_s is None else round(outcome.cpu_s, 3)
    result.timed_out = outcome.timed_out
    # Reports quote these: no credential an agent printed, redacted before the cut so a secret across it shows nothing.
    result.stdout_tail = redact_tail(tail(stdout_path, TAIL_LIMIT + TAIL_MARGIN), TAIL_LIMIT)
    result.stderr_tail = redact_tail(tail(stderr_path, TAIL_LIMIT + TAIL_MARGIN), TAIL_LIMIT)
    if outcome.leftovers_killed:
        result.notes.append("processes of the step were still running after it exited; their group was killed")
    record_requests(result, exchanges, script)
    if script is not None and script.looped:  # before the exit code: the refusals past the cap are what ended it
        result.error = (f"the agent looped: {script.requests} model requests in this step, more than the "
                        f"{MAX_REQUESTS_PER_STEP} a step may send; the fake API refused those past the cap")
        return result
    result.error = _step_error(outcome, result, step, target, exchanges) or turn_problem(result, step, exchanges, script)
    if result.error:
        return result
    source = (interactive or target).session_id
    new_id = source.read(stdout, own_requests(exchanges))  # never an id another process sent
    if new_id is None and target.prints_session_id(step.kind) and not (result.exit_code and step.scripts_an_error):
        # Every step is held to the target's output contract: a launcher reads this output after each process,
        # and a resume printing garbage instead of it would break that launcher however right its requests were.
        result.error = (
            f"could not read the session id ({source.describe()}) from this {step.kind} step's "
            f"{'terminal session' if interactive is not None else 'output'}, "
            f"which the target's contract requires of every step{target.session_id_exemptions()}; "
            f"stdout ends with: {redact_tail(tail(stdout_path, 300 + TAIL_MARGIN), 300)!r}"
        )
        return result
    result.session_id = new_id or run.session_id
    return result


def _merge_home_json(files, workspace: Workspace) -> None:
    """Top-level keys an interactive step needs in the agent's JSON files, set over what its earlier steps wrote."""
    for relative, keys in files.items():
        path = workspace.home / relative
        try:
            current = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        except ValueError:
            current = {}
        current = current if isinstance(current, dict) else {}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**current, **keys}, indent=2) + "\n", encoding="utf-8")


def _write_home_files(target: Target, values: dict, workspace: Workspace, only_with: str | None = None) -> None:
    """The agent's own configuration (model entries pointing at this run's fake API), before its first process;
    `only_with`: just the files whose template uses that placeholder (the rest may hold the agent's own state)."""
    for relative, template in target.home_files.items():
        if only_with is not None and only_with not in template_fields(template):
            continue
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
