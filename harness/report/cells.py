"""How one verdict reads in a table, the same in the console and in summary.md."""

from __future__ import annotations

from harness.results import ERROR, PASS, CheckResult, RunResult


def cell(check: CheckResult | None) -> str:
    """`pass`, `fail`, `error`; a `!` marks a verdict that differs from the scenario's expectation."""
    if check is None:
        return "-"
    return check.verdict + ("" if check.as_expected else "!")


def outcome(result: RunResult) -> str:
    if result.status == ERROR:
        return "ERROR"
    if not result.as_expected:
        return "UNEXPECTED"
    expected_failures = any(c.verdict != PASS for c in result.checks)
    return "ok (fails as expected)" if expected_failures else "ok"


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
        "unexpected": sum(1 for r in results if not r.as_expected and r.status != ERROR),
        "errors": sum(1 for r in results if r.status == ERROR),
        "pass": sum(1 for r in results if r.status == PASS),
        "fail": sum(1 for r in results if r.status == "fail"),
    }
