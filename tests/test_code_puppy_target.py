"""The code-puppy target without running code-puppy: spec grammar, expectation names, config files, escape stripping, pip errors."""

from __future__ import annotations

import json
import re

import pytest

from harness.errors import InputError
from harness.targets import code_puppy, expectation_name_problem
from harness.targets.base import render
from harness.isolation.terminal import strip_escapes
from harness.targets.installs import pip_venv_dir

PINNED = code_puppy.PINNED_VERSION


@pytest.mark.parametrize(
    "spec, version, variants",
    [
        ("code-puppy", PINNED, [("openai", "no-memory")]),
        ("code-puppy@0.0.900", "0.0.900", [("openai", "no-memory")]),
        ("code-puppy@latest", "latest", [("openai", "no-memory")]),
        ("code-puppy+anthropic", PINNED, [("anthropic", "no-memory")]),
        ("code-puppy@0.0.900+memory", "0.0.900", [("openai", "memory")]),
        ("code-puppy@0.0.900+anthropic+memory", "0.0.900", [("anthropic", "memory")]),
        ("code-puppy@0.0.900+memory+anthropic", "0.0.900", [("anthropic", "memory")]),
        ("code-puppy@0.0.900+*", "0.0.900",
         [("openai", "no-memory"), ("openai", "memory"), ("anthropic", "no-memory"), ("anthropic", "memory")]),
    ],
)
def test_spec_names_version_and_variants(spec, version, variants):
    assert code_puppy.parse_spec(spec) == (version, variants)


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("code-puppy@", "expected code-puppy[@X.Y.Z|@latest]"),
        ("code-puppy@newest", "expected code-puppy[@X.Y.Z|@latest]"),
        ("code-puppy@0.0.900+gemini", "bad option 'gemini'"),
        ("code-puppy@0.0.900+openai+anthropic", "bad option 'anthropic'"),
        ("code-puppy@0.0.900+memory+memory", "bad option 'memory'"),
    ],
)
def test_bad_specs_name_what_is_wrong(spec, fragment):
    with pytest.raises(InputError) as caught:
        code_puppy.parse_spec(spec)
    assert fragment in str(caught.value)


def test_the_target_name_spells_version_format_and_memory():
    target = code_puppy.build("0.0.900", "anthropic", "memory", "/x/code-puppy")
    assert target.name == "code-puppy@0.0.900+anthropic+memory"
    assert target.commands["launch"] == ("/x/code-puppy", "-p", "{prompt}", "-r", code_puppy.SESSION_NAME)
    assert target.commands["resume"] == ("/x/code-puppy", "-p", "{prompt}", "-r", "{session_id}")
    assert target.commands["compact"] == ("/x/code-puppy", "-p", "/compact", "-r", "{session_id}")
    assert target.env["PUPPY_KENNEL_ENABLED"] == "1"
    assert code_puppy.build("0.0.900", "openai", "no-memory", "x").env["PUPPY_KENNEL_ENABLED"] == "0"


@pytest.mark.parametrize("name", ["code-puppy", "code-puppy@0.0.900", "code-puppy@latest+openai+memory",
                                  "code-puppy@0.0.900+openai", "code-puppy@0.0.900+openai+rememberish"])
def test_expectations_must_name_a_concrete_target(name):
    assert expectation_name_problem(name) is not None


def test_a_full_name_or_a_glob_is_a_valid_expectation():
    assert expectation_name_problem("code-puppy@0.0.900+anthropic+no-memory") is None
    assert expectation_name_problem("code-puppy@*+openai+*") is None


@pytest.mark.parametrize("wire, url_end, kind", [("openai", "/v1", "custom_openai"), ("anthropic", "", "custom_anthropic")])
def test_the_model_entry_points_at_this_runs_fake_api(wire, url_end, kind):
    target = code_puppy.build("0.0.900", wire, "no-memory", "x")
    values = {"base_url": "http://127.0.0.1:4321", "api_key": "sk-fake"}
    files = {path: render(text, values) for path, text in target.home_files.items()}
    assert set(files) == {".config/code_puppy/puppy.cfg", ".local/share/code_puppy/extra_models.json",
                          ".code_puppy/puppy.cfg", ".code_puppy/extra_models.json"}
    (entry,) = json.loads(files[".code_puppy/extra_models.json"]).values()
    assert entry["type"] == kind
    assert entry["custom_endpoint"] == {"url": "http://127.0.0.1:4321" + url_end, "api_key": "sk-fake"}
    config = files[".code_puppy/puppy.cfg"]
    for key in ("puppy_name", "owner_name", "model"):
        assert re.search(rf"(?m)^{key} = \S", config), config


def test_session_id_is_read_through_terminal_escapes():
    stdout = "\x1b]11;#1a1b26\x07\x1b]4;0;#15161e\x07Created new session: harness-session\n\x1b[1mOK.\x1b[0m\n"
    assert strip_escapes(stdout) == "Created new session: harness-session\nOK.\n"
    assert code_puppy.SESSION_ID.read(strip_escapes(stdout), []) == "harness-session"


def test_the_identity_line_is_the_agent_id_line():
    line = "Your ID is `code-puppy-1949ca`. Use this for any tasks which require identifying yourself"
    assert re.search(code_puppy.IDENTITY_REGEX, line).group(0) == "Your ID is `code-puppy-1949ca`"


def test_a_version_pip_cannot_find_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TOOLS_DIR", str(tmp_path))
    with pytest.raises(InputError) as caught:
        pip_venv_dir("harness-no-such-tool", "harness-no-such-package-zz9", "0.0.1", quiet=True)
    assert "cannot install harness-no-such-package-zz9==0.0.1" in str(caught.value)
    assert not (tmp_path / "harness-no-such-tool" / "0.0.1").exists(), "a failed install must leave nothing behind"
