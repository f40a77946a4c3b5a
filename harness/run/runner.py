"""Drive one scenario through one target: its steps, carried out by the target's executor, against a fresh fake API.

Record first, judge after (Jepsen): steps run until one fails to complete; the
journal is the only input to the checks; a run whose history is incomplete is
an error whose checks are not judged, never a pass.
"""

from __future__ import annotations

import hashlib
import re
import time
import traceback
from pathlib import Path
from typing import Collection, Protocol, Sequence

from harness.isolation import stopping
from harness.checks import CheckContext, run_check
from harness.journal.exchange import Exchange
from harness.journal.launches import Launch
from harness.run.attempts import Attempts, set_aside
from harness.run.session import LiveRun
from harness.results import CANNOT_EXPRESS, ERROR, FAIL, PASS, CheckResult, RunResult, StepResult
from harness.scenario.model import Scenario
from harness.targets.base import Target
from harness.isolation.workspace import WorkspaceError


class Progress(Protocol):
    def run_started(self, scenario: Scenario, target: Target, number: int, total: int) -> None: ...
    def step_finished(self, scenario: Scenario, target: Target, step: StepResult) -> None: ...
    def attempt_started(self, scenario: Scenario, target: Target, attempt: int, most: int, why: str) -> None: ...
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

    def attempt_started(self, scenario: Scenario, target: Target, attempt: int, most: int, why: str) -> None:
        pass

    def run_finished(self, result: RunResult) -> None:
        pass


_PLAIN_NAME = re.compile(r"[A-Za-z0-9.@+-]+")
MAX_JOURNAL_NAME = 120  # characters before ".jsonl": well under the 255 bytes a file name may have


def journal_name(scenario: Scenario, target: Target) -> str:
    """`SCENARIO__TARGET.jsonl`, the same for the same pair and different for different pairs.

    A plain name (letters, digits, '.', '@', '+' and '-' on both sides, short enough) is kept as it is: it holds exactly
    one '__', so it splits one way only. Anything else is sanitised, cut to a bounded length and given a digest
    of the exact pair after a '=', which neither form otherwise holds: `a/b` and `a_b` no longer share a
    journal, and a 240-character name no longer overflows the file system's limit.
    """
    plain = f"{scenario.name}__{target.name}"
    if _PLAIN_NAME.fullmatch(scenario.name) and _PLAIN_NAME.fullmatch(target.name) and len(plain) <= MAX_JOURNAL_NAME:
        return plain + ".jsonl"
    digest = hashlib.sha256(f"{scenario.name}\0{target.name}".encode("utf-8", "surrogatepass")).hexdigest()[:12]
    clean = [re.sub(r"[^A-Za-z0-9.@+-]+", "_", part) for part in (scenario.name, target.name)]
    safe = "__".join(clean)[: MAX_JOURNAL_NAME - len(digest) - 1]
    return f"{safe}={digest}.jsonl"


def run_matrix(
    scenarios: Sequence[Scenario],
    targets: Sequence[Target],
    journal_dir: Path | None = None,
    progress: Progress | None = None,
    keep_workspace: bool = False,
    attempts: Attempts = Attempts(),
    only: Collection[tuple[str, str]] | None = None,
) -> list[RunResult]:
    """Every scenario on every target, scenario-major; with `only` (a shard's runs), those (scenario, target) names."""
    progress = progress or SilentProgress()
    pairs = [(s, t) for s in scenarios for t in targets if only is None or (s.name, t.name) in only]
    results: list[RunResult] = []
    for number, (scenario, target) in enumerate(pairs, 1):
        progress.run_started(scenario, target, number, len(pairs))
        journal_path = journal_dir / journal_name(scenario, target) if journal_dir else None
        try:
            result = run_attempts(scenario, target, journal_path, progress, keep_workspace, attempts)
        except Interrupted as stop:
            results.append(stop.result)
            results += [not_run(s, t) for s, t in pairs[number:]]
            return results
        progress.run_finished(result)
        results.append(result)
        if result.harness_failure is not None:  # a full disk stays full: the rest could not be run or recorded either
            results += [not_run(s, t, f"not run: the harness could not go on ({result.harness_failure})")
                        for s, t in pairs[number:]]
            return results
    return results


def not_run(scenario: Scenario, target: Target, why: str | None = None) -> RunResult:
    """A planned run the harness was stopped before: listed in every report, never counted as a verdict.

    Without `why`, the harness was interrupted (Ctrl-C, SIGTERM); with it, the harness could not go on.
    """
    result = RunResult(scenario=scenario.name, target=target.name, status=ERROR, interrupted=why is None,
                       scenario_path=str(scenario.path) if scenario.path else None,
                       error=why or "not run: the harness was interrupted before this run")
    result.checks = judge(scenario, target, [], result.error)
    return result


def run_attempts(
    scenario: Scenario,
    target: Target,
    journal_path: Path | None,
    progress: Progress | None = None,
    keep_workspace: bool = False,
    attempts: Attempts = Attempts(),
) -> RunResult:
    """run_scenario, attempted as `attempts` says (harness/run/attempts.py): the last attempt, carrying the earlier."""
    progress = progress or SilentProgress()
    earlier: list[RunResult] = []
    while True:
        try:
            result = run_scenario(scenario, target, journal_path, progress, keep_workspace)
        except Interrupted as stop:
            stop.result.attempts = earlier
            raise
        why = attempts.another(len(earlier) + 1, result)
        if why is None:
            result.attempts = earlier
            return result
        earlier.append(set_aside(result, len(earlier) + 1))
        progress.attempt_started(scenario, target, len(earlier) + 1, attempts.most, why)


def run_scenario(
    scenario: Scenario,
    target: Target,
    journal_path: Path | None = None,
    progress: Progress | None = None,
    keep_workspace: bool = False,
) -> RunResult:
    progress = progress or SilentProgress()
    reason = (target.cannot_express_reason(scenario.steps) or target.cannot_express_own_text(scenario.temporary)
              or target.executor.cannot_express(scenario))
    if reason is not None:
        return cannot_express(scenario, target, reason)
    started = time.monotonic()
    try:
        run = LiveRun(scenario, target, journal_path, keep_workspace)
    except WorkspaceError as exc:  # a full disk, say: the harness's own failure, and nothing of the run began
        return no_workspace(scenario, target, str(exc))
    result = RunResult(
        scenario=scenario.name,
        target=target.name,
        status=ERROR,
        scenario_path=str(scenario.path) if scenario.path else None,
        journal=str(journal_path) if journal_path else None,
        launch_journal=str(run.launches_path) if run.launches_path else None,
        installed=list(target.installed),
    )
    stopped = False
    try:
        with run:
            result.error = run.prepare()
            if not result.error:  # a process per step, a call per step, or one launcher process for them all
                result.error = target.executor.run_steps(
                    run, lambda step_result: _step_done(result, progress, scenario, target, step_result))
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM turned into one by the CLI
        stopped = True
        step = scenario.steps[len(result.steps)] if len(result.steps) < len(scenario.steps) else scenario.steps[-1]
        who = stopping.stop_message()  # an agent that SIGTERMs the harness is named, not taken for the user
        result.error = (f"interrupted during step {step.index} ({step.kind}): the run is incomplete; "
                        f"the journal keeps the {len(run.exchanges())} request(s) it saw" + (f"; {who}" if who else ""))
        result.interrupted = True
    result.harness_failure = run.record_error()
    if result.harness_failure is not None:  # the harness's own failure: named first, and the agent is not blamed
        also = f"; {result.error}" if result.error else ""
        result.error = f"the harness failed on its own, not the agent: {result.harness_failure}; not judged{also}"
    if keep_workspace:
        result.workspace = str(run.workspace.root)
    result.checks = judge(scenario, target, run.exchanges(), result.error, run.recorded_launches())
    result.status = _status(result)
    result.duration_s = time.monotonic() - started
    if stopped:
        raise Interrupted(result)
    return result


def no_workspace(scenario: Scenario, target: Target, why: str) -> RunResult:
    """A run whose workspace could not be made: the harness's failure, recorded as one (the matrix stops there)."""
    result = RunResult(scenario=scenario.name, target=target.name, status=ERROR, harness_failure=why,
                       scenario_path=str(scenario.path) if scenario.path else None,
                       error=f"the harness could not start this run: {why}; not judged")
    result.checks = judge(scenario, target, [], result.error)
    return result


def cannot_express(scenario: Scenario, target: Target, reason: str) -> RunResult:
    """The result of a scenario the target has no way to carry out: nothing run, every check marked so."""
    message = f"{target.name} cannot express this scenario: {reason}"
    checks = [CheckResult(name, CANNOT_EXPRESS, message, expected_verdict=CANNOT_EXPRESS) for name in scenario.checks]
    return RunResult(scenario=scenario.name, target=target.name, status=CANNOT_EXPRESS, checks=checks,
                     scenario_path=str(scenario.path) if scenario.path else None, cannot_express=reason,
                     installed=list(target.installed))


def _step_done(result: RunResult, progress: Progress, scenario: Scenario, target: Target, step_result: StepResult) -> None:
    result.steps.append(step_result)
    progress.step_finished(scenario, target, step_result)


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
