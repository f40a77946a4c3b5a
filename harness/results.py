"""What a run produced: steps as they happened, verdicts with evidence, and whether they were expected.

Reports (json, junit, markdown, console, pytest) all render these objects, so
every output says the same thing: a run's steps and verdicts, the requests a
failing verdict compares (for report.html), and a differential run's cells.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

PASS, FAIL, ERROR = "pass", "fail", "error"
# A scenario with a step the target cannot carry out at all (Target.cannot_express): not run, never a pass.
CANNOT_EXPRESS = "cannot-express"
# A run attempted more than once (`--retries`, `--repeat`) whose attempts disagree with each other about the
# scenario's expectations: named in every report, never counted as expected, and the gate fails on it unless
# told otherwise (`--allow-flaky`).
FLAKY = "flaky"
# The caller's appended text judged from two vantage points (checks/appended.py, checks/launches.py), whose
# evidence the reports pair step by step (report/caller_text.py).
APPENDED_IN_REQUESTS = "appended_exactly_once"
APPENDED_IN_LAUNCHES = "launch_appended_exactly_once"

# --------------------------------------------------------------------------- a failing verdict's requests
# The run's first main request beside the one a failing check points at, filled in where the check judges
# (checks/request_pair.py), so the spans, counts and offsets report.html marks are the checks' own: the cache
# prefix as prefix_stable joins it, the identity line as identity_stable finds it, the appended text as
# appended_exactly_once counts it, the first byte difference at the offset prefix_stable reports. Not part of
# results.json (CheckResult.to_json leaves it out): it repeats request text the journal already holds.

IDENTITY, APPENDED = "identity", "appended"  # the kinds of Mark


@dataclass(frozen=True)
class Mark:
    """Characters [start, end) of a shown text that matter to a check."""

    start: int
    end: int
    kind: str  # IDENTITY or APPENDED


@dataclass(frozen=True)
class ShownText:
    text: str
    marks: tuple[Mark, ...] = ()


@dataclass(frozen=True)
class OutsideBlock:
    """A system block the model reads but the cache key leaves out, with why."""

    index: int
    why: str
    shown: ShownText


@dataclass(frozen=True)
class ShownRequest:
    """One request's instructions, split as the prefix check splits them, with what the checks found in them."""

    seq: int
    where: str  # "step 2 (retry), request #3", as the checks' messages say it
    prefix: ShownText  # the system blocks in the cache key, joined as prefix_stable compares them
    prefix_blocks: tuple[int, ...]  # which system blocks those are
    outside: tuple[OutsideBlock, ...]
    system_messages: tuple[ShownText, ...]
    identity: str | None  # the identity line the target's pattern finds, block by block
    appended: int | None  # occurrences of the appended text in the instructions; None when the scenario appends none
    appended_in_prefix: int


@dataclass(frozen=True)
class Difference:
    """The first differing byte of two texts' UTF-8, and both lengths in bytes."""

    offset: int
    expected_length: int
    observed_length: int


@dataclass(frozen=True)
class RequestPair:
    first: ShownRequest | None = None
    pointed: ShownRequest | None = None
    missing: str | None = None  # why there is nothing to compare (no main request, no request pointed at)
    prefix_difference: Difference | None = None
    tools: tuple[str, str] | None = None  # both tool definitions (canonical JSON), shown when only they differ
    tools_difference: Difference | None = None


@dataclass
class StepResult:
    index: int
    kind: str
    argv: list[str] = field(default_factory=list)
    exit_code: int | None = None
    duration_s: float = 0.0
    cpu_s: float | None = None  # the agent process's own CPU time (user + system), where it was measured
    cpu_of_steps: list[int] = field(default_factory=list)  # other steps whose CPU time cpu_s includes (one launcher)
    requests: int = 0  # every journaled request of the step
    classes: dict[str, int] = field(default_factory=dict)  # requests per class: main, compaction, side, malformed
    request_seqs: list[int] = field(default_factory=list)
    pids: list[int] = field(default_factory=list)
    session_id: str | None = None
    timed_out: bool = False
    unforeseen: int = 0  # requests the script did not foresee
    unused_turns: int = 0  # scripted replies nobody asked for
    stdout_tail: str = ""
    stderr_tail: str = ""
    notes: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass
class CheckResult:
    check: str
    verdict: str  # pass | fail | error
    message: str = ""
    step: int | None = None
    request: int | None = None  # journal seq of the request the verdict points at
    expected: Any = None  # what the property requires at that point
    observed: Any = None  # what the bytes show
    evidence: dict[str, Any] = field(default_factory=dict)
    expected_verdict: str = PASS  # what the scenario says this target should get
    as_expected: bool = True
    # A failing verdict's requests as a reviewer compares them (report.html); not in results.json.
    request_pair: RequestPair | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        data = asdict(replace(self, request_pair=None))
        del data["request_pair"]
        return data


@dataclass
class RunResult:
    scenario: str
    target: str
    status: str  # pass | fail | error | cannot-express
    steps: list[StepResult] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    error: str | None = None
    scenario_path: str | None = None
    journal: str | None = None
    launch_journal: str | None = None  # every launch of the agent binary: argv, steering environment, exit code
    workspace: str | None = None  # kept HOME and working folder (--keep-workspace)
    duration_s: float = 0.0
    interrupted: bool = False  # the harness was stopped (Ctrl-C, SIGTERM) during or before this run
    cannot_express: str | None = None  # why the target cannot carry out this scenario (status cannot-express)
    harness_failure: str | None = None  # the harness failed on its own (a journal or workspace the disk refused), not the agent
    installed: list[str] = field(default_factory=list)  # the target's install as resolved (Target.installed)
    # The attempts before this one (`--retries`, `--repeat`), oldest first, each with its own journal; this
    # result is the last attempt.
    attempts: list[RunResult] = field(default_factory=list)

    @property
    def attempt_as_expected(self) -> bool:
        """This attempt alone. An errored run never matches an expectation: its history is incomplete."""
        return self.status != ERROR and all(c.as_expected for c in self.checks)

    @property
    def flaky(self) -> bool:
        """Some attempts matched the expectations and some did not: the same inputs gave two answers."""
        return bool(self.attempts) and len({a.attempt_as_expected for a in [*self.attempts, self]}) == 2

    @property
    def as_expected(self) -> bool:
        """Every attempt as expected: a flaky run is not, whatever its last attempt said."""
        return self.attempt_as_expected and not self.flaky

    def passes_gate(self, allow_flaky: bool = False) -> bool:
        return self.as_expected or (allow_flaky and self.flaky)

    def verdict_of(self, check: str) -> str | None:
        return next((c.verdict for c in self.checks if c.check == check), None)

    def to_json(self) -> dict[str, Any]:
        data = asdict(replace(self, checks=[], attempts=[]))
        data["checks"] = [check.to_json() for check in self.checks]
        data["attempts"] = [attempt.to_json() for attempt in self.attempts]
        data["as_expected"] = self.as_expected
        data["flaky"] = self.flaky
        return data

# --------------------------------------------------------------------------- a differential run
# The model every diff report renders (console, summary.md, junit.xml, comparison.json, report.html). It holds
# what the reports say about the scenarios and targets as plain outlines, not the scenario and target objects,
# so a report reads data and never reaches back into the stages that produced it.

UNCHANGED_PASS = "unchanged-pass"
UNCHANGED_FAIL = "unchanged-fail"
REGRESSION = "regression"
FIX = "fix"
CHANGE_ERROR = "error"
CHANGES = (REGRESSION, CHANGE_ERROR, FIX, UNCHANGED_FAIL, UNCHANGED_PASS)  # most to least urgent
SIDES = ("baseline", "candidate")


def classify(baseline: str, candidate: str) -> str:
    if ERROR in (baseline, candidate):
        return CHANGE_ERROR
    if baseline == candidate:
        return UNCHANGED_PASS if baseline == PASS else UNCHANGED_FAIL
    return REGRESSION if baseline == PASS else FIX


@dataclass(frozen=True)
class StepOutline:
    index: int
    kind: str
    prompt: str | None = None


@dataclass(frozen=True)
class ScenarioOutline:
    """What a report says of a scenario: its name, file, text and steps (not its scripted replies)."""

    name: str
    steps: tuple[StepOutline, ...]
    checks: tuple[str, ...]
    description: str = ""
    append: str | None = None
    path: Path | None = None


@dataclass(frozen=True)
class TargetOutline:
    """What a report says of a target: its name, where it was defined, its identity pattern and revision."""

    name: str
    identity_regex: str
    source: Path | None = None
    revision: str | None = None


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
    scenario: ScenarioOutline
    baseline: RunResult
    candidate: RunResult
    cells: list[Cell] = field(default_factory=list)
    # Each side's checks judged on its journal as of the last step: what the final cells say, with evidence.
    baseline_at_end: list[CheckResult] = field(default_factory=list)
    candidate_at_end: list[CheckResult] = field(default_factory=list)

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

    def evidence(self, side: str, check: str) -> CheckResult | None:
        """The side's final verdict with its evidence: the run's own, or the one judged as of the last step when
        they disagree (the final cell was judged that way)."""
        verdict = getattr(self.final(check), side)
        run: RunResult = getattr(self, side)
        own = next((c for c in run.checks if c.check == check), None)
        if own is not None and own.verdict == verdict:
            return own
        judged = next((c for c in getattr(self, f"{side}_at_end") if c.check == check), None)
        return judged if judged is not None and judged.verdict == verdict else own


@dataclass
class Comparison:
    baseline: TargetOutline
    candidate: TargetOutline
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
