"""The pydantic-ai target: a user's own agent, run step by step in fresh processes or in-process.

The agent under test is examples/pydantic-ai-agent/agent.py: `persisted_agent`
keeps its identity and durable prompt in the persisted history, `process_agent`
re-gathers them in every process (the seeds' bugs). Both are run for real, with
real pydantic-ai, against the fake API: in subprocess mode through the HTTP
server, in-process through respx. Verdicts come from the checks, and the seeds'
bugs are also read straight from the raw request bodies, format by format,
without the fake API's normalized view.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import httpx2
import pytest
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest

from harness.errors import InputError
from harness.fakeapi.core import FakeModelAPI
from harness.fakeapi.inprocess import http_client
from harness.journal.requests import read_journal
from harness.pydantic_ai.loading import load_module
from harness.results import ERROR, FAIL, PASS
from harness.scenario.reader import load_scenario, scenario_from_text
from harness.targets import expectation_name_problem, pydantic_ai as target_module, resolve_target
from harness.targets.base import Target

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "pydantic_ai"
EXAMPLE = "examples/pydantic-ai-agent/agent.py"
BROKEN = "tests/data/pydantic_ai/broken_agents.py"
FORMATS = target_module.FORMATS
_EXAMPLE_MODULE = load_module(str(REPO / EXAMPLE))  # the very module object in-process steps use
HEADLESS_TEXT, STATE_KEY = _EXAMPLE_MODULE.HEADLESS_TEXT, _EXAMPLE_MODULE.STATE_KEY

IDENTITY = re.compile(r"(?m)^You are [^\n]*")
EXPECTED_FAILS = {  # scenario -> checks process_agent fails (persisted_agent passes every check everywhere)
    "three-turns": {"identity_stable", "prefix_stable", "cache_reuse"},
    "memory-grows": {"identity_stable", "prefix_stable", "cache_reuse"},
    "rules-edited": {"identity_stable", "prefix_stable"},
    "headless-text": {"temporary_text_transient", "prefix_stable"},
    "compaction": {"identity_stable", "prefix_stable"},
    "step-temporary": {"identity_stable"},
}


@cache
def targets(module: str, function: str, options: str) -> tuple[Target, ...]:
    return tuple(target_module.targets(f"pydantic-ai:{module}:{function}{options}", cwd=REPO))


def example(function: str, fmt: str, in_process: bool) -> Target:
    (one,) = targets(EXAMPLE, function, f"+{fmt}" + ("+in-process" if in_process else ""))
    return one


# The code-puppy suite itself: the example must pass what code-puppy is judged on.
SUITE = {
    "three-turns": "three-turns-three-processes",
    "memory-grows": "memory-plugin-grows-prefix",
    "rules-edited": "rules-file-edited-between-turns",
    "headless-text": "temporary-headless-text",
    "compaction": "compaction-then-resume",
}


def scenario(name: str):
    if name in SUITE:
        return load_scenario(REPO / "scenarios" / "code-puppy" / f"{SUITE[name]}.yaml")
    return load_scenario(DATA / f"{name}.yaml")


def verdicts(result) -> dict[str, str]:
    return {c.check: c.verdict for c in result.checks}


# --------------------------------------------------------------------------- what the raw bodies say


def system_text(path: str, body: dict) -> str:
    """The system text as the model reads it, from the wire format itself."""
    def text(content) -> str:
        return content if isinstance(content, str) else "\n\n".join(part["text"] for part in content)

    if path.endswith("/messages"):
        return text(body.get("system", []))
    if path.endswith("/chat/completions"):
        return "\n\n".join(text(m["content"]) for m in body["messages"] if m["role"] in ("system", "developer"))
    items = [text(i["content"]) for i in body["input"] if i.get("role") in ("system", "developer")]
    return "\n\n".join(([body["instructions"]] if body.get("instructions") else []) + items)


def history_text(path: str, body: dict) -> list[str]:
    messages = body["input"] if path.endswith("/responses") else body["messages"]
    out = []
    for m in messages:
        if m.get("role") in ("user", "assistant"):
            content = m["content"]
            out.append(content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content))
    return out


def mains(journal_path: Path) -> list:
    return [e for e in read_journal(journal_path) if e.klass == "main"]


def run_journal(run, sc, tg, keep=False):
    result = run(sc, tg, keep)
    return result, mains(Path(result.journal))


# --------------------------------------------------------------------------- the spec


@pytest.mark.parametrize("spec, names", [
    (f"pydantic-ai:{EXAMPLE}:persisted_agent", [f"pydantic-ai:{EXAMPLE}:persisted_agent+openai-chat"]),
    (f"pydantic-ai:{EXAMPLE}:process_agent+anthropic+in-process", [f"pydantic-ai:{EXAMPLE}:process_agent+anthropic+in-process"]),
    (f"pydantic-ai:{EXAMPLE}:process_agent+in-process+*", [f"pydantic-ai:{EXAMPLE}:process_agent+{f}+in-process" for f in FORMATS]),
])
def test_a_spec_names_every_target_with_its_format(spec, names):
    built = target_module.targets(spec, cwd=REPO)
    assert [t.name for t in built] == names
    for t in built:
        assert t.executor.in_harness_process == t.name.endswith("+in-process")
        assert set(t.commands) == {"launch", "resume", "retry", "compact"}  # the example defines compact()
        if not t.executor.in_harness_process:
            assert t.commands["launch"][:3] == ("{python}", "-m", "harness.pydantic_ai.driver")


@pytest.mark.parametrize("spec, fragment", [
    ("pydantic-ai:", "expected pydantic-ai:MODULE:FUNCTION"),
    (f"pydantic-ai:{EXAMPLE}", "expected pydantic-ai:MODULE:FUNCTION"),
    (f"pydantic-ai:{EXAMPLE}:persisted-agent", "not a Python function name"),
    ("pydantic-ai:my-agents:build", "neither a dotted module name nor a path"),
    (f"pydantic-ai:{EXAMPLE}:persisted_agent+grpc", "unknown option '+grpc'"),
    (f"pydantic-ai:{EXAMPLE}:persisted_agent+anthropic+openai-chat", "a second format"),
    (f"pydantic-ai:{EXAMPLE}:persisted_agent+in-process+in-process", "given twice"),
    ("pydantic-ai:examples/nowhere/agent.py:build", "no such file 'examples/nowhere/agent.py'"),
    ("pydantic-ai:no_such_module_anywhere:build", "no module named 'no_such_module_anywhere'"),
    (f"pydantic-ai:{EXAMPLE}:no_such_factory", "has no function 'no_such_factory'"),
    (f"pydantic-ai:{BROKEN}:NOT_A_FUNCTION", "is not callable (int); expected a function returning a pydantic_ai.Agent"),
    (f"pydantic-ai:{BROKEN}:not_an_agent", "returned builtins.dict, not a pydantic_ai.Agent"),
    (f"pydantic-ai:{BROKEN}:raising_factory", "raised RuntimeError: the factory could not read its configuration"),
    (f"pydantic-ai:{BROKEN}:async_factory", "is async; it must return a pydantic_ai.Agent directly"),
])
def test_a_bad_spec_or_an_unusable_factory_fails_before_any_run(spec, fragment):
    with pytest.raises(InputError) as caught:
        target_module.targets(spec, cwd=REPO)
    assert fragment in str(caught.value) and repr(spec) in str(caught.value)


def test_a_module_that_fails_to_import_is_named_with_its_error(tmp_path):
    (tmp_path / "broken.py").write_text("import no_such_dependency_of_the_agent\n")
    with pytest.raises(InputError, match=r"importing .*broken\.py raised ModuleNotFoundError: No module named 'no_such_dependency"):
        target_module.targets("pydantic-ai:broken.py:build", cwd=tmp_path)


def test_the_command_line_reports_a_bad_target_in_one_line_with_exit_2(tmp_path):
    (tmp_path / "s.yaml").write_text('name: s\nchecks: [history_preserved]\nsteps:\n  - launch: {prompt: "hi"}\n')
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "s.yaml", "--target", "pydantic-ai:agent.py:build"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "no such file 'agent.py'" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "reports").exists()


@pytest.mark.parametrize("name, problem", [
    (f"pydantic-ai:{EXAMPLE}:process_agent", "always named with its format"),
    (f"pydantic-ai:{EXAMPLE}:process_agent+openai-chat", None),
    (f"pydantic-ai:{EXAMPLE}:process_agent+anthropic+in-process", None),
    ("pydantic-ai:*:process_agent+*", None),
    ("pydantic-ai:agent.py:process_agent+grpc", "unknown option"),
])
def test_expectations_name_pydantic_ai_targets_as_reports_do(name, problem):
    found = expectation_name_problem(name)
    assert (found is None) if problem is None else (problem in found)


# --------------------------------------------------------------------------- verdicts, both modes


@pytest.mark.parametrize("name", sorted(EXPECTED_FAILS))
def test_in_process_persisted_agent_passes_and_process_agent_fails(run, name):
    sc = scenario(name)
    for function in ("persisted_agent", "process_agent"):
        for fmt in FORMATS:
            result = run(sc, example(function, fmt, in_process=True))
            assert result.error is None, result.error
            fails = EXPECTED_FAILS[name] if function == "process_agent" else set()
            assert verdicts(result) == {c: FAIL if c in fails else PASS for c in sc.checks}, (function, fmt, result.checks)
            assert result.as_expected  # the scenario's own expect: lines agree


@pytest.mark.parametrize("name, function, fmt", [
    ("three-turns", "persisted_agent", "openai-chat"),
    ("three-turns", "process_agent", "openai-responses"),
    ("rules-edited", "persisted_agent", "openai-responses"),
    ("rules-edited", "process_agent", "anthropic"),
    ("headless-text", "persisted_agent", "anthropic"),
    ("headless-text", "process_agent", "openai-chat"),
    ("compaction", "persisted_agent", "anthropic"),
])
def test_both_modes_give_the_same_verdicts(run, name, function, fmt):
    sc = scenario(name)
    sub, sub_mains = run_journal(run, sc, example(function, fmt, in_process=False))
    inp, inp_mains = run_journal(run, sc, example(function, fmt, in_process=True))
    assert sub.error is None and inp.error is None, (sub.error, inp.error)
    assert verdicts(sub) == verdicts(inp) and sub.status == inp.status and sub.as_expected and inp.as_expected
    assert [(s.kind, s.classes) for s in sub.steps] == [(s.kind, s.classes) for s in inp.steps]
    sub_pids = [s.pids for s in sub.steps]
    assert all(len(p) == 1 for p in sub_pids) and len({p[0] for p in sub_pids}) == len(sc.steps)  # a process per step
    assert os.getpid() not in {p[0] for p in sub_pids}
    assert {e.pid for e in inp_mains} == {os.getpid()}  # in-process: no other process sent anything
    assert all("ran in the harness process: no subprocess, no network namespace" in s.notes for s in inp.steps)
    # The same requests, byte for byte, but for the agent id a process mints.
    def scrub(e):
        return re.sub(r"agent id [0-9a-f]{12}", "agent id X", system_text(e.path, json.loads(e.body))), history_text(e.path, json.loads(e.body))
    assert [scrub(e) for e in sub_mains] == [scrub(e) for e in inp_mains]


# --------------------------------------------------------------------------- the bytes


def test_history_is_restored_from_the_file_the_previous_step_wrote(run):
    result, requests = run_journal(run, scenario("three-turns"), example("persisted_agent", "openai-chat", in_process=False), keep=True)
    assert result.status == PASS, result.error
    bodies = [json.loads(e.body) for e in requests]
    turns = [[m for m in b["messages"] if m["role"] != "system"] for b in bodies]
    assert [len(t) for t in turns] == [1, 3, 5]
    assert turns[1][:2] == [{"role": "user", "content": "What is 6*7?"}, {"role": "assistant", "content": "42"}]
    assert turns[2][:4] == turns[1] + [{"role": "assistant", "content": "56"}]
    (session,) = {s.session_id for s in result.steps}
    stored = Path(result.workspace) / "home" / ".harness-pydantic-ai" / "sessions" / f"{session}.json"
    history = ModelMessagesTypeAdapter.validate_json(stored.read_bytes())
    assert len(history) == 6 and isinstance(history[0], ModelRequest)
    agent_id = history[0].metadata[STATE_KEY]["agent_id"]
    assert {IDENTITY.search(system_text(e.path, b)).group(0) for e, b in zip(requests, bodies)} == {
        f"You are Example Pup, a small coding agent built on pydantic-ai (agent id {agent_id})."}


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_seeds_bugs_in_the_raw_bodies(run, fmt):
    """Where each piece of the prompt lands, per format, read from the request bodies alone."""
    seen = {}
    for function in ("persisted_agent", "process_agent"):
        for name in ("rules-edited", "memory-grows"):
            _, requests = run_journal(run, scenario(name), example(function, fmt, in_process=True))
            seen[function, name] = [(system_text(e.path, json.loads(e.body)), history_text(e.path, json.loads(e.body))) for e in requests]
    for name in ("rules-edited", "memory-grows"):
        persisted, process = seen["persisted_agent", name], seen["process_agent", name]
        assert len({s for s, _ in persisted}) == 1  # one system text, byte for byte, in every process
        assert len({IDENTITY.search(s).group(0) for s, _ in process}) == 3  # an id per process
        for system, history in persisted:
            assert system.endswith("\n\n" + HEADLESS_TEXT)  # after the durable text: droppable
            assert not any(HEADLESS_TEXT in h for h in history)
        for system, history in process:
            assert HEADLESS_TEXT + "\n\n## Project rules (AGENTS.md)" in system  # frozen ahead of the rules
            assert not any(HEADLESS_TEXT in h for h in history)
    rules = [s for s, _ in seen["process_agent", "rules-edited"]]
    assert "Always cite the rule" not in rules[0] and "Always cite the rule" in rules[1]  # re-read by each process
    assert all("Always cite the rule" not in s for s, _ in seen["persisted_agent", "rules-edited"])
    notes = [s.split("## Recalled notes\n\n", 1)[1] for s, _ in seen["process_agent", "memory-grows"]]
    assert [n.splitlines() if n != "none." else [] for n in notes][0] == []  # the memory grows, process by process
    assert [len(n.splitlines()) for n in notes[1:]] == [1, 2] and notes[2].startswith("- The project builds with a Makefile")
    assert all(s.endswith("## Recalled notes\n\nnone.\n\n" + HEADLESS_TEXT) for s, _ in seen["persisted_agent", "memory-grows"])


def test_a_step_temporary_text_follows_everything_the_agent_renders(run):
    text = scenario("step-temporary").steps[1].temporary
    for fmt in FORMATS:
        _, requests = run_journal(run, scenario("step-temporary"), example("persisted_agent", fmt, in_process=True))
        systems = [system_text(e.path, json.loads(e.body)) for e in requests]
        assert systems[1] == systems[0] + "\n\n" + text and systems[2] == systems[0]  # that run only, and last


# --------------------------------------------------------------------------- in-process specifics and failures


def test_in_process_transport_refuses_any_other_host():
    import asyncio

    async def ask(url: str) -> int:
        async with http_client(FakeModelAPI(), "http://127.0.0.1:9") as client:
            return (await client.get(url)).status_code

    assert asyncio.run(ask("http://127.0.0.1:9/v1/models")) == 200
    with pytest.raises(httpx2.ConnectError, match="not mocked"):
        asyncio.run(ask("https://api.example.com/v1/models"))


def test_in_process_faults_are_imitated_and_a_hang_times_out(run):
    tg = example("persisted_agent", "anthropic", in_process=True)
    reset = scenario_from_text('name: r\nchecks: [history_preserved]\nsteps:\n  - launch: {prompt: "hi", reply: [{fault: {kind: reset}}, "56"]}\n')
    result = run(reset, tg)
    assert result.status == PASS and result.steps[0].classes == {"main": 2}  # the SDK retried the reset connection
    slow = scenario_from_text('name: s\nchecks: [history_preserved]\nsteps:\n'
                          '  - launch: {prompt: "hi", timeout_s: 1, reply: [{fault: {kind: slow_first_byte, seconds: 8}, text: "late"}]}\n')
    result = run(slow, tg)
    assert result.status == ERROR and result.error == "step 1 (launch): timed out after 1s; the in-process run was cancelled"
    assert result.steps[0].timed_out and result.steps[0].duration_s < 4


@pytest.mark.parametrize("in_process", [False, True])
def test_a_crashing_agent_is_a_step_error_quoting_its_traceback(run, in_process):
    (tg,) = targets(BROKEN, "failing_agent", "+openai-chat" + ("+in-process" if in_process else ""))
    result = run(scenario_from_text('name: c\nchecks: [history_preserved]\nsteps:\n  - launch: {prompt: "hi", reply: "x"}\n'), tg)
    assert result.status == ERROR
    assert result.error.startswith("step 1 (launch): the agent exited with code 1; stderr ends with:")
    assert "RuntimeError: the agent crashed after the model answered" in result.error


def test_a_module_without_a_compact_hook_cannot_run_a_compact_step(run):
    (tg,) = targets(BROKEN, "plain_agent", "+openai-chat+in-process")
    assert "compact" not in tg.commands
    result = run(scenario("compaction"), tg)
    assert result.status == ERROR and result.error == f"step 3 (compact): target {tg.name!r} has no command for a 'compact' step"
    assert [s.exit_code for s in result.steps[:2]] == [0, 0]


def test_a_dotted_module_is_imported_from_the_current_directory(run, tmp_path):
    (tmp_path / "my_agents").mkdir()
    (tmp_path / "my_agents" / "__init__.py").write_text("")
    (tmp_path / "my_agents" / "tiny.py").write_text(
        "from pydantic_ai import Agent\n\ndef build():\n    return Agent(instructions='You are Tiny, a test agent.')\n")
    (tg,) = target_module.targets("pydantic-ai:my_agents.tiny:build+openai-responses+in-process", cwd=tmp_path)
    result = run(scenario("rules-edited"), tg)  # a prompt this short is never cached: no cache_reuse here
    assert tg.name == "pydantic-ai:my_agents.tiny:build+openai-responses+in-process"
    assert result.status == PASS, result.error  # literal instructions are sent afresh, and identically, every run


def test_resolve_target_dispatches_pydantic_ai_specs(monkeypatch):
    monkeypatch.chdir(REPO)
    assert [t.name for t in resolve_target(f"pydantic-ai:{EXAMPLE}:process_agent+*")] == [
        f"pydantic-ai:{EXAMPLE}:process_agent+{f}" for f in FORMATS]


def test_persisted_system_prompt_parts_put_run_time_instructions_first_in_openai_responses(run):
    """Why the example renders its durable prompt as instructions: the Responses format reads the top-level
    `instructions` field before the system items of `input`, where persisted SystemPromptParts go."""
    sc = scenario("headless-text")
    got = {}
    for fmt in FORMATS:
        (tg,) = targets("tests/data/pydantic_ai/system_prompt_agent.py", "system_prompt_agent", f"+{fmt}+in-process")
        result, requests = run_journal(run, sc, tg)
        got[fmt] = verdicts(result)["temporary_text_transient"]
        assert verdicts(result)["prefix_stable"] == PASS  # the persisted parts keep identity and body, id included
        if fmt == "openai-responses":
            body = json.loads(requests[0].body)
            assert body["instructions"] == HEADLESS_TEXT and body["input"][0]["role"] == "system"
    assert got == {"openai-chat": PASS, "openai-responses": FAIL, "anthropic": PASS}
