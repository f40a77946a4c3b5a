"""results.json: the machine-readable record of a run, one entry per scenario × target."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Sequence

import harness
from harness.redaction import redact_json
from harness.report import files
from harness.report.wording import counts
from harness.results import RunResult


def document(results: list[RunResult], command: list[str], notes: Sequence[str] = ()) -> dict:
    return {
        "harness_version": harness.__version__,
        "written_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "interrupted": any(r.interrupted for r in results),  # true: the harness was stopped, the record is incomplete
        "notes": list(notes),  # about the whole command, e.g. that no --target was given
        "summary": counts(results),
        "runs": [r.to_json() for r in results],
    }


def write(results: list[RunResult], path: Path, command: list[str], notes: Sequence[str] = ()) -> Path:
    text = json.dumps(redact_json(document(results, command, notes)), indent=2, ensure_ascii=False)  # value by value: valid JSON
    files.write_text(path, text + "\n")
    return path
