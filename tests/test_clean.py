"""`harness clean`: the worktrees FILE@REV comparisons leave registered in a team's repository, and dead runs' workspaces.

A real git repository in tmp_path, a real `harness diff` between two
revisions (each checked out as a worktree in the tools folder and registered
in the repository), then the real `harness clean`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from test_checkout_targets import SCENARIO, git, main_and_buggy, tools, worktrees  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parent.parent


def harness(*args: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT), **env})


def test_clean_unregisters_and_deletes_the_worktrees_a_diff_left(tmp_path, tools):  # noqa: F811
    repo = main_and_buggy(tmp_path)
    (tmp_path / "s.yaml").write_text(SCENARIO)
    env = {"HARNESS_TOOLS_DIR": str(tools), "TMPDIR": str(tmp_path)}
    diff = harness("diff", "s.yaml", "-b", f"{repo}/target.yaml@main", "-c", f"{repo}/target.yaml@buggy",
                   "--report-dir", "r", "-q", cwd=tmp_path, env=env)
    assert diff.returncode == 1, diff.stdout + diff.stderr
    assert len(worktrees(repo)) == 3  # the working tree and one per revision: what stayed in the team's repository
    left = sorted((tools / "worktrees").iterdir())
    assert len([p for p in left if not p.name.startswith(".")]) == 2

    dry = harness("clean", "--dry-run", cwd=tmp_path, env=env)
    assert dry.returncode == 0 and dry.stdout.count("would remove") == 2 and len(worktrees(repo)) == 3

    done = harness("clean", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert worktrees(repo) == [str(repo)]
    assert not [p for p in (tools / "worktrees").iterdir() if not p.name.startswith(".")]
    assert done.stdout.count(f"(unregistered from {repo})") == 2, done.stdout
    assert git(repo, "status", "--porcelain") == "" and git(repo, "rev-parse", "--abbrev-ref", "HEAD") == "main"

    again = harness("diff", "s.yaml", "-b", f"{repo}/target.yaml@main", "-c", f"{repo}/target.yaml@buggy",
                    "--report-dir", "r2", "-q", cwd=tmp_path, env=env)
    assert again.returncode == 1, again.stderr  # the next comparison checks them out afresh


def test_clean_removes_dead_runs_workspaces_and_kept_ones_only_when_asked(tmp_path, tools):  # noqa: F811
    from harness.isolation.workspace_owner import MARK

    dead, kept, foreign = (tmp_path / name for name in ("harness-dead-run", "harness-kept-run", "harness-unmarked"))
    for folder in (dead, kept, foreign):
        (folder / "home").mkdir(parents=True)
    (dead / MARK).write_text("999999999 1 not-this-boot\n")  # a pid no process has
    (kept / MARK).write_text("kept\n")
    env = {"HARNESS_TOOLS_DIR": str(tools), "TMPDIR": str(tmp_path)}
    done = harness("clean", cwd=tmp_path, env=env)
    assert done.returncode == 0
    assert not dead.exists() and kept.exists() and foreign.exists()
    assert f"removed workspace {dead}" in done.stdout
    harness("clean", "--kept", cwd=tmp_path, env=env)
    assert not kept.exists() and foreign.exists()  # a folder without the harness's mark is never touched
