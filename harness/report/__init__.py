"""Every output of a run (console, results.json, summary.md, junit.xml) renders the same RunResults."""

from __future__ import annotations

from pathlib import Path

from harness.report import json_report, junit, markdown
from harness.results import RunResult


def write_reports(results: list[RunResult], report_dir: Path, command: list[str]) -> list[Path]:
    report_dir.mkdir(parents=True, exist_ok=True)
    written = [
        json_report.write(results, report_dir / "results.json", command),
        markdown.write(results, report_dir / "summary.md"),
        junit.write(results, report_dir / "junit.xml"),
    ]
    return written
