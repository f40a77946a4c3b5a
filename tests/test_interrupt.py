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


def test_a_stopped_diff_says_no_comparison_was_made_in_its_reports(tmp_path):
    (tmp_path / "b.yaml").write_text(SCENARIO.format(name="b-stopped-during", more="  - resume: {prompt: b, reply: B}\n"))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    hang = str(AGENTS / "hang-on-resume.yaml")
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "diff", "b.yaml", "-b", hang, "-c", hang, "--report-dir", str(out)],
        cwd=tmp_path, env={**os.environ, "TMPDIR": str(scratch)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=as_foreground,
    )
    try:
        wait_for("harness-b-stopped-during*/home/pids.json", scratch)  # the baseline's resume is hanging now
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    assert "harness diff: INTERRUPTED during b-stopped-during" in stderr and "no comparison was made" in stderr
    assert (out / "summary.md").read_text().startswith("# harness diff: INTERRUPTED during b-stopped-during")
    document = json.loads((out / "comparison.json").read_text())
    assert document["interrupted"] is True and document["error"].startswith("interrupted during step 2 (resume)")
    assert not list(out.glob(".*partial*")), "a report was left half written"


def _running() -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every running (not zombie) process, from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            found.append((int(stat.parent.name), int(fields[1]), int(fields[2])))
    return found


def processes_in_group(pgid: int) -> list[int]:
    return [pid for pid, _, group in _running() if group == pgid]


def children_of(pid: int) -> list[int]:
    return [child for child, parent, _ in _running() if parent == pid]


def descendants_of(pid: int) -> list[int]:
    found, frontier = [], [pid]
    while frontier:
        for child in children_of(frontier.pop()):
            found.append(child)
            frontier.append(child)
    return found


# How the stop reaches `harness run -n 2`: Ctrl-C at a terminal signals the whole foreground process
# group (the parent and every worker at once); a cancelled CI job or `kill` signals the parent alone.
STOPS = {
    "SIGTERM-to-parent": (signal.SIGTERM, False),
    "SIGINT-to-group": (signal.SIGINT, True),
    "SIGINT-to-parent": (signal.SIGINT, False),
}


@pytest.mark.parametrize("stop", list(STOPS))
def test_a_stopped_parallel_run_stops_every_worker_in_order(tmp_path, stop):
    """-n 2: two runs hang at once on two workers; the stop interrupts both, the runs not started are listed."""
    sig, to_group = STOPS[stop]
    names = ["a-done-before", "b-stopped-during", "c-stopped-during", "d-never-started", "e-never-started"]
    for name in names:
        more = "  - resume: {prompt: b, reply: B}\n" if "stopped" in name else ""
        (tmp_path / f"{name}.yaml").write_text(SCENARIO.format(name=name, more=more))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", *(f"{name}.yaml" for name in names), "-n", "2",
         "--target", str(AGENTS / "hang-on-resume.yaml"), "--report-dir", str(out), "--keep-workspace"],
        cwd=tmp_path, env={**os.environ, "TMPDIR": str(scratch)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=as_foreground, process_group=0,  # a group of its own, as a shell gives a foreground job
    )
    try:
        # Run 1 ends at once; its worker takes run 3: then runs 2 and 3 hang on their resume, one per worker.
        pids_files = [wait_for(f"harness-{name}*/home/pids.json", scratch) for name in names[1:3]]
        workers = children_of(proc.pid)
        time.sleep(0.2)
        signalled = time.monotonic()
        if to_group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
        stopped_in = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    assert "INTERRUPTED: 4 of 5 runs incomplete or not run" in stdout, stdout
    # In order, not by the last resort: workers still running after the grace time (30 s) are killed.
    assert stopped_in < 15, f"the harness took {stopped_in:.1f}s to stop"
    assert "Traceback" not in stderr, stderr

    document = json.loads((out / "results.json").read_text())
    assert document["interrupted"] is True
    runs = document["runs"]
    assert [r["scenario"] for r in runs] == names  # the serial order, whatever order the workers ended in
    a, b, c, d, e = runs
    assert (a["status"], a["interrupted"]) == ("pass", False)
    for stopped in (b, c):
        assert (stopped["status"], stopped["interrupted"]) == ("error", True)
        assert stopped["error"].startswith("interrupted during step 2 (resume): the run is incomplete; "
                                           "the journal keeps the 1 request(s)"), stopped["error"]
        assert {check["verdict"] for check in stopped["checks"]} == {"error"}
        journal = [json.loads(line) for line in Path(stopped["journal"]).read_text().splitlines()]
        assert [(entry["step"], entry["class"]) for entry in journal] == [(1, "main")]
    for never in (d, e):
        assert (never["status"], never["interrupted"], never["error"]) == (
            "error", True, "not run: the harness was interrupted before this run")
    assert (out / "summary.md").read_text().startswith("# harness: INTERRUPTED: 4 of 5 runs incomplete or not run")

    assert len(workers) >= 2, f"expected the two workers among the harness's children, found {workers}"
    agents = [pid for path in pids_files for pid in json.loads(path.read_text()).values()]
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and (any(map(alive, workers + agents)) or processes_in_group(proc.pid)):
        time.sleep(0.05)
    assert not [pid for pid in workers if alive(pid)], "a worker outlived the harness"
    assert not [pid for pid in agents if alive(pid)], "an interrupted step's process group outlived the harness"
    assert not processes_in_group(proc.pid), "something of the harness's process group is still running"


def test_a_stop_whose_interrupt_was_lost_still_ends_the_wait_for_a_step(monkeypatch):
    """Python drops a KeyboardInterrupt raised inside a gc callback (Hypothesis times its gc with one): an
    exploration stopped by SIGTERM at that moment went on. The handler also records the stop, and every wait
    for a step looks at it."""
    import subprocess
    import sys

    import pytest

    from harness.isolation import process
    monkeypatch.setattr(process, "_stop_requested", False)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        process.request_stop()  # as the handler does, its own raise lost
        with pytest.raises(KeyboardInterrupt):
            process.wait_for_exit(proc, 60)
    finally:
        proc.kill()
        proc.wait()
