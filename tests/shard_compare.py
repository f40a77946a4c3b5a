"""Shards run as separate `harness` processes, merged, and their reports compared with a single run's.

What the comparison leaves out, and why each (everything else must be equal):

- the report folder's own path: each run names its own folder, in the command and in every journal path;
- durations (`duration_s`, a step's `cpu_s`, junit's `time=`, report.html's `0.12s`) and `written_at`: clock facts of
  a run, never equal between two runs of the same inputs;
- pids (`pids`, report.html's pid cells): the kernel's numbering;
- UUIDs (session ids, thread ids) and the reference agent's `agent id XXXXXXXX`: each run mints fresh ones,
  and the journals, messages and request texts quote them.

A real CLI's run is less repeatable than the reference agent's, so `real=True` also leaves out what the
agent process itself prints and does at a time of its own: `stdout_tail`, `stderr_tail` and a step's `notes`
(a log line's timestamp, a late child the step warden killed), its disposable workspace's random suffix
(`/tmp/harness-...-abcd1234`), and report.html's step timelines (those same facts as a table).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Sequence

HARNESS = Path(sys.executable).with_name("harness")
ROOT = Path(__file__).resolve().parent.parent
RUN_FILES = ("results.json", "junit.xml", "summary.md", "report.html")
DIFF_FILES = ("comparison.json", "junit.xml", "summary.md", "report.html")
REAL_ONLY_FIELDS = ("stdout_tail", "stderr_tail", "notes")


def harness(argv: Sequence[str], cwd: Path = ROOT, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(HARNESS), *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def run_shards(argv: Sequence[str], folders: Sequence[Path], cwd: Path = ROOT, *, extra: Sequence[str] = (),
               timeout: float = 600) -> list[int]:
    """`harness ARGV --shard i/n --report-dir FOLDER_i` for every i, as n processes at once; their exit codes."""
    count = len(folders)
    processes = [subprocess.Popen([str(HARNESS), *argv, "--shard", f"{i}/{count}", "--report-dir", str(folder), *extra],
                                  cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for i, folder in enumerate(folders, 1)]
    codes = []
    for process in processes:
        _, err = process.communicate(timeout=timeout)
        assert "Traceback" not in err, err
        codes.append(process.returncode)
    return codes


def normalized(text: str, folder: Path, real: bool = False) -> str:
    text = text.replace(str(folder), "DIR")
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "UUID", text)
    # fresh-identity-per-process's ids differ within a run too: the checks mark the first differing character ⟦x⟧
    text = re.sub(r"agent id (?:[0-9a-f⟦⟧]|<[^>]*>)+", "agent id X", text)
    text = re.sub(r'\btime="[0-9.]+"', 'time="T"', text)
    text = re.sub(r"\b\d+\.\d+s\b", "Ts", text)
    text = re.sub(r'<td class="mono">[0-9 ,]*</td>', '<td class="mono">PIDS</td>', text)
    if real:
        text = re.sub(r"(/harness-[\w.@+-]*?-)[a-z0-9_]{8}(?=/)", r"\1XXXXXXXX", text)
        text = re.sub(r'<table class="timeline">.*?</table>', "TIMELINE", text, flags=re.S)
    return text


def _drop(data, keys: Sequence[str]):
    if isinstance(data, dict):
        return {k: _drop(v, keys) for k, v in data.items() if k not in keys}
    if isinstance(data, list):
        return [_drop(v, keys) for v in data]
    return data


def normalized_json(text: str, folder: Path, real: bool = False) -> dict:
    keys = ("written_at", "duration_s", "cpu_s", "pids", *(REAL_ONLY_FIELDS if real else ()))
    data = _drop(json.loads(text), keys)
    return json.loads(normalized(json.dumps(data, indent=1, ensure_ascii=False), folder, real))


def assert_same_reports(single: Path, merged: Path, files: Sequence[str] = RUN_FILES, real: bool = False) -> None:
    """Every report file of the merged folder equals the single run's, modulo what the docstring above lists."""
    for name in files:
        ours, theirs = (single / name).read_text(encoding="utf-8"), (merged / name).read_text(encoding="utf-8")
        if name.endswith(".json"):
            assert normalized_json(theirs, merged, real) == normalized_json(ours, single, real), name
        else:
            a, b = normalized(ours, single, real), normalized(theirs, merged, real)
            if a != b:
                import difflib
                shown = "\n".join(list(difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0))[:20])
                raise AssertionError(f"{name} of the merged shards differs from the single run's:\n{shown[:4000]}")
