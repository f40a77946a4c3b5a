"""The [tool.harness] table: found as a team's file would be, read whole, and wrong keys named with their lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import config
from harness.errors import InputError

ROOT = Path(__file__).resolve().parent.parent

PYPROJECT = """\
[project]
name = "team-agent"

[tool.ruff]
line-length = 100

[tool.harness]
scenarios = ["agent-scenarios"]
targets = ["agent.yaml"]
report_dir = "out/harness"
workers = 2

[tool.harness.suites.nightly]
scenarios = ["agent-scenarios", "more"]
targets = ["agent.yaml@main", "reference"]
workers = "auto"
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def refused(path: Path) -> InputError:
    with pytest.raises(InputError) as caught:
        config.read(path)
    return caught.value


def test_the_table_is_found_from_a_subfolder_and_its_paths_are_the_files(tmp_path, monkeypatch):
    write(tmp_path, "pyproject.toml", PYPROJECT)
    (tmp_path / "agent.yaml").write_text("name: x\n")
    (tmp_path / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "src" / "deep")
    found = config.current()
    assert found.path == tmp_path / "pyproject.toml"
    assert found.scenario_paths() == [str(tmp_path / "agent-scenarios")]  # above the current folder: absolute
    assert found.target_specs() == [str(tmp_path / "agent.yaml")]  # a target file beside the table, from anywhere
    assert (found.report_dir, found.workers) == ("out/harness", 2)
    (suite,) = found.chosen_suites(["all"])
    assert (suite.name, suite.scenarios, suite.targets, suite.workers) == (
        "nightly", ("agent-scenarios", "more"), ("agent.yaml@main", "reference"), os.cpu_count() or 1)
    assert found.target_specs(suite.targets) == [str(tmp_path / "agent.yaml") + "@main", "reference"]
    monkeypatch.chdir(tmp_path)
    assert config.current().scenario_paths() == ["agent-scenarios"]  # below it: as written


def test_harness_toml_wins_in_its_folder_and_a_pyproject_without_the_table_is_passed_by(tmp_path, monkeypatch):
    write(tmp_path, "harness.toml", 'scenarios = ["outer"]\n')
    write(tmp_path / "pkg", "pyproject.toml", '[project]\nname = "pkg"\n')  # not ours: keep walking up
    monkeypatch.chdir(tmp_path / "pkg")
    assert config.current().scenarios == ("outer",)
    write(tmp_path, "pyproject.toml", PYPROJECT)
    monkeypatch.chdir(tmp_path)
    assert config.current().path == tmp_path / "harness.toml"


def test_no_configuration_means_the_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    found = config.current()
    assert found.path is None and found.scenarios == ("scenarios",) and found.targets == () and found.workers == 1
    with pytest.raises(InputError, match="--suite 'ci': no such suite in no configuration file was found"):
        found.chosen_suites(["ci"])


@pytest.mark.parametrize("text, line, message", [
    ('[tool.harness]\nscenario = ["s"]\n', 2, "tool.harness.scenario: unknown key 'scenario' (did you mean 'scenarios'?"),
    ('[tool.harness]\ntargets = "reference"\n', 2, "tool.harness.targets: expected a list of non-empty strings, got 'reference'"),
    ('[tool.harness]\nscenarios = []\n', 2, "tool.harness.scenarios: expected at least one entry"),
    ('[tool.harness]\nworkers = 0\n', 2, "tool.harness.workers: expected a whole number of worker processes"),
    ('[tool.harness]\nworkers = true\n', 2, "tool.harness.workers: expected a whole number"),
    ('[tool.harness]\nreport_dir = 3\n', 2, "tool.harness.report_dir: expected a non-empty string (a path), got 3"),
    ('[tool.harness]\n\n[tool.harness.suites.ci]\nscenarios = ["s"]\ntarget = ["x"]\n', 5,
     "tool.harness.suites.ci.target: unknown key 'target' (did you mean 'targets'?"),
    ('[tool.harness]\n\n[tool.harness.suites.ci]\nscenarios = ["s"]\n', 3,
     "tool.harness.suites.ci: missing `targets`: a suite is scenario paths × targets"),
    ('[tool.harness]\n\n[tool.harness.suites.all]\nscenarios = ["s"]\ntargets = ["x"]\n', 3,
     "tool.harness.suites.all: `all` is the name of every suite together"),
    ('[tool.harness]\nsuites = 3\n', 2, "tool.harness.suites: expected tables"),
    ('[tool.harness]\nscenarios = ["s"\n', 2, "not valid TOML"),
    ('[tool.harness]\n"tools-dir" = "x"\n', 2, "tool.harness.tools-dir: unknown key 'tools-dir'"),
])
def test_a_wrong_key_or_value_is_named_with_its_file_and_line(tmp_path, text, line, message):
    error = refused(write(tmp_path, "pyproject.toml", text))
    assert (error.path, error.line) == (str(tmp_path / "pyproject.toml"), line), str(error)
    assert message in error.message, error.message


def test_harness_toml_keys_sit_at_its_top_level(tmp_path):
    assert config.read(write(tmp_path, "harness.toml", 'scenarios = ["a"]\n')).scenarios == ("a",)
    error = refused(write(tmp_path, "harness.toml", '\n[tool.harness]\nscenarios = ["a"]\n'))
    assert (error.line, error.message.split(" (")[0]) == (2, "tool: unknown key 'tool'")


def test_the_command_line_says_a_broken_table_in_one_line_and_exits_2(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.harness]\ntargets = ["reference"]\nreports = "r"\n')
    done = subprocess.run([sys.executable, "-m", "harness", "run"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"harness: error: {tmp_path / 'pyproject.toml'}:3: tool.harness.reports: unknown key 'reports' (did you mean "
        "'report_dir'? known: "
        "explore_inbox, imports_dir, report_dir, scenarios, suites, targets, tools_dir, workers)"]


def test_this_repositorys_suites_name_the_builds_the_code_pins(monkeypatch):
    """`make run` is the table's suites: a version bumped in the code and not here would run the old build."""
    from harness.targets import claude_code, code_puppy, inspect_swe

    monkeypatch.delenv(config.TOOLS_ENV, raising=False)  # the table's own tools_dir, not the test session's

    ours = config.load(ROOT)
    assert ours.path == ROOT / "pyproject.toml" and ours.tools_folder() == ROOT / ".tools"
    specs = [spec for suite in ours.suites for spec in suite.targets]
    versions = {"claude-code": {claude_code.PINNED_VERSION, claude_code.OLDER_VERSION},
                "code-puppy": {code_puppy.PINNED_VERSION, code_puppy.OLDER_VERSION},
                "inspect-swe": {inspect_swe.MEASURED_VERSION}}
    for spec in specs:
        for family, known in versions.items():
            if spec.startswith(f"{family}@"):
                assert spec[len(family) + 1:].split("+")[0] in known, spec
        if "+claude-code@" in spec:
            assert spec.split("+claude-code@")[1].split("+")[0] in versions["claude-code"], spec
    named = {spec.split("@")[0].split("+")[0] for spec in specs}
    assert {"claude-code", "code-puppy", "inspect-swe"} <= named
