"""The runner never lies about a misbehaving agent, and really isolates a well-behaved one.

Every agent here is tests/agents/agent.py in some `--mode`, described by a
target file next to it and run for real: one fresh process per step against a
fake API on 127.0.0.1. A run whose history is incomplete must be an error at
the failing step, with a message a user can act on, and no check judged.
"""

from __future__ import annotations

import glob
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit


import harness.isolation.process
from harness.journal.requests import read_journal
from harness.results import ERROR, PASS, RunResult
from harness.scenario.model import Scenario
from harness.scenario.reader import scenario_from_text
from harness.targets.base import Target
from harness.targets.target_file import load_target_file
from harness.isolation.workspace import FAKE_API_KEY

AGENTS = Path(__file__).resolve().parent / "agents"
APPEND = "Appended rules: never delete files."


def target(name: str) -> Target:
    return load_target_file(AGENTS / f"{name}.yaml")


def scenario(name: str, steps: str) -> Scenario:
    return scenario_from_text(f'name: {name}\nappend: "{APPEND}"\nsteps:\n{steps}')


THREE_TURNS = """\
  - launch: {prompt: "Remember 17.", reply: "Noted."}
  - resume: {prompt: "Add 5.", reply: "22."}
  - retry:  {prompt: "Wrong, try again.", reply: "22, really."}
"""
ONE_TURN = '  - launch: {prompt: "Remember 17.", reply: "Noted."}\n'


def workspace_of(result: RunResult) -> Path:
    assert result.workspace, "the run was not asked to keep its workspace"
    return Path(result.workspace)


def alive(pid: int) -> bool:
    """A zombie is dead: it only waits for a parent (maybe a non-reaping init) to collect it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return state.split()[1] not in ("Z", "X")


def assert_dead(pid: int) -> None:
    deadline = time.monotonic() + 3
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(pid), f"process {pid} is still running"


def assert_run_error(result: RunResult, sc: Scenario, step: int, *fragments: str) -> None:
    """Error at `step`, later steps never run, every check unjudged and not as expected."""
    kind = sc.steps[step - 1].kind
    assert result.status == ERROR
    assert result.status != PASS and not result.as_expected
    assert result.error is not None and result.error.startswith(f"step {step} ({kind}): "), result.error
    for fragment in fragments:
        assert fragment in result.error, result.error
    assert [s.index for s in result.steps] == list(range(1, step + 1))
    assert all(s.error is None for s in result.steps[:-1])
    assert result.steps[-1].error and result.error.endswith(result.steps[-1].error)
    assert [c.check for c in result.checks] == list(sc.checks) and result.checks
    for check in result.checks:
        assert check.verdict == ERROR, check
        assert check.as_expected is False
        assert check.message.startswith("not judged: the run did not complete")
        assert result.error in check.message


# --------------------------------------------------------------------------- the positive control


def test_a_well_behaved_agent_passes(run):
    sc = scenario("fine", THREE_TURNS)
    result = run(sc, target("good"))
    assert result.error is None, result.error
    assert result.status == PASS and result.as_expected
    assert [c.verdict for c in result.checks] == [PASS] * len(sc.checks) and len(sc.checks) == 4
    assert [(s.index, s.kind, s.exit_code, s.requests, s.error) for s in result.steps] == [
        (1, "launch", 0, 1, None), (2, "resume", 0, 1, None), (3, "retry", 0, 1, None),
    ]
    session = result.steps[0].session_id
    assert session and all(s.session_id == session for s in result.steps)
    assert not any(s.notes for s in result.steps)


# --------------------------------------------------------------------------- misbehaving agents


def test_crash_names_the_exit_code_and_the_stderr_tail(run):
    sc = scenario("crash", THREE_TURNS)
    result = run(sc, target("crash"))
    assert_run_error(result, sc, 2, "the agent exited with code 3", "agent: fatal: cannot open the session store")
    assert result.steps[1].exit_code == 3
    assert "cannot open the session store" in result.steps[1].stderr_tail


def test_an_error_reported_on_stdout_is_quoted_when_stderr_is_empty(run):
    """Claude Code reports a failed turn as JSON on stdout and writes nothing to stderr."""
    sc = scenario("json-error", THREE_TURNS)
    result = run(sc, target("json-error"))
    assert_run_error(result, sc, 2, "the agent exited with code 1; stderr is empty, stdout ends with:",
                     "API Error: the session store is gone")


def test_hang_times_out_and_kills_the_agent_and_its_child(run):
    sc = scenario("hang", ONE_TURN)
    result = run(sc, target("hang"), keep=True)
    assert_run_error(result, sc, 1, "timed out after 1s", "process group was killed", "agent: working...")
    step = result.steps[0]
    assert step.timed_out and step.exit_code is None
    assert 0.9 <= step.duration_s < 5
    pids = json.loads((workspace_of(result) / "home" / "pids.json").read_text())
    assert pids["agent"] != pids["child"]
    assert_dead(pids["agent"])
    assert_dead(pids["child"])


def test_hang_ignoring_sigterm_is_killed_anyway(run, monkeypatch):
    monkeypatch.setattr(harness.isolation.process, "GRACE_S", 0.3)  # SIGTERM, a short grace, then SIGKILL
    sc = scenario("stubborn", ONE_TURN)
    result = run(sc, target("stubborn"), keep=True)
    assert_run_error(result, sc, 1, "timed out after 1s")
    assert result.steps[0].timed_out
    pids = json.loads((workspace_of(result) / "home" / "pids.json").read_text())
    assert_dead(pids["agent"])
    assert_dead(pids["child"])


def test_killed_by_a_signal(run):
    sc = scenario("signal", THREE_TURNS)
    result = run(sc, target("signal"))
    assert_run_error(result, sc, 2, "the agent was killed by signal 9 (SIGKILL)")
    assert result.steps[1].exit_code == -9


def test_no_request_is_an_error_not_an_empty_pass(run):
    sc = scenario("silent", THREE_TURNS)
    result = run(sc, target("no-request"))
    assert_run_error(result, sc, 1, "the agent sent no request to the fake API")
    assert result.steps[0].exit_code == 0 and result.steps[0].requests == 0


def test_garbage_stdout_on_launch_names_the_source_and_shows_stdout(run):
    sc = scenario("garbage", THREE_TURNS)
    result = run(sc, target("garbage-stdout"))
    assert_run_error(
        result, sc, 1, "could not read the session id", "stdout_json: session_id", "no id for you {not json",
    )
    assert result.steps[0].requests == 1 and result.steps[0].session_id is None


def test_background_process_left_running_is_killed_and_the_run_still_judged(run):
    sc = scenario("background", THREE_TURNS)
    result = run(sc, target("leave-background"), keep=True)
    assert result.error is None, result.error
    assert result.status == PASS and [c.verdict for c in result.checks] == [PASS] * 4
    first, *rest = result.steps
    assert any("still running after it exited; their group was killed" in n for n in first.notes), first.notes
    assert not any("still running" in n for step in rest for n in step.notes)
    child = json.loads((workspace_of(result) / "home" / "background.json").read_text())["child"]
    assert_dead(child)


def test_step_kind_without_a_command_names_target_and_kind(run):
    sc = scenario("no-compact", ONE_TURN + "  - compact: {}\n")
    result = run(sc, target("good"))
    assert_run_error(result, sc, 2, "target 'runner-good' has no command for a 'compact' step")
    assert result.steps[1].argv == [] and result.steps[1].requests == 0


def test_session_id_in_launch_is_a_clear_error(run, tmp_path):
    sc = scenario("early-session-id", THREE_TURNS)
    result = run(sc, target("session-id-in-launch"))
    assert_run_error(result, sc, 1, "cannot build the command", "{session_id} has no value yet")
    assert result.steps[0].argv == [] and result.steps[0].exit_code is None
    assert read_journal(tmp_path / "journal-0.jsonl") == []


def test_missing_command_is_named(run):
    sc = scenario("no-binary", THREE_TURNS)
    result = run(sc, target("missing-command"))
    assert_run_error(result, sc, 1, "cannot start '/nonexistent/bin/no-such-agent'", "No such file or directory")


def test_workspace_is_removed_after_a_run_unless_kept(run):
    pattern = os.path.join(tempfile.gettempdir(), "harness-workspace-cleanup-*")
    before = set(glob.glob(pattern))
    for tg in (target("good"), target("crash")):
        run(scenario("workspace-cleanup", THREE_TURNS), tg)
    assert set(glob.glob(pattern)) == before


# --------------------------------------------------------------------------- isolation

PLANTED = {
    "ANTHROPIC_AUTH_TOKEN": "sk-ant-oat01-planted-real-looking-token-0123456789",
    "ANTHROPIC_API_KEY": "sk-ant-api03-planted-real-looking-key-0123456789",
    "ANTHROPIC_BASE_URL": "https://api.anthropic.com",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTEDKEY",
    "OPENAI_API_KEY": "sk-proj-planted0real0looking0key0abcdefghijklmnop",
    "HTTPS_PROXY": "http://planted-proxy.corp.example:3128",
    "https_proxy": "http://planted-proxy.corp.example:3128",
    "GITHUB_TOKEN": "ghp_plantedRealLookingToken0123456789abcd",
}


def dumps_of(result: RunResult) -> list[dict]:
    folder = workspace_of(result) / "home" / "dumps"
    return [json.loads((folder / f"{i}.json").read_text()) for i in range(len(list(folder.iterdir())))]


def test_isolation_environment_home_workdir_placeholders_processes_journal(run, monkeypatch, tmp_path):
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")  # allow-listed: it does reach the agent
    sc = scenario("isolation", THREE_TURNS)
    tg = target("good")
    first = run(sc, tg, keep=True)
    second = run(sc, tg, keep=True)
    assert first.status == PASS and second.status == PASS, (first.error, second.error)

    roots = [workspace_of(first), workspace_of(second)]
    assert roots[0] != roots[1]
    for result, root in zip((first, second), roots):
        dumps = dumps_of(result)
        assert len(dumps) == len(result.steps) == 3
        for step, dump in zip(result.steps, dumps):
            env = dump["env"]
            # nothing of the harness user's credentials or proxies reaches the agent ...
            for name in ("ANTHROPIC_AUTH_TOKEN", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"):
                assert name not in env
            # ... and the proxy variables lead to the fake API, which journals and refuses other hosts
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
                assert env[name] == env["ANTHROPIC_BASE_URL"], name
            for value in PLANTED.values():
                assert not any(value in v for v in env.values()), value
            assert env["ANTHROPIC_API_KEY"] == FAKE_API_KEY and env["OPENAI_API_KEY"] == FAKE_API_KEY
            base = urlsplit(env["ANTHROPIC_BASE_URL"])
            assert (base.scheme, base.hostname) == ("http", "127.0.0.1") and base.port
            assert env["LANG"] == "C.UTF-8" and env["PATH"] == os.environ["PATH"]
            # one per-run folder holds HOME, XDG_*, TMPDIR and the working directory
            home = root / "home"
            assert env["HOME"] == str(home)
            for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
                assert Path(env[name]).is_relative_to(home), name
            assert env["TMPDIR"] == dump["tempdir"] == str(root / "tmp")
            assert dump["cwd"] == str(root / "work")
            # placeholders render in argv ...
            assert step.argv[0] == sys.executable  # {python}
            assert step.argv[1:] == dump["argv"]
            argv = dump["argv"]
            prompt = sc.steps[step.index - 1].prompt
            assert argv[argv.index("-p") + 1] == prompt and argv[argv.index("--append") + 1] == APPEND
            if step.kind == "launch":
                assert argv[-7:] == [
                    f"--x-home={home}", f"--x-workdir={root / 'work'}", f"--x-base-url={env['ANTHROPIC_BASE_URL']}",
                    f"--x-api-key={FAKE_API_KEY}", f"--x-target-dir={AGENTS}", f"--x-prompt={prompt}",
                    f"--x-append={APPEND}",
                ]
            else:
                assert argv[argv.index("--resume") + 1] == result.steps[0].session_id
                assert argv[-1] == f"--x-session-id={result.steps[0].session_id}"
            # ... and in env
            assert {k: v for k, v in env.items() if k.startswith("X_")} == {
                "X_HOME": str(home), "X_WORKDIR": str(root / "work"), "X_BASE_URL": env["ANTHROPIC_BASE_URL"],
                "X_API_KEY": FAKE_API_KEY, "X_TARGET_DIR": str(AGENTS), "X_PROMPT": prompt, "X_APPEND": APPEND,
                "X_LITERAL": "{not a placeholder}",
            }
            # the request came from this step's own process
            assert step.pids == [dump["pid"]]
        # HOME persists across the steps of one run
        assert dumps[0]["marker"] is None
        assert dumps[1]["marker"] == dumps[2]["marker"] == f"written by pid {dumps[0]['pid']}"
        # every step is a different process
        assert len({d["pid"] for d in dumps}) == 3
        assert len({tuple(s.pids) for s in result.steps}) == 3
        # the journal on disk is the run's record
        journal = read_journal(Path(result.journal))
        assert Path(result.journal).parent == tmp_path
        assert [e.seq for e in journal] == [seq for s in result.steps for seq in s.request_seqs] == [1, 2, 3]
        assert [(e.step, e.pid) for e in journal] == [(s.index, s.pids[0]) for s in result.steps]
        assert all(e.headers["x-api-key"] == "[redacted]" for e in journal)
    # and a fresh HOME for every run
    assert dumps_of(first)[0]["env"]["HOME"] != dumps_of(second)[0]["env"]["HOME"]


# A CLI that never stops asking (opencode's compaction-continuation loop): every reply, another request.
# (No braces: the runner fills {placeholders} in a command.)
LOOPING_AGENT = r"""
import json, sys, urllib.error, urllib.request
base = sys.argv[1]
body = json.dumps(dict(model="m", max_tokens=5, messages=[dict(role="user", content="again")])).encode()
while True:
    request = urllib.request.Request(base + "/v1/messages", data=body, headers=dict([("content-type", "application/json")]))
    try:
        urllib.request.urlopen(request).read()
    except urllib.error.HTTPError as refused:
        sys.exit("refused with %d" % refused.code)
"""


def test_an_agent_that_loops_is_stopped_at_the_cap_and_reported_with_the_count(tmp_path):
    from harness.fakeapi.script import MAX_REQUESTS_PER_STEP
    from harness.run.runner import run_scenario
    from harness.targets.base import SessionIdSource

    looping = Target(name="looping", commands={"launch": (sys.executable, "-c", LOOPING_AGENT, "{base_url}")},
                     session_id=SessionIdSource("stdout_regex", "never"))
    journal = tmp_path / "journal.jsonl"
    scenario = scenario_from_text('name: looping\nsteps:\n  - launch: {prompt: "go", reply: "ok"}\nchecks: [identity_stable]\n', "looping.yaml")
    result = run_scenario(scenario, looping, journal)
    assert result.status == ERROR
    assert result.error == (f"step 1 (launch): the agent looped: {MAX_REQUESTS_PER_STEP + 1} model requests in this "
                            f"step, more than the {MAX_REQUESTS_PER_STEP} a step may send; the fake API refused those "
                            f"past the cap")
    exchanges = read_journal(journal)
    assert len(exchanges) == MAX_REQUESTS_PER_STEP + 1
    assert [e.status for e in exchanges[-2:]] == [200, 400] and "request cap" in exchanges[-1].notes[0]
