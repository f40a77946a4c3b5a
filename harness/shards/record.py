"""shard.json: what one shard ran and everything the merge rebuilds the reports from (Playwright's blob report).

A shard's folder is a complete report folder for its own runs (results.json,
junit.xml, summary.md, report.html, journal/), readable on its own in a CI
artifact; shard.json beside them holds what those files cannot give back:

- `shard`: this shard's number and the number of shards;
- `inputs`: what every shard of one matrix must share, so the merge can
  refuse shards of different inputs: the sha256 of each scenario file's
  bytes, each target's spec, installed builds, target-file digest and
  revision, the whole matrix in the single run's order (the merge's order),
  how runs were assigned, the harness version and the command's options;
- `runs` (or `comparison` for `harness diff`): the full results, request
  pairs included, through codec.py, so report.html's evidence is the same
  as a single run's;
- `report_dir`: the folder as the results' journal paths name it, so the
  merge can point them at the merged folder's journal/.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import harness
from harness.errors import InputError
from harness.redaction import redact_json
from harness.report import files
from harness.results import Comparison, RunResult
from harness.scenario.model import Scenario
from harness.shards.assignment import RunId, Shard
from harness.shards.codec import DecodeError, decode, encode
from harness.targets.base import Target

RECORD_NAME = "shard.json"
FORMAT = "harness-shard/1"
RUN, DIFF = "run", "diff"


@dataclass
class ShardRecord:
    kind: str  # RUN or DIFF
    index: int
    count: int
    command: list[str]
    report_dir: str
    inputs: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    runs: list[RunResult] = field(default_factory=list)  # kind RUN: this shard's runs, in matrix order
    comparison: Comparison | None = None  # kind DIFF: this shard's scenarios compared
    format: str = FORMAT

    @property
    def shard(self) -> Shard:
        return Shard(self.index, self.count)

    @property
    def matrix(self) -> list[RunId]:
        return [(str(s), str(t)) for s, t in self.inputs["matrix"]]


def file_digest(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"


def target_inputs(target: Target) -> dict[str, Any]:
    """What makes two machines' targets of one name the same agent: spec, installed builds, target file, revision."""
    return {"spec": target.spec, "installed": list(target.installed), "target_file": file_digest(target.source),
            "revision": target.revision}


def inputs_of(scenarios: Sequence[Scenario], targets: Sequence[Target], matrix: Sequence[RunId], assignment: str,
              options: dict[str, Any]) -> dict[str, Any]:
    """The record's `inputs`: equal on every shard of one matrix, and only then."""
    digests = {s.name: file_digest(s.path) for s in scenarios}
    builds = {t.name: target_inputs(t) for t in targets}
    return {"harness_version": harness.__version__, "assignment": assignment, "options": options,
            "scenarios": dict(sorted(digests.items())), "targets": dict(sorted(builds.items())),
            "matrix": [list(run) for run in matrix]}


def write(folder: Path, record: ShardRecord) -> Path:
    """shard.json, through the one redactor as results.json is: a CI artifact never carries an agent's credentials."""
    text = json.dumps(redact_json(encode(record, ShardRecord)), indent=1, ensure_ascii=False)
    return files.write_text(folder / RECORD_NAME, text + "\n")


def read(folder: Path) -> ShardRecord:
    """The record of a shard folder; InputError (exit 2) for a folder that holds none or a broken one."""
    path = Path(folder) / RECORD_NAME
    if not Path(folder).is_dir():
        raise InputError("no such folder: merge-reports merges the report folders of `harness run --shard i/n`", folder)
    if not path.is_file():
        raise InputError(f"not a shard folder: it has no {RECORD_NAME} (`harness run --shard i/n` and `harness diff "
                         "--shard i/n` write one)", folder)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read it as JSON: {exc}", path) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        raise InputError(f"not a shard record of this harness (format {found!r}, expected {FORMAT!r})", path)
    try:
        return decode(data, ShardRecord)
    except (DecodeError, KeyError, TypeError, ValueError) as exc:
        raise InputError(f"a broken shard record: {exc}", path) from None


SHARD_OPTIONS = ("--shard", "--shard-durations")


def single_run_command(command: Sequence[str], report_dir: Path) -> list[str]:
    """The command as a single run of the whole matrix into `report_dir` would read: the shard options left out,
    `--report-dir` naming the merged folder (what the merged report.html and results.json quote)."""
    out: list[str] = []
    words = iter(command)
    for word in words:
        name = word.split("=", 1)[0]
        if name in SHARD_OPTIONS:
            if "=" not in word:
                next(words, None)
        elif name == "--report-dir":
            out += [name, str(report_dir)]
            if "=" not in word:
                next(words, None)
        else:
            out.append(word)
    return out
