"""The agent's working directory between steps: files a scenario edits, and a git history it grows.

Agents such as Claude Code render repository state (branch, status, recent
commits) into their prompt, so a scenario can change that state between two
processes and see whether the prefix moves. Commits use fixed names and dates:
the same scenario produces the same commit hashes, so the same bytes, every run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness.scenario.model import Scenario, Step

_INITIAL_FILES = {"README.md": "# scratch project\n\nA working directory prepared by harness.\n"}
_EPOCH = 1767225600  # 2026-01-01T00:00:00Z; commit n is dated n minutes later


class WorkdirError(Exception):
    """Preparing the working directory failed: the run cannot say anything about the agent."""


def prepare(workdir: Path, scenario: Scenario, home: Path) -> None:
    """A `git` working directory starts as a repository with one commit on `main`."""
    if scenario.workdir != "git":
        return
    _write(workdir, tuple(_INITIAL_FILES.items()))
    _git(workdir, home, 0, "init", "--quiet", "--initial-branch=main")
    _commit(workdir, home, 0, "Initial commit")


def apply(workdir: Path, step: Step, home: Path) -> list[str]:
    """Apply a step's edits and commit; returns what was done, for the step's notes."""
    done = []
    if step.edits:
        _write(workdir, step.edits)
        done.append("edited " + ", ".join(path for path, _ in step.edits))
    if step.commit is not None:
        _commit(workdir, home, step.index, step.commit)
        done.append(f"committed {step.commit!r}")
    return done


def _write(workdir: Path, edits: tuple[tuple[str, str], ...]) -> None:
    for relative, content in edits:
        target = workdir / relative
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        except OSError as exc:
            raise WorkdirError(f"cannot write {relative}: {exc.strerror or exc}") from None


def _commit(workdir: Path, home: Path, number: int, message: str) -> None:
    _git(workdir, home, number, "add", "--all")
    _git(workdir, home, number, "commit", "--quiet", "--allow-empty", "-m", message)


def _git(workdir: Path, home: Path, number: int, *args: str) -> None:
    date = f"@{_EPOCH + 60 * number} +0000"
    env = {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Harness",
        "GIT_AUTHOR_EMAIL": "harness@example.invalid",
        "GIT_COMMITTER_NAME": "Harness",
        "GIT_COMMITTER_EMAIL": "harness@example.invalid",
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_DATE": date,
    }
    try:
        done = subprocess.run(["git", *args], cwd=workdir, env=env, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise WorkdirError("the scenario asks for 'workdir: git' but no git executable is on PATH") from None
    except subprocess.TimeoutExpired:
        raise WorkdirError(f"git {' '.join(args)} timed out") from None
    if done.returncode != 0:
        raise WorkdirError(f"git {' '.join(args)} failed: {done.stderr.strip()[-300:]}")
