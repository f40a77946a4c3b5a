"""What a run produced: steps as they happened, verdicts with evidence, and whether they were expected.

Reports (json, junit, markdown, console, pytest) all render these objects, so
every output says the same thing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

PASS, FAIL, ERROR = "pass", "fail", "error"
# A scenario with a step the target cannot carry out at all (Target.cannot_express): not run, never a pass.
CANNOT_EXPRESS = "cannot-express"


@dataclass
class StepResult:
    index: int
    kind: str
    argv: list[str] = field(default_factory=list)
    exit_code: int | None = None
    duration_s: float = 0.0
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

    @property
    def as_expected(self) -> bool:
        """An errored run never matches an expectation: its history is incomplete."""
        return self.status != ERROR and all(c.as_expected for c in self.checks)

    def verdict_of(self, check: str) -> str | None:
        return next((c.verdict for c in self.checks if c.check == check), None)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["as_expected"] = self.as_expected
        return data
