"""Reporters: one interface for every output, a fan-out that calls the chosen ones, `--reporter` on run and diff.

Also the layering the reports promise: report/ renders evidence, so none of
its modules imports checks, targets, scenario or run (not even for types).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.report import DIFF_REPORTERS, RUN_REPORTERS
from harness.report.files import ReportWriteError
from harness.report.reporter import FileReporter, ReportContext, choose, fan_out, files_of
from harness.results import Cell, CheckResult, RequestPair, RunResult, ScenarioDiff, ScenarioOutline, StepOutline

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = """\
name: two-turns
append: "Answer in one word."
steps:
  - launch: {prompt: "Colour of the sky?", reply: "Blue"}
  - resume: {prompt: "And grass?", reply: "Green"}
"""
FORBIDDEN = ("harness.checks", "harness.targets", "harness.scenario", "harness.run", "harness.fakeapi")


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def written_files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")}


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "two-turns.yaml"
    path.write_text(SCENARIO)
    return path


# --------------------------------------------------------------------------- the seam


def test_choose_keeps_the_commands_order_whatever_order_the_names_come_in():
    chosen = choose(["junit,json", "console"], RUN_REPORTERS, "run")
    assert [r.name for r in chosen] == ["json", "junit", "console"]
    assert [r.name for r in choose([], RUN_REPORTERS, "run")] == ["json", "markdown", "junit", "html", "console"]
    assert files_of(choose([], DIFF_REPORTERS, "diff")) == ("comparison.json", "summary.md", "junit.xml", "report.html")


def test_an_unknown_reporter_names_the_choices():
    with pytest.raises(InputError) as raised:
        choose(["json,pdf"], RUN_REPORTERS, "run")
    assert str(raised.value) == "--reporter 'pdf': `harness run` has no such reporter; choose from json, markdown, junit, html, console"


def test_fan_out_tells_each_reporter_what_was_written_before_it(tmp_path):
    seen = []

    def record(results, path, context):
        seen.append(context.written)
        path.write_text("x")
        return path

    reporters = [FileReporter("a", "a.txt", record), FileReporter("b", "b.txt", record)]
    written = fan_out(reporters, [], tmp_path / "out", ReportContext(("harness",)))
    assert written == [tmp_path / "out" / "a.txt", tmp_path / "out" / "b.txt"]
    assert seen == [(), (tmp_path / "out" / "a.txt",)]


def test_a_failed_write_stops_the_fan_out(tmp_path):
    def fail(results, path, context):
        raise ReportWriteError(f"cannot write {path}: No space left on device")

    def later(results, path, context):
        raise AssertionError("a reporter after a failed write ran")

    with pytest.raises(ReportWriteError):
        fan_out([FileReporter("a", "a.txt", fail), FileReporter("b", "b.txt", later)], [], tmp_path, ReportContext(()))


def test_the_run_reporters_write_their_files_and_the_console_says_where(tmp_path, capsys):
    result = RunResult("two-turns", "reference", "pass")
    written = fan_out(RUN_REPORTERS, [result], tmp_path, ReportContext(("harness", "run")))
    assert written == [tmp_path / "results.json", tmp_path / "summary.md", tmp_path / "junit.xml", tmp_path / "report.html"]
    out = capsys.readouterr().out
    assert out.rstrip().endswith(f"reports: {tmp_path / 'results.json'}, {tmp_path / 'summary.md'}, "
                                 f"{tmp_path / 'junit.xml'}, {tmp_path / 'report.html'}, {tmp_path / 'journal'}/")


# --------------------------------------------------------------------------- --reporter on the command line


def test_run_with_one_reporter_writes_only_its_file(tmp_path, scenario_file):
    out = tmp_path / "out"
    proc = harness("run", str(scenario_file), "--reporter", "junit", "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert written_files(out) == {"junit.xml"}
    assert proc.stdout == ""  # the console is a reporter too, and was not chosen


def test_run_reporters_repeated_and_comma_separated(tmp_path, scenario_file):
    out = tmp_path / "out"
    proc = harness("run", str(scenario_file), "--reporter", "json,markdown", "--reporter", "console",
                   "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert written_files(out) == {"results.json", "summary.md"}
    assert "1 runs: 1 as expected" in proc.stdout
    assert f"reports: {out / 'results.json'}, {out / 'summary.md'}, {out / 'journal'}/" in proc.stdout


@pytest.mark.parametrize("command", [["run"], ["diff", "--baseline", "reference", "--candidate", "reference"]])
def test_an_unknown_reporter_exits_2_with_one_line_naming_the_choices(tmp_path, scenario_file, command):
    out = tmp_path / "out"
    proc = harness(*command, str(scenario_file), "--reporter", "json,pdf", "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "harness: error: --reporter 'pdf'" in proc.stderr
    assert "choose from json, markdown, junit, " in proc.stderr
    assert not out.exists(), "nothing may run or be written"


def test_diff_with_the_html_reporter_writes_only_report_html(tmp_path, scenario_file):
    out = tmp_path / "out"
    proc = harness("diff", str(scenario_file), "--baseline", "reference", "--candidate", "reference",
                   "--reporter", "html", "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert written_files(out) == {"report.html"}
    assert proc.stdout == ""


# --------------------------------------------------------------------------- the layering


def test_no_report_module_imports_checks_targets_scenario_or_run():
    """Every import statement, at any depth (functions, TYPE_CHECKING blocks), of every module under report/."""
    offending = []
    for path in sorted((ROOT / "harness" / "report").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offending += [f"{path.name}: {n}" for n in names if n.startswith(FORBIDDEN)]
    assert offending == []


# --------------------------------------------------------------------------- the model the reports render


def test_results_json_leaves_the_request_pair_out():
    """The pair repeats request text the journal holds; results.json keeps the keys it always had."""
    check = CheckResult("prefix_stable", "fail", "moved", request_pair=RequestPair(missing="the check points at no request"))
    run = RunResult("two-turns", "reference", "fail", checks=[check]).to_json()
    assert list(run["checks"][0]) == ["check", "verdict", "message", "step", "request", "expected", "observed",
                                      "evidence", "expected_verdict", "as_expected"]
    assert list(run)[:5] == ["scenario", "target", "status", "steps", "checks"]


def test_a_diffs_evidence_is_the_verdict_its_final_cell_shows():
    """The run's own verdict when it agrees with the final cell, else the one judged as of the last step."""
    own = CheckResult("prefix_stable", "pass", "own")
    at_end = CheckResult("prefix_stable", "fail", "judged as of step 1")
    outline = ScenarioOutline("s", (StepOutline(1, "launch"),), ("prefix_stable",))
    sd = ScenarioDiff(outline, RunResult("s", "a", "pass", checks=[own]), RunResult("s", "b", "pass", checks=[own]),
                      [Cell("s", 1, "prefix_stable", "pass", "fail")], [at_end], [at_end])
    assert sd.evidence("baseline", "prefix_stable") is own
    assert sd.evidence("candidate", "prefix_stable") is at_end
