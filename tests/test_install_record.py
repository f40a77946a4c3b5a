"""A target's install as resolved reaches the report: results.json and report.html name the dependencies an old
release was judged with (read from the install's resolved.txt), and say so where an install predates the record."""

from __future__ import annotations

import json

from harness.report.html_run import render_run
from harness.results import RunResult
from harness.targets.installs import install_record

RESOLVED = "# resolved by uv with --exclude-newer 2026-03-20T20:45:39Z (the upload of inspect-swe==0.2.45)\n" \
           "agent-client-protocol==0.8.1\ninspect-ai==0.3.199\ninspect-swe==0.2.45\n"


def test_the_record_reads_the_resolution_and_says_when_there_is_none(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TOOLS_DIR", str(tmp_path))
    (tmp_path / "inspect-swe" / "0.2.45").mkdir(parents=True)
    (tmp_path / "inspect-swe" / "0.2.45" / "resolved.txt").write_text(RESOLVED)
    assert install_record("inspect-swe", "0.2.45") == (
        "resolved as of 2026-03-20T20:45:39Z", "agent-client-protocol==0.8.1", "inspect-ai==0.3.199", "inspect-swe==0.2.45")
    (tmp_path / "code-puppy" / "0.0.946").mkdir(parents=True)
    (tmp_path / "code-puppy" / "0.0.946" / ".complete").write_text("code-puppy==0.0.946\n")
    assert install_record("code-puppy", "0.0.946") == (
        "dependencies not recorded (installed before the harness recorded them)", "code-puppy==0.0.946")


def test_results_json_and_the_html_report_carry_it():
    result = RunResult("s", "inspect-swe@0.2.45+claude-code@2.1.77+no-pin", "pass",
                       installed=["resolved as of 2026-03-20T20:45:39Z", "agent-client-protocol==0.8.1", "inspect-ai==0.3.199"])
    assert json.loads(json.dumps(result.to_json()))["installed"][1] == "agent-client-protocol==0.8.1"
    page = render_run([result])
    assert "<summary>resolved as of 2026-03-20T20:45:39Z, 2 package(s)</summary>" in page
    assert "<code>agent-client-protocol==0.8.1</code>" in page
