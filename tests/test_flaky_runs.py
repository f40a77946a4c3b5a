"""--retries, --repeat, --allow-flaky and --last-failed on real runs of an agent that fails one attempt in two.

The agent is the reference agent behind a wrapper that counts its launches in a
file outside the run's disposable HOME: odd launches get the drop-append-on-resume
defect, even ones do not. So the first attempt of a run fails appended_exactly_once
and the second passes: the run is flaky, and must be named so, not passed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FLIP = '''\
import os, sys
counter = os.environ["FLIP_COUNTER"]
mode, agent = sys.argv[1], sys.argv[2:]
if mode == "launch":
    with open(counter, "a") as f:
        f.write("x")
launches = len(open(counter).read()) if os.path.exists(counter) else 0
if launches % 2 == 1:
    agent += ["--defect", "drop-append-on-resume"]
os.execv(agent[0], agent)
'''

SCENARIO = """\
name: {name}
append: Always answer in French.
steps:
  - launch: {{prompt: a, reply: A}}
  - resume: {{prompt: b, reply: B}}
"""


def flip_target(tmp_path: Path) -> Path:
    (tmp_path / "flip.py").write_text(FLIP)
    agent = ["{python}", "-m", "harness.reference_agent", "--output-format", "json", "--append-system-prompt", "{append}"]
    target = tmp_path / "flip.yaml"
    target.write_text(textwrap.dedent(f"""\
        name: flip
        launch: {json.dumps(["{python}", "{target_dir}/flip.py", "launch"] + agent + ["-p", "{prompt}"])}
        resume: {json.dumps(["{python}", "{target_dir}/flip.py", "resume"] + agent + ["-p", "{prompt}", "--resume", "{session_id}"])}
        session_id: {{stdout_json: session_id}}
        env:
          PYTHONPATH: "{ROOT}"
          FLIP_COUNTER: "{tmp_path / 'launches'}"
        """))
    return target


def scenario(tmp_path: Path, name: str = "flips") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(SCENARIO.format(name=name))
    return path


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def runs(out: Path) -> list[dict]:
    return json.loads((out / "results.json").read_text())["runs"]


def test_a_run_that_passes_on_its_retry_is_flaky_in_every_report_and_fails_the_gate(tmp_path):
    out = tmp_path / "out"
    proc = harness("run", str(scenario(tmp_path)), "--target", str(flip_target(tmp_path)), "--retries", "2",
                   "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 flaky run(s), their attempts disagree; the gate fails on them" in proc.stderr
    assert "↻ attempt 2 of at most 3 (retry 1 of 2: verdicts differ from the expectations (appended_exactly_once fail" \
        in proc.stderr
    (run,) = runs(out)
    assert run["flaky"] is True and run["as_expected"] is False
    assert run["status"] == "pass"  # the last attempt's own verdicts, shown as the run's
    (first,) = run["attempts"]  # one retry was enough: attempts stop at the first that matches
    assert first["as_expected"] is False
    assert {c["check"]: c["verdict"] for c in first["checks"]}["appended_exactly_once"] == "fail"
    # every attempt's journal kept, each the requests of its own attempt
    assert first["journal"].endswith("flips__flip.attempt-1.jsonl") and run["journal"].endswith("flips__flip.jsonl")
    kept, last = Path(first["journal"]), Path(run["journal"])
    assert kept.is_file() and last.is_file() and kept.read_bytes() != last.read_bytes()
    assert (out / "journal" / "launches" / "flips__flip.attempt-1.jsonl").is_file()
    resumed = [json.loads(json.loads(line)["body"])["system"] for line in kept.read_text().splitlines()][1]
    assert "Always answer in French." not in json.dumps(resumed)  # the defect's attempt, as the verdict says

    summary = (out / "summary.md").read_text()
    assert "FLAKY (attempt 1 not as expected (appended_exactly_once fail, prefix_stable fail), attempt 2 as expected)" \
        in summary
    assert "1 flaky" in summary and "verdicts differ from expectations" in summary
    cases = ET.parse(out / "junit.xml").getroot().iter("testcase")
    flaky = {c.get("name"): c.find("flakyFailure") for c in cases}
    assert flaky["appended_exactly_once[flip]"] is not None
    assert flaky["appended_exactly_once[flip]"].get("message").startswith("attempt 1: appended_exactly_once: expected pass")
    html = (out / "report.html").read_text()
    assert 'data-flaky="yes"' in html and "FLAKY: the same inputs gave verdicts that disagree" in html
    assert "flips__flip.attempt-1.jsonl" in html


def test_allow_flaky_lets_the_gate_pass_and_still_names_the_run(tmp_path):
    out = tmp_path / "out"
    proc = harness("run", str(scenario(tmp_path)), "--target", str(flip_target(tmp_path)), "--retries", "1",
                   "--allow-flaky", "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 flaky run(s), their attempts disagree; allowed by --allow-flaky" in proc.stderr
    assert runs(out)[0]["flaky"] is True


def test_without_retries_the_first_attempt_is_the_verdict(tmp_path):
    out = tmp_path / "out"
    proc = harness("run", str(scenario(tmp_path)), "--target", str(flip_target(tmp_path)), "--allow-flaky",
                   "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (run,) = runs(out)
    assert run["attempts"] == [] and run["flaky"] is False and run["as_expected"] is False


def test_repeat_attempts_a_steady_run_every_time_and_finds_no_flake(tmp_path):
    out = tmp_path / "out"
    proc = harness("run", str(scenario(tmp_path)), "--target", "reference", "--repeat", "3", "-n", "2",
                   "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run,) = runs(out)
    assert len(run["attempts"]) == 2 and run["flaky"] is False and run["as_expected"] is True
    assert sorted(p.name for p in (out / "journal").glob("*.jsonl")) == [
        "flips__reference.attempt-1.jsonl", "flips__reference.attempt-2.jsonl", "flips__reference.jsonl"]


def test_repeat_on_workers_finds_the_flake_a_single_attempt_hides(tmp_path):
    out = tmp_path / "out"
    proc = harness("run", str(scenario(tmp_path)), "--target", str(flip_target(tmp_path)), "--repeat", "2", "-n", "2",
                   "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (run,) = runs(out)
    assert run["flaky"] is True and [a["as_expected"] for a in run["attempts"]] == [False]


def test_last_failed_runs_only_what_the_last_report_did_not_find_as_expected(tmp_path):
    out = tmp_path / "out"
    paths = [str(scenario(tmp_path, "one")), str(scenario(tmp_path, "two"))]
    first = harness("run", *paths, "--target", "reference", "--target", "reference:drop-append-on-resume",
                    "--report-dir", str(out), cwd=tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr  # the defect is not expected by these scenarios
    again = harness("run", *paths, "--target", "reference", "--target", "reference:drop-append-on-resume",
                    "--report-dir", str(out), "--last-failed", cwd=tmp_path)
    assert again.returncode == 1, again.stdout + again.stderr
    assert [(r["scenario"], r["target"]) for r in runs(out)] == [("one", "reference:drop-append-on-resume"),
                                                                  ("two", "reference:drop-append-on-resume")]
    assert "--last-failed: 2 run(s) that failed in" in again.stderr
    green = harness("run", *paths, "--target", "reference", "--report-dir", str(tmp_path / "green"), cwd=tmp_path)
    assert green.returncode == 0
    everything = harness("run", *paths, "--target", "reference", "--report-dir", str(tmp_path / "green"),
                         "--last-failed", cwd=tmp_path)
    assert everything.returncode == 0 and len(runs(tmp_path / "green")) == 2  # nothing failed: all of it, said
    assert "has no run that failed; running all 2 run(s)" in everything.stderr


def test_last_failed_without_a_last_report_is_one_line_and_exit_2(tmp_path):
    proc = harness("run", str(scenario(tmp_path)), "--target", "reference", "--last-failed", str(tmp_path / "nowhere"),
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("harness: error: --last-failed: no last report at")
    assert "Traceback" not in proc.stderr


def test_scenarios_taken_for_last_failed_s_report_folder_are_named_as_such(tmp_path):
    """--last-failed takes an optional folder: `--last-failed scenarios/` reads scenarios/ as the last report."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    scenario(folder)
    proc = harness("run", "--target", "reference", "--last-failed", str(folder), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"harness: error: --last-failed took {folder} for the report folder it may name, but that holds scenarios "
        "and no report: put the scenarios before --last-failed, or write --last-failed=REPORT_DIR")


def test_bad_attempt_counts_are_refused(tmp_path):
    for option, value in (("--retries", "-1"), ("--repeat", "0"), ("--retries", "x")):
        proc = harness("run", str(scenario(tmp_path)), option, value, cwd=tmp_path)
        assert proc.returncode == 2 and "expected a whole number" in proc.stderr, (option, value, proc.stderr)


def test_the_flaky_run_reads_as_such_in_a_browser(tmp_path, monkeypatch):
    from offline_browser import offline_page
    from selenium.webdriver.common.by import By

    out = tmp_path / "out"
    paths = [str(scenario(tmp_path, "flips")), str(scenario(tmp_path, "steady"))]
    proc = harness("run", *paths, "--target", str(flip_target(tmp_path)), "--retries", "1", "--report-dir", str(out),
                   cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert [r["flaky"] for r in runs(out)] == [True, True]  # each run's first launch is an odd one
    with offline_page(out / "report.html", tmp_path, monkeypatch) as driver:
        status = driver.find_element(By.CSS_SELECTOR, "#row-1 td.status")
        assert status.text == "flaky · pass" and status.is_displayed()
        assert driver.find_element(By.CSS_SELECTOR, "#row-1 td.expected").text == "NO"
        driver.find_element(By.CSS_SELECTOR, 'label[for="only-unexpected"]').click()
        assert [e.get_attribute("id") for e in driver.find_elements(By.CSS_SELECTOR, "#matrix tr.run")
                if e.is_displayed()] == ["row-1", "row-2"]  # a flaky run is never hidden as expected
        banner = driver.find_element(By.CSS_SELECTOR, "#run-1 p.flaky")
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", banner)
        assert banner.is_displayed() and banner.value_of_css_property("font-weight") == "700"
        attempts = driver.find_elements(By.CSS_SELECTOR, "#run-1 ol.attempts li")
        assert [a.get_attribute("data-as-expected") for a in attempts] == ["no", "yes"]
        assert "flips__flip.attempt-1.jsonl" in attempts[0].text


def test_last_failed_is_not_sharded(tmp_path):
    proc = harness("run", str(scenario(tmp_path)), "--target", "reference", "--last-failed", "--shard", "1/2", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("harness: error: --last-failed and --shard:")
