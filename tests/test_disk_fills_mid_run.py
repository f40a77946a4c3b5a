"""A disk that fills while the harness runs: the harness's own failure, never the agent's, and nothing torn.

For real: the report folder is a tiny tmpfs mounted in a mount namespace of the test's own (`unshare --mount`,
so nothing of it is seen outside), and `harness run` runs inside that namespace against the reference agent.
The agents' workspaces stay on the ordinary temporary folder: only the harness's own record runs out of space.
Before, the fake API's thread raised, the agent's connection dropped, the step was blamed on the agent
("exited with code 1 … RemoteDisconnected"), the journal ended in a torn line and results.json had 0 bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIG = "x" * 100_000
SCENARIO = """\
name: {name}
append: "Answer with one number."
steps:
  - launch: {{prompt: "{prompt}", reply: "{reply}"}}
  - resume: {{prompt: "And 7*8?", reply: "56"}}
"""


def test_a_journal_the_disk_refuses_is_the_harness_s_error_and_the_journal_stays_valid(tmp_path):
    report = tmp_path / "kept"
    done = run_kept(tmp_path, report, ("big-reply", "What is 6*7?", BIG), ("after-it", "What is 6*7?", "42"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("harness: error: cannot write the journal ") and "No space left on device" in last, done.stderr
    assert "(in big-reply on reference); 1 later run(s) were not run" in last
    results = json.loads((report / "results.json").read_text())["runs"]
    first, second = results
    assert first["status"] == "error" and "No space left on device" in first["harness_failure"]
    assert first["error"].startswith("the harness failed on its own, not the agent: cannot write the journal")
    assert "exited with code" not in first["error"] and "RemoteDisconnected" not in first["error"]
    assert first["steps"][0]["exit_code"] == 0  # the agent got its answer: it did nothing wrong
    assert all(c["verdict"] == "error" for c in first["checks"])
    assert second["status"] == "error" and second["error"].startswith("not run: the harness could not go on")
    for journal in (report / "journal").rglob("*.jsonl"):
        data = journal.read_bytes()
        assert not data or data.endswith(b"\n"), f"{journal} ends in a torn line"
        for line in data.splitlines():
            json.loads(line)


def test_reports_the_disk_refuses_are_one_line_and_no_empty_results_json(tmp_path):
    report = tmp_path / "kept"
    done = run_kept(tmp_path, report, ("big-prompt", BIG, "42"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("harness: error: ")]
    assert len(errors) == 1 and "results.json: No space left on device; the verdicts above are in no report" in errors[0]
    assert not (report / "results.json").exists(), "a results.json the disk could not take was left behind"
    assert not [p.name for p in report.iterdir() if "partial" in p.name]


def run_kept(tmp_path: Path, report: Path, *scenarios: tuple[str, str, str], workers: int = 1,
             slow_reply: str | None = None) -> subprocess.CompletedProcess:
    """Run on the small disk, then copy what the report folder held out of the namespace before it goes.

    `slow_reply`: the launch reply of every scenario but the first (a scripted slow first byte, say).
    """
    if shutil.which("unshare") is None:
        pytest.fail("this test needs unshare (util-linux) to mount a tiny tmpfs where only it sees it")
    paths = []
    for number, (name, prompt, reply) in enumerate(scenarios):
        path = tmp_path / f"{name}.yaml"
        text = SCENARIO.format(name=name, prompt=prompt, reply=reply)
        if number and slow_reply:
            text = text.replace(f'reply: "{reply}"}}', f"reply: {slow_reply}}}", 1).replace('\\"', '"')
        path.write_text(text)
        paths.append(str(path))
    disk = tmp_path / "disk"
    disk.mkdir()
    inside = ('mount -t tmpfs -o size=64k harness-small "$1" || exit 99; disk=$1; kept=$2; shift 2; "$@"; status=$?; '
              'cp -a "$disk/report" "$kept"; exit $status')
    become_root = [] if os.geteuid() == 0 else ["--map-root-user"]
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", *become_root, "sh", "-c", inside, "sh", str(disk), str(report),
         sys.executable, "-m", "harness", "run", *paths, "--target", "reference", "--report-dir", str(disk / "report"), "-q",
         "-n", str(workers),
         # The 64 KB disk is sized for the journals to fill it and the small reports to fit after: report.html
         # (~19 KB, tested whole-or-nothing in test_run_html_report.py) would leave too thin a margin to say which
         # write the disk refused first.
         "--reporter", "json,markdown,junit,console"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode != 99, f"could not mount a tmpfs in a private mount namespace: {done.stderr}"
    assert os.listdir(disk) == []  # the tmpfs was the namespace's: the host's folder never saw it
    return done


def test_with_workers_no_run_is_handed_out_after_the_harness_failed(tmp_path):
    """-n 2: the run already going on the other worker ends as it would; the ones not yet begun are not run."""
    slow = '[{fault: {kind: slow_first_byte, seconds: 5}, text: \\"42\\"}]'
    report = tmp_path / "kept"
    done = run_kept(tmp_path, report, ("big-reply", "What is 6*7?", BIG),
                    *((f"after-{n}", "What is 6*7?", "42") for n in (1, 2, 3)), workers=2, slow_reply=slow)
    assert done.returncode == 1, done.stdout + done.stderr
    runs = {run["scenario"]: run for run in json.loads((report / "results.json").read_text())["runs"]}
    assert "No space left on device" in runs["big-reply"]["harness_failure"]
    assert runs["after-1"]["status"] == "pass"  # begun before the failure was known: ended as it would have
    for name in ("after-2", "after-3"):
        assert runs[name]["error"].startswith("not run: the harness could not go on"), runs[name]
