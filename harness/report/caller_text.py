"""The caller's text seen from both sides, step by step: what the launcher passed, and what reached the model.

A bridge can hide a launcher's bug from the model until a compaction (the first
seed), so a run that judges both is shown with both columns side by side. Read
from the two checks' evidence only: the report says what the verdicts saw.
"""

from __future__ import annotations

from harness.results import APPENDED_IN_LAUNCHES as LAUNCH_CHECK
from harness.results import APPENDED_IN_REQUESTS as REQUEST_CHECK
from harness.results import RunResult

HEADER = ("step", "launch passed it", "requests carried it")


def rows(result: RunResult) -> list[tuple[str, str, str]] | None:
    """One row per step, or None when the run did not judge both vantage points."""
    checks = {c.check: c for c in result.checks}
    launch, request = checks.get(LAUNCH_CHECK), checks.get(REQUEST_CHECK)
    if launch is None or request is None or not (launch.evidence or request.evidence):
        return None
    by_launch = {e["step"]: e["count"] for e in launch.evidence.get("by_launch", [])}
    # Where the launcher put it: an argv option (--append-system-prompt) or a field of what it sent on the
    # agent's stdin (initialize.appendSystemPrompt, the TypeScript Agent SDK's way).
    options = {e["step"]: e.get("options") or [] for e in launch.evidence.get("by_launch", [])}
    by_request: dict[int, list[int]] = {}
    for entry in request.evidence.get("by_request", []):
        by_request.setdefault(entry["step"], []).append(entry["count"])
    out = []
    for step in result.steps:
        passed = by_launch.get(step.index)
        counts = by_request.get(step.index)
        launch_cell = "not recorded" if passed is None else f"{passed}×" + ("" if passed == 1 else " ✗")
        if passed and options.get(step.index):
            launch_cell += " in " + ", ".join(dict.fromkeys(options[step.index]))
        if counts:
            request_cell = " ".join(f"{n}×" for n in counts) + ("" if all(n == 1 for n in counts) else " ✗")
        elif "main" in step.classes:  # the step's turns were answered with the scripted error
            request_cell = "no answered main request"
        else:
            request_cell = "no main request" + (f" ({', '.join(step.classes)})" if step.classes else "")
        out.append((f"{step.index} {step.kind}", launch_cell, request_cell))
    return out


def text_section(results: list[RunResult]) -> str:
    """For the console: each run where either side missed or doubled the text, as a small table (summary.md has all)."""
    blocks = []
    for result in results:
        table = rows(result)
        if table is None or not any("✗" in cell or "not recorded" in cell for row in table for cell in row):
            continue
        widths = [max(len(r[i]) for r in [HEADER, *table]) for i in range(3)]
        lines = [f"the caller's text · {result.scenario} · {result.target}"]
        lines += ["  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [HEADER, *table]]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def markdown_section(results: list[RunResult]) -> list[str]:
    lines: list[str] = []
    for result in results:
        table = rows(result)
        if table is None:
            continue
        if not lines:
            lines += ["", "## The caller's text: launcher vs model", "",
                      "How many times each launch passed the caller's text (launch journal), and how many times "
                      "each of the step's requests carried it (request journal).", ""]
        lines += [f"**{result.scenario}** · `{result.target}`", "", "| " + " | ".join(HEADER) + " |", "|---|---|---|"]
        lines += ["| " + " | ".join(row) + " |" for row in table]
        lines.append("")
    return lines
