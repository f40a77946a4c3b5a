"""The opencode target without the CLI: spec parsing, launch policies, the per-process config, HOME files, request rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.fakeapi.formats import openai_chat
from harness.targets import opencode, resolve_target
from harness.targets.base import render
from harness.targets.policy_family import POLICIES

BINARY = "/tools/opencode"


@pytest.fixture
def no_install(monkeypatch):
    """Nothing is installed: every version runs as BINARY."""
    asked: list[str] = []

    def fake_cli_binary(version: str) -> str:
        asked.append(version)
        return BINARY

    monkeypatch.setattr(opencode, "cli_binary", fake_cli_binary)
    return asked


def values(home: str = "/h", append: str = "Task prompt: answer with one number.") -> dict[str, str]:
    return {"prompt": "What is 6*7?", "append": append, "session_id": "ses_1", "base_url": "http://127.0.0.1:9",
            "api_key": "sk-fake", "home": home, "workdir": "/w", "python": "/py", "temporary": "", "target_dir": ".",
            "checkout": None}


def test_bare_opencode_is_the_pinned_version_with_the_text_on_every_launch(no_install):
    (target,) = resolve_target("opencode")
    assert target.name == f"opencode@{opencode.PINNED_VERSION}+append-every-launch"
    assert no_install == [opencode.PINNED_VERSION]
    assert [t.name for t in resolve_target("opencode@1.2.3+*")] == [f"opencode@1.2.3+{p}" for p in POLICIES]


@pytest.mark.parametrize(("spec", "fragment"), [
    ("opencode@latest", "expected opencode[@X.Y.Z][+POLICY]"),
    ("opencode@1.2", "expected opencode[@X.Y.Z][+POLICY]"),
    ("opencode+append-sometimes", "unknown launch policy 'append-sometimes'"),
    ("opencode+", "unknown launch policy ''"),
])
def test_bad_specs_are_input_errors_before_any_install(no_install, spec, fragment):
    with pytest.raises(InputError) as caught:
        resolve_target(spec)
    assert fragment in str(caught.value)
    assert no_install == []


def test_names_in_expectations_always_carry_version_and_policy():
    assert opencode.name_problem(f"opencode@{opencode.PINNED_VERSION}+append-never") is None
    assert "always named opencode@VERSION+POLICY" in opencode.name_problem("opencode+append-never")
    assert "unknown launch policy" in opencode.name_problem("opencode@1.2.3+sometimes")


def config_of(argv: tuple[str, ...], home: str = "/h") -> dict | None:
    """The OPENCODE_CONFIG_CONTENT an argv sets for its process, rendered; None when it sets none."""
    rendered = [render(a, values(home)) for a in argv]
    assignments = [a for a in rendered if a.startswith(opencode.CONFIG_VARIABLE + "=")]
    assert len(assignments) <= 1, rendered
    return json.loads(assignments[0].partition("=")[2]) if assignments else None


@pytest.mark.parametrize(("policy", "expected"), [
    ("append-first-launch-only", {"launch": True, "resume": False, "retry": False, "compact": False}),
    ("append-every-launch", {"launch": True, "resume": True, "retry": True, "compact": True}),
    ("append-never", {"launch": False, "resume": False, "retry": False, "compact": False}),
])
def test_each_policy_names_the_caller_text_file_on_exactly_its_processes(no_install, policy, expected):
    (target,) = resolve_target(f"opencode+{policy}")
    configs = {kind: config_of(target.command_for(kind)) for kind in expected}
    assert {kind: config is not None for kind, config in configs.items()} == expected
    for config in filter(None, configs.values()):
        assert config == {"instructions": [f"/h/{opencode.CALLER_TEXT_FILE}"]}


def test_argv_shapes_run_in_json_and_compact_through_the_serve_helper(no_install):
    for target in resolve_target("opencode+*"):
        launch, resume, compact = (target.command_for(k) for k in ("launch", "resume", "compact"))
        tail = launch[launch.index(BINARY):]
        assert tail == (BINARY, "run", "--format", "json", "{prompt}")
        assert resume[resume.index(BINARY):] == (BINARY, "run", "--format", "json", "--session", "{session_id}", "{prompt}")
        assert compact[compact.index("{python}"):] == ("{python}", "-m", "harness.targets.opencode", BINARY, "{session_id}")
        assert target.prompt_flags == ()
        assert target.session_id.read('{"type":"text","sessionID":"ses_abc","part":{}}\n', []) == "ses_abc"


def test_home_files_point_the_provider_at_the_fake_api_and_hold_the_caller_text(no_install):
    (target,) = resolve_target("opencode")
    files = {path: render(template, values()) for path, template in target.home_files.items()}
    config = json.loads(files[".config/opencode/opencode.json"])
    provider = config["provider"][opencode.PROVIDER]
    assert provider["npm"] == "@ai-sdk/openai-compatible"
    assert provider["options"] == {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "sk-fake"}
    assert config["model"] == "harness/harness-model" and config["small_model"] == "harness/harness-small"
    assert config["autoupdate"] is False and config["share"] == "disabled"
    assert files[opencode.CALLER_TEXT_FILE] == "Task prompt: answer with one number."
    # The config folder's npm state counts as installed, so no start asks the registry for @opencode-ai/plugin.
    lock = json.loads(files[".config/opencode/package-lock.json"])
    assert "@opencode-ai/plugin" in lock["packages"][""]["dependencies"]
    assert ".config/opencode/node_modules/.harness" in files
    for name in ("OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_LSP_DOWNLOAD"):
        assert target.env[name] == "true"


def chat(system: str, user: str, model: str = "harness-model") -> dict:
    body = {"model": model, "stream": True, "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
    return openai_chat.parse_request(json.dumps(body).encode())


def test_title_requests_are_side_calls_and_summaries_compactions_but_turns_are_neither(no_install):
    (target,) = resolve_target("opencode")
    title = chat("You are a title generator. You output ONLY a thread title.", '"What is 6*7?"', "harness-small")
    summary = chat("You are a context summarization agent. You are given a conversation", "Here is the conversation so far:")
    turn = chat("You are opencode, an interactive CLI tool that helps users.\nYou are a title generator? no", '"What is 6*7?"')
    assert [any(r.matches(title) for r in rules) for rules in (target.side_calls, target.compaction_calls)] == [True, False]
    assert [any(r.matches(summary) for r in rules) for rules in (target.side_calls, target.compaction_calls)] == [False, True]
    assert not any(r.matches(turn) for r in (*target.side_calls, *target.compaction_calls))


def test_the_native_binary_is_the_platform_package_not_the_stub(monkeypatch, tmp_path: Path):
    package = tmp_path / "node_modules" / "opencode-ai"
    (package / "bin").mkdir(parents=True)
    (package / "bin" / "opencode.exe").write_text("echo stub; exit 1\n")
    monkeypatch.setattr(opencode, "npm_package_dir", lambda tool, pkg, version: package)
    monkeypatch.setattr(opencode.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(opencode.platform, "system", lambda: "Linux")
    monkeypatch.setattr(opencode.platform, "libc_ver", lambda: ("glibc", "2.36"))
    with pytest.raises(InputError, match="no native binary"):
        opencode.cli_binary("1.2.3")
    for name, avx2 in (("opencode-linux-x64-baseline", False), ("opencode-linux-x64", True)):
        binary = tmp_path / "node_modules" / name / "bin" / "opencode"
        binary.parent.mkdir(parents=True)
        binary.write_text("")
        monkeypatch.setattr(opencode, "_has_avx2", lambda avx2=avx2: avx2)
        assert opencode.cli_binary("1.2.3") == str(binary)
