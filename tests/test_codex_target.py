"""The codex target without the CLI: spec parsing, launch policies, argv, the offline config, and how its requests are classified."""

from __future__ import annotations

import json
import tomllib

import pytest
from vocabulary import step_with

from harness.errors import InputError
from harness.fakeapi.core import FakeModelAPI, HTTPRequest
from harness.journal.exchange import COMPACTION, MAIN
from harness.journal.requests import Journal
from harness.targets import codex, expectation_name_problem, resolve_target
from harness.targets.base import render
from harness.targets.policy_family import EVERY_LAUNCH, FIRST_LAUNCH_ONLY, NEVER

BINARY = "/tools/codex/bin/codex"
APPEND = 'Task prompt: answer with "one" number.\nBackslash \\n and {braces} stay as written.'


@pytest.fixture
def no_install(monkeypatch):
    monkeypatch.setattr(codex, "cli_binary", lambda version: BINARY)


def values(**extra) -> dict:
    return {"prompt": "What is 6*7?", "append": APPEND, "session_id": "thread-1", "base_url": "http://127.0.0.1:9",
            "home": "/h", "python": "/venv/bin/python", **extra}


def argv(target, kind: str) -> list[str]:
    return [render(part, values()) for part in target.command_for(kind)]


def test_bare_codex_is_the_pinned_version_passing_the_text_on_every_launch(no_install):
    (target,) = resolve_target("codex")
    assert target.name == f"codex@{codex.PINNED_VERSION}+{EVERY_LAUNCH}"


def test_star_gives_one_target_per_policy_named_like_claude_codes(no_install):
    names = [t.name for t in resolve_target("codex@0.170.0+*")]
    assert names == [f"codex@0.170.0+{p}" for p in ("append-first-launch-only", "append-every-launch", "append-never")]


@pytest.mark.parametrize("spec, fragment", [
    ("codex@latest", "expected codex[@X.Y.Z][+POLICY]"),
    ("codex@1.2", "expected codex[@X.Y.Z][+POLICY]"),
    ("codex+append-sometimes", "unknown launch policy 'append-sometimes'"),
])
def test_bad_specs_are_input_errors_that_say_what_is_expected(no_install, spec, fragment):
    with pytest.raises(InputError, match=fragment.replace("[", r"\[").replace("]", r"\]").replace("+", r"\+")):
        resolve_target(spec)


def test_expectation_names_must_carry_version_and_policy():
    assert "always named codex@VERSION+POLICY" in expectation_name_problem("codex")
    assert expectation_name_problem(f"codex@{codex.PINNED_VERSION}+append-never") is None
    assert "unknown launch policy" in expectation_name_problem("codex@0.171.0+append-twice")


@pytest.mark.parametrize("policy, launches_with_text", [
    (FIRST_LAUNCH_ONLY, {"launch"}),
    (EVERY_LAUNCH, {"launch", "resume", "retry", "compact"}),
    (NEVER, set()),
])
def test_each_policy_passes_the_text_on_exactly_its_launches(no_install, policy, launches_with_text):
    (target,) = resolve_target(f"codex+{policy}")
    carrying = {kind for kind in ("launch", "resume", "retry", "compact") if any(APPEND in a for a in argv(target, kind))}
    assert carrying == launches_with_text


def test_the_text_reaches_codex_as_exactly_these_bytes(no_install):
    """-c parses its value as TOML: a multi-line literal string keeps quotes, backslashes and newlines."""
    (target,) = resolve_target("codex+append-every-launch")
    launch = argv(target, "launch")
    option = launch[launch.index("-c") + 1]
    assert tomllib.loads(option)["developer_instructions"] == APPEND
    assert target.prompt_flags == ("-c developer_instructions",)


def test_argv_shapes(no_install):
    (target,) = resolve_target("codex+append-never")
    assert argv(target, "launch") == [BINARY, "exec", "--skip-git-repo-check", "--json", "What is 6*7?"]
    assert argv(target, "retry") == [BINARY, "exec", "--skip-git-repo-check", "--json", "resume", "thread-1", "What is 6*7?"]
    # exec has no compaction command: the step drives app-server's thread/compact/start from this module
    assert argv(target, "compact") == ["/venv/bin/python", "-m", "harness.targets.codex", BINARY, "thread-1"]
    assert target.session_id.read('{"type":"thread.started","thread_id":"thread-1"}\n{"type":"turn.started"}', []) == "thread-1"


def test_the_config_points_at_the_fake_api_with_every_network_feature_off(no_install):
    (target,) = resolve_target("codex")
    assert render(target.env["CODEX_HOME"], values()) == "/h/.codex"
    config = tomllib.loads(render(target.home_files[".codex/config.toml"], values()))
    assert config["model_provider"] == "fake"
    assert config["model_providers"]["fake"] == {
        "name": "harness fake API", "base_url": "http://127.0.0.1:9/v1", "env_key": "OPENAI_API_KEY", "wire_api": "responses"}
    assert config["check_for_update_on_startup"] is False
    assert config["analytics"]["enabled"] is False and config["feedback"]["enabled"] is False
    assert config["otel"]["exporter"] == "none"
    assert config["features"]["plugins"] is False


def responses_body(*user_texts: str) -> bytes:
    items = [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]}]
    items += [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": t}]} for t in user_texts]
    return json.dumps({"model": codex.MODEL, "stream": False, "input": items}).encode()


def classify(api: FakeModelAPI, body: bytes) -> str:
    api.begin_step(step_with(index=1))
    response = api.handle(HTTPRequest("POST", "/v1/responses", [("content-type", "application/json")], body))
    api.end_step()
    assert response.status == 200
    return api.journal.exchanges()[-1].klass


def test_codexs_summarization_request_is_a_compaction_and_its_continuation_is_not(no_install):
    (target,) = resolve_target("codex")
    api = FakeModelAPI(Journal(), target.side_calls, target.compaction_calls)
    assert classify(api, responses_body("What is 6*7?")) == MAIN
    assert classify(api, responses_body("What is 6*7?", "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a "
                                        "handoff summary for another LLM that will resume the task.")) == COMPACTION
    # After a compaction in mid-turn Codex continues with the summary it got back (the fake API's
    # <summary>…</summary> text) as the last user message and no new prompt: a turn, not a compaction.
    summary = api.journal.exchanges()[-1].reply["content"][0]["text"]
    assert "<summary>" in summary
    continuation = ("Another language model started to solve this problem and produced a summary of its thinking "
                    "process. ...\n" + summary)
    assert classify(api, responses_body("What is 6*7?", continuation)) == MAIN
