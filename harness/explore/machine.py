"""Hypothesis' stateful search over step sequences: each rule is one step, each step a fresh process.

The rules are the step kinds (harness/explore/vocabulary.py), guarded by what a
launcher can meaningfully do next: nothing before the launch, a retry only
after a wrong answer or a failed turn, a compaction only after two turns since
the last one (some Claude Code builds refuse to compact a single turn). After
every step the run so far is judged by the scenario's checks, exactly as
`harness run` judges a whole run; a failing check or a step that did not
complete ends the sequence as a finding.

Each check that fails raises its own exception type, so Hypothesis shrinks
each kind of failure on its own instead of sliding from one to another: two
checks that fail in different sequences are two findings. Where one step fails
several checks, the first in the scenario's order is the one raised, so a
defect that always shows later than another (after a compaction, say) hides
behind it until the other is fixed.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from harness.checks.launches import NAMES as LAUNCH_CHECKS
from harness.explore import vocabulary as voc
from harness.run.session import LiveRun
from harness.results import ERROR, FAIL
from harness.run.runner import judge
from harness.scenario.model import Scenario
from harness.scenario.reader import scenario_from_text
from harness.targets.base import Target
from harness.isolation.workspace import WorkspaceError

SCRATCH_NAME = "explored-sequence"  # the name of a sequence while it runs; a finding is renamed when written
RUN_ERROR = "run_error"  # a finding's check when a step did not complete


@dataclass(frozen=True)
class Setting:
    """What a sequence ran in besides its steps: the working directory kind and the checks judged."""

    workdir: str
    checks: tuple[str, ...]


class Finding(AssertionError):
    """A step sequence the target fails, with the exact step documents that ran."""

    check: ClassVar[str] = RUN_ERROR

    def __init__(self, steps: list[voc.StepDoc], step: int, message: str, setting: "Setting"):
        self.steps, self.step, self.message, self.setting = [dict(s) for s in steps], step, message, setting
        super().__init__(f"{self.what} at step {step} of {len(steps)}: {message}")

    @property
    def what(self) -> str:
        return "the run did not complete" if self.check == RUN_ERROR else f"{self.check} fails"


_FINDING_TYPES: dict[str, type[Finding]] = {}


def finding_type(check: str) -> type[Finding]:
    """One exception class per check name (Hypothesis tells failures apart by type and place)."""
    if check not in _FINDING_TYPES:
        _FINDING_TYPES[check] = type(f"Finding_{check}", (Finding,), {"check": check})
    return _FINDING_TYPES[check]


class ExplorationError(Exception):
    """The harness, not the target, could not run a sequence (e.g. the git working directory)."""


@dataclass
class Exploration:
    """One target's search: its budget in steps per sequence, and running counts for progress reports."""

    target: Target
    max_steps: int
    on_sequence: Callable[["Exploration", list[voc.StepDoc], Finding | None], None] = lambda *_: None
    sequences: int = 0
    steps: int = 0
    failing: int = 0
    rules: Counter = field(default_factory=Counter)  # steps run per rule: what the search actually covered
    started: float = field(default_factory=time.monotonic)

    @property
    def workdir(self) -> str:
        return voc.workdir_kind(self.target.executor.in_harness_process)

    @property
    def workspace_parent(self) -> Path | None:
        """Where each sequence's workspace is made: in memory for in-process targets (see ram_folder)."""
        return ram_folder() if self.target.executor.in_harness_process else None

    def can_compact(self) -> bool:
        return self.target.command_for("compact") is not None

    def passes(self, placeholder: str, kind: str) -> bool:
        """Whether the target's command for this step kind (or its environment) hands the agent {placeholder}."""
        templates = [*(self.target.command_for(kind) or ()), *self.target.env.values()]
        return any("{" + placeholder + "}" in template for template in templates)

    def unavailable(self) -> dict[str, str]:
        """Rules this target cannot take, and why (the rest of the vocabulary is still searched)."""
        why = {}
        if not self.can_compact():
            why["compact"] = "the target has no compact command"
        if self.target.tool_call is None:
            why["tool_call_turn"] = ("the target names no tool of its own (a target file names one with "
                                     "`tool_call: {name: NAME, input: {...}}`)")
        if not self.passes_temporary_text():
            why["turn_with_temporary_text"] = "its resume command passes no {temporary}"
        return why

    def passes_temporary_text(self) -> bool:
        """Whether a resume hands the agent a step's temporary text at all (else there is nothing to judge)."""
        return self.passes("temporary", "resume")


# Step documents already written and read back, by their exact content. The same few documents recur in
# every sequence (a step's prompt depends only on its position), and writing then reading them as YAML
# cost about as much as running the step in-process (~1 ms of a ~5 ms step). The reader is a pure function
# of the text, and the text of the documents, so a document read once reads the same every time after.
_READ: dict[tuple[str, str], Scenario] = {}
_READ_LIMIT = 4096  # distinct documents: positions x rules x drawn values; far fewer in any real budget


def read_steps(docs: list[voc.StepDoc], workdir: str) -> Scenario:
    """The scenario file these step documents make, as the scenario reader reads it (once per distinct text)."""
    key = (workdir, repr(docs))
    scenario = _READ.get(key)
    if scenario is None:
        if len(_READ) >= _READ_LIMIT:
            _READ.clear()
        scenario = _READ[key] = scenario_from_text(voc.scenario_text(SCRATCH_NAME, docs, workdir=workdir))
    return scenario


# An in-process sequence's workspace is made, written (the agent's session, saved with fsync; the step logs)
# and removed within milliseconds, hundreds of times a second. On a disk those file-system calls were a third
# of the search's time (make bench: 275 against 420 steps per second on the reference agent); in memory
# they cost next to nothing. A TMPDIR the user set is theirs to choose, and is used instead.
_RAM = Path("/dev/shm")
_ram_checked: list[Path | None] = []


def ram_folder() -> Path | None:
    """/dev/shm when it is a writable folder and TMPDIR is not set; else None (the temporary folder)."""
    if os.environ.get("TMPDIR"):
        return None
    if not _ram_checked:  # probed once per process
        folder = None
        if _RAM.is_dir():
            try:
                tempfile.TemporaryDirectory(dir=_RAM).cleanup()  # a real write: access bits do not say (read-only mounts)
                folder = _RAM
            except OSError:
                pass
        _ram_checked.append(folder)
    return _ram_checked[0]


class StepSequence(RuleBasedStateMachine):
    exploration: ClassVar[Exploration]

    def __init__(self) -> None:
        super().__init__()
        self.docs: list[voc.StepDoc] = []
        self.run: LiveRun | None = None
        self.answered_turns = 0  # since the launch or the last compaction
        self.last_answered = False  # the last step ended with a reply (a retry may call it wrong)
        self.last_failed = False  # the last step's turn was failed by the model API
        self.edits = 0
        self.scenario: Scenario | None = None  # the sequence so far, as the scenario reader reads it
        self.checks: tuple[str, ...] = ()  # what the sequence so far is judged by
        self.finding: Finding | None = None

    @property
    def q(self) -> voc.Question:
        """The next step's question, from its position: nothing to draw, nothing to shrink, and every prompt distinct."""
        return voc.Question(len(self.docs) + 1, len(self.docs) + 2)

    def _room(self) -> bool:
        return 0 < len(self.docs) < self.exploration.max_steps

    @precondition(lambda self: not self.docs)
    @rule()
    def launch(self) -> None:
        self._take("launch", voc.launch(self.q), answered=True)

    @precondition(lambda self: self._room())
    @rule()
    def resume(self) -> None:
        self._take("resume", voc.resume(self.q), answered=True)

    @precondition(lambda self: self._room() and (self.last_answered or self.last_failed))
    @rule()
    def retry(self) -> None:
        """After a failed turn, the same prompt again; after an answer, the launcher calls it wrong."""
        if self.last_failed:
            self._take("retry_after_failed_turn", voc.retry_after_failed_turn(self.docs[-1], self.q), answered=True)
        else:
            self._take("retry_after_wrong_answer", voc.retry_after_wrong_answer(self.q), answered=True)

    @precondition(lambda self: self._room())
    @rule(error=st.sampled_from(voc.API_ERRORS))
    def turn_failed_by_api(self, error: dict) -> None:
        self._take("turn_failed_by_api", voc.turn_failed_by_api(self.q, error), answered=False, failed=True)

    @precondition(lambda self: self._room() and self.answered_turns >= 2 and self.exploration.can_compact())
    @rule()
    def compact(self) -> None:
        self._take("compact", voc.compact(len(self.docs) + 1), answered=False)
        self.answered_turns = 0

    @precondition(lambda self: self._room() and self.exploration.target.tool_call is not None)
    @rule()
    def tool_call_turn(self) -> None:
        self._take("tool_call_turn", voc.tool_call_turn(self.q, self.exploration.target.tool_call), answered=True)

    @precondition(lambda self: self._room())
    @rule(commit=st.booleans())
    def workdir_change_turn(self, commit: bool) -> None:
        self.edits += 1
        commit = commit and self.exploration.workdir == "git"
        self._take("workdir_change_turn", voc.workdir_change_turn(self.q, self.edits, commit), answered=True)

    @precondition(lambda self: self._room() and self.exploration.passes_temporary_text())
    @rule()
    def turn_with_temporary_text(self) -> None:
        self._take("turn_with_temporary_text", voc.turn_with_temporary_text(self.q), answered=True)

    def _take(self, rule: str, docs: list[voc.StepDoc], *, answered: bool, failed: bool = False) -> None:
        """Run the new steps in this sequence's live run, then judge the whole run so far."""
        exploration = self.exploration
        done = len(self.docs)
        self.docs.extend(docs)
        # Only the launch and the new steps are read, then renumbered: reading the whole sequence again
        # at every step would cost more than running it in-process.
        head = self.docs[:1] if done else []
        new = read_steps(head + docs, exploration.workdir)
        steps = [dataclasses.replace(step, index=done + step.index - len(head), line=None)
                 for step in new.steps[len(head):]]
        self.checks = voc.checks_for(self.docs, exploration.passes("append", "launch"))
        earlier = self.scenario.steps if self.scenario else ()
        self.scenario = scenario = dataclasses.replace(new, steps=(*earlier, *steps), checks=self.checks)
        if self.run is None:
            try:
                self.run = LiveRun(scenario, exploration.target, workspace_parent=exploration.workspace_parent).__enter__()
            except WorkspaceError as exc:  # a full disk: the harness cannot go on, and no target is to blame
                raise ExplorationError(str(exc)) from None
            problem = self.run.prepare()
            if problem:
                raise ExplorationError(problem)
        for step in steps:
            result = self.run.run_step(step)
            exploration.steps += 1
            exploration.rules[rule] += 1
            if result.error:
                self._found(finding_type(RUN_ERROR)(self.docs[:step.index], step.index, result.error, self._where()))
            # Only the launch checks read the launch journal; copying it after every step cost 2% of a search.
            launches = self.run.recorded_launches() if set(LAUNCH_CHECKS).intersection(self.checks) else ()
            for verdict in judge(scenario, exploration.target, self.run.exchanges(), None, launches):
                if verdict.verdict == ERROR:  # the check could not judge: the harness's problem, not the target's
                    raise ExplorationError(f"{verdict.check} could not judge step {step.index} of "
                                           f"{voc.step_kinds(self.docs)}: {verdict.message}")
                if verdict.verdict == FAIL:
                    self._found(finding_type(verdict.check)(self.docs[:step.index], step.index, verdict.message,
                                                            self._where()))
        self.answered_turns += 1 if answered else 0
        self.last_answered, self.last_failed = answered, failed

    def _where(self) -> "Setting":
        return Setting(self.exploration.workdir, self.checks)

    def _found(self, finding: Finding) -> None:
        self.finding = finding
        raise finding

    def teardown(self) -> None:
        if self.run is not None:
            self.run.close()
        exploration = self.exploration
        exploration.sequences += 1
        exploration.failing += self.finding is not None
        exploration.on_sequence(exploration, self.docs, self.finding)


def machine_for(exploration: Exploration) -> type[StepSequence]:
    """A machine class bound to one exploration (Hypothesis instantiates it once per sequence)."""
    return type(f"StepSequence_{exploration.sequences}", (StepSequence,), {"exploration": exploration})
