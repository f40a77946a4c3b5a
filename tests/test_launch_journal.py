"""The launch journal: what a launcher passed to the agent binary, recorded per launch and judged apart from the requests.

Real processes throughout: the reference agent started by the runner, and the
recording shim started as a launcher would start it, reporting to a real fake
API on 127.0.0.1.
"""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import urllib.request
from dataclasses import replace

import pytest

from harness.checks import run_check
from harness.checks.context import CheckContext
from harness.checks.launches import APPENDED, FROM_CALLER, prompt_options
from harness.fakeapi.core import FakeModelAPI
from harness.journal.exchange import REDACTED
from harness.fakeapi.launch_control import LaunchControl
from harness.fakeapi.server import FakeAPIServer
from harness.fakeapi.launch_control import CONTROL_PATH
from harness.isolation.launch_shim import CANNOT_RECORD, write_shim
from harness.journal.launches import RUNNER, SHIM, Launch, LaunchJournal, launch_journal_path, read_launches
from harness.run.runner import run_scenario
from harness.scenario.reader import scenario_from_text
from harness.targets import resolve_target
from builders import IDENTITY

APPEND = "Task prompt: answer with one number."
SCENARIO = f"""
name: two-launches
append: "{APPEND}"
steps:
  - launch: {{prompt: "What is 6*7?", reply: "42"}}
  - resume: {{prompt: "And 7*8?", reply: "56"}}
checks: [appended_exactly_once, launch_appended_exactly_once, launch_prompt_from_caller]
"""


def reference_with(resume_tail: tuple[str, ...] | None = None, name: str = "reference-launcher"):
    """The reference agent, its resume launch built by a launcher that passes `resume_tail` instead of the caller's text."""
    target = resolve_target("reference")[0]
    if resume_tail is None:
        return target
    resume = list(target.commands["resume"])
    at = resume.index("--append-system-prompt")
    resume[at:at + 2] = list(resume_tail)
    return replace(target, name=name, commands={**target.commands, "resume": tuple(resume)})


def run(tmp_path, target):
    scenario = scenario_from_text(SCENARIO)
    journal = tmp_path / "run.jsonl"
    result = run_scenario(scenario, target, journal)
    return result, read_launches(launch_journal_path(journal))


def verdicts(result) -> dict[str, str]:
    return {c.check: c.verdict for c in result.checks}


# --------------------------------------------------------------------------- runner-recorded launches


def test_every_step_of_a_command_target_is_recorded_as_a_launch(tmp_path):
    result, launches = run(tmp_path, reference_with())
    assert result.error is None
    assert result.launch_journal == str(tmp_path / "launches" / "run.jsonl")
    assert [(l.seq, l.step, l.step_kind, l.exit_code, l.recorded_by) for l in launches] == [
        (1, 1, "launch", 0, RUNNER), (2, 2, "resume", 0, RUNNER)]
    assert launches[1].argv == result.steps[1].argv
    assert "--resume" in launches[1].argv and APPEND in launches[1].argv
    assert launches[0].pid is not None and launches[0].duration_s is not None
    # The variables that steer an agent are kept; credentials never are.
    assert launches[0].env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:")
    assert launches[0].env["ANTHROPIC_API_KEY"] == REDACTED
    assert launches[0].cwd.endswith("/work")


def test_launch_checks_pass_on_a_launcher_that_passes_the_callers_text_every_time(tmp_path):
    result, _ = run(tmp_path, reference_with())
    assert verdicts(result) == {"appended_exactly_once": "pass", APPENDED: "pass", FROM_CALLER: "pass"}


def test_first_launch_only_fails_the_launch_check_at_the_resume(tmp_path):
    # The reference agent keeps the first launch's text in its session, so the model still sees it:
    # only the launch journal shows that the launcher dropped it (the seed's hidden bug).
    result, launches = run(tmp_path, reference_with(resume_tail=()))
    verdict = next(c for c in result.checks if c.check == APPENDED)
    assert verdict.verdict == "fail"
    assert verdict.step == 2 and verdict.observed == 0
    assert "launch 2, step 2 (resume): the launcher passed the caller's text 0 time(s)" in verdict.message
    assert "occurrences by launch: 1 → 0" in verdict.message
    assert [entry["count"] for entry in verdict.evidence["by_launch"]] == [1, 0]
    assert APPEND not in launches[1].argv


def test_a_launcher_passing_the_text_twice_fails(tmp_path):
    result, _ = run(tmp_path, reference_with(resume_tail=("--append-system-prompt", "{append}\n\n{append}")))
    verdict = next(c for c in result.checks if c.check == APPENDED)
    assert (verdict.verdict, verdict.observed) == ("fail", 2)


def test_a_prompt_option_carrying_text_the_caller_did_not_give_fails(tmp_path):
    # What the seed's fix had to avoid: rebuilding the option from the conversation appends the agent's own prompt.
    tail = ("--append-system-prompt", "You are Reference Agent, rebuilt from history.\n\n{append}")
    result, _ = run(tmp_path, reference_with(resume_tail=tail))
    verdict = next(c for c in result.checks if c.check == FROM_CALLER)
    assert verdict.verdict == "fail"
    assert "launch 2, step 2 (resume): --append-system-prompt carries" in verdict.message
    assert "'You are Reference Agent, rebuilt from history.'" in verdict.message
    assert verdicts(result)[APPENDED] == "pass"  # the caller's text is there, once: only the extra is wrong


def test_launch_checks_without_launches_are_errors_never_passes():
    context = CheckContext((), APPEND, IDENTITY)
    for name in (APPENDED, FROM_CALLER):
        assert run_check(name, context).verdict == "error"
    assert run_check(APPENDED, CheckContext((), None, IDENTITY, launches=(Launch(1, ["a"], "/", step=1),))).verdict == "error"


def test_a_keyed_prompt_option_reads_the_string_of_its_key_only():
    quoted = "developer_instructions=" + "'" * 3 + APPEND + "'" * 3  # a TOML literal string, as codex.py passes it
    argv = ["codex", "-c", "model='m'", "-c", quoted, "exec", "hi"]
    assert prompt_options(argv, ("-c developer_instructions",)) == [("-c developer_instructions", APPEND)]
    assert prompt_options(argv, ("-c",)) == [("-c", "model='m'"), ("-c", quoted)]


def test_prompt_options_reads_both_spellings_and_stops_at_the_end_of_options():
    argv = ["claude", "--system-prompt=S", "--append-system-prompt", "A", "--", "--append-system-prompt", "not an option"]
    assert prompt_options(argv, ("--append-system-prompt", "--system-prompt")) == [("--system-prompt", "S"), ("--append-system-prompt", "A")]


def test_launch_checks_are_judged_only_where_a_scenario_lists_them():
    scenario = scenario_from_text(f"""
name: defaults
append: "{APPEND}"
steps:
  - launch: {{prompt: "Hi", reply: "Hello"}}
""")
    assert APPENDED not in scenario.checks and FROM_CALLER not in scenario.checks
    assert "appended_exactly_once" in scenario.checks


def test_launch_check_needs_the_callers_text():
    from harness.errors import InputError

    with pytest.raises(InputError, match="launch_appended_exactly_once.*needs 'append'"):
        scenario_from_text("""
name: no-append
steps:
  - launch: {prompt: "Hi", reply: "Hello"}
checks: [launch_appended_exactly_once]
""")


# --------------------------------------------------------------------------- the recording shim


@pytest.fixture
def control(tmp_path):
    launches = LaunchJournal(tmp_path / "launches.jsonl")
    api = FakeModelAPI()
    api.control = LaunchControl(launches, lambda: (7, "retry")).handle
    with FakeAPIServer(api) as server:
        yield server, launches
    launches.close()


def test_the_shim_records_argv_cwd_and_exit_code_and_passes_the_exit_on(tmp_path, control):
    server, launches = control
    shim = write_shim(tmp_path / "bin", "claude", ["/bin/sh", "-c", 'echo "ran $1" > out.txt; exit 3', "claude"],
                      server.base_url + CONTROL_PATH)
    workdir = tmp_path / "work"
    workdir.mkdir()
    done = subprocess.run([str(shim), "--resume", "S1"], cwd=workdir, env={"PATH": "/usr/bin:/bin", "ANTHROPIC_AUTH_TOKEN": "sk-real"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert (workdir / "out.txt").read_text() == "ran --resume\n"
    [launch] = read_launches(tmp_path / "launches.jsonl")
    assert launch.argv == ["claude", "--resume", "S1"]
    assert (launch.step, launch.step_kind, launch.exit_code, launch.recorded_by) == (7, "retry", 3, SHIM)
    assert launch.cwd == str(workdir)
    assert launch.env["ANTHROPIC_AUTH_TOKEN"] == REDACTED
    assert launches.launches()[0].exit_code == 3


def test_a_launch_that_cannot_be_recorded_does_not_run(tmp_path):
    shim = write_shim(tmp_path / "bin", "claude", ["/bin/sh", "-c", "touch ran.txt"], "http://127.0.0.1:9/_harness/launches")
    done = subprocess.run([str(shim)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == CANNOT_RECORD
    assert "cannot record the launch of claude" in done.stderr and "not running it" in done.stderr
    assert not (tmp_path / "ran.txt").exists()


@pytest.mark.parametrize("path, body, message", [
    (CONTROL_PATH, b"not json", "bad launch report"),
    (CONTROL_PATH, b'{"argv": "claude", "cwd": "/"}', "expected argv (list of strings)"),
    (CONTROL_PATH + "/5/end", b'{"exit_code": 0}', "no launch number 5"),
    (CONTROL_PATH + "/1/end", b'{"exit_code": "zero"}', "no launch number 1"),
])
def test_malformed_launch_reports_are_refused_with_the_reason(control, path, body, message):
    server, _ = control
    request = urllib.request.Request(server.base_url + path, data=body, method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30)
    assert refused.value.code == 400
    assert message in json.loads(refused.value.read())["error"]


def test_control_paths_are_not_served_without_a_launch_journal():
    api = FakeModelAPI()
    with FakeAPIServer(api) as server:
        request = urllib.request.Request(server.base_url + CONTROL_PATH, data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30)
    assert refused.value.code == 404


def test_a_torn_last_line_of_a_launch_journal_is_ignored(tmp_path):
    journal = LaunchJournal(tmp_path / "l.jsonl")
    journal.start(["a"], "/", {}, step=1, step_kind="launch", pid=1, recorded_by=RUNNER)
    journal.finish(1, 0)
    journal.start(["b"], "/", {}, step=2, step_kind="resume", pid=2, recorded_by=RUNNER)
    journal.close()
    with open(tmp_path / "l.jsonl", "a") as handle:
        handle.write('{"event": "end", "seq": 2, "exit')
    assert [(l.argv, l.exit_code) for l in read_launches(tmp_path / "l.jsonl")] == [(["a"], 0), (["b"], None)]


def test_reports_show_both_vantage_points_side_by_side(tmp_path):
    from harness.report import caller_text, markdown

    hidden, _ = run(tmp_path / "hidden", reference_with(resume_tail=()))
    clean, _ = run(tmp_path / "clean", reference_with())
    assert caller_text.rows(hidden) == [("1 launch", "1× in --append-system-prompt", "1×"), ("2 resume", "0× ✗", "1×")]
    console = caller_text.text_section([clean, hidden])
    assert "reference-launcher" in console and "2 resume  0× ✗" in console
    assert console.count("the caller's text ·") == 1  # a run whose sides both say 1× stays off the console
    summary = markdown.render([clean, hidden])
    assert "## The caller's text: launcher vs model" in summary and "| 2 resume | 0× ✗ | 1× |" in summary


def test_the_merge_gate_sees_a_launcher_regression_at_the_step_it_starts(tmp_path):
    from harness.results import REGRESSION
    from harness.run.differential import compare

    comparison = compare([scenario_from_text(SCENARIO)], reference_with(), reference_with(resume_tail=()), tmp_path)
    [sd] = comparison.scenarios
    assert [launch.step for launch in read_launches(launch_journal_path(Path(sd.candidate.journal)))] == [1, 2]
    cell = sd.first_change(APPENDED)
    assert (cell.step, cell.change, cell.baseline, cell.candidate) == (2, REGRESSION, "pass", "fail")
    assert sd.final("appended_exactly_once").change == "unchanged-pass"  # the model never noticed
