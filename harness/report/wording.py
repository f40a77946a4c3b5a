"""How verdicts, steps and mismatches read: one wording for the console, summary.md, junit and pytest."""

from __future__ import annotations

from harness.results import CANNOT_EXPRESS, ERROR, PASS, CheckResult, RunResult, StepResult


def cell(check: CheckResult | None) -> str:
    """`pass`, `fail`, `error`; a `!` marks a verdict that differs from the scenario's expectation."""
    if check is None:
        return "-"
    return check.verdict + ("" if check.as_expected else "!")


def outcome(result: RunResult) -> str:
    if result.flaky:
        return f"FLAKY ({attempts_line(result)})"
    if result.status == ERROR:
        return "ERROR"
    if result.status == CANNOT_EXPRESS:
        return "CANNOT EXPRESS"
    if not result.as_expected:
        return "UNEXPECTED"
    expected_failures = any(c.verdict != PASS for c in result.checks)
    return "ok (fails as expected)" if expected_failures else "ok"


def attempt_outcome(attempt: RunResult) -> str:
    """One attempt alone: `as expected`, `not as expected (appended_exactly_once fail)`, `ERROR`."""
    if attempt.attempt_as_expected:
        return "as expected"
    if attempt.status == ERROR:
        return "ERROR"
    return "not as expected (" + ", ".join(f"{c.check} {c.verdict}" for c in attempt.checks if not c.as_expected) + ")"


def attempts_line(result: RunResult) -> str:
    """`attempt 1 not as expected (...), attempt 2 as expected`: each attempt in order, the last one this result."""
    return ", ".join(f"attempt {n} {attempt_outcome(a)}" for n, a in enumerate([*result.attempts, result], 1))


def check_columns(results: list[RunResult]) -> list[str]:
    columns: list[str] = []
    for result in results:
        for check in result.checks:
            if check.check not in columns:
                columns.append(check.check)
    return columns


def counts(results: list[RunResult]) -> dict[str, int]:
    return {
        "runs": len(results),
        "as_expected": sum(1 for r in results if r.as_expected),
        "unexpected": sum(1 for r in results if not r.as_expected and r.status != ERROR and not r.flaky),
        "flaky": sum(1 for r in results if r.flaky),
        "errors": sum(1 for r in results if r.status == ERROR and not r.flaky),
        "pass": sum(1 for r in results if r.status == PASS),
        "fail": sum(1 for r in results if r.status == "fail"),
        "cannot_express": sum(1 for r in results if r.status == CANNOT_EXPRESS),
    }


def mismatch_heading(check: CheckResult) -> str:
    return f"{check.check}: expected {check.expected_verdict}, got {check.verdict}"


def indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def step_line(step: StepResult, total: int | None = None) -> str:
    number = f"{step.index}/{total}" if total else str(step.index)
    state = "timeout" if step.timed_out else f"exit {step.exit_code}"
    kinds = ", ".join(f"{n} {klass}" for klass, n in step.classes.items())
    line = f"step {number} {step.kind:<8} {state:<8} {step.duration_s:6.2f}s  {step.requests} request(s)"
    return line + (f": {kinds}" if kinds else "")


def explain(result: RunResult) -> str:
    """A whole run as a failure report: its steps, then every check, mismatches with their evidence."""
    lines = [f"scenario {result.scenario!r} on target {result.target!r}: status {result.status}"]
    if result.flaky:
        lines.append(f"FLAKY: {attempts_line(result)}; " + ", ".join(
            f"attempt {n}'s journal: {a.journal}" for n, a in enumerate(result.attempts, 1) if a.journal))
    for step in result.steps:
        lines.append("  " + step_line(step) + (f"\n    ✗ {step.error}" if step.error else ""))
    if result.error:
        lines.append(f"run error: {result.error}")
    if result.cannot_express:
        lines.append(f"not run: the target cannot express {result.cannot_express}")
    for check in result.checks:
        if check.as_expected:
            lines.append(f"  {check.check}: {check.verdict} (as expected)")
        else:
            lines.append("✗ " + mismatch_heading(check))
            lines.append(indent(check.message))
    if result.journal:
        lines.append(f"journal: {result.journal}")
    return "\n".join(lines)
