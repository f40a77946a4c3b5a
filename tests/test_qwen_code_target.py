"""The qwen-code target without running Qwen Code: spec grammar, launch policies, settings, session id, request classes."""

from __future__ import annotations

import json

import pytest
from vocabulary import say, step_with

from harness.errors import InputError
from harness.fakeapi.core import FakeModelAPI, HTTPRequest
from harness.journal.exchange import COMPACTION, MAIN, SIDE
from harness.journal.requests import Journal
from harness.targets import expectation_name_problem, qwen_code
from harness.targets.base import render
from harness.targets.policy_family import EVERY_LAUNCH, FIRST_LAUNCH_ONLY, NEVER

PINNED = qwen_code.PINNED_VERSION
CMD = ("/usr/bin/node", "/x/cli.js")


@pytest.mark.parametrize(
    "spec, version, policies",
    [
        ("qwen-code", PINNED, [EVERY_LAUNCH]),
        ("qwen-code@0.23.4", "0.23.4", [EVERY_LAUNCH]),
        ("qwen-code+append-never", PINNED, [NEVER]),
        ("qwen-code@0.23.4+append-first-launch-only", "0.23.4", [FIRST_LAUNCH_ONLY]),
        ("qwen-code@0.23.4+*", "0.23.4", [FIRST_LAUNCH_ONLY, EVERY_LAUNCH, NEVER]),
    ],
)
def test_spec_names_version_and_policies(spec, version, policies):
    assert qwen_code.parse_spec(spec) == (version, policies)


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("qwen-code@", "expected qwen-code[@X.Y.Z][+POLICY]"),
        ("qwen-code@latest", "expected qwen-code[@X.Y.Z][+POLICY]"),
        ("qwen-code@0.24.4+sometimes", "unknown launch policy 'sometimes'"),
    ],
)
def test_bad_specs_name_what_is_wrong(spec, fragment):
    with pytest.raises(InputError) as caught:
        qwen_code.parse_spec(spec)
    assert fragment in str(caught.value)


def test_expectation_names_must_spell_version_and_policy():
    assert expectation_name_problem(f"qwen-code@{PINNED}+{EVERY_LAUNCH}") is None
    assert "always named qwen-code@VERSION+POLICY" in expectation_name_problem("qwen-code")
    assert "always named" in expectation_name_problem(f"qwen-code@{PINNED}")
    assert "unknown launch policy" in expectation_name_problem(f"qwen-code@{PINNED}+sometimes")


def _appends(argv: tuple[str, ...]) -> int:
    return sum(a == "--append-system-prompt" for a in argv)


@pytest.mark.parametrize(
    "policy, launch, resume, compact",
    [(FIRST_LAUNCH_ONLY, 1, 0, 0), (EVERY_LAUNCH, 1, 1, 1), (NEVER, 0, 0, 0)],
)
def test_each_policy_passes_the_callers_text_where_it_says(policy, launch, resume, compact):
    target = qwen_code.build(PINNED, policy, CMD)
    assert target.name == f"qwen-code@{PINNED}+{policy}"
    commands = target.commands
    assert (_appends(commands["launch"]), _appends(commands["resume"]), _appends(commands["compact"])) == (launch, resume, compact)
    for argv in commands.values():
        if _appends(argv):
            assert argv[argv.index("--append-system-prompt") + 1] == "{append}"
        assert argv[:2] == CMD and "--auth-type" in argv and "--output-format" in argv
    assert "--resume" not in commands["launch"]
    assert commands["resume"][commands["resume"].index("--resume") + 1] == "{session_id}"
    assert commands["compact"][commands["compact"].index("-p") + 1] == "/compress"
    assert target.command_for("retry") == commands["resume"]


def test_the_model_endpoint_and_settings_point_at_the_fake_api_only():
    target = qwen_code.build(PINNED, EVERY_LAUNCH, CMD)
    values = {"base_url": "http://127.0.0.1:1234", "api_key": "sk-fake"}
    env = {k: render(v, values) for k, v in target.env.items()}
    assert env == {"OPENAI_MODEL": qwen_code.MODEL, "OPENAI_BASE_URL": "http://127.0.0.1:1234/v1", "OPENAI_API_KEY": "sk-fake"}
    settings = json.loads(render(target.home_files[".qwen/settings.json"], values))
    assert settings["telemetry"]["enabled"] is False
    assert settings["privacy"]["usageStatisticsEnabled"] is False
    assert settings["general"]["enableAutoUpdate"] is False
    assert settings["memory"]["enableManagedAutoMemory"] is False


def test_the_session_id_is_read_from_the_json_array_it_prints():
    stdout = json.dumps([
        {"type": "system", "subtype": "init", "session_id": "3cdc4398-0976-4136-9c60-63098dce5395", "cwd": "/w"},
        {"type": "result", "subtype": "success", "session_id": "3cdc4398-0976-4136-9c60-63098dce5395", "result": "41"},
    ])
    assert qwen_code.SESSION_ID.read(stdout, []) == "3cdc4398-0976-4136-9c60-63098dce5395"
    assert qwen_code.SESSION_ID.read("Error: no session", []) is None


# The bytes 0.24.4 sends, abridged: a turn, /compress's two summarizer requests, the memory subagent.
MAIN_SYSTEM = "You are Qwen Code, a non-interactive CLI agent developed by Alibaba Group."
SUMMARIZER = "You are the component that summarizes a conversation when its context window is about to overflow."
DIRECTIVE = "First, reason in your <analysis> block. Then, produce the <state_snapshot> XML."
HISTORY = [{"role": "user", "content": [{"type": "text", "text": "What is 6*7?"}]}, {"role": "assistant", "content": "42"}]


def _chat(system: str, *messages: dict) -> dict:
    return {"model": qwen_code.MODEL, "stream": False, "messages": [{"role": "system", "content": system}, *messages]}


@pytest.mark.parametrize(
    "body, klass",
    [
        (_chat(MAIN_SYSTEM, {"role": "user", "content": [{"type": "text", "text": "What is 6*7?"}]}), MAIN),
        (_chat(MAIN_SYSTEM, *HISTORY, {"role": "user", "content": [{"type": "text", "text": "And 7*8?"}]}), MAIN),
        # cache sharing: the main prompt and tools, the summarizer's instructions as the last user message
        (_chat(MAIN_SYSTEM, *HISTORY, {"role": "user", "content": [{"type": "text", "text":
               f"{SUMMARIZER}\n<state_snapshot>…</state_snapshot>\n\nDo not call tools; tool execution is disabled "
               f"for this request. {DIRECTIVE}"}]}), COMPACTION),
        (_chat(SUMMARIZER, *HISTORY, {"role": "user", "content": [{"type": "text", "text": DIRECTIVE}]}), COMPACTION),
        (_chat("You are now acting as the managed memory extraction subagent for an AI coding assistant.", *HISTORY,
               {"role": "user", "content": [{"type": "text", "text": "Managed memory has TWO directories."}]}), SIDE),
    ],
    ids=["first-turn", "second-turn", "compress-cache-sharing", "compress-summarizer", "memory-subagent"],
)
def test_requests_are_classified_from_their_bytes(body, klass):
    target = qwen_code.build(PINNED, EVERY_LAUNCH, CMD)
    journal = Journal()
    api = FakeModelAPI(journal, side_calls=target.side_calls, compaction_calls=target.compaction_calls)
    api.begin_step(step_with(say("42"), summary="The user asked for 6*7."))
    response = api.handle(HTTPRequest("POST", "/v1/chat/completions", [("content-type", "application/json")],
                                      json.dumps(body).encode()))
    api.end_step()
    assert response.status == 200
    (exchange,) = journal.exchanges()
    assert exchange.klass == klass
    if klass == COMPACTION:  # the scenario's summary is what /compress gets back
        assert "The user asked for 6*7." in exchange.reply_text()
