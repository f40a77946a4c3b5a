"""Stopping the harness mid-run (Ctrl-C, or SIGTERM from a cancelled CI job): nothing lost, nothing left running.

The reports written on the way out say the run is incomplete, list the runs
that never started, and keep every request the journal saw; the step that was
running is killed with its whole process group; the exit code is 130.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from vocabulary import as_foreground

AGENTS = Path(__file__).resolve().parent / "agents"
SCENARIO = "name: {name}\nappend: x\nsteps:\n  - launch: {{prompt: a, reply: A}}\n{more}"


def wait_for(pattern: str, root: Path, timeout: float = 60) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(root.glob(pattern))
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"nothing matched {pattern} under {root} within {timeout}s")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) is not running
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_run_is_reported_as_interrupted_and_its_step_killed(tmp_path, sig):
    (tmp_path / "a.yaml").write_text(SCENARIO.format(name="a-done-before", more=""))
    (tmp_path / "b.yaml").write_text(SCENARIO.format(name="b-stopped-during", more="  - resume: {prompt: b, reply: B}\n"))
    (tmp_path / "c.yaml").write_text(SCENARIO.format(name="c-never-started", more=""))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "a.yaml", "b.yaml", "c.yaml", "--target", str(AGENTS / "hang-on-resume.yaml"),
         "--report-dir", str(out), "--keep-workspace"],
        cwd=tmp_path, env={**os.environ, "TMPDIR": str(scratch)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=as_foreground,
    )
    try:
        pids_file = wait_for("harness-b-stopped-during*/home/pids.json", scratch)  # the resume is hanging now
        time.sleep(0.2)
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    assert "INTERRUPTED: 2 of 3 runs incomplete or not run" in stdout

    document = json.loads((out / "results.json").read_text())
    assert document["interrupted"] is True
    a, b, c = document["runs"]
    assert (a["status"], a["interrupted"]) == ("pass", False)
    assert (b["status"], b["interrupted"]) == ("error", True)
    assert b["error"].startswith("interrupted during step 2 (resume): the run is incomplete; the journal keeps the 1 request(s)")
    assert {check["verdict"] for check in b["checks"]} == {"error"}
    assert (c["status"], c["interrupted"], c["error"]) == ("error", True, "not run: the harness was interrupted before this run")
    assert (out / "summary.md").read_text().startswith("# harness: INTERRUPTED: 2 of 3 runs incomplete or not run")
    journal = [json.loads(line) for line in Path(b["journal"]).read_text().splitlines()]
    assert [(e["step"], e["class"]) for e in journal] == [(1, "main")]  # what it saw before the stop is kept

    pids = json.loads(pids_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (alive(pids["agent"]) or alive(pids["child"])):
        time.sleep(0.05)
    assert not alive(pids["agent"]) and not alive(pids["child"]), "the interrupted step's process group outlived the harness"
