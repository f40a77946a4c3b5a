"""The CI recipe in .github/workflows/harness.yml: what it runs must exist and parse here.

GitHub Actions itself cannot run in this suite; what can be checked is that
the workflow installs through the project's own Makefile targets, that its
gate command is one the harness CLI accepts, that its target file is a
git-revision target, and that the reports are uploaded even when a step fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from harness.cli import build_parser
from harness.targets.checkout import open_repository
from harness.targets.target_file import load_target_file
from harness.targets.file_at_revision import path_in_repository

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "harness.yml"


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def steps() -> list[dict]:
    return workflow()["jobs"]["gate"]["steps"]


def makefile_targets() -> set[str]:
    return set(re.findall(r"(?m)^([a-z][a-z-]*):", (ROOT / "Makefile").read_text()))


def test_it_installs_and_tests_through_the_makefile():
    runs = [step.get("run", "") for step in steps()]
    assert "make install tools browser" in runs and "make test" in runs and "make run" in runs
    assert {"install", "tools", "browser", "test", "run"} <= makefile_targets()
    assert runs.index("make install tools browser") < runs.index("make test")


def test_the_gate_command_is_one_the_cli_accepts():
    env = workflow()["jobs"]["gate"]["env"]
    (gate,) = [step for step in steps() if "harness diff" in step.get("run", "")]
    assert gate["if"] == "github.event_name == 'pull_request'"
    command = gate["run"].replace("${{ github.event.pull_request.base.sha }}", "0" * 40)
    command = command.replace("${{ github.event.pull_request.head.sha }}", "1" * 40)
    for name, value in env.items():
        command = command.replace(f'"${name}', f'"{value}').replace(f"${name}", value)
    words = [word.strip('"') for word in command.split()]
    assert words[:2] == [".venv/bin/harness", "diff"]
    args = build_parser().parse_args(words[1:])
    assert args.baseline == f"{env['TARGET_FILE']}@{'0' * 40}" and args.candidate == f"{env['TARGET_FILE']}@{'1' * 40}"
    assert args.paths == [env["SCENARIOS"]] and (ROOT / env["SCENARIOS"]).is_dir()
    assert str(args.report_dir).startswith("reports/")


def test_the_gate_target_runs_from_a_revision_of_this_repository():
    target = load_target_file(ROOT / workflow()["jobs"]["gate"]["env"]["TARGET_FILE"])  # no @REV: the folder as it is
    assert target.name.endswith("@working-tree") and target.checkout == (ROOT / "examples" / "minimal-agent").resolve()
    assert all("{checkout}" in " ".join(argv) for argv in target.commands.values())


def test_the_gate_reads_each_revisions_own_target_file():
    # The file lies in the repository its `repo:` names, so FILE@<sha> reads the file as it is at that sha:
    # the base runs with the base's target file, not with the pull request's.
    path = ROOT / workflow()["jobs"]["gate"]["env"]["TARGET_FILE"]
    target = load_target_file(path)
    assert path_in_repository(path, open_repository(target.checkout)) == path.relative_to(ROOT).as_posix()


def test_reports_are_uploaded_whatever_happened():
    (upload,) = [step for step in steps() if str(step.get("uses", "")).startswith("actions/upload-artifact")]
    assert upload["if"] == "always()" and upload["with"]["path"] == "reports/"
    checkout = next(step for step in steps() if str(step.get("uses", "")).startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # the base revision must be there to check out


def test_the_container_may_create_network_namespaces():
    container = workflow()["jobs"]["gate"]["container"]
    assert container["image"].startswith("python:3.11-") and "--privileged" in container["options"]
