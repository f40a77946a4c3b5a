"""Differential runs: the same scenarios through a baseline and a candidate, compared step by step.

Each check is judged on the journal as it stood after every step (the checks
are pure functions of the journal, so a prefix of it is a valid input), which
tells not only that the candidate broke a property but at which step it first
did. Expectations written in the scenarios play no part: the baseline is the
expectation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from harness.journal.exchange import Exchange
from harness.journal.requests import read_journal
from harness.journal.launches import Launch, launch_journal_path, read_launches
from harness.results import ERROR, FAIL, PASS, CheckResult, RunResult
from harness.run.runner import Progress, judge, journal_name, run_scenario
from harness.scenario.model import Scenario
from harness.targets.base import Target

UNCHANGED_PASS = "unchanged-pass"
UNCHANGED_FAIL = "unchanged-fail"
REGRESSION = "regression"
FIX = "fix"
CHANGE_ERROR = "error"
CHANGES = (REGRESSION, CHANGE_ERROR, FIX, UNCHANGED_FAIL, UNCHANGED_PASS)  # most to least urgent


def classify(baseline: str, candidate: str) -> str:
    if ERROR in (baseline, candidate):
        return CHANGE_ERROR
    if baseline == candidate:
        return UNCHANGED_PASS if baseline == PASS else UNCHANGED_FAIL
    return REGRESSION if baseline == PASS else FIX


@dataclass(frozen=True)
class Cell:
    """One (scenario, step, check): the verdict of each side on the journal as of that step."""

    scenario: str
    step: int
    check: str
    baseline: str
    candidate: str

    @property
    def change(self) -> str:
        return classify(self.baseline, self.candidate)


@dataclass
class ScenarioDiff:
    scenario: Scenario
    baseline: RunResult
    candidate: RunResult
    baseline_exchanges: list[Exchange]
    candidate_exchanges: list[Exchange]
    cells: list[Cell] = field(default_factory=list)
    baseline_launches: list[Launch] = field(default_factory=list)
    candidate_launches: list[Launch] = field(default_factory=list)

    def final(self, check: str) -> Cell:
        """The verdicts over the whole run: the last step's cell."""
        return [c for c in self.cells if c.check == check][-1]

    def first_change(self, check: str) -> Cell | None:
        """The first step at which the two sides disagree on this check (or either errs)."""
        return next((c for c in self.cells if c.check == check and c.change not in (UNCHANGED_PASS, UNCHANGED_FAIL)), None)

    @property
    def change(self) -> str:
        """The scenario's overall change: the most urgent of its checks' final changes."""
        finals = {self.final(check).change for check in self.scenario.checks}
        return next(c for c in CHANGES if c in finals)


@dataclass
class Comparison:
    baseline: Target
    candidate: Target
    scenarios: list[ScenarioDiff]
    fail_on_unchanged_fail: bool = False
    required_fixes: tuple[str, ...] = ()

    def finals(self) -> list[Cell]:
        return [sd.final(check) for sd in self.scenarios for check in sd.scenario.checks]

    def counts(self) -> dict[str, int]:
        finals = self.finals()
        return {change: sum(1 for c in finals if c.change == change) for change in CHANGES}

    def gate_failures(self) -> list[str]:
        """Why the gate fails (empty: it passes), one line each."""
        reasons = []
        for cell in self.finals():
            if cell.change in (REGRESSION, CHANGE_ERROR) or (cell.change == UNCHANGED_FAIL and self.fail_on_unchanged_fail):
                reasons.append(f"{cell.change}: {cell.scenario} · {cell.check} (baseline {cell.baseline}, candidate {cell.candidate})")
        by_name = {sd.scenario.name: sd for sd in self.scenarios}
        for name in self.required_fixes:
            sd = by_name[name]
            before = any(sd.final(c).baseline == FAIL for c in sd.scenario.checks)
            after = all(sd.final(c).candidate == PASS for c in sd.scenario.checks)
            if not (before and after):
                why = "the baseline does not fail it" if not before else "the candidate does not pass it"
                reasons.append(f"required fix missing: {name} must fail on the baseline and pass on the candidate ({why})")
        return reasons


Side = tuple[RunResult, list[Exchange], Target, list[Launch]]


def step_cells(scenario: Scenario, baseline: Side, candidate: Side) -> list[Cell]:
    """Judge each side on its journal as of every step; a step the run never completed is an error."""
    cells = []
    for step in scenario.steps:
        verdicts = [_verdicts_as_of(scenario, step.index, *side) for side in (baseline, candidate)]
        for check in scenario.checks:
            cells.append(Cell(scenario.name, step.index, check, verdicts[0][check], verdicts[1][check]))
    return cells


def _verdicts_as_of(scenario: Scenario, step: int, result: RunResult, exchanges: list[Exchange], target: Target,
                    launches: list[Launch]) -> dict[str, str]:
    completed = [s.index for s in result.steps if not s.error]
    if step not in completed:
        return {check: ERROR for check in scenario.checks}
    return {r.check: r.verdict for r in judged_as_of(scenario, step, exchanges, target, launches)}


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
            sides.append((result, read_journal(journal) if journal.exists() else [], target,
                          read_launches(launches) if launches.exists() else []))
        sd = ScenarioDiff(scenario, sides[0][0], sides[1][0], sides[0][1], sides[1][1],
                          baseline_launches=sides[0][3], candidate_launches=sides[1][3])
        sd.cells = step_cells(scenario, sides[0], sides[1])
        diffs.append(sd)
    return Comparison(baseline, candidate, diffs, fail_on_unchanged_fail, tuple(required_fixes))
