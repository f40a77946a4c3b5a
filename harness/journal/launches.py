"""The launch journal: every start of the agent binary under test, beside the request journal.

A launcher can hide its own bug from the model. inspect_swe's bridge put the
first launch's system prompt back into resumed requests, so the request journal
looked right while the CLI itself had been launched without the caller's text,
until a compaction made the bridge let go (the first seed). What the launcher
passed is therefore recorded per launch (argv, the environment variables that
steer an agent, working directory, exit code, the step, and the control requests
that configure it over stdin where the launcher does that) and judged apart from
what reached the model.

Two writers, one format: the runner records the process it starts for a step
itself; a launcher that starts the binary on its own (inspect_swe) goes through
a recording shim first on PATH (harness/isolation/launch_shim.py), which reports to the
fake API's control path. Each launch is two JSON lines, its start and its end,
flushed as they happen, so a run killed midway still shows the launch it was in.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from harness.journal.append_only import AppendOnlyLines
from harness.redaction import redact_json, redact_value

RUNNER, SHIM = "runner", "shim"
# The variables that steer an agent CLI (where it sends requests, which model, its switches), and where it lives.
_STEERING_ENV = re.compile(
    r"^(?:ANTHROPIC_|CLAUDE_|OPENAI_|GEMINI_|GOOGLE_|CODEX_|QWEN_|OPENCODE_|MCP_|DISABLE_|IS_SANDBOX$|HOME$|TMPDIR$|PATH$"
    r"|XDG_|HTTPS?_PROXY$|https?_proxy$|NO_PROXY$|no_proxy$)"
)


def steering_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables worth keeping for a launch, secrets shown as redacted (journals get shared)."""
    kept = {}
    for name in sorted(env):
        if _STEERING_ENV.match(name):
            kept[name] = redact_value(name, env[name])  # all of it under a credential-like name
    return kept


@dataclass
class Launch:
    seq: int  # 1-based, in start order over the whole run
    argv: list[str]
    cwd: str
    env: dict[str, str] = field(default_factory=dict)  # steering_env() of what the process got
    step: int | None = None
    step_kind: str | None = None
    pid: int | None = None
    recorded_by: str = RUNNER  # RUNNER or SHIM
    started_s: float = 0.0  # seconds since the run started
    exit_code: int | None = None  # None: the launch never reported an end (killed with its launcher)
    duration_s: float | None = None
    # Control requests the launcher wrote on the agent's stdin to configure it (a stream-json `initialize`, where
    # the TypeScript Agent SDK puts its system prompt), as the shim relayed them; secrets redacted.
    control: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Launch":
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


class LaunchJournal:
    """Thread-safe: the shim's reports arrive on the fake API's server threads."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self._lock = threading.Lock()
        self._launches: list[Launch] = []
        self._started = time.monotonic()
        self._file = AppendOnlyLines(path, "launch journal") if path is not None else None

    @property
    def write_error(self) -> str | None:
        """Set once the disk refused a line (harness/journal/append_only.py): the harness's failure, not the agent's."""
        return self._file.write_error if self._file is not None else None

    def start(self, argv: list[str], cwd: str, env: Mapping[str, str], *, step: int | None, step_kind: str | None,
              pid: int | None, recorded_by: str) -> Launch:
        with self._lock:
            launch = Launch(
                seq=len(self._launches) + 1, argv=list(argv), cwd=cwd, env=steering_env(env), step=step,
                step_kind=step_kind, pid=pid, recorded_by=recorded_by,
                started_s=round(time.monotonic() - self._started, 3),
            )
            self._launches.append(launch)
            self._write({"event": "start", **launch.to_json()})
            return launch

    def finish(self, seq: int, exit_code: int | None, pid: int | None = None) -> Launch:
        with self._lock:
            launch = self._launches[seq - 1]
            launch.exit_code = exit_code
            if pid is not None:
                launch.pid = pid
            launch.duration_s = round(time.monotonic() - self._started - launch.started_s, 3)
            self._write({"event": "end", "seq": seq, "exit_code": exit_code, "pid": launch.pid, "duration_s": launch.duration_s})
            return launch

    def control(self, seq: int, request: Mapping[str, Any]) -> None:
        with self._lock:
            kept = redact_json(dict(request))
            self._launches[seq - 1].control.append(kept)
            self._write({"event": "control", "seq": seq, "request": kept})

    def launches(self) -> list[Launch]:
        with self._lock:
            return [Launch(**asdict(launch)) for launch in self._launches]

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is not None:
            try:
                line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate in an argv: legal as a JSON \u escape, not as UTF-8
                line = (json.dumps(record, ensure_ascii=True) + "\n").encode("ascii")
            self._file.write_line(line)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()


def launch_journal_path(request_journal: Path) -> Path:
    """`journal/run.jsonl` -> `journal/launches/run.jsonl`: beside it, out of the way of `journal/*.jsonl`."""
    return request_journal.parent / "launches" / request_journal.name


def read_launches(path: Path) -> list[Launch]:
    """Fold a launch journal's start and end lines; a torn last line (a killed run) is ignored."""
    launches: dict[int, Launch] = {}
    for line in path.read_bytes().split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            break
        if record.get("event") == "start":
            launches[record["seq"]] = Launch.from_json(record)
        elif record.get("event") == "control" and record.get("seq") in launches and isinstance(record.get("request"), dict):
            launches[record["seq"]].control.append(record["request"])
        elif record.get("event") == "end" and record.get("seq") in launches:
            launch = launches[record["seq"]]
            launch.exit_code, launch.duration_s = record.get("exit_code"), record.get("duration_s")
            launch.pid = record.get("pid", launch.pid)
    return [launches[seq] for seq in sorted(launches)]
