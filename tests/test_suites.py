"""A project's configuration drives the commands: suites into one report, and the configured defaults and folders.

Each test runs the real `harness` in a project folder of its own holding a
harness.toml or a pyproject.toml table, with the reference agent and its
defects as the agents.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "scenarios"

SKY = """\
name: {name}
append: "Answer in one word."
steps:
  - launch: {{prompt: "Colour of the sky?", reply: "Blue"}}
  - retry:  {{prompt: "Wrong. Again?", reply: "Azure"}}
{expect}"""

SUITES = """\
scenarios = ["agent-scenarios"]
targets = ["reference"]
report_dir = "out/reports"

[suites.clean]
scenarios = ["agent-scenarios/sky.yaml"]
targets = ["reference", "reference:drop-append-on-resume"]

[suites.defects]
scenarios = ["more"]
targets = ["reference:forget-last-reply", "reference:drop-append-on-resume"]
workers = 2
"""


def harness(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})


def project(tmp_path: Path, config: str = SUITES) -> Path:
    (tmp_path / "harness.toml").write_text(config)
    (tmp_path / "agent-scenarios").mkdir()
    (tmp_path / "agent-scenarios" / "sky.yaml").write_text(SKY.format(name="sky", expect=(
        "expect:\n  reference:drop-append-on-resume: {appended_exactly_once: fail, prefix_stable: fail}\n")))
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "sea.yaml").write_text(SKY.format(name="sea", expect=(
        "expect:\n  reference:forget-last-reply: {history_preserved: fail}\n"
        "  reference:drop-append-on-resume: {appended_exactly_once: fail, prefix_stable: fail}\n")))
    return tmp_path


def rows(folder: Path) -> list[tuple[str, str, str]]:
    data = json.loads((folder / "results.json").read_text())
    return [(r["scenario"], r["target"], r["status"]) for r in data["runs"]]


def test_every_suite_goes_into_one_report_folder(tmp_path):
    """`make run` left nine report folders and a `latest` pointing at its last suite only."""
    here = project(tmp_path)
    done = harness("run", "--suite", "all", "-q", cwd=here)
    assert done.returncode == 0, done.stdout + done.stderr
    folders = [p for p in (here / "out" / "reports").iterdir() if p.name != "latest"]
    assert len(folders) == 1, folders
    (folder,) = folders
    assert (here / "out" / "reports" / "latest").resolve() == folder.resolve()
    assert rows(folder) == [
        ("sky", "reference", "pass"), ("sky", "reference:drop-append-on-resume", "fail"),
        ("sea", "reference:forget-last-reply", "fail"), ("sea", "reference:drop-append-on-resume", "fail"),
    ]
    for name in ("results.json", "summary.md", "junit.xml", "report.html"):
        assert (folder / name).is_file(), name
    assert len(list((folder / "journal").glob("*.jsonl"))) == 4
    assert "suite clean (1/2): 1 scenario(s) × 2 target(s) = 2 run(s)" in done.stderr
    assert "suite defects (2/2): 1 scenario(s) × 2 target(s) = 2 run(s) on 2 workers" in done.stderr
    junit = (folder / "junit.xml").read_text()
    assert "sea" in junit and "sky" in junit


def test_one_named_suite_runs_alone_and_an_unknown_one_is_bad_input(tmp_path):
    here = project(tmp_path)
    done = harness("run", "--suite", "defects", "-q", "--report-dir", "one", cwd=here)
    assert done.returncode == 0, done.stderr
    assert [r[:2] for r in rows(here / "one")] == [("sea", "reference:forget-last-reply"),
                                                    ("sea", "reference:drop-append-on-resume")]
    unknown = harness("run", "--suite", "nightly", "--report-dir", "two", cwd=here)
    assert unknown.returncode == 2
    assert unknown.stderr.strip() == ("harness: error: --suite 'nightly': no such suite in "
                                      f"{here / 'harness.toml'} (suites: clean, defects; `all` runs every one)")
    both = harness("run", "--suite", "clean", "--target", "reference", "--report-dir", "three", cwd=here)
    assert both.returncode == 2 and "give scenario paths and --target, or --suite, not both" in both.stderr
    assert not (here / "two").exists() and not (here / "three" / "results.json").exists()


def test_bad_input_in_a_later_suite_stops_the_command_before_any_agent_runs(tmp_path):
    here = project(tmp_path, SUITES.replace('"reference:forget-last-reply"', '"reference:no-such-defect"'))
    done = harness("run", "--suite", "all", "-q", cwd=here)
    assert done.returncode == 2
    assert "unknown reference defect 'no-such-defect'" in done.stderr
    assert not (here / "out").exists()  # nothing ran, nothing was written


def test_two_suites_running_the_same_pair_are_refused(tmp_path):
    here = project(tmp_path, SUITES.replace('scenarios = ["more"]', 'scenarios = ["agent-scenarios"]'))
    done = harness("run", "--suite", "all", cwd=here)
    assert done.returncode == 2
    assert ("suite 'defects' and suite 'clean' both run scenario 'sky' on reference:drop-append-on-resume" in
            done.stderr), done.stderr


def test_the_configured_scenarios_targets_and_report_folder_are_the_defaults(tmp_path):
    here = project(tmp_path)
    (here / "sub").mkdir()
    done = harness("run", "-q", cwd=here / "sub")  # from a subfolder: the table's paths are the table's folder's
    assert done.returncode == 0, done.stderr
    assert "no --target given" not in done.stderr  # a configured target is a named one
    (folder,) = [p for p in (here / "out" / "reports").iterdir() if p.name != "latest"]
    assert rows(folder) == [("sky", "reference", "pass")]
    flag = harness("run", "-q", "--target", "reference:forget-last-reply", "--report-dir", "flag", cwd=here)
    assert flag.returncode == 1  # the flag overrides the table: sky does not expect this defect
    assert rows(here / "flag") == [("sky", "reference:forget-last-reply", "fail")]


def test_a_configured_inbox_is_left_out_of_runs_unless_named(tmp_path):
    here = project(tmp_path, 'scenarios = ["agent-scenarios"]\ntargets = ["reference"]\n'
                             'explore_inbox = "agent-scenarios/inbox"\n')
    (here / "agent-scenarios" / "inbox").mkdir()
    (here / "agent-scenarios" / "inbox" / "new.yaml").write_text(SKY.format(name="new", expect=""))
    (here / "agent-scenarios" / "inbox" / "half-written.yaml").write_text("name: [\n")  # never read unless named
    library = harness("run", "-q", "--report-dir", "library", cwd=here)
    assert library.returncode == 0 and rows(here / "library") == [("sky", "reference", "pass")], library.stderr
    (here / "agent-scenarios" / "inbox" / "half-written.yaml").unlink()
    named = harness("run", "agent-scenarios/inbox", "-q", "--report-dir", "inbox", cwd=here)
    assert named.returncode == 0 and rows(here / "inbox") == [("new", "reference", "pass")]


def test_harness_diff_reads_the_configured_scenarios_and_report_folder(tmp_path):
    here = project(tmp_path)
    done = harness("diff", "--baseline", "reference", "--candidate", "reference:drop-append-on-resume", "-q", cwd=here)
    assert done.returncode == 1, done.stderr
    (folder,) = [p for p in (here / "out" / "reports").iterdir() if p.name != "latest"]
    assert folder.name.startswith("diff-")
    assert [s["scenario"] for s in json.loads((folder / "comparison.json").read_text())["scenarios"]] == ["sky"]


def test_import_writes_into_the_configured_folder_and_says_how_to_replay(tmp_path):
    here = project(tmp_path)
    done = harness("run", "-q", "--report-dir", "r", cwd=here)
    assert done.returncode == 0
    journal = next((here / "r" / "journal").glob("*.jsonl"))
    imported = harness("import", str(journal), "--append", "Answer in one word.", "--name", "sky-again", cwd=here)
    assert imported.returncode == 0, imported.stderr
    out = Path("scenarios/imported/sky-again.yaml")
    assert (here / out).is_file() and "replay it: harness run scenarios/imported/sky-again.yaml\n" in imported.stdout
    (here / "harness.toml").write_text('imports_dir = "incidents"\n'
                                       + SUITES.replace('targets = ["reference"]\nreport_dir', 'report_dir'))
    again = harness("import", str(journal), "--append", "Answer in one word.", "--name", "sky-3", cwd=here)
    assert again.returncode == 0, again.stderr
    assert (here / "incidents" / "sky-3.yaml").is_file()
    assert "replay it: harness run incidents/sky-3.yaml --target T" in again.stdout  # no configured target to name


def test_a_stop_in_one_suite_lists_every_later_suites_runs_as_not_run(tmp_path):
    import signal

    from test_interrupt import wait_for

    here = project(tmp_path, SUITES.replace('targets = ["reference", "reference:drop-append-on-resume"]',
                                            f'targets = ["{ROOT / "tests" / "agents" / "hang-on-resume.yaml"}"]'))
    scratch = here / "tmp"
    scratch.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "harness", "run", "--suite", "all", "--report-dir", "r"], cwd=here,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(scratch)})
    try:
        wait_for("harness-sky*/home/pids.json", scratch)  # the hanging resume wrote its pids into its HOME
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    runs = json.loads((here / "r" / "results.json").read_text())["runs"]
    assert [(r["scenario"], r["target"]) for r in runs] == [
        ("sky", "runner-hang-on-resume"), ("sea", "reference:forget-last-reply"),
        ("sea", "reference:drop-append-on-resume")]
    assert all(r["status"] == "error" and r["interrupted"] for r in runs), runs
    assert [r["error"] for r in runs[1:]] == ["not run: the harness was interrupted before this run"] * 2


def test_the_configured_workers_are_the_default_and_n_overrides_them(tmp_path):
    import re

    here = project(tmp_path, 'scenarios = ["agent-scenarios"]\ntargets = ["reference", "reference:forget-last-reply"]\n'
                             'workers = 2\n')
    (here / "agent-scenarios" / "sky.yaml").write_text(SKY.format(name="sky", expect=(
        "expect:\n  reference:forget-last-reply: {history_preserved: fail}\n")))
    pooled = harness("run", "--report-dir", "pooled", cwd=here)
    assert pooled.returncode == 0, pooled.stderr
    tagged = re.compile(r"(?m)^\[\d/2\] +step 1/2 launch")  # a pool's progress: every line tagged with its run
    assert len(tagged.findall(pooled.stderr)) == 2, pooled.stderr
    serial = harness("run", "-n", "1", "--report-dir", "serial", cwd=here)
    assert serial.returncode == 0 and not tagged.search(serial.stderr), serial.stderr
    assert rows(here / "pooled") == rows(here / "serial")
