"""Every output of a run (console, results.json, summary.md, junit.xml) renders the same RunResults."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from harness.report import json_report, junit, markdown
from harness.results import RunResult


def write_reports(results: list[RunResult], report_dir: Path, command: list[str], notes: Sequence[str] = ()) -> list[Path]:
    """`notes`: what a reader of any one report must know about the whole command (a target chosen by default)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    written = [
        json_report.write(results, report_dir / "results.json", command, notes),
        markdown.write(results, report_dir / "summary.md", notes),
        junit.write(results, report_dir / "junit.xml", notes),
    ]
    return written
