"""The claude-code target without the CLI: spec parsing, launch policies, argv, offline env, side-call rules, and the billing header kept out of the cache prefix."""

from __future__ import annotations

import json
from typing import Any

import pytest
from builders import IDENTITY

from harness.checks import CheckContext, prefix
from harness.errors import InputError
from harness.fakeapi.core import FakeModelAPI, HTTPRequest
from harness.journal.exchange import MAIN
from harness.journal.requests import Journal
from harness.fakeapi.formats import anthropic as wire
from harness.results import FAIL, PASS
from harness.targets import claude_code, resolve_target
from harness.targets.base import Target
from harness.targets.policy_family import POLICIES
from vocabulary import MODEL, messages_body, say, step_with

BILLING = "x-anthropic-billing-header: cc_version=2.1.332.{}; cc_entrypoint=sdk-cli; cch={};"


def billing_journal(*systems: list[dict[str, Any]]) -> CheckContext:
    """One main request per system, each through the fake API's own request parsing (in process)."""
    journal = Journal()
    api = FakeModelAPI(journal)
    history: list[dict] = []
    for i, blocks in enumerate(systems, 1):
        api.begin_step(step_with(say(f"answer {i}"), index=i))
        history = history + [{"role": "user", "content": f"q{i}"}]
        body = json.dumps({"model": MODEL, "max_tokens": 64, "system": blocks, "messages": history}).encode()
        response = api.handle(HTTPRequest("POST", "/v1/messages", [("content-type", "application/json")], body))
        assert response.status == 200
        history = history + [{"role": "assistant", "content": f"answer {i}"}]
        api.end_step()
    return CheckContext(tuple(journal.exchanges()), None, IDENTITY)


def cc_system(first: str, identity: str = "You are Claude Code, Anthropic's official CLI for Claude.",
              body: str = "Body of the instructions.") -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": first},
        {"type": "text", "text": identity, "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": body, "cache_control": {"type": "ephemeral"}},
    ]


def test_the_billing_block_is_marked_outside_the_cache_key_and_only_it():
    normalized = wire.parse_messages_request(json.dumps(messages_body(system=cc_system(BILLING.format("a", "1")))).encode())
    assert [b.get("cache_key", True) for b in normalized["system"]] == [False, True, True]
    assert "cache_key" not in normalized["system"][1] and "cache_key" not in normalized["system"][2]


def test_requests_differing_only_in_the_billing_block_keep_a_stable_prefix():
    ctx = billing_journal(cc_system(BILLING.format("a", "11111")), cc_system(BILLING.format("b", "22222")),
                          cc_system(BILLING.format("c", "33333")))
    result = prefix.check(ctx)
    assert result.verdict == PASS, result.message
    assert "not compared: system block(s) 0," in result.message
    assert result.evidence["excluded_blocks"] == [0]


def test_a_difference_in_the_block_after_the_billing_block_fails_and_names_block_1():
    ctx = billing_journal(cc_system(BILLING.format("a", "1")),
                          cc_system(BILLING.format("a", "1"), identity="You are a Claude agent, built on the Agent SDK."))
    result = prefix.check(ctx)
    assert result.verdict == FAIL
    assert "block 1" in result.message and "block 0" not in result.message.split("not compared")[0]
    assert result.step == 2
    assert result.evidence["excluded_blocks"] == [0]
    assert "not compared" in result.message


def test_billing_looking_text_not_at_the_block_start_is_compared_normally():
    def system(n: str) -> list[dict[str, Any]]:
        return cc_system("Attribution follows. " + BILLING.format(n, n))

    ctx = billing_journal(system("1"), system("2"))
    assert all(b.get("cache_key", True) for e in ctx.exchanges for b in e.normalized["system"])
    result = prefix.check(ctx)
    assert result.verdict == FAIL
    assert "block 0" in result.message
    assert "excluded_blocks" not in result.evidence and "not compared" not in result.message




# ============================================================================ 6. claude-code target specs


@pytest.fixture
def no_install(monkeypatch):
    """Nothing is installed or looked up: every version runs as `claude`."""
    asked: list[str] = []

    def fake_cli_command(version: str) -> tuple[str, ...]:
        asked.append(version)
        return ("claude",)

    monkeypatch.setattr(claude_code, "cli_command", fake_cli_command)
    return asked


def test_bare_claude_code_is_the_pinned_version_with_the_seeds_fix(no_install):
    (target,) = resolve_target("claude-code")
    assert target.name == f"claude-code@{claude_code.PINNED_VERSION}+append-every-launch"
    assert no_install == [claude_code.PINNED_VERSION]


def test_version_and_policy_are_part_of_the_name(no_install):
    (target,) = resolve_target("claude-code@2.1.300+append-first-launch-only")
    assert target.name == "claude-code@2.1.300+append-first-launch-only"
    assert no_install == ["2.1.300"]
    (target,) = resolve_target("claude-code+append-never")
    assert target.name == f"claude-code@{claude_code.PINNED_VERSION}+append-never"


def test_star_policy_gives_one_target_per_policy(no_install):
    targets = resolve_target("claude-code@2.1.300+*")
    assert [t.name for t in targets] == [f"claude-code@2.1.300+{p}" for p in POLICIES]
    assert set(POLICIES) == {"append-first-launch-only", "append-every-launch", "append-never"}


@pytest.mark.parametrize(
    ("spec", "fragments"),
    [
        ("claude-code@latest", ["bad target 'claude-code@latest'", "claude-code[@X.Y.Z][+POLICY]"]),
        ("claude-code@2.1", ["bad target 'claude-code@2.1'", "claude-code[@X.Y.Z][+POLICY]"]),
        ("claude-code@", ["bad target 'claude-code@'"]),
        ("claude-code@2.1.300+append-sometimes",
         ["unknown launch policy 'append-sometimes'", "append-first-launch-only", "append-every-launch", "append-never", "*"]),
        ("claude-code+", ["unknown launch policy ''"]),
        ("claude-codex", ["unknown target 'claude-codex'", "claude-code[@VERSION][+POLICY]"]),
    ],
)
def test_bad_claude_code_specs_are_input_errors_that_say_what_is_expected(no_install, spec, fragments):
    with pytest.raises(InputError) as caught:
        resolve_target(spec)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    assert no_install == []  # rejected before anything is installed


def argv_of(policy: str) -> dict[str, tuple[str, ...]]:
    (target,) = resolve_target(f"claude-code@2.1.300+{policy}")
    return {kind: target.command_for(kind) for kind in ("launch", "resume", "retry", "compact")}


def appends(argv: tuple[str, ...]) -> bool:
    flag = [i for i, a in enumerate(argv) if a == "--append-system-prompt"]
    assert len(flag) <= 1, argv
    return bool(flag) and argv[flag[0] + 1] == "{append}"


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("append-first-launch-only", {"launch": True, "resume": False, "retry": False, "compact": False}),
        ("append-every-launch", {"launch": True, "resume": True, "retry": True, "compact": True}),
        ("append-never", {"launch": False, "resume": False, "retry": False, "compact": False}),
    ],
)
def test_each_policy_passes_the_appended_text_on_exactly_its_launches(no_install, policy, expected):
    argvs = argv_of(policy)
    assert {kind: appends(argv) for kind, argv in argvs.items()} == expected
    assert not any("--append-system-prompt" in argv for kind, argv in argvs.items() if not expected[kind])


def test_claude_code_argv_shapes(no_install):
    for policy in POLICIES:
        argvs = argv_of(policy)
        for kind, argv in argvs.items():
            assert argv[0] == "claude", argv
            assert argv[argv.index("--output-format") + 1] == "json", (policy, kind)
        launch, resume, compact = argvs["launch"], argvs["resume"], argvs["compact"]
        assert launch[1:3] == ("-p", "{prompt}") and "--resume" not in launch
        assert resume[1:5] == ("-p", "{prompt}", "--resume", "{session_id}")
        assert compact[1:5] == ("-p", "/compact", "--resume", "{session_id}")


def test_claude_code_runs_offline_and_reads_its_session_id_from_json(no_install):
    for target in resolve_target("claude-code+*"):
        assert target.env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
        assert target.env["DISABLE_AUTOUPDATER"] == "1"
        assert target.session_id.read('{"type":"result","session_id":"abc-123"}\n', []) == "abc-123"


def is_side(target: Target, body: dict[str, Any]) -> bool:
    normalized = wire.parse_messages_request(json.dumps(body).encode())
    return any(rule.matches(normalized) for rule in target.side_calls)


def test_claude_code_side_call_rules_catch_titles_and_haiku_but_not_the_conversation(no_install):
    (target,) = resolve_target("claude-code")
    title = messages_body(system=[{"type": "text", "text": "Generate a concise, sentence-case title (3-7 words) for this session."}])
    haiku = messages_body(system="You are Claude Code, Anthropic's official CLI for Claude.", model="claude-haiku-4-5-20251001")
    turn = messages_body(system=cc_system(BILLING.format("a", "1")))
    assert is_side(target, title)
    assert is_side(target, haiku)
    assert not is_side(target, turn)
    # and the fake API, given the target's rules, journals them as side calls
    api = FakeModelAPI(side_calls=target.side_calls)
    for body in (title, haiku, turn):
        api.handle(HTTPRequest("POST", "/v1/messages", [], json.dumps(body).encode()))
    assert [e.klass for e in api.journal.exchanges()] == ["side", "side", MAIN]
