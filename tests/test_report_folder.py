"""The report folder: held by one run at a time, checked before any agent runs, and never a user's file.

Each case runs the real command line (`python -m harness`) on the reference agent and reads its exit code,
its one line of error, and what it left on disk.
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

from test_cli import SCENARIO, harness, scenario_file  # noqa: F401 - scenario_file is a fixture

REPO = Path(__file__).resolve().parent.parent
# The second turn's first byte comes late: time for a second run to find the folder held.
SLOW = SCENARIO.replace('reply: "Green"', 'reply: [{fault: {kind: slow_first_byte, seconds: 20}, text: "Green"}]')
assert SLOW != SCENARIO


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("harness: error: ")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_a_second_run_on_a_held_folder_exits_2_naming_the_holder_and_touches_nothing(tmp_path, scenario_file):
    slow = tmp_path / "slow.yaml"
    slow.write_text(SLOW)
    out = tmp_path / "out"
    first = subprocess.Popen([sys.executable, "-m", "harness", "run", str(slow), "--report-dir", str(out), "-q"],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        journal = out / "journal" / "two-turns__reference.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not journal.exists() or journal.read_text().count("\n") < 2):
            time.sleep(0.1)
        assert journal.read_text().count("\n") == 2, "the first run never reached its slow second turn"
        second = harness("run", str(slow), "--report-dir", str(out), "-q", cwd=tmp_path)
        line = one_error_line(second)
        assert str(out) in line and f"in use by another harness run (pid {first.pid})" in line, line
        assert journal.read_text().count("\n") == 2  # the holder's journal was neither unlinked nor appended to
        diff = harness("diff", "--baseline", "reference", "--candidate", "reference", str(slow), "--report-dir", str(out),
                       "-q", cwd=tmp_path)
        assert f"pid {first.pid}" in one_error_line(diff)
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=60)
    after = harness("run", str(scenario_file), "--report-dir", str(out), "-q", cwd=tmp_path)
    assert after.returncode in (0, 1), after.stderr  # the lock went with its holder


def test_a_killed_holder_leaves_no_lock_behind(tmp_path, scenario_file):
    slow = tmp_path / "slow.yaml"
    slow.write_text(SLOW)
    out = tmp_path / "out"
    first = subprocess.Popen([sys.executable, "-m", "harness", "run", str(slow), "--report-dir", str(out), "-q"],
                             cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (out / ".harness.lock").exists():
        time.sleep(0.1)
    first.kill()
    first.wait(timeout=30)
    done = harness("run", str(scenario_file), "--report-dir", str(out), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("command", ["run", "diff"])
def test_a_journal_that_is_a_file_is_refused_before_any_agent_runs(tmp_path, scenario_file, command):
    out = tmp_path / "out"
    out.mkdir()
    (out / "journal").write_text("mine")
    args = ["run", str(scenario_file)] if command == "run" else ["diff", "-b", "reference", "-c", "reference", str(scenario_file)]
    line = one_error_line(harness(*args, "--report-dir", str(out), cwd=tmp_path))
    assert "journal there is a file" in line and str(out) in line
    assert (out / "journal").read_text() == "mine" and sorted(p.name for p in out.iterdir()) == [".harness.lock", "journal"]


@pytest.mark.parametrize("name, command", [("results.json", "run"), ("junit.xml", "run"), ("report.html", "diff"),
                                           ("comparison.json", "diff")])
def test_a_report_file_that_is_a_folder_is_refused_before_any_agent_runs(tmp_path, scenario_file, name, command):
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    args = ["run", str(scenario_file)] if command == "run" else ["diff", "-b", "reference", "-c", "reference", str(scenario_file)]
    line = one_error_line(harness(*args, "--report-dir", str(out), cwd=tmp_path))
    assert f"{name} there is a folder" in line
    assert not (out / "journal").exists() or not any((out / "journal").iterdir())


def test_an_empty_report_dir_is_refused_not_the_current_folder(tmp_path, scenario_file):
    line = one_error_line(harness("run", str(scenario_file), "--report-dir", "", cwd=tmp_path))
    assert "--report-dir is empty" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["two-turns.yaml"]


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_latest_that_is_not_the_harness_link_is_refused_and_left_alone(tmp_path, scenario_file, kind):
    latest = tmp_path / "reports" / "latest"
    latest.parent.mkdir()
    if kind == "file":
        latest.write_text("my notes")
    else:
        latest.mkdir()
    line = one_error_line(harness("run", str(scenario_file), cwd=tmp_path))
    assert f"is a {kind}, not the harness's link" in line and "reports/latest" in line
    assert (latest.read_text() == "my notes") if kind == "file" else latest.is_dir()
    assert sorted(p.name for p in latest.parent.iterdir()) == ["latest"]  # no report folder was started


def test_the_harness_link_is_moved_to_the_newest_report(tmp_path, scenario_file):
    for _ in range(2):
        done = harness("run", str(scenario_file), "-q", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    latest = tmp_path / "reports" / "latest"
    newest = max((p for p in latest.parent.iterdir() if p.name.startswith("run-")), key=lambda p: p.stat().st_mtime)
    assert latest.is_symlink() and latest.resolve() == newest.resolve()
    assert json.loads((latest / "results.json").read_text())["runs"][0]["status"] == "pass"
