"""The terminal: a line per step while the run goes, then the verdict table."""

from __future__ import annotations

import sys
from typing import Protocol, Sequence, TextIO

from harness.redaction import redact
from harness.report.wording import attempts_line, cell, check_columns, counts, indent, mismatch_heading, outcome, step_line
from harness.results import RunResult, StepResult


# What the progress lines read of the scenario and target run/runner.py's Progress hands over, named by shape:
# a report imports neither package.
class _Target(Protocol):
    @property
    def name(self) -> str: ...


class _Scenario(_Target, Protocol):
    @property
    def steps(self) -> Sequence[object]: ...


class ConsoleProgress:
    """`concurrent`: runs overlap (`harness run -n N`), so every line starts with its run's `[n/total]` tag."""

    def __init__(self, stream: TextIO | None = None, concurrent: bool = False):
        self.stream = stream if stream is not None else sys.stderr  # the one in place now, not at import
        self.concurrent = concurrent
        self._tags: dict[tuple[str, str], str] = {}

    def _say(self, text: str, run: tuple[str, str] | None = None) -> None:
        if self.concurrent and run is not None:  # "      step …" -> "[ 3/40]   step …": whole lines, each tagged
            tag = self._tags.get(run) or f"[{run[0]} · {run[1]}]"
            text = "\n".join(f"{tag} {line.removeprefix('    ')}" for line in text.split("\n"))
        self.stream.write(redact(text) + "\n")
        self.stream.flush()

    def run_started(self, scenario: _Scenario, target: _Target, number: int, total: int) -> None:
        width = len(str(total))
        tag = f"[{number:>{width}}/{total}]"
        self._tags[(scenario.name, target.name)] = tag
        self._say(f"{tag} {scenario.name} · {target.name}  ({len(scenario.steps)} steps)")

    def step_finished(self, scenario: _Scenario, target: _Target, step: StepResult) -> None:
        line = "      " + step_line(step, len(scenario.steps))
        if step.error:
            line += f"\n      ✗ {step.error}"
        for note in step.notes:
            line += f"\n      · {note}"
        self._say(line, (scenario.name, target.name))

    def attempt_started(self, scenario: _Scenario, target: _Target, attempt: int, most: int, why: str) -> None:
        self._say(f"      ↻ attempt {attempt} of at most {most} ({why}); the last attempt's journal is kept beside",
                  (scenario.name, target.name))

    def run_finished(self, result: RunResult) -> None:
        run = (result.scenario, result.target)
        failing = [f"{c.check}={c.verdict}" for c in result.checks if c.verdict != "pass"]
        self._say(f"      → {outcome(result)}" + (f"  ({', '.join(failing)})" if failing else ""), run)
        if result.workspace:
            self._say(f"      workspace kept at {result.workspace}", run)


def table(results: list[RunResult]) -> str:
    columns = check_columns(results)
    header = ["scenario", "target", *columns, "result"]
    rows = [header]
    for result in results:
        cells = [cell(next((c for c in result.checks if c.check == name), None)) for name in columns]
        rows.append([result.scenario, result.target, *cells, outcome(result)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(value.ljust(widths[i]) for i, value in enumerate(row)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    total = counts(results)
    lines.append("")
    stopped = sum(1 for r in results if r.interrupted)
    if stopped:
        lines.append(f"INTERRUPTED: {stopped} of {len(results)} runs incomplete or not run; the verdicts above are not a result")
    not_run = f", {total['cannot_express']} the target cannot express" if total["cannot_express"] else ""
    flaky = f", {total['flaky']} flaky" if total["flaky"] else ""
    lines.append(
        f"{total['runs']} runs: {total['as_expected']} as expected, {total['unexpected']} unexpected, {total['errors']} errors"
        f"{flaky}{not_run}  (`!` marks a verdict that differs from the scenario's expectation)"
    )
    lines += [f"  {r.scenario} · {r.target}: cannot express {r.cannot_express}" for r in results if r.cannot_express]
    return "\n".join(lines)


def failure_details(results: list[RunResult]) -> str:
    """The evidence for every verdict that differs from its expectation, redacted: it quotes what the agent sent."""
    blocks = []
    for result in results:
        if result.as_expected:
            continue
        head = f"✗ {result.scenario} · {result.target}"
        if result.flaky:
            blocks.append(f"{head}: FLAKY, {attempts_line(result)}")
        if result.error:
            blocks.append(f"{head}: run error\n  {result.error}")
            continue
        for check in result.checks:
            if not check.as_expected:
                blocks.append(f"{head} · {mismatch_heading(check)}\n{indent(check.message, '  ')}")
    return redact("\n\n".join(blocks))
