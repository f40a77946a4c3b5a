"""`harness` on the command line: exit codes, the report folder, bad input, `serve`."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import anthropic
import pytest
from vocabulary import as_foreground

LIBRARY = Path(__file__).resolve().parent.parent / "scenarios"
SCENARIO = """\
name: two-turns
append: "Answer in one word."
steps:
  - launch: {prompt: "Colour of the sky?", reply: "Blue"}
  - resume: {prompt: "And grass?", reply: "Green"}
"""


def harness(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    path = tmp_path / "two-turns.yaml"
    path.write_text(SCENARIO)
    return path


def test_passing_run_exits_0_and_writes_every_report(tmp_path, scenario_file):
    out = tmp_path / "out"
    proc = harness("run", str(scenario_file), "--target", "reference", "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "step 2/2 resume" in proc.stderr  # progress per step
    assert "1 runs: 1 as expected" in proc.stdout
    results = json.loads((out / "results.json").read_text())
    (run,) = results["runs"]
    assert (run["scenario"], run["target"], run["status"]) == ("two-turns", "reference", "pass")
    assert [s["kind"] for s in run["steps"]] == ["launch", "resume"]
    for step in run["steps"]:
        assert {"index", "kind", "exit_code", "duration_s", "requests"} <= step.keys()
        assert step["exit_code"] == 0 and step["requests"] == 1
    assert [c["check"] for c in run["checks"]] == ["identity_stable", "appended_exactly_once", "prefix_stable", "history_preserved"]
    for check in run["checks"]:
        assert {"check", "verdict", "step", "message", "expected", "observed"} <= check.keys()
        assert check["verdict"] == "pass"
    suites = ET.parse(out / "junit.xml").getroot()
    assert suites.find("testsuite").get("tests") == "4" and suites.find("testsuite").get("failures") == "0"
    assert "| two-turns | `reference` | pass | pass | pass | pass | ok |" in (out / "summary.md").read_text()
    journal = (out / "journal" / "two-turns__reference.jsonl").read_text().splitlines()
    assert len(journal) == 2 and json.loads(journal[1])["step"] == 2


def test_unexpected_failure_exits_1_with_evidence(tmp_path, scenario_file):
    out = tmp_path / "out"
    proc = harness("run", str(scenario_file), "-t", "reference:drop-append-on-resume", "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 1
    assert "appended_exactly_once: expected pass, got fail" in proc.stdout
    assert "step 2 (resume), request #2: the appended text occurs 0 time(s)" in proc.stdout
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    assert suite.get("failures") == "2"  # appended text and prefix
    assert "expected pass, got fail" in (out / "summary.md").read_text()


def test_expected_failure_exits_0(tmp_path):
    out = tmp_path / "out"
    proc = harness("run", str(LIBRARY / "retry-after-wrong-answer.yaml"), "-t", "reference:drop-append-on-resume",
                   "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "ok (fails as expected)" in proc.stdout


def test_crashing_agent_is_an_error_and_exits_1(tmp_path, scenario_file):
    target = tmp_path / "crash.yaml"
    target.write_text("name: crash\nlaunch: [\"false\"]\nresume: [\"false\"]\nsession_id: {stdout_json: session_id}\n")
    proc = harness("run", str(scenario_file), "-t", str(target), "--report-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert proc.returncode == 1
    run = json.loads((tmp_path / "out" / "results.json").read_text())["runs"][0]
    assert run["status"] == "error" and "exited with code 1" in run["error"]
    assert {c["verdict"] for c in run["checks"]} == {"error"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "broken.yaml"], "broken.yaml:4: invalid YAML"),
        (["run", "unknown-key.yaml"], "unknown-key.yaml:2: unknown key 'apend' (did you mean 'append'?"),
        (["run", "two-turns.yaml", "-t", "reference:no-such-defect"], "unknown reference defect 'no-such-defect'"),
        (["run", "two-turns.yaml", "-t", "nobody"], "unknown target 'nobody'"),
        (["run", "no-such-dir"], "no-such-dir: no such file or directory"),
        (["run", "two-turns.yaml", "--report-dir", "a-file/reports"], "a-file/reports: cannot write reports there"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_where(tmp_path, scenario_file, args, message):
    (tmp_path / "broken.yaml").write_text("name: broken\nsteps:\n  - launch: {prompt: [unclosed\n")
    (tmp_path / "unknown-key.yaml").write_text(SCENARIO.replace("append:", "apend:"))
    (tmp_path / "a-file").write_text("not a folder")
    proc = harness(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert proc.stderr.count("harness: error:") == 1
    assert not list(tmp_path.rglob("results.json")), "no partial report may be written"


def test_usage_error_exits_2(tmp_path):
    assert harness("run", "--no-such-flag", cwd=tmp_path).returncode == 2
    assert harness(cwd=tmp_path).returncode == 2


def test_top_level_help_lists_every_command_with_its_help_and_the_exit_codes(tmp_path):
    from harness.cli import COMMANDS

    proc = harness("--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    for name in COMMANDS:  # the name, then its one-line help beside it (below it, for a long name)
        assert re.search(rf"^    {re.escape(name)}(?: +|\n {{8,}})\S", proc.stdout, re.M), (name, proc.stdout)
    codes = proc.stdout[proc.stdout.index("exit codes:"):]
    for code, meaning in ((0, "every verdict matches its expectation"), (1, "a verdict differs"),
                          (2, "bad input or usage"), (130, "stopped by Ctrl-C or SIGTERM")):
        assert re.search(rf"^  {code} +{meaning}", codes, re.M), (code, codes)


def test_a_command_module_that_gives_no_help_is_listed_all_the_same(monkeypatch):
    """What a new subcommand added to COMMANDS with only a description looks like under `harness --help`."""
    import types

    from harness import cli

    module = types.ModuleType("harness.commands.listed_for_test")
    module.add_parser = lambda sub: sub.add_parser("listed-for-test", description="Check the listing.\nMore words.")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(cli.COMMANDS, "listed-for-test", "listed_for_test")
    text = cli.build_parser().format_help()
    assert re.search(r"^    listed-for-test(?: +|\n {8,})Check the listing\.$", text, re.M), text
    assert "More words" not in text


def test_default_report_dir_is_linked_as_latest(tmp_path, scenario_file):
    proc = harness("run", str(scenario_file), "-q", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "no --target given" in proc.stderr
    latest = tmp_path / "reports" / "latest"
    assert latest.is_symlink() and (latest / "results.json").is_file()


def test_targets_lists_every_defect(tmp_path):
    from harness.reference_agent.defects import KNOWN_DEFECTS

    proc = harness("targets", cwd=tmp_path)
    assert proc.returncode == 0
    for defect in KNOWN_DEFECTS:
        assert f"reference:{defect}" in proc.stdout


def test_serve_answers_and_journals_until_interrupted(tmp_path):
    journal = tmp_path / "serve.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--journal", str(journal)],
                            cwd=tmp_path, stderr=subprocess.PIPE, text=True, preexec_fn=as_foreground)
    try:
        first = proc.stderr.readline()
        assert first.startswith("fake model API listening on http://127.0.0.1:")
        base_url = first.split()[-1]
        client = anthropic.Anthropic(base_url=base_url, api_key="sk-test-not-real")
        message = client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        assert message.content[0].text
        lines = journal.read_text().splitlines()
        assert len(lines) == 1 and json.loads(lines[0])["class"] == "main"
        assert "sk-test-not-real" not in journal.read_text()
    finally:
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=10)[1]
    assert proc.returncode == 0
    assert "#1 POST /v1/messages 200 main" in rest


def test_serve_on_a_busy_port_exits_2(tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = harness("serve", "--port", str(port), cwd=tmp_path, timeout=20)
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr


def test_serve_records_an_incident_into_a_fresh_folder(tmp_path):
    folder = tmp_path / "incident"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "serve", "--record", str(folder)],
                            cwd=tmp_path, stderr=subprocess.PIPE, text=True, preexec_fn=as_foreground)
    try:
        base_url = proc.stderr.readline().split()[-1]
        assert json.loads((folder / "session.json").read_text())["base_url"] == base_url  # written at start
        client = anthropic.Anthropic(base_url=base_url, api_key="sk-test-not-real")
        for text in ("first", "second"):
            client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": text}])
    finally:
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=10)[1]
    assert proc.returncode == 0, rest
    assert f"recorded 2 request(s) in {folder}/" in rest
    records = [json.loads(line) for line in (folder / "journal.jsonl").read_text().splitlines()]
    assert [json.loads(r["body"])["messages"][0]["content"] for r in records] == ["first", "second"]
    session = json.loads((folder / "session.json").read_text())
    assert session["requests"] == 2 and session["ended"] and session["journal"] == "journal.jsonl"
    assert "sk-test-not-real" not in (folder / "journal.jsonl").read_text()

    again = harness("serve", "--record", str(folder), cwd=tmp_path, timeout=20)
    assert again.returncode == 2 and "already holds a recording" in again.stderr
    both = harness("serve", "--record", str(folder), "--journal", str(tmp_path / "j.jsonl"), cwd=tmp_path, timeout=20)
    assert both.returncode == 2 and "not allowed with argument" in both.stderr


def test_a_run_without_a_target_says_so_on_the_console_and_in_every_report(tmp_path, scenario_file):
    """The CLI keeps its default (the reference agent), but nobody reading any one output can miss it."""
    import xml.etree.ElementTree as ET

    out = tmp_path / "out"
    done = harness("run", str(scenario_file), "--report-dir", str(out), "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    note = "no --target given: these runs judge the built-in reference agent, not an agent of yours"
    assert f"harness: {note}" in done.stderr
    assert json.loads((out / "results.json").read_text())["notes"] == [note]
    assert note in (out / "summary.md").read_text()
    properties = ET.parse(out / "junit.xml").getroot().iter("property")
    assert [(p.get("name"), p.get("value")) for p in properties] == [("harness.note", note)]
    named = harness("run", str(scenario_file), "--target", "reference", "--report-dir", str(tmp_path / "named"), "-q",
                    cwd=tmp_path)
    assert note not in named.stderr and json.loads((tmp_path / "named" / "results.json").read_text())["notes"] == []
