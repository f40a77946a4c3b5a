"""The gemini-cli target without the CLI: spec parsing, launch policies, argv, offline settings, request rules."""

from __future__ import annotations

import json
import subprocess

import pytest

from harness.errors import InputError
from harness.fakeapi.core import FakeModelAPI, HTTPRequest
from harness.journal.requests import Journal
from harness.targets import expectation_name_problem, gemini_cli, resolve_target
from harness.targets.base import render
from vocabulary import say, step_with


@pytest.fixture
def no_install(monkeypatch):
    monkeypatch.setattr(gemini_cli, "cli_command", lambda version: ("node", f"/tools/{version}/gemini.js"))


def test_bare_gemini_cli_is_the_pinned_version_with_every_launch(no_install):
    (target,) = resolve_target("gemini-cli")
    assert target.name == f"gemini-cli@{gemini_cli.PINNED_VERSION}+append-every-launch"


def test_star_gives_one_target_per_policy_named_as_claude_codes(no_install):
    names = [t.name for t in resolve_target("gemini-cli@0.60.0+*")]
    assert names == [f"gemini-cli@0.60.0+{p}" for p in ("append-first-launch-only", "append-every-launch", "append-never")]


@pytest.mark.parametrize("spec, fragment", [
    ("gemini-cli@latest", "expected gemini-cli[@X.Y.Z]"),
    ("gemini-cli@0.61.0+sometimes", "unknown launch policy 'sometimes'"),
    ("gemini-cli@0.61", "expected gemini-cli[@X.Y.Z]"),
])
def test_bad_specs_are_input_errors(no_install, spec, fragment):
    with pytest.raises(InputError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        resolve_target(spec)


def test_expectation_names_must_carry_version_and_policy():
    assert "always named gemini-cli@VERSION+POLICY" in expectation_name_problem("gemini-cli")
    assert expectation_name_problem("gemini-cli@0.61.0+append-never") is None
    assert "unknown launch policy" in expectation_name_problem("gemini-cli@0.61.0+nope")


VALUES = {"prompt": "What is 6*7?", "append": "CALLER TEXT", "session_id": "abc-123", "home": "/h", "api_key": "k",
          "base_url": "http://127.0.0.1:9"}


def rendered(policy: str, kind: str) -> list[str]:
    (target,) = gemini_cli.targets(f"gemini-cli@0.61.0+{policy}")
    return [render(part, VALUES) for part in target.command_for(kind)]


@pytest.mark.parametrize("policy, launch, resume", [
    ("append-every-launch", True, True), ("append-first-launch-only", True, False), ("append-never", False, False),
])
def test_each_policy_writes_the_context_file_on_exactly_its_launches(no_install, policy, launch, resume):
    for kind, passes in (("launch", launch), ("resume", resume), ("retry", resume)):
        argv = rendered(policy, kind)
        assert ("CALLER TEXT" in argv) is passes, (kind, argv)
        assert "/h/.gemini/GEMINI.md" in argv  # written, or removed so that an earlier launch's file is not read


def test_the_context_file_prefix_really_writes_and_removes_the_file(tmp_path, no_install):
    context = tmp_path / ".gemini" / "GEMINI.md"
    context.parent.mkdir()
    for policy, expected in (("append-every-launch", "CALLER TEXT\n"), ("append-never", None)):
        argv = [render(p, dict(VALUES, home=str(tmp_path))) for p in gemini_cli.context_file_argv(policy != "append-never")]
        subprocess.run([*argv, "true"], check=True)
        assert (context.read_text() if context.exists() else None) == expected


def test_argv_env_and_settings(no_install):
    (target,) = gemini_cli.targets("gemini-cli@0.61.0+append-every-launch")
    launch, resume = rendered("append-every-launch", "launch"), rendered("append-every-launch", "resume")
    assert launch[6:] == ["node", "/tools/0.61.0/gemini.js", "--skip-trust", "-o", "json", "-p", "What is 6*7?"]
    assert resume[6:] == ["node", "/tools/0.61.0/gemini.js", "--skip-trust", "-o", "json", "-p", "What is 6*7?", "--resume", "abc-123"]
    assert target.session_id.kind == "stdout_json" and target.session_id.value == "session_id"
    assert {"GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GEMINI_CLI_NO_RELAUNCH"} <= set(target.env)
    settings = json.loads(render(target.home_files[".gemini/settings.json"], VALUES))
    assert settings["privacy"]["usageStatisticsEnabled"] is False and settings["telemetry"]["enabled"] is False
    assert settings["general"]["enableAutoUpdate"] is False and settings["model"]["name"] == gemini_cli.MODEL


def test_the_compact_step_is_declared_one_it_cannot_express(no_install):
    (target,) = gemini_cli.targets("gemini-cli+append-every-launch")
    assert target.command_for("compact") is None and "/compress" in target.cannot_express["compact"]


def classify(target, system: str, prompt: str = "What is 6*7?") -> str:
    journal = Journal()
    api = FakeModelAPI(journal, side_calls=target.side_calls, compaction_calls=target.compaction_calls)
    api.begin_step(step_with(say("42")))
    body = {"contents": [{"role": "user", "parts": [{"text": prompt}]}], "systemInstruction": {"parts": [{"text": system}]}}
    request = HTTPRequest("POST", "/v1beta/models/gemini-2.5-pro:generateContent", [], json.dumps(body).encode())
    assert api.handle(request).status == 200
    (exchange,) = journal.exchanges()
    return exchange.klass


def test_router_is_a_side_call_and_the_state_snapshot_request_a_compaction(no_install):
    (target,) = gemini_cli.targets("gemini-cli@0.61.0+append-every-launch")
    assert classify(target, "\nYou are a specialized Task Routing AI. Your sole function is ...") == "side"
    assert classify(target, "You are a specialized system component responsible for distilling chat history into a "
                            "structured XML <state_snapshot>.", "Generate a new <state_snapshot> based on the provided history.") == "compaction"
    assert classify(target, "You are a non-interactive CLI agent specializing in software engineering tasks.") == "main"
