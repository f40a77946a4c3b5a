"""The steps `harness explore` can take, written as the scenario file would write them.

Each step kind is a small function from drawn values to YAML step documents
(plain dicts, in the scenario file's own grammar). The explorer runs the
scenario those documents make, parsed by the same reader as any file, so a
finding written to disk is byte for byte what ran.

The values drawn are deliberately plain (two small numbers, one of a few API
errors), so a shrunk finding reads like a scenario someone wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from harness.scenario.writer import render

# What the caller appends on every launch: the text the checks follow through each step.
APPEND = "Rules: answer with one number; report every command you run."
# What the target is told for one step only (temporary_text_transient: no later request may carry it).
STEP_TEMPORARY = "For this turn only: the user is reviewing, so state the arithmetic."
# The scripted model errors a turn can fail with. A 400 is not retried by agents; a 529 with retry-after 0
# may be, in-process, and every request of the step gets it, so the process still ends up failing.
API_ERRORS: tuple[dict, ...] = (
    {"status": 400, "type": "invalid_request_error", "message": "harness explore: scripted failure of this turn"},
    {"status": 529, "type": "overloaded_error", "message": "Overloaded", "retry_after": 0},
)
NOTES_FILE = "notes.txt"

StepDoc = dict[str, Any]


@dataclass(frozen=True)
class Question:
    """A turn's prompt and its right answer: `a+b`."""

    a: int
    b: int

    @property
    def prompt(self) -> str:
        return f"What is {self.a}+{self.b}?"

    @property
    def answer(self) -> str:
        return str(self.a + self.b)


def launch(q: Question) -> list[StepDoc]:
    return [{"launch": {"prompt": q.prompt, "reply": q.answer}}]


def resume(q: Question) -> list[StepDoc]:
    return [{"resume": {"prompt": q.prompt, "reply": q.answer}}]


def retry_after_wrong_answer(q: Question) -> list[StepDoc]:
    """The launcher calls the last reply wrong and asks again in a fresh process."""
    return [{"retry": {"prompt": f"That is not right. {q.prompt}", "reply": q.answer}}]


def turn_failed_by_api(q: Question, error: Mapping[str, Any]) -> list[StepDoc]:
    """A turn the model API fails: the process exits non-zero, and the launcher may retry it."""
    return [{"resume": {"prompt": q.prompt, "error": dict(error)}}]


def retry_after_failed_turn(failed: StepDoc, q: Question) -> list[StepDoc]:
    """The failed turn's prompt again, in a fresh process."""
    return [{"retry": {"prompt": next(iter(failed.values()))["prompt"], "reply": q.answer}}]


def compact(number: int) -> list[StepDoc]:
    return [{"compact": {"summary": f"Summary {number}: the user asked sums; each was answered with one number."}}]


def tool_call_turn(q: Question, tool: Mapping[str, Any]) -> list[StepDoc]:
    """A turn that calls one of the agent's own tools before answering: two requests in one process."""
    return [{"resume": {"prompt": q.prompt, "reply": [{"tool_use": dict(tool)}, q.answer]}}]


def workdir_change_turn(q: Question, number: int, commit: bool) -> list[StepDoc]:
    """The user edits (and maybe commits) a file of the repository between two turns."""
    step: StepDoc = {"prompt": q.prompt, "edit": {NOTES_FILE: f"note {number}\n"}}
    if commit:
        step["commit"] = f"Note {number}"
    step["reply"] = q.answer
    return [{"resume": step}]


def turn_with_temporary_text(q: Question) -> list[StepDoc]:
    return [{"resume": {"prompt": q.prompt, "temporary": STEP_TEMPORARY, "reply": q.answer}}]


def checks_for(steps: list[StepDoc], takes_append: bool) -> tuple[str, ...]:
    """The checks a sequence is judged by: every default check it gives something to judge.

    `appended_exactly_once` only where the target is handed the caller's text ({append}; code-puppy and
    pydantic-ai agents have no flag for it), `temporary_text_transient` once a step has temporary text.
    """
    from harness.checks import CHECK_NAMES, OPT_IN_CHECKS
    from harness.scenario.checks_section import APPEND_CHECK, CACHE_CHECK, TEMPORARY_CHECK

    skipped = {*OPT_IN_CHECKS, CACHE_CHECK}
    if not takes_append:
        skipped.add(APPEND_CHECK)
    if not any("temporary" in body for step in steps for body in step.values()):
        skipped.add(TEMPORARY_CHECK)
    return tuple(name for name in CHECK_NAMES if name not in skipped)


def step_kinds(steps: list[StepDoc]) -> str:
    """`launch → resume → compact`: a sequence at a glance."""
    return " → ".join(next(iter(step)) for step in steps)


def first_line(text: str, limit: int = 400) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def workdir_kind(in_process: bool) -> str:
    """A git repository for agents run as processes; a plain folder in-process, where git's own processes
    would be the only subprocesses (a working-directory change is then an edit, never a commit)."""
    return "plain" if in_process else "git"


def scenario_text(name: str, steps: list[StepDoc], *, workdir: str = "git", description: str = "",
                  checks: tuple[str, ...] | None = None, comment: str = "") -> str:
    """The scenario file for these steps: the working directory, the caller's text, the steps in flow style."""
    doc: dict[str, Any] = {"name": name}
    if description:
        doc["description"] = description
    doc["append"] = APPEND
    if workdir != "plain":
        doc["workdir"] = workdir
    doc["steps"] = steps
    if checks is not None:
        doc["checks"] = list(checks)
    return render(doc, comment)
