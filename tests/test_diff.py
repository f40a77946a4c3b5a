"""`harness diff`: baseline vs candidate, classified per scenario, step and check, gated and reported.

Comparisons run the reference agent for real (its defects stand for "the
branch that broke it" and "the branch that fixed it"); the CLI is run as a
subprocess so exit codes and report files are what a CI job sees.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.results import CHANGE_ERROR, FIX, REGRESSION, UNCHANGED_FAIL, UNCHANGED_PASS, classify
from harness.run.differential import compare
from harness.scenario.reader import load_scenario, scenario_from_text
from harness.targets import resolve_target

ROOT = Path(__file__).resolve().parent.parent
WRONG_ANSWER = ROOT / "scenarios" / "retry-after-wrong-answer.yaml"  # launch, retry, compact, resume
AGENTS = Path(__file__).resolve().parent / "agents"


def target(spec: str):
    (resolved,) = resolve_target(spec)
    return resolved


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("baseline,candidate,change", [
    ("pass", "pass", UNCHANGED_PASS), ("fail", "fail", UNCHANGED_FAIL), ("pass", "fail", REGRESSION),
    ("fail", "pass", FIX), ("error", "pass", CHANGE_ERROR), ("pass", "error", CHANGE_ERROR), ("error", "error", CHANGE_ERROR),
])
def test_classify(baseline, candidate, change):
    assert classify(baseline, candidate) == change


def test_a_regression_is_placed_at_the_step_where_it_starts(tmp_path):
    comparison = compare([load_scenario(WRONG_ANSWER)], target("reference"), target("reference:drop-append-on-resume"), tmp_path)
    (sd,) = comparison.scenarios
    by_step = {(c.step, c.check): c.change for c in sd.cells}
    assert by_step[(1, "appended_exactly_once")] == UNCHANGED_PASS  # one launch: nothing to lose yet
    assert [by_step[(s, "appended_exactly_once")] for s in (2, 3, 4)] == [REGRESSION] * 3
    assert sd.first_change("appended_exactly_once").step == 2
    assert sd.final("identity_stable").change == UNCHANGED_PASS
    assert sd.final("history_preserved").change == UNCHANGED_PASS
    assert sd.change == REGRESSION
    # the final cells are the runs' own verdicts, judged on the whole journal
    for check in sd.scenario.checks:
        assert sd.final(check).baseline == sd.baseline.verdict_of(check)
        assert sd.final(check).candidate == sd.candidate.verdict_of(check)
    assert comparison.counts() == {REGRESSION: 2, CHANGE_ERROR: 0, FIX: 0, UNCHANGED_FAIL: 0, UNCHANGED_PASS: 2}
    assert comparison.gate_failures() == [
        "regression: retry-after-wrong-answer · appended_exactly_once (baseline pass, candidate fail)",
        "regression: retry-after-wrong-answer · prefix_stable (baseline pass, candidate fail)",
    ]
    # both journals are kept, one folder per side
    assert len(list((tmp_path / "baseline").glob("*.jsonl"))) == len(list((tmp_path / "candidate").glob("*.jsonl"))) == 1


def test_fixes_pass_the_gate_unchanged_failures_only_on_request(tmp_path):
    scenario = load_scenario(WRONG_ANSWER)
    fixed = compare([scenario], target("reference:drop-append-on-resume"), target("reference"), tmp_path / "a")
    assert fixed.counts()[FIX] == 2 and fixed.gate_failures() == []
    both_broken = compare([scenario], target("reference:timestamp-in-prefix"), target("reference:timestamp-in-prefix"), tmp_path / "b")
    assert both_broken.counts()[UNCHANGED_FAIL] == 1 and both_broken.gate_failures() == []
    strict = compare([scenario], target("reference:timestamp-in-prefix"), target("reference:timestamp-in-prefix"), tmp_path / "c",
                     fail_on_unchanged_fail=True)
    assert strict.gate_failures() == ["unchanged-fail: retry-after-wrong-answer · prefix_stable (baseline fail, candidate fail)"]


def test_a_required_fix_must_fail_before_and_pass_after(tmp_path):
    scenario = load_scenario(WRONG_ANSWER)
    proven = compare([scenario], target("reference:drop-append-on-resume"), target("reference"), tmp_path / "a",
                     required_fixes=[scenario.name])
    assert proven.gate_failures() == []
    never_broken = compare([scenario], target("reference"), target("reference"), tmp_path / "b", required_fixes=[scenario.name])
    assert never_broken.gate_failures() == [
        "required fix missing: retry-after-wrong-answer must fail on the baseline and pass on the candidate "
        "(the baseline does not fail it)"]
    still_broken = compare([scenario], target("reference:drop-append-on-resume"), target("reference:drop-append-on-resume"),
                           tmp_path / "c", required_fixes=[scenario.name])
    assert still_broken.gate_failures()[-1].endswith("(the candidate does not pass it)")


def test_a_run_error_is_an_error_from_its_step_on_and_fails_the_gate(tmp_path):
    scenario = scenario_from_text(
        "name: three\nappend: x\nsteps:\n  - launch: {prompt: a, reply: A}\n  - resume: {prompt: b, reply: B}\n"
        "  - resume: {prompt: c, reply: C}\n", "three.yaml")
    crash = target(str(AGENTS / "crash.yaml"))  # its resumes exit 3
    comparison = compare([scenario], target("reference"), crash, tmp_path)
    (sd,) = comparison.scenarios
    assert {c.change for c in sd.cells if c.step == 1} == {UNCHANGED_PASS}
    assert {c.change for c in sd.cells if c.step >= 2} == {CHANGE_ERROR}
    assert len(comparison.gate_failures()) == len(scenario.checks)
    assert all(reason.startswith("error: three · ") for reason in comparison.gate_failures())


# ------------------------------------------------------------------------------------------ the command line


def test_cli_fix_exits_0_and_writes_every_report(tmp_path):
    out = tmp_path / "out"
    proc = harness("diff", "--baseline", "reference:drop-append-on-resume", "--candidate", "reference", str(WRONG_ANSWER),
                   "--require-fix", "retry-after-wrong-answer", "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "retry-after-wrong-answer  appended_exactly_once  fail → pass" in proc.stdout
    assert "gate: passes" in proc.stdout and "✓ fix: retry-after-wrong-answer · appended_exactly_once" in proc.stdout
    assert "step 2/4 retry" in proc.stderr  # progress per step, both sides
    data = json.loads((out / "comparison.json").read_text())
    assert (data["baseline"], data["candidate"], data["gate_failures"]) == ("reference:drop-append-on-resume", "reference", [])
    assert data["scenarios"][0]["checks"]["prefix_stable"] == {
        "baseline": "fail", "candidate": "pass", "change": FIX, "first_change_step": 2}
    suites = ET.parse(out / "junit.xml").getroot()
    assert [s.get("failures") for s in suites] == ["0"]
    assert "| retry-after-wrong-answer | appended_exactly_once | fail → pass | **fix** | from step 2 (retry) |" in (out / "summary.md").read_text()
    assert (out / "report.html").is_file()
    journals = [p for p in (out / "journal").rglob("*.jsonl") if p.parent.name != "launches"]
    assert {p.parent.name for p in journals} == {"baseline", "candidate"}
    assert all((p.parent / "launches" / p.name).is_file() for p in journals)  # each with its launch journal


def test_cli_regression_exits_1_and_names_each_with_its_evidence(tmp_path):
    out = tmp_path / "out"
    proc = harness("diff", "--baseline", "reference", "--candidate", "reference:drop-append-on-resume", str(WRONG_ANSWER),
                   "--report-dir", str(out), "-q", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for check in ("appended_exactly_once", "prefix_stable"):
        assert f"✗ regression: retry-after-wrong-answer · {check} (pass → fail, from step 2 (retry))" in proc.stdout
    assert "occurrences by request: 1 → 0 → 0" in proc.stdout  # the evidence, not just the name
    assert "first differing byte at offset" in proc.stdout
    suites = ET.parse(out / "junit.xml").getroot()
    failures = [case.get("name") for case in suites.iter("testcase") if case.find("failure") is not None]
    assert failures == ["appended_exactly_once[reference:drop-append-on-resume]", "prefix_stable[reference:drop-append-on-resume]"]
    assert "## Why the gate fails" in (out / "summary.md").read_text()


@pytest.mark.parametrize("args,message", [
    (["--baseline", "reference:*", "--candidate", "reference"], f"--baseline 'reference:*' stands for {len(resolve_target('reference:*'))} targets"),
    (["--baseline", "reference", "--candidate", "nope"], "unknown target 'nope'"),
    (["--baseline", "reference", "--candidate", "reference", "--require-fix", "no-such"], "--require-fix 'no-such': no such scenario"),
])
def test_cli_bad_input_exits_2_before_running(tmp_path, args, message):
    proc = harness("diff", *args, str(WRONG_ANSWER), "--report-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and proc.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()
