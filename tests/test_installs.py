"""The tool folder: exact versions of agents under test, installed once with npm, never half-installed.

npm itself is never run here: PATH is pointed at a folder holding a fake `npm`
(a small Python script) that records how it was called, or at an empty folder,
and HARNESS_TOOLS_DIR at tmp_path, so nothing outside the test's folders is
read or written.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest

import harness
from harness.targets import installs
from harness.errors import InputError
from harness.targets import claude_code

TOOL = "demo-tool"
PACKAGE = "@scope/pkg"
VERSION = "1.2.3"


# --------------------------------------------------------------------------- helpers


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    """HARNESS_TOOLS_DIR for this test; it does not exist until something is installed."""
    folder = tmp_path / "tools"
    monkeypatch.setenv(installs.ENV_VAR, str(folder))
    return folder


@pytest.fixture
def bin_dir(tmp_path, monkeypatch) -> Path:
    """PATH is this folder alone (empty unless a test puts a fake npm in it)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", str(folder))
    return folder


class FakeNpm:
    """A fake `npm` on PATH: logs every call (argv) to a file, then behaves as told."""

    def __init__(self, bin_dir: Path, log: Path, behaviour: str):
        self.log = log
        script = bin_dir / "npm"
        script.write_text(
            f"#!{sys.executable}\n"
            "import json, os, sys\n"
            f"with open({str(log)!r}, 'a') as log:\n"
            "    log.write(json.dumps(sys.argv[1:]) + '\\n')\n"
            + behaviour
        )
        script.chmod(0o755)

    @property
    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


SUCCEEDS = """\
prefix = sys.argv[sys.argv.index('--prefix') + 1]
spec = sys.argv[-1]
package = spec[:spec.rindex('@')]
folder = os.path.join(prefix, 'node_modules', *package.split('/'))
os.makedirs(folder)
with open(os.path.join(folder, 'package.json'), 'w') as f:
    json.dump({'name': package, 'version': spec[spec.rindex('@') + 1:]}, f)
"""
NO_SUCH_VERSION = """\
prefix = sys.argv[sys.argv.index('--prefix') + 1]
os.makedirs(os.path.join(prefix, 'node_modules', '.partial'))  # npm leaves debris behind when it fails
sys.stderr.write({stderr!r})
sys.exit(1)
"""
OTHER_FAILURE = """\
sys.stderr.write('npm error code EACCES\\nnpm error syscall mkdir\\nnpm error path /nope\\nnpm error errno -13\\n')
sys.exit(243)
"""
MUST_NOT_RUN = """\
sys.stderr.write('fake npm: I must not be run\\n')
sys.exit(99)
"""


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".staging")) if folder.exists() else []


# --------------------------------------------------------------------------- where tools live


def test_harness_tools_dir_decides_the_tool_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(installs.ENV_VAR, str(tmp_path / "elsewhere"))
    assert installs.tools_root() == (tmp_path / "elsewhere").resolve()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(installs.ENV_VAR, "relative/tools")
    assert installs.tools_root() == tmp_path.resolve() / "relative" / "tools"  # resolved once, not per cwd later
    monkeypatch.delenv(installs.ENV_VAR)  # unset, and no configuration here: the user's cache folder
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert installs.tools_root() == tmp_path / "cache" / "harness" / "tools"
    (tmp_path / "harness.toml").write_text('tools_dir = "agents"\n')  # a configured tools_dir, relative to its file
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    assert installs.tools_root() == tmp_path.resolve() / "agents"
    monkeypatch.chdir(Path(harness.__file__).resolve().parent.parent)  # this repository's table says .tools
    assert installs.tools_root() == Path(harness.__file__).resolve().parent.parent / ".tools"


def test_an_installed_version_lives_under_the_root_by_tool_and_version(root, bin_dir):
    FakeNpm(bin_dir, bin_dir.parent / "npm.log", SUCCEEDS)
    installed = installs.npm_package_dir(TOOL, PACKAGE, VERSION, quiet=True)
    assert installed == root.resolve() / TOOL / VERSION / "node_modules" / "@scope" / "pkg"


# --------------------------------------------------------------------------- refusing early


@pytest.mark.parametrize("version", ["latest", "2.1", "v2.1.0", "2.1.0 ", "../2.1.0", "2.1.0/../../x", "^2.1.0", ""])
def test_an_inexact_version_is_refused_before_anything_runs(root, bin_dir, version):
    npm = FakeNpm(bin_dir, bin_dir.parent / "npm.log", MUST_NOT_RUN)
    with pytest.raises(InputError) as caught:
        installs.npm_package_dir(TOOL, PACKAGE, version, quiet=True)
    assert "expected an exact version" in str(caught.value) and repr(version) in str(caught.value)
    assert npm.calls == []
    assert not root.exists()  # not even the folder was made


def test_without_npm_on_path_the_error_says_so_and_names_the_folder(root, bin_dir):
    with pytest.raises(InputError) as caught:
        installs.npm_package_dir(TOOL, PACKAGE, VERSION, quiet=True)
    message = str(caught.value)
    assert "npm is not on PATH" in message
    assert str(root.resolve() / TOOL / VERSION) in message
    assert not (root / TOOL / VERSION).exists() and leftovers(root / TOOL) == []


def test_a_complete_install_is_reused_without_running_npm(root, bin_dir):
    npm = FakeNpm(bin_dir, bin_dir.parent / "npm.log", MUST_NOT_RUN)
    home = root / TOOL / VERSION
    home.mkdir(parents=True)
    (home / ".complete").write_text(f"{PACKAGE}@{VERSION}\n")
    assert installs.npm_package_dir(TOOL, PACKAGE, VERSION) == home.resolve() / "node_modules" / "@scope" / "pkg"
    assert npm.calls == []


# --------------------------------------------------------------------------- installing


def test_a_successful_install_is_marked_complete_and_returns_the_package(root, bin_dir, capsys):
    npm = FakeNpm(bin_dir, bin_dir.parent / "npm.log", SUCCEEDS)
    installed = installs.npm_package_dir(TOOL, PACKAGE, VERSION)
    home = root.resolve() / TOOL / VERSION
    assert installed == home / "node_modules" / "@scope" / "pkg"
    assert json.loads((installed / "package.json").read_text()) == {"name": PACKAGE, "version": VERSION}
    assert (home / ".complete").is_file()
    assert leftovers(home.parent) == []
    (argv,) = npm.calls
    assert argv[0] == "install" and argv[-1] == f"{PACKAGE}@{VERSION}"
    assert "--ignore-scripts" in argv  # nothing of the package runs at install time
    assert Path(argv[argv.index("--prefix") + 1]).parent == home.parent  # staged beside, renamed into place
    assert f"installing {PACKAGE}@{VERSION}" in capsys.readouterr().err
    # the second ask reuses it
    assert installs.npm_package_dir(TOOL, PACKAGE, VERSION, quiet=True) == installed
    assert len(npm.calls) == 1


def test_a_half_installed_folder_without_the_marker_is_replaced(root, bin_dir):
    npm = FakeNpm(bin_dir, bin_dir.parent / "npm.log", SUCCEEDS)
    home = root / TOOL / VERSION
    (home / "node_modules" / "stale").mkdir(parents=True)
    installed = installs.npm_package_dir(TOOL, PACKAGE, VERSION, quiet=True)
    assert len(npm.calls) == 1
    assert installed.is_dir() and (home / ".complete").is_file()
    assert not (home / "node_modules" / "stale").exists()


@pytest.mark.parametrize(
    "stderr",
    [
        "npm error code ETARGET\n",
        "npm error code E404\nnpm error 404 Not Found - GET https://registry.npmjs.org/@scope%2fpkg - Not found\n",
        "npm error notarget No matching version found for @scope/pkg@9.9.9.\n",
    ],
    ids=["ETARGET", "E404", "no-matching-version"],
)
def test_a_version_the_registry_lacks_says_so_and_leaves_no_staging_folder(root, bin_dir, stderr):
    npm = FakeNpm(bin_dir, bin_dir.parent / "npm.log", NO_SUCH_VERSION.format(stderr=stderr))
    with pytest.raises(InputError) as caught:
        installs.npm_package_dir(TOOL, PACKAGE, "9.9.9", quiet=True)
    message = str(caught.value)
    assert f"cannot install {PACKAGE}@9.9.9" in message
    assert f"the registry has no version 9.9.9 of {PACKAGE}" in message
    assert len(npm.calls) == 1  # it really ran
    assert leftovers(root / TOOL) == []
    assert not (root / TOOL / "9.9.9").exists()


def test_another_npm_failure_shows_the_end_of_npms_stderr(root, bin_dir):
    FakeNpm(bin_dir, bin_dir.parent / "npm.log", OTHER_FAILURE)
    with pytest.raises(InputError) as caught:
        installs.npm_package_dir(TOOL, PACKAGE, VERSION, quiet=True)
    message = str(caught.value)
    assert "npm failed: " in message and "npm error errno -13" in message
    assert "registry has no version" not in message
    assert leftovers(root / TOOL) == [] and not (root / TOOL / VERSION / ".complete").exists()


# --------------------------------------------------------------------------- the Claude Code CLI in the tool folder


def installed_claude(root: Path, version: str = "2.1.300") -> Path:
    """A complete (marked) install of @anthropic-ai/claude-code with nothing in it yet; returns node_modules/@anthropic-ai."""
    home = root / "claude-code" / version
    scope = home / "node_modules" / "@anthropic-ai"
    (scope / "claude-code").mkdir(parents=True)
    (home / ".complete").write_text("@anthropic-ai/claude-code@" + version + "\n")
    return scope


@pytest.fixture
def linux_x64(monkeypatch):
    monkeypatch.setattr(platform, "system", lambda: "Linux")
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(platform, "libc_ver", lambda *a, **k: ("glibc", "2.36"))


def test_an_install_with_neither_binary_nor_cli_js_says_to_remove_the_folder(root, bin_dir, linux_x64):
    npm = FakeNpm(bin_dir, bin_dir.parent / "npm.log", MUST_NOT_RUN)
    installed_claude(root)
    with pytest.raises(InputError) as caught:
        claude_code.cli_command("2.1.300")
    message = str(caught.value)
    assert "neither a native binary" in message and "remove that folder to reinstall" in message
    assert str(root.resolve() / "claude-code" / "2.1.300") in message
    assert npm.calls == []


def test_the_native_binary_for_the_platform_is_the_command(root, bin_dir, linux_x64):
    scope = installed_claude(root)
    binary = scope / "claude-code-linux-x64" / "claude"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    (scope / "claude-code-darwin-arm64").mkdir()
    (scope / "claude-code-darwin-arm64" / "claude").write_text("#!/bin/sh\n")
    assert claude_code.cli_command("2.1.300") == (str(binary.resolve()),)


def test_musl_linux_prefers_the_musl_binary(root, bin_dir, linux_x64, monkeypatch):
    monkeypatch.setattr(platform, "libc_ver", lambda *a, **k: ("", ""))
    scope = installed_claude(root)
    for name in ("claude-code-linux-x64", "claude-code-linux-x64-musl"):
        (scope / name).mkdir()
        (scope / name / "claude").write_text("#!/bin/sh\n")
    assert claude_code.cli_command("2.1.300") == (str((scope / "claude-code-linux-x64-musl" / "claude").resolve()),)


def test_an_old_release_runs_cli_js_under_node_and_needs_node(root, bin_dir, linux_x64):
    scope = installed_claude(root)
    (scope / "claude-code" / "cli.js").write_text("// cli\n")
    with pytest.raises(InputError, match="cli.js.*node is not on PATH"):
        claude_code.cli_command("2.1.300")
    node = bin_dir / "node"
    node.write_text("#!/bin/sh\n")
    node.chmod(0o755)
    assert claude_code.cli_command("2.1.300") == (str(node), str((scope / "claude-code" / "cli.js").resolve()))


def test_claude_code_target_uses_the_installed_binary_in_every_argv(root, bin_dir, linux_x64):
    from harness.targets import resolve_target

    scope = installed_claude(root, claude_code.PINNED_VERSION)
    binary = scope / "claude-code-linux-x64" / "claude"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    (target,) = resolve_target("claude-code+append-never")
    assert {kind: target.command_for(kind)[0] for kind in ("launch", "resume", "retry", "compact")} == dict.fromkeys(
        ("launch", "resume", "retry", "compact"), str(binary.resolve())
    )
