"""One probe of a bisection: install one release (or check out one revision), run the scenario on it, keep its verdicts.

The run is an ordinary `harness run` of one scenario on one target, with its
journal in the bisection's report folder, so every tested release leaves the
same evidence a run does. What counts as "could not be judged" is decided
here and nowhere else: an install that fails, a run that errors, a scenario
the release cannot express (an option it lacks). Each is a skip with the
reason, never a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.bisect.candidates import Candidate
from harness.bisect.search import Probe
from harness.errors import InputError
from harness.results import CANNOT_EXPRESS, ERROR, CheckResult, RunResult
from harness.run.runner import Progress, run_matrix
from harness.scenario.model import Scenario
from harness.targets import resolve_targets
from harness.targets.installs import tools_root


@dataclass
class Prober:
    scenario: Scenario
    check: str | None  # compare this check's verdict only; None: every check of the scenario
    journal_dir: Path
    progress: Progress | None = None
    results: dict[str, RunResult] = field(default_factory=dict)  # candidate label -> its run
    installed: list[str] = field(default_factory=list)  # what this bisection installed (not already in the tools folder)

    def __call__(self, candidate: Candidate) -> Probe:
        before = _installs()
        try:
            targets = resolve_targets([candidate.spec])
        except InputError as exc:  # a release that does not install, a revision that does not check out
            self.installed += sorted(_installs() - before)
            return Probe(skipped=f"cannot be installed: {exc}")
        if len(targets) != 1:
            raise InputError(f"{candidate.spec} stands for {len(targets)} targets; a bisection runs one (name one "
                             "policy or option instead of '+*')")
        folder = self.journal_dir / candidate.label
        result = run_matrix([self.scenario], targets, folder, self.progress)[0]
        self.installed += sorted(_installs() - before)
        self.results[candidate.label] = result
        if result.interrupted:
            raise KeyboardInterrupt
        if result.status == ERROR:
            return Probe(skipped=f"its run is an error: {result.error or _first_error(result)}")
        if result.status == CANNOT_EXPRESS:
            return Probe(skipped=f"it cannot express the scenario: {result.cannot_express}")
        return Probe(verdicts=tuple((c.check, c.verdict) for c in result.checks
                                    if self.check is None or c.check == self.check))


def evidence(check: str, sides: dict[str, tuple[str, RunResult]]) -> dict:
    """Both sides' record of one check (its verdict, message, step, request and the bytes it compared) and journal."""
    return {side: {"release": label, **_check_record(result, check), "journal": result.journal}
            for side, (label, result) in sides.items()}


def _check_record(result: RunResult, check: str) -> dict:
    found: CheckResult | None = next((c for c in result.checks if c.check == check), None)
    return {"verdict": None} if found is None else found.to_json()  # as results.json records it


def _first_error(result: RunResult) -> str:
    return next((s.error for s in result.steps if s.error), "no reason recorded")


def _installs() -> set[str]:
    """`tool/version` of every complete install in the tools folder."""
    root = tools_root()
    return {f"{mark.parent.parent.name}/{mark.parent.name}" for mark in root.glob("*/*/.complete")} if root.is_dir() else set()
