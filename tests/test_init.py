"""`harness init` in a team's repository: every file it writes reads back, runs, and nothing is ever overwritten.

Each test runs the installed `harness` as a subprocess in a real git repository
in tmp_path. What init writes is read back by the harness's own readers (the
configuration, the target file, the scenarios), and then used: the starter
scenarios pass against a correct agent written against the target-file template,
and the CI job's own command lines run `harness diff` on a branch that drops
the caller's text on resume.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cli_outcome import HARNESS, Outcome, assert_input_error, assert_kept_promise
from harness import config
from harness.scenario.reader import load_scenario
from harness.targets.target_file import load_target_file

ROOT = Path(__file__).resolve().parent.parent
AGENT = ROOT / "examples" / "minimal-agent" / "agent.py"
SCENARIO_FILES = ("harness-scenarios/retry-after-wrong-answer.yaml", "harness-scenarios/compaction-then-resume.yaml")
WORKFLOW = ".github/workflows/harness.yml"
GITLAB = ".gitlab/harness.gitlab-ci.yml"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, HARNESS_TOOLS_DIR=str(tmp_path / "tools"), GIT_CONFIG_GLOBAL=os.devnull,
               GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="Test", GIT_AUTHOR_EMAIL="test@example.invalid",
               GIT_COMMITTER_NAME="Test", GIT_COMMITTER_EMAIL="test@example.invalid")
    env.update(extra)
    return env


def harness(*argv: str, cwd: Path, env: dict[str, str]) -> Outcome:
    done = subprocess.run([str(HARNESS), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    return Outcome(done.returncode, done.stdout, done.stderr)


def git(cwd: Path, *args: str, env: dict[str, str]) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True, env=env).stdout.strip()


def repository(tmp_path: Path, env: dict[str, str], name: str = "team") -> Path:
    repo = tmp_path / name
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", env=env)
    return repo


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` but git's own, with its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(folder).parts}


def test_init_writes_each_file_and_each_reads_back_and_runs(tmp_path):
    env = _env(tmp_path)
    repo = repository(tmp_path, env)
    done = harness("init", cwd=repo, env=env)
    assert_kept_promise(done, repo)
    assert done.code == 0, done.describe()
    for name in ("harness.toml", "harness-target.yaml", *SCENARIO_FILES, WORKFLOW, ".gitignore"):
        assert (repo / name).is_file(), name
        assert f"wrote {name}" in done.stdout, done.stdout
    assert "harness doctor harness-target.yaml" in done.stdout and "harness run" in done.stdout

    settings = config.read(repo / "harness.toml")  # the harness's own reader: unknown keys would be exit 2
    assert (settings.scenarios, settings.targets, settings.report_dir) == (
        ("harness-scenarios",), ("harness-target.yaml",), "harness-reports")
    assert (settings.explore_inbox, settings.imports_dir, settings.workers, settings.tools_dir) == (
        "harness-scenarios/found", "harness-scenarios/imported", 1, None)
    assert "# tools_dir = \"~/.cache/harness/tools\"" in (repo / "harness.toml").read_text()
    target = load_target_file(repo / "harness-target.yaml")
    assert target.name == "my-agent@working-tree"  # `repo: .` is on in a git repository: FILE@REV works
    assert {s.name for s in map(load_scenario, (repo / f for f in SCENARIO_FILES))} == {
        "retry-after-wrong-answer", "compaction-then-resume"}
    assert (repo / ".gitignore").read_text().splitlines()[-1] == "/harness-reports/"
    workflow = yaml.safe_load((repo / WORKFLOW).read_text())
    steps = workflow["jobs"]["harness"]["steps"]
    assert steps[0] == {"uses": "actions/checkout@v4", "with": {"fetch-depth": 0}}

    # The template's command is the one to edit; the minimal agent takes exactly its flags, so copying it in
    # as agent.py "points" the template at it, and the configured defaults run the starter scenarios on it.
    shutil.copy(AGENT, repo / "agent.py")
    doctor = harness("doctor", "harness-target.yaml", cwd=repo, env=env)
    assert doctor.code == 0 and doctor.stdout.rstrip().endswith("\nready"), doctor.describe()
    run = harness("run", "--quiet", cwd=repo, env=env)
    assert run.code == 0, run.describe()
    assert "2 runs: 2 as expected, 0 unexpected, 0 errors" in run.stdout, run.describe()
    assert (repo / "harness-reports" / "latest").is_symlink()  # the configured report folder, which .gitignore names


def test_into_a_pyproject_the_table_is_appended_and_the_rest_kept_byte_for_byte(tmp_path):
    env = _env(tmp_path)
    repo = repository(tmp_path, env)
    before = b'[project]\r\nname = "team-agent"\r\nversion = "0.1"\r\n\r\n[tool.ruff]\r\nline-length = 100'  # no newline
    (repo / "pyproject.toml").write_bytes(before)
    done = harness("init", "--ci", "none", cwd=repo, env=env)
    assert done.code == 0, done.describe()
    assert "wrote pyproject.toml ([tool.harness] appended)" in done.stdout
    after = (repo / "pyproject.toml").read_bytes()
    assert after.startswith(before) and after[len(before):].startswith(b"\n\n[tool.harness]\n")
    assert not (repo / "harness.toml").exists() and not (repo / ".github").exists()
    settings = config.read(repo / "pyproject.toml")
    assert settings.targets == ("harness-target.yaml",) and settings.report_dir == "harness-reports"
    assert config.find(repo / "harness-scenarios") == repo / "pyproject.toml"  # found from a subfolder too


def test_a_second_init_refuses_and_writes_nothing(tmp_path):
    env = _env(tmp_path)
    repo = repository(tmp_path, env)
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert harness("init", cwd=repo, env=env).code == 0
    (repo / ".gitignore").write_text("/harness-reports/\nbuild/\n")  # a team's own edit, kept as it is
    written = tree(repo)
    again = harness("init", cwd=repo, env=env)
    assert_input_error(again, Path("pyproject.toml"), "already has a [tool.harness] table")
    assert tree(repo) == written
    beside = harness("init", "--config", "harness.toml", cwd=repo, env=env)  # would shadow the table
    assert_input_error(beside, Path("pyproject.toml"), "would silently override")
    assert tree(repo) == written


def test_one_file_in_the_way_stops_init_before_anything_is_written(tmp_path):
    env = _env(tmp_path)
    repo = repository(tmp_path, env)
    (repo / "harness-scenarios").mkdir()
    (repo / "harness-scenarios" / "compaction-then-resume.yaml").write_text("name: ours\n")
    (repo / ".gitignore").write_text("node_modules/\n")
    written = tree(repo)
    done = harness("init", cwd=repo, env=env)
    line = assert_input_error(done, Path("harness-scenarios/compaction-then-resume.yaml"), "already exists")
    assert "wrote nothing" in line
    assert tree(repo) == written  # not the configuration, the target file, the other scenario, the workflow or .gitignore
    (repo / "harness-scenarios" / "compaction-then-resume.yaml").unlink()
    (repo / "harness.toml").write_text("")
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n')
    shadowed = harness("init", "--config", "pyproject", cwd=repo, env=env)  # harness.toml would win over the table
    assert_input_error(shadowed, Path("harness.toml"), "would win over the [tool.harness] table")
    assert (repo / "pyproject.toml").read_text() == '[project]\nname = "x"\n'


@pytest.mark.parametrize("wire_format, variable", [("anthropic", "ANTHROPIC_BASE_URL={base_url}"),
                                                   ("openai-chat", "OPENAI_BASE_URL={base_url}/v1"),
                                                   ("openai-responses", "OPENAI_BASE_URL={base_url}/v1"),
                                                   ("gemini", 'GOOGLE_GEMINI_BASE_URL: "{base_url}"')])
def test_each_wire_format_gets_a_template_that_loads(tmp_path, wire_format, variable):
    env = _env(tmp_path)
    folder = tmp_path / "not-in-git"
    folder.mkdir()
    done = harness("init", "--dir", str(folder), "--wire-format", wire_format, "--ci", "none", cwd=tmp_path, env=env)
    assert done.code == 0, done.describe()
    text = (folder / "harness-target.yaml").read_text()
    assert f"\nprotocol: {wire_format}\n" in text and variable in text
    assert "\n# repo: ." in text  # outside git `repo:` is off, so the file loads as written
    for placeholder in ("prompt", "append", "temporary", "session_id", "base_url", "api_key", "home", "workdir",
                        "target_dir", "python", "checkout"):
        assert f"#   {{{placeholder}}}" in text, placeholder
    target = load_target_file(folder / "harness-target.yaml")
    assert target.name == "my-agent" and target.session_id.describe() == "stdout_json: session_id"
    assert target.env == ({"GOOGLE_GEMINI_BASE_URL": "{base_url}", "GEMINI_API_KEY": "{api_key}"}
                          if wire_format == "gemini" else {})


def test_gitignore_lines_are_added_once_and_a_tools_folder_inside_the_repository_is_one(tmp_path):
    env = _env(tmp_path)
    repo = repository(tmp_path, env)
    (repo / ".gitignore").write_text("build/\nharness-reports/")  # present already, in another spelling, no newline
    done = harness("init", "--ci", "none", cwd=repo, env=dict(env, HARNESS_TOOLS_DIR=str(repo / ".tools")))
    assert done.code == 0, done.describe()
    lines = (repo / ".gitignore").read_text().splitlines()
    assert lines[:2] == ["build/", "harness-reports/"] and lines[-1] == "/.tools/"
    assert sum("harness-reports" in line for line in lines) == 1


def _fake_distribution(folder: Path, direct_url: str) -> Path:
    """A launcher-harness dist-info first on the path, recording where pip installed it from (PEP 610)."""
    info = folder / "launcher_harness-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: launcher-harness\nVersion: 0.1.0\n")
    (info / "direct_url.json").write_text(direct_url)
    return folder


def test_installed_from_github_the_workflow_uses_the_action_at_that_commit(tmp_path):
    commit = "0123456789abcdef0123456789abcdef01234567"
    fake = _fake_distribution(tmp_path / "site", '{"url": "https://github.com/acme/launcher-harness.git", '
                              f'"vcs_info": {{"vcs": "git", "commit_id": "{commit}", "requested_revision": "main"}}}}')
    env = _env(tmp_path, PYTHONPATH=str(fake))
    repo = repository(tmp_path, env)
    done = harness("init", cwd=repo, env=env)
    assert done.code == 0, done.describe()
    assert f"uses: acme/launcher-harness@{commit}" in done.stdout
    workflow = yaml.safe_load((repo / WORKFLOW).read_text())
    gate = workflow["jobs"]["harness"]["steps"][-1]
    assert gate["uses"] == f"acme/launcher-harness@{commit}"
    assert gate["with"] == {"target-file": "harness-target.yaml", "scenarios": "harness-scenarios", "comment": "true"}
    # YAML 1.1 reads the key `on` as True; GitHub reads it as "on"
    assert workflow[True] == {"pull_request": None} and workflow["permissions"]["pull-requests"] == "write"
    action = yaml.safe_load((ROOT / "action.yml").read_text()) if (ROOT / "action.yml").exists() else None
    if action is not None:  # every input the workflow sets is one the action declares
        assert set(gate["with"]) <= set(action["inputs"])


def test_installed_from_a_folder_the_jobs_run_the_commands_themselves(tmp_path):
    """The editable install of this repository is a file: URL, which no `uses:` can name: each job installs and runs
    the harness itself. Their command lines are run here, on a branch that drops the appended text on resume."""
    env = _env(tmp_path)
    repo = repository(tmp_path, env)
    requirement = "launcher-harness @ git+https://git.example/acme/launcher-harness@v1"
    done = harness("init", "--requirement", requirement, cwd=repo, env=env)
    assert done.code == 0, done.describe()
    job = yaml.safe_load((repo / WORKFLOW).read_text())["jobs"]["harness"]
    assert job["env"]["HARNESS_REQUIREMENT"] == requirement
    assert [s["uses"] for s in job["steps"] if "uses" in s] == [
        "actions/checkout@v4", "actions/setup-python@v5", "actions/upload-artifact@v4"]
    lab = tmp_path / "gitlab"
    lab.mkdir()
    done = harness("init", "--ci", "gitlab", "--dir", str(lab), cwd=tmp_path, env=env)
    assert done.code == 0, done.describe()
    assert "include:\n    - local: .gitlab/harness.gitlab-ci.yml" in done.stdout
    assert not (lab / WORKFLOW).exists()
    gitlab = yaml.safe_load((lab / GITLAB).read_text())["harness"]
    assert "extends" not in gitlab and gitlab["variables"]["HARNESS_REQUIREMENT"] == "launcher-harness"
    assert gitlab["artifacts"]["reports"]["junit"] == "harness-reports/gate/junit.xml"
    assert "# EDIT HARNESS_REQUIREMENT" in (lab / GITLAB).read_text()  # a bare name is a guess: it says to edit it

    # The jobs' own command lines, run as CI would (but for `pip install`: this harness is installed already).
    shutil.copy(AGENT, repo / "agent.py")
    git(repo, "add", "agent.py", "harness-target.yaml", "harness-scenarios", env=env)
    git(repo, "commit", "-q", "-m", "a correct agent", env=env)
    base = git(repo, "rev-parse", "HEAD", env=env)
    (repo / "agent.py").write_text(AGENT.read_text().replace(
        "run_turn(session, args.prompt, args.append_system_prompt)",
        "run_turn(session, args.prompt, '' if args.resume else args.append_system_prompt)"))
    git(repo, "commit", "-q", "-am", "drops the caller's text on resume", env=env)
    head = git(repo, "rev-parse", "HEAD", env=env)
    path = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    diff = next(s["run"] for s in job["steps"] if s.get("run", "").startswith("harness diff"))
    summary = tmp_path / "step-summary.md"
    ci = dict(env, **job["env"], PATH=path, BASE_SHA=base, HEAD_SHA=head, GITHUB_STEP_SUMMARY=str(summary))
    gate = subprocess.run(["bash", "-c", diff], cwd=repo, env=ci, capture_output=True, text=True, timeout=300)
    assert gate.returncode == 1, gate.stdout[-3000:] + gate.stderr[-3000:]  # the regression fails the gate
    show = next(s["run"] for s in job["steps"] if s.get("name") == "Summary on the job's page")
    subprocess.run(["bash", "-c", show], cwd=repo, env=ci, check=True)
    assert "appended_exactly_once" in summary.read_text()
    script = gitlab["script"][-1]
    merge_request = dict(env, **gitlab["variables"], PATH=path, CI_MERGE_REQUEST_DIFF_BASE_SHA=base, CI_COMMIT_SHA=base)
    merge_request["REPORT_DIR"] = str(tmp_path / "lab-reports")
    same = subprocess.run(["bash", "-c", script], cwd=repo, env=merge_request, capture_output=True, text=True, timeout=300)
    assert same.returncode == 0, same.stdout[-3000:] + same.stderr[-3000:]  # the base against itself: no regression
    assert (tmp_path / "lab-reports" / "junit.xml").is_file()
