"""The harness as an outside team meets it: a wheel, pip, a repository of its own, `harness init`, and no clone of ours.

The wheel is built from this working tree and installed with pip into a fresh
virtualenv outside it (its dependencies from the package index). A new git
repository holds a small streaming agent of the team's own (tests/data/outside_team/agent.py):
`main` is correct, the branch `buggy` drops the caller's text on resume. In it
the installed harness runs `init`, `doctor`, `run` (passes on main), the
team's `pytest` with the plugin (collecting the configured scenarios, running
that agent, beside the team's own test and conftest), and `diff FILE@main
--candidate FILE@buggy` (exit 1, naming the dropped text). Nothing of this
repository is on the path: every command is the installed one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
AGENT = Path(__file__).resolve().parent / "data" / "outside_team" / "agent.py"
SKIP_WHEN_COPYING = (".git", ".venv", ".tools", "reports", "site", "build", "dist", "__pycache__", "*.egg-info",
                     ".pytest_cache", ".hypothesis")

TARGET = """\
# The team's target file: harness init wrote a commented template here; this is it, filled in.
name: team-agent
protocol: anthropic
repo: .
launch:  [python3, "{checkout}/agent.py", -p, "{prompt}", --append, "{append}"]
resume:  [python3, "{checkout}/agent.py", -p, "{prompt}", --resume, "{session_id}", --append, "{append}"]
compact: [python3, "{checkout}/agent.py", --compact, --resume, "{session_id}", --append, "{append}"]
session_id: {stdout_json: session_id}
identity: {regex: "(?m)^You are Team Agent[^\\\\n]*"}
timeout_s: 60
"""
CONFTEST = """\
def pytest_addoption(parser):  # the team's own option: the plugin's are all --harness-*
    parser.addoption("--target", default="prod")
"""
UNIT_TEST = "def test_the_teams_own_unit_test():\n    assert 6 * 7 == 42\n"


def run(argv: list[str], cwd: Path, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return done


def said(done: subprocess.CompletedProcess) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout[-6000:]}\n--- stderr\n{done.stderr[-4000:]}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtualenv outside this repository holding the wheel of this working tree (and pytest)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*SKIP_WHEN_COPYING), symlinks=True)
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w",
                 str(work / "dist"), str(source)], work, dict(os.environ))
    assert built.returncode == 0, said(built)
    (wheel,) = (work / "dist").glob("launcher_harness-*.whl")
    venv = work / "venv"
    made = run([sys.executable, "-m", "venv", str(venv)], work, dict(os.environ))
    assert made.returncode == 0, said(made)
    pip = run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               str(wheel), "pytest"], work, {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=900)
    assert pip.returncode == 0, said(pip)
    return venv


@pytest.fixture
def team(tmp_path, installed) -> tuple[Path, dict]:
    """The team's repository (main correct, buggy dropping the text on resume) and the environment its shell has."""
    repo = tmp_path / "team-agent"
    repo.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{installed / 'bin'}{os.pathsep}{os.environ['PATH']}", "HOME": str(home), "LANG": "C.UTF-8",
           "HARNESS_TOOLS_DIR": str(tmp_path / "tools"), "TMPDIR": str(tmp_path), "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "Team", "GIT_AUTHOR_EMAIL": "team@example.invalid",
           "GIT_COMMITTER_NAME": "Team", "GIT_COMMITTER_EMAIL": "team@example.invalid"}
    (repo / "pyproject.toml").write_text('[project]\nname = "team-agent"\nversion = "1.0"\n')
    shutil.copy(AGENT, repo / "agent.py")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_unit.py").write_text(UNIT_TEST)
    (repo / "conftest.py").write_text(CONFTEST)
    git = lambda *args: run(["git", *args], repo, env)  # noqa: E731
    assert git("init", "-q", "-b", "main").returncode == 0
    git("add", "-A")
    assert git("commit", "-q", "-m", "the team's agent").returncode == 0
    return repo, env


def test_an_outside_team_installs_inits_and_gates_its_own_agent(team, installed):
    repo, env = team
    harness = str(installed / "bin" / "harness")
    git = lambda *args: run(["git", *args], repo, env)  # noqa: E731

    version = run([harness, "--version"], repo, env)
    assert version.returncode == 0 and "launcher-harness" in version.stdout, said(version)
    where = run([str(installed / "bin" / "python"), "-c", "import harness; print(harness.__file__)"], repo, env)
    assert Path(where.stdout.strip()).is_relative_to(installed), where.stdout  # the wheel's, not this checkout's

    init = run([harness, "init"], repo, env)
    assert init.returncode == 0, said(init)
    assert "[tool.harness]" in (repo / "pyproject.toml").read_text()
    assert (repo / "pyproject.toml").read_text().startswith('[project]\nname = "team-agent"\nversion = "1.0"\n')
    starters = sorted(p.name for p in (repo / "harness-scenarios").glob("*.yaml"))
    assert len(starters) == 2, starters
    assert (repo / ".github" / "workflows" / "harness.yml").is_file()
    assert "/harness-reports/" in (repo / ".gitignore").read_text().splitlines()
    again = run([harness, "init"], repo, env)
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1, said(again)

    (repo / "harness-target.yaml").write_text(TARGET)  # the team fills in the template
    doctor = run([harness, "doctor", "harness-target.yaml"], repo, env)
    assert doctor.returncode == 0, said(doctor)
    assert "ready" in doctor.stdout.splitlines()[-1], said(doctor)
    assert "You are Team Agent, a careful assistant." in doctor.stdout, said(doctor)

    git("add", "-A")
    assert git("commit", "-q", "-m", "the harness gates the agent").returncode == 0
    git("checkout", "-q", "-b", "buggy")
    (repo / "agent.py").write_text((repo / "agent.py").read_text().replace("DROP_APPEND_ON_RESUME = False",
                                                                           "DROP_APPEND_ON_RESUME = True"))
    assert git("commit", "-q", "-am", "resume: the caller's text is not passed again").returncode == 0
    git("checkout", "-q", "main")

    ran = run([harness, "run", "-q"], repo, env)
    assert ran.returncode == 0, said(ran)
    (report,) = [p for p in (repo / "harness-reports").iterdir() if p.name != "latest"]
    runs = json.loads((report / "results.json").read_text())["runs"]
    assert [(r["target"], r["status"]) for r in runs] == [("team-agent@working-tree", "pass")] * 2, runs
    assert len(runs) == 2 and (report / "report.html").is_file()

    suite = run([str(installed / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "-v"], repo, env)
    assert suite.returncode == 0, said(suite)
    assert "test_the_teams_own_unit_test PASSED" in suite.stdout, said(suite)
    collected = [line for line in suite.stdout.splitlines() if "harness-scenarios/" in line and "PASSED" in line]
    assert len(collected) == 2 and all("[team-agent@working-tree]" in line for line in collected), said(suite)

    diff = run([harness, "diff", "--baseline", "harness-target.yaml@main", "--candidate", "harness-target.yaml@buggy",
                "-q"], repo, env)
    assert diff.returncode == 1, said(diff)
    assert "regression" in diff.stdout and "appended_exactly_once" in diff.stdout, said(diff)
    assert "gate: FAILS" in diff.stdout, said(diff)

    cleaned = run([harness, "clean"], repo, env)
    assert cleaned.returncode == 0, said(cleaned)
    worktrees = git("worktree", "list", "--porcelain").stdout
    assert worktrees.count("worktree ") == 1, worktrees  # the diff's checkouts no longer registered in the team's repo
