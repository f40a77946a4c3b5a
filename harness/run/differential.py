"""Differential runs: the same scenarios through a baseline and a candidate, compared step by step.

Each check is judged on the journal as it stood after every step (the checks
are pure functions of the journal, so a prefix of it is a valid input), which
tells not only that the candidate broke a property but at which step it first
did. Expectations written in the scenarios play no part: the baseline is the
expectation. What it produces, the model every diff report renders, is
harness/results.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from harness.journal.exchange import Exchange
from harness.journal.requests import read_journal
from harness.journal.launches import Launch, launch_journal_path, read_launches
from harness.results import (
    ERROR, Cell, CheckResult, Comparison, RunResult, ScenarioDiff, ScenarioOutline, StepOutline, TargetOutline,
)
from harness.run.runner import Progress, judge, journal_name, run_scenario
from harness.scenario.model import Scenario
from harness.targets.base import Target

JudgedBySteps = dict[int, list[CheckResult]]  # step index -> the checks judged on the journals as of that step


def judged_by_step(scenario: Scenario, exchanges: list[Exchange], target: Target, launches: list[Launch]) -> JudgedBySteps:
    """Every check judged once per step, on the journals as they stood after it."""
    return {step.index: judged_as_of(scenario, step.index, exchanges, target, launches) for step in scenario.steps}


def step_cells(scenario: Scenario, results: Sequence[RunResult], judged: Sequence[JudgedBySteps]) -> list[Cell]:
    """Each side's verdicts as of every step (baseline, candidate); a step the run never completed is an error."""
    cells = []
    for step in scenario.steps:
        verdicts = [_verdicts_as_of(scenario, step.index, result, by_step) for result, by_step in zip(results, judged)]
        for check in scenario.checks:
            cells.append(Cell(scenario.name, step.index, check, verdicts[0][check], verdicts[1][check]))
    return cells


def _verdicts_as_of(scenario: Scenario, step: int, result: RunResult, by_step: JudgedBySteps) -> dict[str, str]:
    if step not in {s.index for s in result.steps if not s.error}:
        return {check: ERROR for check in scenario.checks}
    return {r.check: r.verdict for r in by_step[step]}


def judged_as_of(scenario: Scenario, step: int, exchanges: list[Exchange], target: Target,
                 launches: Sequence[Launch] = ()) -> list[CheckResult]:
    """The scenario's checks on the journals as they stood after `step` (checks are pure functions of the journals)."""
    upto = [e for e in exchanges if e.step is not None and e.step <= step]
    launched = [launch for launch in launches if launch.step is not None and launch.step <= step]
    return judge(scenario, target, upto, None, launched)


def compare(
    scenarios: Sequence[Scenario],
    baseline: Target,
    candidate: Target,
    journal_dir: Path,
    progress: Progress | None = None,
    fail_on_unchanged_fail: bool = False,
    required_fixes: Sequence[str] = (),
) -> Comparison:
    """Run every scenario through both targets (baseline first), then compare."""
    diffs = []
    for scenario in scenarios:
        sides = []
        for side, target in (("baseline", baseline), ("candidate", candidate)):
            journal = journal_dir / side / journal_name(scenario, target)
            journal.parent.mkdir(parents=True, exist_ok=True)
            if progress is not None:
                progress.run_started(scenario, target, len(diffs) * 2 + len(sides) + 1, 2 * len(scenarios))
            result = run_scenario(scenario, target, journal, progress)
            if progress is not None:
                progress.run_finished(result)
            launches = launch_journal_path(journal)
            judged = judged_by_step(scenario, read_journal(journal) if journal.exists() else [], target,
                                    read_launches(launches) if launches.exists() else [])
            sides.append((result, judged))
        (baseline_result, baseline_judged), (candidate_result, candidate_judged) = sides
        last = scenario.steps[-1].index  # the end-of-run verdicts, with their evidence, are the last step's
        cells = step_cells(scenario, (baseline_result, candidate_result), (baseline_judged, candidate_judged))
        diffs.append(ScenarioDiff(outline(scenario), baseline_result, candidate_result, cells,
                                  baseline_judged[last], candidate_judged[last]))
    return Comparison(target_outline(baseline), target_outline(candidate), diffs, fail_on_unchanged_fail,
                      tuple(required_fixes))


def outline(scenario: Scenario) -> ScenarioOutline:
    steps = tuple(StepOutline(s.index, s.kind, s.prompt) for s in scenario.steps)
    return ScenarioOutline(scenario.name, steps, tuple(scenario.checks), scenario.description, scenario.append, scenario.path)


def target_outline(target: Target) -> TargetOutline:
    return TargetOutline(target.name, target.identity_regex, target.source, target.revision)
