"""A git working directory that scenarios edit and commit to between steps, with the same hashes every run."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from harness.results import PASS, RunResult
from harness.targets import resolve_target
from vocabulary import HEAD, assert_error, parse, parse_error, reference


# ============================================================================ 2. git working directory: parsing


def test_workdir_edit_and_commit_are_read_in_order():
    sc = parse(*HEAD, "workdir: git", "steps:", "  - launch: {prompt: hi}", "  - resume:", "      prompt: x",
               "      edit:", "        notes.txt: \"first\\n\"", "        src/deep/a.py: ''", "      commit: Add notes")
    assert sc.workdir == "git"
    assert sc.steps[0].edits == () and sc.steps[0].commit is None
    assert sc.steps[1].edits == (("notes.txt", "first\n"), ("src/deep/a.py", ""))
    assert sc.steps[1].commit == "Add notes"
    assert parse(*HEAD, "steps: [{launch: {prompt: hi}}]").workdir == "plain"


BAD_WORKDIR = [
    ("commit-without-git", ("steps:", "  - launch: {prompt: hi}", "  - resume:", "      prompt: x", "      commit: Add"), 5,
     ["steps[2].resume: 'commit' needs a git working directory", "workdir: git"]),
    ("commit-with-plain", ("workdir: plain", "steps:", "  - launch: {prompt: hi, commit: Add}"), 5,
     ["steps[1].launch: 'commit' needs a git working directory"]),
    ("unknown-workdir", ("workdir: svn", "steps: [{launch: {prompt: hi}}]"), 3,
     ["workdir: expected one of plain, git, got 'svn'"]),
    ("absolute-path", ("steps:", "  - launch:", "      prompt: hi", "      edit:", "        /etc/passwd: x"), 7,
     ["steps[1].launch.edit", "expected a path inside the working directory", "'/etc/passwd'"]),
    ("dot-dot", ("steps:", "  - launch:", "      prompt: hi", "      edit:", "        ok.txt: a", "        sub/../../x: b"), 8,
     ["steps[1].launch.edit", "expected a path inside the working directory", "'sub/../../x'"]),
    ("under-dot-git", ("steps:", "  - launch:", "      prompt: hi", "      edit:", "        .git/config: x"), 7,
     ["steps[1].launch.edit", "not under .git", "'.git/config'"]),
    ("dot-git-via-dot", ("steps:", "  - launch:", "      prompt: hi", "      edit:", "        ./.git/HEAD: x"), 7,
     ["expected a path inside the working directory", "'./.git/HEAD'"]),
    ("the-directory-itself", ("steps:", "  - launch:", "      prompt: hi", "      edit:", "        '.': x"), 7,
     ["expected a path inside the working directory", "'.'"]),
    ("empty-edit", ("steps:", "  - launch:", "      prompt: hi", "      edit: {}"), 6,
     ["steps[1].launch.edit: expected at least one file to write, got an empty mapping"]),
    ("edit-list", ("steps:", "  - launch:", "      prompt: hi", "      edit: [a.txt]"), 6,
     ["steps[1].launch.edit: expected a mapping of relative file path -> new content, got a list"]),
    ("content-number", ("steps:", "  - launch:", "      prompt: hi", "      edit:", "        a.txt: 5"), 7,
     ["steps[1].launch.edit['a.txt']: expected a string, got an integer (5)"]),
    ("content-mapping", ("steps:", "  - launch:", "      prompt: hi", "      edit:", "        a.txt: {b: c}"), 7,
     ["steps[1].launch.edit['a.txt']: expected a string, got a mapping"]),
    ("empty-commit-message", ("workdir: git", "steps:", "  - launch: {prompt: hi, commit: ''}"), 5,
     ["steps[1].launch.commit: expected a non-empty string"]),
]


@pytest.mark.parametrize(("lines", "line", "fragments"), [c[1:] for c in BAD_WORKDIR], ids=[c[0] for c in BAD_WORKDIR])
def test_bad_workdir_edit_or_commit_is_rejected_with_file_line_and_key_path(lines, line, fragments):
    assert_error(parse_error(*HEAD, *lines), line, *fragments)


# ============================================================================ 2. git working directory: the runner

GIT_SCENARIO = (
    *HEAD,
    "workdir: git",
    "steps:",
    "  - launch: {prompt: 'What is 6*7?', reply: '42'}",
    "  - resume:",
    "      prompt: 'And 7*8?'",
    "      edit: {notes.txt: \"first note\\n\"}",
    "      commit: Add notes",
    "      reply: '56'",
    "  - resume:",
    "      prompt: 'And 2+2?'",
    "      edit: {notes.txt: \"first note\\nsecond, not committed\\n\"}",
    "      reply: '4'",
)


def git(workdir: Path, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(workdir.parent / "home"), "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", "-C", str(workdir), *args], check=False, capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def workdir_of(result: RunResult) -> Path:
    assert result.workspace, "the run was not asked to keep its workspace"
    return Path(result.workspace) / "work"


def test_git_workdir_gets_an_initial_commit_and_the_steps_commit_with_fixed_dates(run):
    sc = parse(*GIT_SCENARIO)
    result = run(sc, reference(), keep=True)
    assert result.status == PASS, (result.error, [s.error for s in result.steps])
    work = workdir_of(result)
    log = git(work, "log", "--format=%s|%an <%ae>|%aI|%cI").splitlines()
    assert log == [
        "Add notes|Harness <harness@example.invalid>|2026-01-01T00:02:00+00:00|2026-01-01T00:02:00+00:00",
        "Initial commit|Harness <harness@example.invalid>|2026-01-01T00:00:00+00:00|2026-01-01T00:00:00+00:00",
    ]
    assert git(work, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(work, "show", "HEAD:notes.txt") == "first note\n"
    assert git(work, "show", "HEAD~1:README.md").strip()  # the initial commit has content
    assert "notes.txt" not in git(work, "ls-tree", "--name-only", "HEAD~1")
    # the last step's edit is on disk but not committed
    assert (work / "notes.txt").read_text() == "first note\nsecond, not committed\n"
    assert git(work, "status", "--porcelain").splitlines() == [" M notes.txt"]
    notes = [s.notes for s in result.steps]
    assert notes[0] == []
    assert any("notes.txt" in n and "edit" in n for n in notes[1]) and any("Add notes" in n and "commit" in n for n in notes[1])
    assert any("notes.txt" in n for n in notes[2]) and not any("commit" in n for n in notes[2])


def test_git_commit_hashes_are_identical_across_runs(run):
    sc = parse(*GIT_SCENARIO)
    first, second = run(sc, reference(), keep=True), run(sc, reference(), keep=True)
    assert first.status == PASS and second.status == PASS
    assert workdir_of(first) != workdir_of(second)
    hashes = [git(workdir_of(r), "log", "--format=%H").split() for r in (first, second)]
    assert len(hashes[0]) == 2 and hashes[0] == hashes[1]


def test_the_edit_is_on_disk_before_the_steps_process_starts(run, tmp_path):
    """A tiny agent reports what it finds in its working directory; the step's edit must already be there."""
    agent = tmp_path / "look.py"
    agent.write_text(textwrap.dedent(
        """\
        import json, os, sys, urllib.request
        seen = open("notes.txt").read() if os.path.exists("notes.txt") else None
        body = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
        request = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=json.dumps(body).encode(),
                                         headers={"content-type": "application/json"})
        urllib.request.urlopen(request, timeout=10).read()
        print(json.dumps({"session_id": "s-1", "seen": seen}))
        """
    ))
    target_file = tmp_path / "look.yaml"
    target_file.write_text(
        "name: look\n"
        'launch: ["{python}", "{target_dir}/look.py"]\n'
        'resume: ["{python}", "{target_dir}/look.py"]\n'
        "session_id: {stdout_json: session_id}\n"
        "timeout_s: 20\n"
    )
    sc = parse("name: look", "workdir: plain", "checks: [history_preserved]", "steps:", "  - launch: {prompt: hi}",
               "  - resume: {prompt: x, edit: {notes.txt: 'written before the step'}}")
    result = run(sc, resolve_target(str(target_file))[0], keep=True)
    assert result.error is None, result.error
    seen = [json.loads(s.stdout_tail.strip().splitlines()[-1])["seen"] for s in result.steps]
    assert seen == [None, "written before the step"]
    assert not (workdir_of(result) / ".git").exists()  # plain stays plain


def test_a_plain_workdir_is_not_a_repository(run):
    sc = parse(*HEAD, "steps:", "  - launch: {prompt: 'What is 6*7?', reply: '42'}",
               "  - resume: {prompt: 'And 7*8?', reply: '56', edit: {a.txt: hello}}")
    result = run(sc, reference(), keep=True)
    assert result.status == PASS, result.error
    work = workdir_of(result)
    assert not (work / ".git").exists() and not (work / "README.md").exists()
    assert (work / "a.txt").read_text() == "hello"
    assert not any("commit" in n for s in result.steps for n in s.notes)
