"""The target registry is the one place families are known: what it holds is what the CLI lists, installs and names.

A family from another package arrives through a real entry point (a
distribution's .dist-info on PYTHONPATH), the way a plugin would; a broken one
is one line of error and exit 2, never a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness import cli
from harness.targets import registry, resolve_target
from harness.targets.family import TargetFamily

REPO = Path(__file__).resolve().parent.parent

# A plugin family: `fake[@N]` stands for the clean reference agent under another name.
FAKE_FAMILY = '''
import dataclasses

from harness.targets import reference
from harness.targets.family import SpecFamily


def targets(spec):
    return [dataclasses.replace(reference.build([]), name=spec)]


FAMILY = SpecFamily("fake", "'fake[@N]'", targets, lambda name: None,
                    lines=("fake[@N]                  a family from another package",), defaults=("fake@1",))
NOT_A_FAMILY = object()
'''


def _plugin(tmp_path: Path, entry_points: str) -> dict[str, str]:
    """An installed distribution declaring `entry_points`, found through PYTHONPATH like any site-packages."""
    (tmp_path / "fake_family.py").write_text(FAKE_FAMILY)
    info = tmp_path / "fake_family-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-family\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{textwrap.dedent(entry_points)}")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}


def _harness(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], env=env, capture_output=True, text=True, timeout=60)


def _python(env: dict[str, str], code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_every_built_in_family_is_a_target_family_named_as_registered():
    assert [f.name for f in registry.families()] == [name for name, _ in registry.BUILT_IN]
    assert all(isinstance(f, TargetFamily) for f in registry.families())


def test_a_family_from_an_entry_point_is_listed_after_the_built_ins_and_resolves(tmp_path):
    env = _plugin(tmp_path, "fake = fake_family:FAMILY\n")
    listed = _harness(env, "targets")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[-2:] == ["fake[@N]                  a family from another package", registry.TARGET_FILE_LISTING]
    resolved = _python(env, "from harness.targets import resolve_target, registry\n"
                            "print([t.name for t in resolve_target('fake@7')], registry.install_defaults()[-1])")
    assert resolved.stdout.split() == ["['fake@7']", "fake@1"], resolved.stderr


def test_the_unknown_target_error_names_every_registered_grammar(tmp_path):
    env = _plugin(tmp_path, "fake = fake_family:FAMILY\n")
    run = _harness(env, "install", "nobody")
    assert run.returncode == 2
    assert ("'codex|gemini-cli|qwen-code|opencode[@VERSION][+POLICY]', "
            "'claude-agent-sdk|claude-agent-sdk-ts[@VERSION][+claude-code@X.Y.Z][+POLICY]', 'fake[@N]' "
            "or the path of a target file") in run.stderr


def test_without_plugins_the_error_lists_the_built_in_grammars_in_order():
    with pytest.raises(Exception) as raised:
        resolve_target("nobody")
    assert str(raised.value) == registry.unknown_target_message("nobody")
    grammars = str(raised.value)
    positions = [grammars.index(f"'{name}") for name, _ in registry.BUILT_IN if f"'{name}" in grammars]
    assert positions == sorted(positions) and len(positions) == 7  # codex|…|opencode share one, the two SDKs one


@pytest.mark.parametrize("entry_point, says", [
    ("broken = no_such_module:FAMILY\n", "does not load: ModuleNotFoundError"),
    ("again = fake_family:CODEX_AGAIN\n", "a target family named 'codex' is already registered"),
    ("twice = fake_family:FAMILY\nfake = fake_family:FAMILY\n", "a target family named 'fake' is already registered"),
    ("object = fake_family:NOT_A_FAMILY\n", "is not a target family"),
])
def test_a_broken_or_clashing_entry_point_is_one_line_and_exit_2(tmp_path, entry_point, says):
    env = _plugin(tmp_path, entry_point)
    with (tmp_path / "fake_family.py").open("a") as module:
        module.write("CODEX_AGAIN = dataclasses.replace(FAMILY, name='codex')\n")
    listed = _harness(env, "targets")
    assert listed.returncode == 2
    assert listed.stderr.count("\n") == 1 and "Traceback" not in listed.stderr
    assert listed.stderr.startswith("harness: error: target family entry point") and says in listed.stderr, listed.stderr


def test_install_with_no_arguments_installs_the_registry_defaults(monkeypatch, capsys):
    monkeypatch.setattr(registry, "install_defaults", lambda: ["reference", "reference+in-process"])
    assert cli.main(["install"]) == 0
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == ["reference", "reference+in-process"]
