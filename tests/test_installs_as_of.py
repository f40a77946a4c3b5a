"""An old Python launcher installs with the dependencies of its own time, and says which it got.

inspect-swe 0.2.45 with today's agent-client-protocol (0.12) fails at import;
resolved as of its upload it gets 0.8.1 and works. The install is real (uv
against the package index, into a tools folder under tmp_path), and so is the
release list it takes the time from.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.inspect_swe.launcher import has_pin_filter
from harness.targets import installs
from harness.targets.inspect_swe import COMPANIONS, NAME, PACKAGE
from harness.targets.release_index import release


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(installs.ENV_VAR, str(tmp_path / "tools"))
    return tmp_path / "tools"


def version_of(resolved: list[str], name: str) -> tuple[int, ...]:
    (line,) = [line for line in resolved if line.lower().startswith(name + "==")]
    return tuple(int(part) for part in re.findall(r"\d+", line.split("==", 1)[1])[:3])


def test_inspect_swe_0_2_45_resolves_as_of_its_upload_and_records_what_it_got(root):
    venv = installs.pip_venv_dir(NAME, PACKAGE, "0.2.45", quiet=True, companions=COMPANIONS)
    home = root / NAME / "0.2.45"
    assert venv == home.resolve() / "venv" and (venv / "bin" / "inspect").is_file()
    resolved = installs.resolved_set(NAME, "0.2.45")
    assert "inspect-swe==0.2.45" in resolved
    assert version_of(resolved, "agent-client-protocol") < (0, 12)  # 0.12 removed what 0.2.45 imports
    assert not any(line.startswith(("pip==", "#")) for line in resolved)  # the resolved set, nothing else
    uploaded = release("pypi", PACKAGE, "0.2.45").uploaded
    assert installs.resolved_as_of(NAME, "0.2.45") == uploaded.isoformat().replace("+00:00", "Z")
    # The mark keeps its format: the release, then each companion as resolved.
    mark = (home / ".complete").read_text().split()
    assert mark[0] == "inspect-swe==0.2.45" and [m.split("==")[0] for m in mark[1:]] == list(COMPANIONS)
    assert all(m in resolved for m in mark)
    # The release imports (it did not with today's companions), and it predates the pin filter.
    done = subprocess.run([str(venv / "bin" / "python"), "-c", "import inspect_swe; inspect_swe.claude_code"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert has_pin_filter(venv, None, None) is False


def test_a_pinned_companion_gets_its_own_install_and_holds_where_the_releases_time_would_not(root):
    """`+with=agent-client-protocol==0.12.0` on 0.2.45: the pin wins over the upload-time resolution (0.8.1), in a
    folder of its own beside the plain install, named in the target and its record; and the release then fails at
    import exactly as the issue saw it with today's companions, which is what a pin is for: choosing, not guessing."""
    from harness.targets import resolve_target

    target, = resolve_target("inspect-swe@0.2.45+claude-code@2.1.332+no-pin+with=agent-client-protocol==0.12.0")
    assert target.name.endswith("+no-pin+with=agent-client-protocol==0.12.0")
    home = root / NAME / "0.2.45+with=agent-client-protocol==0.12.0"
    assert (home / ".complete").is_file() and not (root / NAME / "0.2.45").exists()
    assert "agent-client-protocol==0.12.0" in target.installed
    assert target.installed == installs.install_record(NAME, home.name)
    done = subprocess.run([str(home / "venv" / "bin" / "python"), "-c", "import inspect_swe._claude_code.claude_code"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "KillTerminalCommandResponse" in done.stderr


@pytest.mark.parametrize("spec, said", [
    ("inspect-swe@0.2.45+with=agent-client-protocol>=0.8", "expected +with=NAME==X.Y.Z"),
    ("inspect-swe@0.2.45+with=", "expected +with=NAME==X.Y.Z"),
])
def test_a_with_that_is_not_one_exact_release_is_refused(spec, said):
    from harness.targets.inspect_swe import parse

    with pytest.raises(InputError, match=re.escape(said)):
        parse(spec)


def test_an_install_made_before_resolved_sets_were_recorded_is_kept_as_it_is(root):
    home = root / "demo-tool" / "1.2.3"
    (home / "venv").mkdir(parents=True)
    (home / ".complete").write_text("demo-package==1.2.3\n")
    assert installs.pip_venv_dir("demo-tool", "harness-no-such-package-zz9", "1.2.3", quiet=True) == home.resolve() / "venv"
    assert installs.resolved_set("demo-tool", "1.2.3") is None and installs.resolved_as_of("demo-tool", "1.2.3") is None


def test_a_release_the_index_lacks_is_refused_before_anything_is_made(root):
    with pytest.raises(InputError) as caught:
        installs.pip_venv_dir(NAME, PACKAGE, "9.9.9", quiet=True)
    assert "cannot install inspect-swe==9.9.9: the package index has no release 9.9.9 of inspect-swe" in str(caught.value)
    assert not (root / NAME / "9.9.9").exists()


@pytest.mark.parametrize("requirement, pinned", [
    ("inspect-ai==0.3.285", ("inspect-ai", "0.3.285")),
    (" agent_client.protocol == 0.8.1 ", ("agent_client.protocol", "0.8.1")),
    ("inspect-ai", None), ("inspect-ai>=0.3", None), ("inspect-ai==0.3.*", None), ("a==1,!=2", None),
])
def test_only_an_exact_pin_moves_the_cutoff(requirement, pinned):
    assert installs._exact(requirement) == pinned
