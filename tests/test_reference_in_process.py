"""The reference agent in-process (`reference[:DEFECTS|:*]+in-process`): each step a call, not a process.

Real fake API core, real reference agent; the only seam is the HTTP one (a sync
httpx client whose transport routes through respx to FakeModelAPI.handle).
What is shown here:
- the spec: names, `expected_as`, honest argv, clear errors, the `harness targets` listing;
- the whole scenario library, for the clean agent and every defect, gets the verdicts the
  scenario files expect of the subprocess twin;
- subprocess and in-process runs of the same scenarios agree: verdicts, exit codes,
  per-step request counts and classes, headers (but Host) and request bodies, once the
  ids a run mints at random are renamed by a normalizer that is itself shown not to hide
  real differences;
- a step that fails or crashes fails the same way in both modes;
- nothing survives between steps in module state, and no socket or subprocess is used;
- the sync transport imitates scripted faults exactly as the async one does (shared code).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import sys
from pathlib import Path

import httpx
import pytest

from harness import cli as harness_cli
from harness.errors import InputError
from harness.execution.base import StepCall
from harness.execution.in_process import InProcessSteps
from harness.execution.subprocess import SubprocessSteps
from harness.fakeapi.core import FakeModelAPI
from harness.journal.exchange import MAIN
from harness.fakeapi.inprocess import SyncRespxTransport, http_client, make_router
from harness.journal.requests import read_journal
from harness.fakeapi.formats.anthropic import stream_event_names
from harness.isolation.process import run_process
from harness.reference_agent.client import MessagesClient
from harness.reference_agent.defects import KNOWN_DEFECTS
from harness.reference_agent.errors import ApiError
from harness.reference_agent.httpx_connection import HttpxConnection
from harness.reference_agent.in_process import ARGV0, BASE_URL, run_in_process, step_environment
from harness.reference_agent.sse import parse_sse
from harness.results import ERROR, FAIL, PASS, RunResult
from harness.run.runner import run_scenario
from harness.scenario.model import Fault, TextBlock, Turn
from harness.scenario.reader import load_scenario, load_scenarios, scenario_from_text
from harness.targets import expectation_name_problem, resolve_target
from harness.targets.reference import build
from vocabulary import messages_body, step_with

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "scenarios"
IN_PROCESS_TARGETS = resolve_target("reference:*+in-process")
SUBPROCESS_HEAD = ("{python}", "-m", "harness.reference_agent")
LONG = "The answer is 56, and this sentence is long enough to stream in several text deltas."


def verdicts(result: RunResult) -> dict[str, str]:
    return {c.check: c.verdict for c in result.checks}


def target(defects: list[str], in_process: bool):
    spec = "reference" + (":" + ",".join(defects) if defects else "") + ("+in-process" if in_process else "")
    (tg,) = resolve_target(spec)
    return tg


# =========================================================================== the spec


@pytest.mark.parametrize("spec, names", [
    ("reference+in-process", ["reference+in-process"]),
    ("reference:drop-append-on-resume+in-process", ["reference:drop-append-on-resume+in-process"]),
    ("reference:drop-append-on-resume,forget-last-reply+in-process",
     ["reference:drop-append-on-resume,forget-last-reply+in-process"]),
    ("reference:*+in-process", ["reference+in-process"] + [f"reference:{d}+in-process" for d in KNOWN_DEFECTS]),
])
def test_in_process_specs_name_their_targets_and_run_the_same_flags(spec, names):
    targets = resolve_target(spec)
    assert [t.name for t in targets] == names
    twins = resolve_target(spec.removesuffix("+in-process"))
    for tg, twin in zip(targets, twins, strict=True):
        assert tg.expected_as == twin.name and twin.expected_as is None
        assert tg.executor == InProcessSteps(run_in_process) and twin.executor == SubprocessSteps()
        assert set(tg.commands) == set(twin.commands)
        for kind, command in tg.commands.items():
            # Honest argv: says where it runs, then exactly the flags the command gets.
            assert command[0] == ARGV0 and twin.commands[kind][:3] == SUBPROCESS_HEAD
            assert command[1:] == twin.commands[kind][3:]
        assert dataclasses.replace(tg, name=twin.name, commands=twin.commands, executor=SubprocessSteps(),
                                   expected_as=None) == twin


@pytest.mark.parametrize("spec, problem", [
    ("reference+in-proc", "unknown option '+in-proc'"),
    ("reference+", "unknown option '+'"),
    ("reference:*+bogus", "unknown option '+bogus'"),
    ("reference+in-process+in-process", "'+in-process' given twice"),
    ("reference:no-such-defect+in-process", "unknown reference defect 'no-such-defect'"),
])
def test_bad_in_process_specs_are_input_errors(spec, problem):
    with pytest.raises(InputError) as caught:
        resolve_target(spec)
    assert problem in str(caught.value)


@pytest.mark.parametrize("name, problem", [
    ("reference:drop-append-on-resume", None),
    ("reference:drop-append-on-resume+in-process",
     "held to the expectations of 'reference:drop-append-on-resume'; write the expectation for 'reference:drop-append-on-resume'"),
    ("reference+in-process", "held to the expectations of 'reference'"),
    ("reference:nope+in-process", "unknown reference defect 'nope'"),
    ("reference+sideways", "unknown option '+sideways'"),
    ("reference:*+in-process", None),  # a glob: its targets are known only when a run names them
])
def test_an_expectation_naming_an_in_process_target_is_refused_since_it_could_never_apply(name, problem):
    found = expectation_name_problem(name)
    assert (found is None) if problem is None else (problem in found), found


def test_an_in_process_expectation_name_is_an_error_in_a_scenario_file():
    text = ('name: x\nsteps:\n  - launch: {prompt: hi, reply: "42"}\nchecks: [prefix_stable]\n'
            'expect:\n  reference:timestamp-in-prefix+in-process: {prefix_stable: fail}\n')
    with pytest.raises(InputError, match=r"x\.yaml:6: .*write the expectation for 'reference:timestamp-in-prefix'"):
        scenario_from_text(text, "x.yaml")


def test_harness_targets_lists_the_in_process_suffix(capsys):
    assert harness_cli.main(["targets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = lines.index("reference:*               the clean agent plus one target per defect")
    assert lines[at + 1].split()[0] == "+in-process" and "reference" in lines[at + 1] and "subprocess" in lines[at + 1]


# =========================================================================== the library, every target, in-process


@pytest.mark.parametrize("tg", IN_PROCESS_TARGETS, ids=[t.name for t in IN_PROCESS_TARGETS])
def test_library_verdicts_in_process_are_those_the_scenarios_expect(tg):
    scenarios = load_scenarios(LIBRARY)
    assert len(scenarios) >= 20 and any(s.path.parent != LIBRARY for s in scenarios)  # subfolders included
    problems, fails = [], 0
    for sc in scenarios:
        result = run_scenario(sc, tg)
        if result.error or not result.as_expected:
            problems.append(f"{sc.name}: {result.error or ''} " + "; ".join(
                f"{c.check}: expected {c.expected_verdict}, got {c.verdict}" for c in result.checks if not c.as_expected))
        fails += sum(c.verdict == FAIL for c in result.checks)
        for step in result.steps:
            assert step.argv[0] == ARGV0, step.argv
            assert step.pids in ([], [os.getpid()]), (sc.name, step.index, step.pids)  # only this process sent requests
    assert not problems, "\n".join(problems)
    if tg.expected_as == "reference":
        assert fails == 0
    else:  # failing verdicts that are as expected: the twin's expectations were applied
        assert fails > 0, f"{tg.name} escaped every check of the library"


# =========================================================================== subprocess and in-process agree


class IdNormalizer:
    """Renames the ids a run mints at random to their order of first appearance: `<agent id 1>`, `<session 2>`.

    Only two patterns, each where the agent writes it: the 8 hex digits of the identity line's
    `(agent id X)` and a version-4 UUID (session ids). Everything else stays byte for byte, and so
    does which id equals which: an identity kept across steps and one minted per step normalize
    differently. One instance per run, fed in the same order for both runs.
    """

    PATTERNS = {
        "agent id": re.compile(r"(?<=\(agent id )[0-9a-f]{8}(?=\))"),
        "session": re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\b"),
    }

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, str]] = {kind: {} for kind in self.PATTERNS}

    def __call__(self, text: str) -> str:
        for kind, pattern in self.PATTERNS.items():
            names = self.seen[kind]
            text = pattern.sub(lambda m: names.setdefault(m.group(0), f"<{kind} {len(names) + 1}>"), text)
        return text


def _identity(agent_id: str) -> str:
    return f"You are Reference Agent, a small test agent for launcher harnesses (agent id {agent_id})."


def normalized(*texts: str) -> list[str]:
    ids = IdNormalizer()
    return [ids(t) for t in texts]


def test_the_normalizer_renames_only_the_random_ids_and_keeps_which_equals_which():
    a, b, c = "1a2b3c4d", "9f8e7d6c", "0badf00d"
    s1, s2 = "bb7ceeeb-818d-4e45-ae24-3911786125f6", "7d80a702-1625-4548-82cf-6d1b9f97b149"
    # The same structure with other ids: equal.
    assert normalized(_identity(a), _identity(a), s1) == normalized(_identity(b), _identity(b), s2)
    assert normalized(_identity(a), _identity(b)) == normalized(_identity(b), _identity(c))
    # A stable identity and one minted per step: different (this is identity_stable's whole point).
    assert normalized(_identity(a), _identity(a)) != normalized(_identity(b), _identity(c))
    assert normalized(s1, s1) != normalized(s1, s2)
    # Nothing but the ids: any other byte still counts, hex words elsewhere included.
    assert normalized(_identity(a) + " x") != normalized(_identity(b) + " y")
    assert normalized(f"prompt {a}") != normalized(f"prompt {b}")  # 8 hex digits not in the identity line
    assert normalized(_identity(a + "0")) != normalized(_identity(b + "0"))  # 9 digits: not an agent id
    assert normalized(f'"x": "{s1.replace("-4", "-1")}"') != normalized(f'"x": "{s2.replace("-4", "-1")}"')  # not v4
    assert normalized(_identity(a)) == [_identity("<agent id 1>")]


def _without_cause(stderr: str) -> str:
    """A transport failure's exception, named by each HTTP library in its own words, and the address it had."""
    stderr = re.sub(r"connection to \S+ failed: .*", "connection to <the fake API> failed: <cause>", stderr)
    return re.sub(r"reading the response failed: .*", "reading the response failed: <cause>", stderr)


def observed(result: RunResult) -> dict:
    """What a run did, as far as the two modes must agree, ids renamed (see IdNormalizer)."""
    ids = IdNormalizer()
    steps = []
    for s in result.steps:
        argv = list(s.argv[3:]) if s.argv[0] != ARGV0 else list(s.argv[1:])  # the flags, after the honest head
        steps.append({"index": s.index, "kind": s.kind, "exit": s.exit_code, "requests": s.requests, "classes": s.classes,
                      "unused": s.unused_turns, "unforeseen": s.unforeseen, "error": s.error, "timed_out": s.timed_out,
                      "argv": [ids(a) for a in argv], "stdout": ids(s.stdout_tail), "stderr": _without_cause(s.stderr_tail)})
    journal = read_journal(Path(result.journal))
    return {
        "status": result.status, "error": result.error, "as_expected": result.as_expected, "verdicts": verdicts(result),
        "steps": steps,
        "requests": [{"step": e.step, "class": e.klass, "method": e.method, "path": e.path, "status": e.status,
                      "stream": e.stream, "error": e.error, "unforeseen": e.unforeseen, "notes": e.notes,
                      "headers": {k: v for k, v in e.headers.items() if k != "host"}} for e in journal],
        "bodies": [ids(e.body.decode("utf-8")) for e in journal],
        "replies": [e.reply for e in journal],
    }


TRANSPORT_FAULTS = f"""name: transport-faults
description: every scripted transport fault, each followed by a retry in a fresh process
append: "Task prompt: answer with one number."
checks: [identity_stable, appended_exactly_once, prefix_stable, history_preserved]
steps:
  - launch: {{prompt: 'What is 6*7?', reply: '42'}}
  - resume:
      prompt: 'And 7*8?'
      reply: [{{fault: {{kind: cut_stream, after_events: 3}}, text: '{LONG}'}}, '56']
  - retry: {{prompt: 'And 7*8?', reply: [{{fault: {{kind: malformed_sse}}, text: '56'}}]}}
  - retry: {{prompt: 'And 7*8?', reply: [{{fault: {{kind: reset}}}}]}}
  - retry:
      prompt: 'And 7*8?'
      reply:   # the reset hits a kept-alive connection: the agent retries it once, in the same process
        - tool_use: {{name: calculator, input: {{expression: '7*8'}}}}
        - fault: {{kind: reset}}
        - '56'
  - resume: {{prompt: 'And 8*9?', reply: [{{fault: {{kind: slow_first_byte, seconds: 0.2}}, text: '72'}}]}}
  - resume:   # every event arrives, then the connection closes without the terminating chunk
      prompt: 'And 9*9?'
      reply: [{{fault: {{kind: cut_stream, after_events: 7}}, text: '81'}}, '81']
  - retry: {{prompt: 'And 9*9?', reply: '81'}}
"""

COMPARED = {  # what each one exercises
    "auto-compaction-then-resume": LIBRARY / "auto-compaction-then-resume.yaml",  # compaction the agent decides on
    "compaction-then-resume": LIBRARY / "compaction-then-resume.yaml",  # a /compact step
    "tool-use-across-resume": LIBRARY / "tool-use-across-resume.yaml",  # several requests on one connection
    "fault-overloaded-then-retry": LIBRARY / "fault-overloaded-then-retry.yaml",  # a scripted 529, exit 1, retry
    "transport-faults": TRANSPORT_FAULTS,  # the library scripts no transport fault: every kind here
    "temporary-text-for-one-step": LIBRARY / "temporary-text-for-one-step.yaml",
    "cc-two-turns-in-a-git-repository": LIBRARY / "claude-code" / "two-turns-in-a-git-repository.yaml",
}
COMPARED_DEFECTS = [[], ["fresh-identity-per-process"], ["forget-last-reply"], ["temporary-text-in-history"]]


def compared(name: str):
    source = COMPARED[name]
    return scenario_from_text(source, "transport-faults.yaml") if isinstance(source, str) else load_scenario(source)


@pytest.mark.parametrize("defects", COMPARED_DEFECTS, ids=lambda d: ",".join(d) or "clean")
@pytest.mark.parametrize("name", list(COMPARED))
def test_subprocess_and_in_process_runs_agree(run, name, defects):
    sc = compared(name)
    sub = run(sc, target(defects, in_process=False))
    inp = run(sc, target(defects, in_process=True))
    assert sub.error is None, sub.error
    if isinstance(COMPARED[name], Path):  # library scenarios: the verdicts the files expect, in both modes
        assert sub.as_expected and inp.as_expected
    assert observed(inp) == observed(sub)
    sub_hosts = {e.headers["host"] for e in read_journal(Path(sub.journal))}
    inp_journal = read_journal(Path(inp.journal))
    assert len(sub_hosts) == 1 and next(iter(sub_hosts)).startswith("127.0.0.1:")  # the live server
    assert {e.headers["host"] for e in inp_journal} == {"fake-api.in-process.invalid"}  # an address nobody answers
    assert {e.pid for e in inp_journal} == {os.getpid()}
    assert all("ran in the harness process: no subprocess, no network namespace" in s.notes for s in inp.steps)


def test_the_comparison_sees_a_real_difference_between_two_agents(run):
    """observed() is not blind: a defect, or an identity minted per step, shows up after normalization."""
    sc = load_scenario(LIBRARY / "retry-after-wrong-answer.yaml")
    clean = observed(run(sc, target([], in_process=False)))
    for defects, differs in ((["drop-append-on-resume"], "bodies"), (["fresh-identity-per-process"], "bodies"),
                             (["timestamp-in-prefix"], "verdicts")):
        other = observed(run(sc, target(defects, in_process=True)))
        assert other[differs] != clean[differs], defects
        assert other["steps"] != clean["steps"] or other["bodies"] != clean["bodies"]
    again = observed(run(sc, target([], in_process=True)))
    assert again == clean  # and the same agent the other way round is the same


# =========================================================================== failures, both modes


ONE_STEP = 'name: crash\nappend: "Rules."\nchecks: [history_preserved]\nsteps:\n  - launch: {prompt: "What is 6*7?", reply: %s}\n'


def with_flag(tg, flag: str):
    return dataclasses.replace(tg, commands={kind: (*command, flag) for kind, command in tg.commands.items()})


CRASHES = {
    # name: (target for a mode, the scripted reply, exit code, what stderr says)
    "unknown-defect": (lambda ip: build(["no-such-defect"], ip), "'42'", 2, "unknown defect 'no-such-defect'"),
    "unknown-flag": (lambda ip: with_flag(build([], ip), "--no-such-flag"), "'42'", 2,
                     "reference-agent: error: unrecognized arguments: --no-such-flag"),
    "tool-use-without-a-tool": (lambda ip: build([], ip), "[{text: 'x', stop_reason: tool_use}]", 1,
                                "stop_reason is tool_use but the reply has no tool_use block"),
}


@pytest.mark.parametrize("name", list(CRASHES))
def test_a_failing_step_fails_the_same_way_in_both_modes(run, name):
    make, reply, code, said = CRASHES[name]
    sc = scenario_from_text(ONE_STEP % reply, "crash.yaml")
    sub, inp = run(sc, make(False)), run(sc, make(True))
    assert (sub.status, inp.status) == (ERROR, ERROR)
    assert sub.steps[0].exit_code == inp.steps[0].exit_code == code
    assert sub.error == inp.error and sub.error.startswith(f"step 1 (launch): the agent exited with code {code}; stderr ends with:")
    assert said in inp.error
    assert sub.steps[0].stderr_tail == inp.steps[0].stderr_tail
    assert sub.steps[0].classes == inp.steps[0].classes
    assert all(c.verdict == ERROR for c in inp.checks)


def test_an_uncaught_exception_is_exit_1_with_its_traceback_in_both_modes(tmp_path, served):
    """A session file the agent cannot use (no agent_id) makes it raise KeyError, uncaught, before any request."""
    api, server, journal_path = served
    sessions = tmp_path / "home" / ".reference-agent" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "s1.json").write_text(json.dumps({"session_id": "s1", "messages": []}))
    env = {"HOME": str(tmp_path / "home"), "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-test",
           "PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    flags = ["--output-format", "json", "-p", "hi", "--resume", "s1"]
    sub = run_process([sys.executable, "-m", "harness.reference_agent", *flags], env, tmp_path, 60,
                      tmp_path / "sub.out", tmp_path / "sub.err")
    before = (dict(os.environ), os.getcwd())
    inp = run_in_process(StepCall([ARGV0, *flags], env, tmp_path, 60, tmp_path / "inp.out", tmp_path / "inp.err", "the agent"), api)
    assert (dict(os.environ), os.getcwd()) == before  # environment and working directory restored
    assert sub.exit_code == inp.exit_code == 1 and inp.launch_error is None
    for mode in ("sub", "inp"):
        err = (tmp_path / f"{mode}.err").read_text()
        assert err.startswith("Traceback (most recent call last):") and err.rstrip().endswith("KeyError: 'agent_id'"), err
        assert (tmp_path / f"{mode}.out").read_text() == ""
    assert api.journal.exchanges() == []


def test_a_wait_past_the_steps_timeout_cancels_the_in_process_step(run):
    sc = scenario_from_text('name: slow\nchecks: [history_preserved]\nsteps:\n  - launch: {prompt: "hi", timeout_s: 0.3, '
                        'reply: [{fault: {kind: slow_first_byte, seconds: 30}, text: "late"}]}\n', "slow.yaml")
    before = (dict(os.environ), os.getcwd())
    result = run(sc, target([], in_process=True))
    assert (dict(os.environ), os.getcwd()) == before
    assert result.status == ERROR and result.error == "step 1 (launch): timed out after 0.3s; the in-process run was cancelled"
    assert result.steps[0].timed_out and result.steps[0].exit_code is None and result.steps[0].classes == {MAIN: 1}


# =========================================================================== a fresh process per step, without one


def identities(result: RunResult) -> dict[int, set[str]]:
    """The agent ids of each step's main requests."""
    found: dict[int, set[str]] = {}
    for e in read_journal(Path(result.journal)):
        if e.klass == MAIN:
            found.setdefault(e.step, set()).add(re.search(r"\(agent id ([0-9a-f]{8})\)", e.system_text).group(1))
    return found


def test_fresh_identity_per_process_still_fails_identity_stable_in_process(run):
    sc = load_scenario(LIBRARY / "retry-after-wrong-answer.yaml")
    fresh = run(sc, target(["fresh-identity-per-process"], in_process=True))
    assert verdicts(fresh)["identity_stable"] == FAIL and fresh.as_expected
    per_step = identities(fresh)
    assert len(per_step) == 3 and all(len(ids) == 1 for ids in per_step.values())  # launch, retry, resume (compact: none)
    assert len(set().union(*per_step.values())) == 3  # minted by each step's call, not once per import
    clean = [run(sc, target([], in_process=True)) for _ in range(2)]
    assert all(verdicts(r)["identity_stable"] == PASS for r in clean)
    first, second = (set().union(*identities(r).values()) for r in clean)
    assert len(first) == len(second) == 1 and first != second  # restored from HOME within a run; minted anew per run


def _fingerprint(value: object) -> object:
    if isinstance(value, type):
        return sorted((k, repr(v)) for k, v in vars(value).items() if k not in ("__dict__", "__weakref__"))
    if callable(value) and hasattr(value, "__defaults__"):
        return repr((value.__defaults__, value.__kwdefaults__))  # mutable defaults are module state too
    return repr(value)


def module_state() -> dict[tuple[str, str], tuple[int, object]]:
    """Every global of the reference agent's modules: which object, and what it holds."""
    state = {}
    for name, module in sorted(sys.modules.items()):
        if name == "harness.reference_agent" or name.startswith("harness.reference_agent."):
            for key, value in vars(module).items():
                if not (key.startswith("__") and key.endswith("__")):
                    state[(name, key)] = (id(value), _fingerprint(value))
    return state


def test_no_module_state_survives_a_run(run):
    sc = load_scenario(LIBRARY / "auto-compaction-then-resume.yaml")
    run(sc, target([], in_process=True))  # every module the mode needs is imported by now
    before = module_state()
    assert {m for m, _ in before} >= {"harness.reference_agent.in_process", "harness.reference_agent.httpx_connection",
                                      "harness.reference_agent.client", "harness.reference_agent.prompt"}
    for defects in ([], ["growing-prompt-fragment"], ["temporary-text-frozen-into-prefix", "duplicate-append-on-resume"]):
        for name in ("tool-use-across-resume", "temporary-text-for-one-step", "compaction-then-resume"):
            result = run(load_scenario(LIBRARY / f"{name}.yaml"), target(defects, in_process=True))
            assert result.error is None and all(s.requests for s in result.steps), result.error
    assert module_state() == before


_AUDITED: list[tuple[str, tuple]] | None = None
_WATCHED = {"socket.connect", "socket.getaddrinfo", "socket.gethostbyname", "socket.sendto",
            "subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec", "harness.step.spawn"}


def _audit(event: str, args: tuple) -> None:
    if _AUDITED is not None and event in _WATCHED:
        _AUDITED.append((event, args))


_AUDIT_INSTALLED = False


def audited(action) -> list[tuple[str, tuple]]:
    """The socket and process events this process raised while `action()` ran (PEP 578 audit hooks)."""
    global _AUDITED, _AUDIT_INSTALLED
    if not _AUDIT_INSTALLED:
        sys.addaudithook(_audit)
        _AUDIT_INSTALLED = True
    _AUDITED = []
    try:
        action()
        return _AUDITED
    finally:
        _AUDITED = None


def test_in_process_steps_open_no_socket_and_start_no_process(run):
    sc = load_scenario(LIBRARY / "tool-use-across-resume.yaml")
    tg = target(["fresh-identity-per-process"], in_process=True)
    results = []
    assert audited(lambda: results.append(run(sc, tg))) == []
    assert results[0].as_expected and sum(s.requests for s in results[0].steps) == 6
    # The watch sees them when they happen: the same scenario as subprocesses starts processes,
    seen = {event for event, _ in audited(lambda: run(sc, target([], in_process=False)))}
    assert "harness.step.spawn" in seen  # each step, started by the step warden (harness/isolation/lifetime.py)
    # and the stdlib client connects (to a port nobody listens on: the connection is refused).
    def refused() -> None:
        with pytest.raises(ApiError, match="failed"):
            MessagesClient("http://127.0.0.1:9", "sk-test").create({"stream": True})

    assert "socket.connect" in {event for event, _ in audited(refused)}


def test_the_in_process_connection_reaches_the_fake_api_only():
    api = FakeModelAPI()
    body = {"model": "reference-model-1", "max_tokens": 16, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(transport=SyncRespxTransport(make_router(api, BASE_URL)), trust_env=False) as http:
        def connect(scheme, host, port, timeout):
            return HttpxConnection(http, scheme, host, port, timeout)

        reply = MessagesClient(BASE_URL, "sk-test", connect=connect).create(body)
        assert reply["role"] == "assistant" and len(api.journal.exchanges()) == 1
        for elsewhere in ("http://127.0.0.1:9", "https://api.anthropic.com", BASE_URL.replace("http:", "https:")):
            with pytest.raises(ApiError, match=r"failed: ConnectError\(.in-process fake API: .*not mocked"):
                MessagesClient(elsewhere, "sk-test", connect=connect).create(body)
    assert len(api.journal.exchanges()) == 1  # the refused requests never reached the fake API


def test_the_step_environment_points_every_mention_of_the_live_server_at_the_unanswered_address():
    live = "http://127.0.0.1:45185"
    env = {"ANTHROPIC_BASE_URL": live, "OPENAI_BASE_URL": live + "/v1", "HTTPS_PROXY": live, "HOME": "/h",
           "OTHER": live + "0", "NOTE": "see " + live}
    assert step_environment(env) == {"ANTHROPIC_BASE_URL": BASE_URL, "OPENAI_BASE_URL": BASE_URL + "/v1",
                                     "HTTPS_PROXY": BASE_URL, "HOME": "/h", "OTHER": live + "0", "NOTE": "see " + live}
    assert step_environment({"HOME": "/h"}) == {"HOME": "/h"}


# =========================================================================== the transports: one fault imitation


EVENTS = len(stream_event_names([{"type": "text", "text": LONG}]))  # what the reply streams when nothing breaks
FAULTS = {
    "cut_stream after 3": Fault("cut_stream", after_events=3),
    "cut_stream after every event": Fault("cut_stream", after_events=EVENTS),  # only the terminating chunk is missing
    "reset": Fault("reset"),
    "malformed_sse": Fault("malformed_sse"),
    "slow_first_byte past the read timeout": Fault("slow_first_byte", seconds=5),
    "no fault": None,
}


def _scripted(fault: Fault | None) -> FakeModelAPI:
    api = FakeModelAPI()
    api.begin_step(step_with(Turn(blocks=(TextBlock(LONG),), fault=fault)))
    return api


def _sync_delivery(fault: Fault | None, body: dict) -> tuple[bytes, str | None]:
    got = b""
    with httpx.Client(transport=SyncRespxTransport(make_router(_scripted(fault), BASE_URL)), timeout=0.05) as client:
        try:
            with client.stream("POST", BASE_URL + "/v1/messages", json=body) as response:
                for chunk in response.iter_raw():
                    got += chunk
        except httpx.HTTPError as exc:
            return got, type(exc).__name__
    return got, None


def _async_delivery(fault: Fault | None, body: dict) -> tuple[bytes, str | None]:
    import httpx2

    async def go() -> tuple[bytes, str | None]:
        got = b""
        async with http_client(_scripted(fault), BASE_URL) as client:
            try:
                async with client.stream("POST", BASE_URL + "/v1/messages", json=body, timeout=0.05) as response:
                    async for chunk in response.aiter_raw():
                        got += chunk
            except httpx2.HTTPError as exc:
                return got, type(exc).__name__
        return got, None

    return asyncio.run(go())


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("kind", list(FAULTS))
def test_the_sync_and_async_transports_deliver_a_fault_alike(kind, stream):
    body = messages_body("What is 7*8?", stream=stream, model="reference-model-1")
    sync, async_ = _sync_delivery(FAULTS[kind], body), _async_delivery(FAULTS[kind], body)
    assert sync == async_
    got, failure = sync
    expected_failure = {"cut_stream after 3": "RemoteProtocolError", "cut_stream after every event": "RemoteProtocolError",
                        "reset": "ReadError", "slow_first_byte past the read timeout": "ReadTimeout"}.get(kind)
    assert failure == expected_failure
    if kind.startswith("cut_stream") and stream:
        events = [e.event for e in parse_sse(got)]
        assert events == stream_event_names([{"type": "text", "text": LONG}])[:FAULTS[kind].after_events]
    if kind == "no fault" and stream:
        assert len(parse_sse(got)) == EVENTS
    if failure in ("ReadError", "ReadTimeout"):
        assert got == b""


def test_the_agent_as_a_command_stays_stdlib_only():
    """The httpx seam is imported by the in-process mode alone: `python -m harness.reference_agent` never loads it."""
    import subprocess

    probe = ("import sys, harness.reference_agent.cli, harness.reference_agent.client; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('httpx', 'respx', 'httpx2', 'httpcore')"
             " or m.endswith(('httpx_connection', 'in_process'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"
