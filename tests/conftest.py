"""Shared test plumbing: the defect-matrix table printed at the end of the test run.

Library tests attach one row each (via user_properties, which pytest-xdist
carries from workers to the controller); the table is printed in the
terminal summary so every `make test` shows what each defect breaks.
"""

from __future__ import annotations

import json

MATRIX_KEY = "harness_defect_matrix_row"
_rows: list[dict] = []


def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    for key, value in report.user_properties:
        if key == MATRIX_KEY:
            _rows.append(json.loads(value))


def pytest_terminal_summary(terminalreporter):
    if not _rows:
        return
    rows = sorted(_rows, key=lambda r: (r["target"] != "reference", r["order"]))
    checks = rows[0]["checks"]
    header = ["target", *checks, "verdicts as expected"]
    table = [header] + [
        [r["target"], *(f"fails {r['fails'][c]}/{r['scenarios']}" for c in checks),
         f"{r['as_expected']}/{r['scenarios']}"]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    terminalreporter.section("reference agent × scenario library")
    terminalreporter.write_line("scenarios in which each check failed, per target (from the journals of real runs):")
    for i, row in enumerate(table):
        terminalreporter.write_line("  ".join(cell.ljust(widths[j]) for j, cell in enumerate(row)).rstrip())
        if i == 0:
            terminalreporter.write_line("  ".join("-" * w for w in widths))
