"""summary.md: the verdict matrix and every unexpected verdict's evidence, fit for a pull request."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from harness.redaction import redact
from harness.report import caller_text, files
from harness.report.wording import attempt_outcome, cell, check_columns, counts, mismatch_heading, outcome
from harness.results import ERROR, RunResult


def render(results: list[RunResult], notes: Sequence[str] = ()) -> str:
    total = counts(results)
    ok = total["as_expected"] == total["runs"]
    stopped = [r for r in results if r.interrupted]
    heading = "all verdicts as expected" if ok else "verdicts differ from expectations"
    if stopped:
        heading = f"INTERRUPTED: {len(stopped)} of {len(results)} runs incomplete or not run; this is not a result"
    lines = [
        "# harness: " + heading,
        "",
        f"{total['runs']} runs: {total['as_expected']} as expected, {total['unexpected']} unexpected, "
        f"{total['errors']} errors" + (f", {total['flaky']} flaky" if total["flaky"] else "")
        + ". `!` marks a verdict that differs from the scenario's expectation.",
        "",
        *(line for note in notes for line in (f"> **Note:** {note}", "")),
    ]
    columns = check_columns(results)
    lines.append("| scenario | target | " + " | ".join(columns) + " | result |")
    lines.append("|---|---|" + "---|" * len(columns) + "---|")
    for result in results:
        cells = [cell(next((c for c in result.checks if c.check == name), None)) for name in columns]
        lines.append(f"| {result.scenario} | `{result.target}` | " + " | ".join(cells) + f" | {outcome(result)} |")
    lines += caller_text.markdown_section(results)
    not_run = [r for r in results if r.cannot_express]
    if not_run:
        lines += ["", "## Not run: the target cannot express the scenario", ""]
        lines += [f"- {r.scenario} · `{r.target}`: {r.cannot_express}" for r in not_run]
    problems = [r for r in results if not r.as_expected]
    if problems:
        lines += ["", "## What differs", ""]
        for result in problems:
            lines.append(f"### {result.scenario} · `{result.target}`")
            lines.append("")
            if result.flaky:
                lines += ["Flaky: the same inputs gave verdicts that disagree across attempts.", ""]
                lines += [f"- attempt {n}: {attempt_outcome(a)}" + (f" (journal `{a.journal}`)" if a.journal else "")
                          for n, a in enumerate([*result.attempts, result], 1)]
                lines.append("")
                for n, attempt in enumerate(result.attempts, 1):
                    lines += [f"**attempt {n}, {mismatch_heading(c)}**\n\n```\n{c.message}\n```\n"
                              for c in attempt.checks if not c.as_expected and c.verdict != ERROR]
            if result.status == ERROR and result.error:
                lines += ["Run error:", "", "```", result.error, "```", ""]
            for check in result.checks:
                if not check.as_expected and check.verdict != ERROR:
                    lines += [f"**{mismatch_heading(check)}**", "",
                              "```", check.message, "```", ""]
            if result.journal:
                lines += [f"Journal: `{result.journal}`", ""]
    return redact("\n".join(lines) + "\n")


def write(results: list[RunResult], path: Path, notes: Sequence[str] = ()) -> Path:
    files.write_text(path, render(results, notes))
    return path
