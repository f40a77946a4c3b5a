"""A run attempted again: `--retries N` after verdicts that differ, `--repeat N` every time (a soak).

A real agent is a program with threads, timers and an unsorted directory walk,
so the same inputs can give two answers (Gemini CLI lists its skills in the
order a glob finds them). Retrying until green would hide that; never retrying
makes a gate that fails on noise. So a run is attempted again only under a
policy the caller chose, every attempt keeps its journal under its own name,
and a run whose attempts disagree is `flaky` (results.FLAKY) in every report:
not as expected, and a failed gate unless the caller allows flakes.

The last attempt keeps the run's own journal name (SCENARIO__TARGET.jsonl),
so everything that reads a report folder finds the run where it always was;
the earlier ones are set aside as SCENARIO__TARGET.attempt-K.jsonl.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.results import CANNOT_EXPRESS, RunResult


@dataclass(frozen=True)
class Attempts:
    """How many times a run may be attempted. The default, one attempt, is a run as it always was."""

    retries: int = 0  # further attempts while the verdicts differ from the scenario's expectations
    repeat: int = 1  # attempts every run gets whatever its verdicts (make soak)

    @property
    def most(self) -> int:
        return self.repeat + self.retries

    def another(self, done: int, last: RunResult) -> str | None:
        """Why attempt once more after `done` attempts ending in `last`, or None: this one is the run's result."""
        if done >= self.most or last.interrupted or last.harness_failure or last.status == CANNOT_EXPRESS:
            return None  # a stop, a full disk or a scenario the target cannot carry out is not noise
        if done < self.repeat:
            return f"repeat {done + 1} of {self.repeat}"
        if not last.attempt_as_expected:
            return f"retry {done + 1 - self.repeat} of {self.retries}: {differences(last)}"
        return None


def differences(result: RunResult) -> str:
    if result.error:
        return f"the run errored ({result.error.splitlines()[0][:160]})"
    wrong = [f"{c.check} {c.verdict}, expected {c.expected_verdict}" for c in result.checks if not c.as_expected]
    return "verdicts differ from the expectations (" + "; ".join(wrong) + ")"


def set_aside(result: RunResult, number: int) -> RunResult:
    """Move an attempt's journals (and an interactive run's terminal transcripts) to names of their own, so the
    next attempt cannot overwrite them, and point the result at them."""
    moved: dict[str, str] = {}
    for field_name in ("journal", "launch_journal"):
        path = getattr(result, field_name)
        if path is None or not Path(path).exists():
            continue
        kept = attempt_path(Path(path), number)
        Path(path).replace(kept)
        moved[path] = str(kept)
        setattr(result, field_name, str(kept))
    if result.journal is not None:
        journal = Path(result.journal)
        stem = journal.name.removesuffix(f".attempt-{number}{journal.suffix}")
        terminals = journal.parent / "terminals"
        own = re.compile(re.escape(stem) + r"(\.step-\d+\.txt)")  # as execution/pty.py's keep_transcript names them
        for transcript in sorted(terminals.iterdir()) if terminals.is_dir() else []:
            match = own.fullmatch(transcript.name)
            if match:
                kept = terminals / f"{stem}.attempt-{number}{match.group(1)}"
                transcript.replace(kept)
                moved[str(transcript)] = str(kept)
    for step in result.steps:  # a step's notes name its transcript
        step.notes = [_renamed(note, moved) for note in step.notes]
    return result


def _renamed(text: str, moved: dict[str, str]) -> str:
    for old, new in moved.items():
        text = text.replace(old, new)
    return text


def attempt_path(path: Path, number: int) -> Path:
    """`NAME.jsonl` -> `NAME.attempt-K.jsonl`: beside the run's own journal, sorted with it."""
    return path.with_name(f"{path.stem}.attempt-{number}{path.suffix}")
