"""The CI files: this repository's workflow, every workflow's and the action's shape, and the GitLab template run.

GitHub Actions and GitLab CI cannot run in this suite. What can be checked: each file has the shape its CI accepts
(read with PyYAML, against the keys each documents); the repository's own workflow installs through the Makefile
and gates through its own action (`uses: ./`) with inputs the action declares, building a command the harness
CLI accepts; and the GitLab template's `script:` lines run for real with bash in a temporary repository, with the
CI_* variables a merge-request pipeline sets. The action itself runs step by step in tests/test_ci_gate.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from harness.cli import build_parser
from harness.targets.checkout import open_repository
from harness.targets.file_at_revision import path_in_repository
from harness.targets.target_file import load_target_file
from test_ci_gate import TARGET_FILE, bare_machine, make_repos, runner_env
from test_checkout_targets import commit, git

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "harness.yml"
ACTION = ROOT / "action.yml"
GITLAB = ROOT / "ci" / "gitlab" / "harness.gitlab-ci.yml"
PINNED = re.compile(r"[\w.-]+/[\w.-]+@v\d+")  # a major version of a published action
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def workflow() -> dict:
    return load(WORKFLOW)


def steps() -> list[dict]:
    return workflow()["jobs"]["gate"]["steps"]


def gate_step() -> dict:
    (step,) = [step for step in steps() if step.get("uses") == "./"]
    return step


def makefile_targets() -> set[str]:
    return set(re.findall(r"(?m)^([a-z][a-z-]*):", (ROOT / "Makefile").read_text()))


# --------------------------------------------------------------------------- every workflow file, and the action


def check_step(step: dict, where: str) -> None:
    assert isinstance(step, dict) and len({"run", "uses"} & set(step)) == 1, f"{where}: exactly one of run/uses"
    if "run" in step:
        assert "${{" not in step["run"], f"{where}: an expression in a script's text is a script-injection hole"
        return
    uses = step["uses"]
    assert PINNED.fullmatch(uses) or uses == "./", f"{where}: {uses} is neither a pinned major version nor ./"
    if uses == "./":
        inputs = load(ACTION)["inputs"]
        given = set(step.get("with", {}))
        assert given <= set(inputs), f"{where}: inputs the action does not declare: {given - set(inputs)}"
        assert {name for name, spec in inputs.items() if spec.get("required")} <= given, f"{where}: a required input missing"


@pytest.mark.parametrize("path", sorted((ROOT / ".github" / "workflows").glob("*.y*ml")), ids=lambda p: p.name)
def test_every_workflow_is_well_formed(path):
    flow = load(path)
    assert {"name", "jobs"} <= set(flow) and (True in flow or "on" in flow)  # YAML 1.1 reads a bare `on` as true
    for job_name, job in flow["jobs"].items():
        assert "runs-on" in job and job["steps"], job_name
        for index, step in enumerate(job["steps"]):
            check_step(step, f"{path.name}: {job_name} step {index + 1}")


def test_the_action_is_a_well_formed_composite():
    text = ACTION.read_text(encoding="utf-8")
    definition = yaml.safe_load(text)
    assert definition["runs"]["using"] == "composite" and {"name", "description", "inputs", "outputs"} <= set(definition)
    ids: list[str] = []
    for index, step in enumerate(definition["runs"]["steps"]):
        check_step(step, f"action.yml step {index + 1}")
        if "run" in step:
            assert step["shell"] == "bash"  # a composite's run step must name its shell
            for script in re.findall(r"\$GITHUB_ACTION_PATH/(ci/[\w/.-]+)", step["run"]):
                assert (ROOT / script).is_file(), script  # run through bash or python: no exec bit needed
        for expression in EXPRESSION.findall(yaml.safe_dump(step)):
            for name in re.findall(r"steps\.([\w-]+)\.", expression):
                assert name in ids, f"step {index + 1} reads steps.{name} before (or without) that step"
        ids += [step["id"]] if "id" in step else []
    used = set(re.findall(r"inputs\.([a-z][a-z0-9-]*)", text))
    assert used == set(definition["inputs"]), (used, set(definition["inputs"]))  # each used one declared, none unused
    assert "github.action_path" not in text.replace("`github.action_path`", "")  # the host's path in a container job
    for spec in definition["outputs"].values():
        assert re.fullmatch(r"\$\{\{ steps\.(\w+)\.outputs\.[\w-]+ \}\}", spec["value"])


# --------------------------------------------------------------------------- this repository's workflow


def test_it_installs_and_tests_through_the_makefile():
    runs = [step.get("run", "") for step in steps()]
    assert "make install tools browser" in runs and "make test" in runs and "make run" in runs
    assert {"install", "tools", "browser", "test", "run"} <= makefile_targets()
    assert runs.index("make install tools browser") < runs.index("make test")


def with_values() -> dict[str, str]:
    env = workflow()["jobs"]["gate"]["env"]
    def value(text) -> str:
        return EXPRESSION.sub(lambda m: env[re.fullmatch(r"env\.(\w+)", m.group(1)).group(1)], str(text))
    return {key: value(text) for key, text in gate_step()["with"].items()}


def test_the_gate_is_this_repositorys_own_action(tmp_path, monkeypatch):
    step = gate_step()
    assert step["if"] == "github.event_name == 'pull_request'"
    inputs = with_values()
    assert inputs["target-file"] == workflow()["jobs"]["gate"]["env"]["TARGET_FILE"] == "examples/minimal-agent/at-revision.yaml"
    assert (ROOT / inputs["scenarios"]).is_dir() and inputs["report-dir"].startswith("reports/")
    assert inputs["python-version"] == ""  # the container's Python: setup-python's builds are for the runner's OS
    names = [s.get("with", {}).get("name") for s in steps() if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert inputs["artifact-name"] not in names  # one run cannot upload two artifacts of one name
    # What the action's gate step runs with these inputs, recorded, is a command the CLI accepts.
    repo = tmp_path / "repo"
    repo.mkdir()
    for key, value in runner_env(tmp_path, ROOT, tmp_path).items():
        if key.startswith("GIT_"):
            monkeypatch.setenv(key, value)
    git(repo, "init", "-q", "-b", "main")
    base = commit(repo, {inputs["target-file"]: "name: x\n", f"{inputs['scenarios']}/s.yaml": "name: s\n"}, "base")
    head = commit(repo, {"README": "x\n"}, "head")
    record, event = tmp_path / "argv.json", tmp_path / "event.json"
    (tmp_path / "harness").write_text(f"#!{sys.executable}\nimport json, sys\nopen({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    (tmp_path / "harness").chmod(0o755)
    event.write_text(json.dumps({"pull_request": {"number": 1, "base": {"sha": base}, "head": {"sha": head}}}))
    env = {**os.environ, "HARNESS": str(tmp_path / "harness"), "HARNESS_PYTHON": sys.executable, "GITHUB_EVENT_PATH": str(event),
           "GITHUB_OUTPUT": str(tmp_path / "out"), "TARGET_FILE": inputs["target-file"], "SCENARIOS": inputs["scenarios"],
           "REPORT_DIR": inputs["report-dir"], "BASELINE": "", "CANDIDATE": "", "EXTRA_TARGETS": ""}
    done = subprocess.run(["bash", str(ROOT / "ci" / "github" / "gate.sh")], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    argv = json.loads(record.read_text())
    args = build_parser().parse_args(argv)
    assert argv[0] == "diff" and args.baseline == f"{inputs['target-file']}@{base}" and args.candidate == f"{inputs['target-file']}@{head}"
    assert args.paths == [inputs["scenarios"]] and str(args.report_dir) == inputs["report-dir"]


def test_the_gate_target_runs_from_a_revision_of_this_repository():
    target = load_target_file(ROOT / with_values()["target-file"])  # no @REV: the folder as it is
    assert target.name.endswith("@working-tree") and target.checkout == (ROOT / "examples" / "minimal-agent").resolve()
    assert all("{checkout}" in " ".join(argv) for argv in target.commands.values())


def test_the_gate_reads_each_revisions_own_target_file():
    # The file lies in the repository its `repo:` names, so FILE@<sha> reads the file as it is at that sha:
    # the base runs with the base's target file, not with the pull request's.
    path = ROOT / with_values()["target-file"]
    target = load_target_file(path)
    assert path_in_repository(path, open_repository(target.checkout)) == path.relative_to(ROOT).as_posix()


def test_reports_are_uploaded_whatever_happened():
    (upload,) = [step for step in steps() if str(step.get("uses", "")).startswith("actions/upload-artifact")]
    assert upload["if"] == "always()" and upload["with"]["path"] == "reports/"
    names = [step.get("name") for step in steps()]
    assert names.index(gate_step()["name"]) < names.index("Scenario library") and steps()[names.index("Scenario library")]["if"] == "always()"
    checkout = next(step for step in steps() if str(step.get("uses", "")).startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # the base revision must be there to check out


def test_the_container_may_create_network_namespaces():
    container = workflow()["jobs"]["gate"]["container"]
    assert container["image"].startswith("python:3.11-") and "--privileged" in container["options"]


# --------------------------------------------------------------------------- the GitLab template

JOB_KEYS = {"after_script", "allow_failure", "artifacts", "before_script", "cache", "coverage", "dependencies",
            "environment", "extends", "hooks", "id_tokens", "image", "inherit", "interruptible", "needs", "parallel",
            "release", "resource_group", "retry", "rules", "script", "secrets", "services", "stage", "tags", "timeout",
            "trigger", "variables", "when"}
ARTIFACT_KEYS = {"paths", "exclude", "expire_in", "expose_as", "name", "public", "access", "reports", "untracked", "when"}
RULE_KEYS = {"if", "changes", "exists", "allow_failure", "variables", "when", "needs", "interruptible"}


def template() -> dict:
    return load(GITLAB)[".harness-gate"]


def test_the_gitlab_template_has_the_shape_gitlab_accepts():
    document = load(GITLAB)
    assert list(document) == [".harness-gate"]  # hidden: nothing runs until a team's job extends it
    job = template()
    assert set(job) <= JOB_KEYS and {"image", "variables", "script", "artifacts", "rules"} <= set(job)
    assert re.fullmatch(r"python:3\.1[1-9]-bookworm", job["image"])  # git and python3's venv in it: not a -slim image
    assert all(isinstance(v, str) for v in job["variables"].values())
    assert {"HARNESS_TARGET_FILE", "HARNESS_BASELINE", "HARNESS_CANDIDATE", "HARNESS_SCENARIOS", "HARNESS_REQUIREMENT"} <= set(job["variables"])
    assert job["variables"]["HARNESS_BASELINE"] == "$CI_MERGE_REQUEST_DIFF_BASE_SHA" and job["variables"]["HARNESS_CANDIDATE"] == "$CI_COMMIT_SHA"
    assert job["variables"]["GIT_DEPTH"] == "0"
    assert all(isinstance(line, str) for line in job["script"])
    artifacts = job["artifacts"]
    assert set(artifacts) <= ARTIFACT_KEYS and artifacts["when"] == "always"
    assert artifacts["paths"] == ["harness-reports/"] and artifacts["reports"] == {"junit": "harness-reports/junit.xml"}
    assert all(set(rule) <= RULE_KEYS for rule in job["rules"])


def expand(value: str, env: dict[str, str]) -> str:
    """GitLab expands $NAME and ${NAME} in a variable's value; an unset one is empty."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), value)


def rule_runs(job: dict, env: dict[str, str]) -> bool:
    for rule in job["rules"]:
        match = re.fullmatch(r'\$(\w+) == "([^"]*)"', rule["if"])
        assert match, f"a rule this test cannot read: {rule['if']}"
        if env.get(match.group(1)) == match.group(2):
            return rule.get("when", "on_success") != "never"
    return False


def gitlab_job(repos: dict, variables: dict[str, str], **ci: str) -> subprocess.CompletedProcess:
    """The job a team writes (`extends: .harness-gate` plus its variables), run as GitLab's runner runs a script."""
    job = template()
    env = {**repos["env"], "CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": str(repos["workspace"]),
           "TMPDIR": str(repos["tmp"]), **ci}
    assert rule_runs(job, env) == (ci.get("CI_PIPELINE_SOURCE") == "merge_request_event")
    for name, value in {**job["variables"], **variables}.items():
        env[name] = expand(value, env)
    script = repos["tmp"] / "gitlab-script.sh"
    script.write_text("set -eo pipefail\n" + "\n".join(job["script"]) + "\n")
    return subprocess.run(["bash", "--noprofile", "--norc", str(script)], cwd=repos["workspace"], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture
def gitlab_repos(tmp_path, monkeypatch) -> dict:
    found = bare_machine(tmp_path / "machine")
    repos = make_repos(tmp_path, runner_env(tmp_path, found["checkout"], found["bin"]), monkeypatch)
    return {**repos, "requirement": str(found["checkout"])}


def test_the_gitlab_job_fails_on_a_regression_and_keeps_its_reports(gitlab_repos):
    repos = gitlab_repos
    team = {"HARNESS_TARGET_FILE": TARGET_FILE, "HARNESS_REQUIREMENT": repos["requirement"]}
    done = gitlab_job(repos, team, CI_PIPELINE_SOURCE="merge_request_event", CI_MERGE_REQUEST_DIFF_BASE_SHA=repos["main"],
                      CI_COMMIT_SHA=repos["buggy"])
    assert done.returncode == 1, done.stdout + done.stderr
    reports = repos["workspace"] / "harness-reports"
    assert {"report.html", "summary.md", "junit.xml", "comparison.json"} <= {p.name for p in reports.iterdir()}
    failures = [case.get("name") for case in ET.parse(reports / "junit.xml").iter("testcase") if case.find("failure") is not None]
    assert failures and all("appended_exactly_once" in name for name in failures), failures
    comparison = json.loads((reports / "comparison.json").read_text())
    assert (comparison["baseline_revision"], comparison["candidate_revision"]) == (repos["main"], repos["buggy"])

    shutil.rmtree(reports)  # the next job starts from a clean clone
    done = gitlab_job(repos, {**team, "HARNESS_SCENARIOS": "more/one-launch.yaml scenarios"},
                      CI_PIPELINE_SOURCE="merge_request_event", CI_MERGE_REQUEST_DIFF_BASE_SHA=repos["main"],
                      CI_COMMIT_SHA=repos["docs"])
    assert done.returncode == 0, done.stdout + done.stderr
    comparison = json.loads((reports / "comparison.json").read_text())
    assert sorted(s["scenario"] for s in comparison["scenarios"]) == ["append-across-resume", "one-launch"]
    assert comparison["counts"]["regression"] == 0 and (reports / "summary.md").exists()


def test_a_gitlab_pipeline_without_a_diff_base_says_so(tmp_path):
    repos = {"env": {"PATH": os.environ["PATH"]}, "workspace": tmp_path, "tmp": tmp_path}
    done = gitlab_job(repos, {"HARNESS_TARGET_FILE": TARGET_FILE}, CI_PIPELINE_SOURCE="push", CI_COMMIT_SHA="a" * 40)
    assert done.returncode == 2 and done.stderr == ""
    assert done.stdout == "harness gate: HARNESS_BASELINE is empty: no merge request diff base in this pipeline, set it\n"
