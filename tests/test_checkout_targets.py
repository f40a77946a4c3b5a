"""Target files naming the agent's own code at a git revision: `repo:`, `rev:`, `{checkout}` and `FILE@REV`.

Every test builds a real git repository in tmp_path holding a small agent in
two revisions that differ in behaviour (v1 drops the appended text on resume,
v2 keeps it), and points HARNESS_TOOLS_DIR at tmp_path so worktrees land there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.run.runner import run_scenario
from harness.scenario.reader import scenario_from_text
from harness.targets import resolve_target, resolve_targets
from harness.targets.checkout import MARKER
from harness.targets.target_file import load_target_file

AGENT = '''\
import json, os, sys, urllib.request, uuid
from pathlib import Path
APPEND_FLAG = {flag!r}
KEEP_APPEND_ON_RESUME = {keep}
args = sys.argv[1:]
opt = lambda name: args[args.index(name) + 1] if name in args else None
prompt, resume, append = opt("-p"), opt("--resume"), opt(APPEND_FLAG) or ""  # other options are ignored
if resume and not KEEP_APPEND_ON_RESUME:
    append = ""
session_id = resume or uuid.uuid4().hex
store = Path(os.environ["HOME"]) / (session_id + ".json")
messages = json.loads(store.read_text()) if resume else []
messages.append({{"role": "user", "content": [{{"type": "text", "text": prompt}}]}})
system = "You are Checkout Agent." + ("\\n\\n" + append if append else "")
body = {{"model": "m", "max_tokens": 64, "system": system, "messages": messages}}
request = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
    data=json.dumps(body).encode(), headers={{"x-api-key": os.environ["ANTHROPIC_API_KEY"],
    "anthropic-version": "2023-06-01", "content-type": "application/json"}})
messages.append({{"role": "assistant", "content": json.loads(urllib.request.urlopen(request, timeout=30).read())["content"]}})
store.write_text(json.dumps(messages))
print(json.dumps({{"session_id": session_id}}))
'''
V1 = AGENT.format(flag="--append", keep=False)  # drops the appended text on resume
V2 = AGENT.format(flag="--append", keep=True)

TARGET = """\
name: my-agent
repo: {repo}
{rev}launch: ["{{python}}", "{{checkout}}/agent.py", -p, "{{prompt}}", --append, "{{append}}"]
resume: ["{{python}}", "{{checkout}}/agent.py", -p, "{{prompt}}", --resume, "{{session_id}}", --append, "{{append}}"]
session_id: {{stdout_json: session_id}}
timeout_s: 20
"""
NO_REPO = """\
name: plain
launch: [agent, -p, "{prompt}"]
resume: [agent, --resume, "{session_id}"]
session_id: {stdout_json: session_id}
"""  # four lines; cases appending to it start on line 5

SCENARIO = """\
name: append-across-resume
append: "Rules: never delete files."
steps:
  - launch: {prompt: "Remember 17.", reply: "Noted."}
  - resume: {prompt: "Add 5.", reply: "22."}
"""


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def main_and_buggy(tmp_path: Path) -> Path:
    """agent-repo with target.yaml (`repo: .`): main keeps the appended text on resume, the branch buggy drops it."""
    repo = tmp_path / "agent-repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {"agent.py": V2, "target.yaml": TARGET.format(repo=".", rev="")}, "keeps the text")
    git(repo, "checkout", "-q", "-b", "buggy")
    commit(repo, {"agent.py": V1}, "drops the text on resume")
    git(repo, "checkout", "-q", "main")
    return repo


def worktrees(repo: Path) -> list[str]:
    return [line.split(" ", 1)[1] for line in git(repo, "worktree", "list", "--porcelain").splitlines()
            if line.startswith("worktree ")]


def user_state(repo: Path) -> dict[str, str]:
    """Everything of the user's that preparing a revision must leave alone."""
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "branch": git(repo, "symbolic-ref", "HEAD"),
        "status": git(repo, "status", "--porcelain", "--untracked-files=all"),
        "refs": git(repo, "for-each-ref", "--format=%(refname) %(objectname)"),
    }


@pytest.fixture
def tools(tmp_path, monkeypatch) -> Path:
    folder = tmp_path.resolve() / "tools"
    monkeypatch.setenv("HARNESS_TOOLS_DIR", str(folder))
    # The harness's own git runs inherit this: no user or system config plays a part here.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for key, value in (("NAME", "Test"), ("EMAIL", "test@example.invalid")):
        monkeypatch.setenv(f"GIT_AUTHOR_{key}", value)
        monkeypatch.setenv(f"GIT_COMMITTER_{key}", value)
    return folder


@pytest.fixture
def repo(tmp_path, tools) -> dict:
    """agent-repo: main and tag v1 at V1; branch my-branch and tag v2 at V2; main checked out."""
    path = tmp_path.resolve() / "agent-repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    v1 = commit(path, {"agent.py": V1, "README": "an agent\n"}, "v1")
    git(path, "tag", "v1")
    git(path, "switch", "-q", "-c", "my-branch")
    v2 = commit(path, {"agent.py": V2}, "v2: keep the appended text on resume")
    git(path, "tag", "-a", "v2", "-m", "annotated: peeled to its commit")
    git(path, "switch", "-q", "main")
    return {"path": path, "v1": v1, "v2": v2}


@pytest.fixture
def target_file(tmp_path, repo, monkeypatch) -> Path:
    """targets/t.yaml outside the repository, `repo:` relative to its folder, no `rev:`; cwd is its folder."""
    folder = tmp_path / "targets"
    folder.mkdir()
    path = folder / "t.yaml"
    path.write_text(TARGET.format(repo="../agent-repo", rev=""))
    monkeypatch.chdir(folder)
    return path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def verdicts(target) -> dict[str, str]:
    result = run_scenario(scenario_from_text(SCENARIO), target)
    assert not result.error, result.error
    return {c.check: c.verdict for c in result.checks}


# --------------------------------------------------------------------------- two revisions, two targets


def test_two_revisions_of_one_file_are_two_targets(tmp_path, repo, target_file, tools):
    # the user's hooks are theirs: a checkout for a test run does not fire their post-checkout hook
    hook = repo["path"] / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\necho ran >> '{tmp_path / 'hook-ran'}'\n")
    hook.chmod(0o755)
    before = user_state(repo["path"])
    (t1,) = resolve_target("t.yaml@v1")
    (t2,) = resolve_target("t.yaml@v2")
    assert (t1.name, t2.name) == ("my-agent@v1", "my-agent@v2")
    assert (t1.revision, t2.revision) == (repo["v1"], repo["v2"])  # the annotated tag peeled to its commit
    assert t1.checkout == tools / "worktrees" / f"agent-repo-{repo['v1'][:12]}"
    assert t2.checkout == tools / "worktrees" / f"agent-repo-{repo['v2'][:12]}"
    assert (t1.checkout / "agent.py").read_text() == V1
    assert (t2.checkout / "agent.py").read_text() == V2
    assert git(t1.checkout, "rev-parse", "HEAD") == repo["v1"]
    assert t1.target_dir == target_file.parent.resolve()  # a file outside the repository: its own folder, its own text
    assert t1.source == Path("t.yaml")
    # both in one run: distinct names, so no "given twice"
    assert [t.name for t in resolve_targets(["t.yaml@v1", "t.yaml@my-branch"])] == ["my-agent@v1", "my-agent@my-branch"]
    assert sorted(worktrees(repo["path"])) == sorted([str(repo["path"]), str(t1.checkout), str(t2.checkout)])
    assert user_state(repo["path"]) == before
    assert not (tmp_path / "hook-ran").exists()


def test_each_revision_runs_its_own_code(repo, target_file):
    before = user_state(repo["path"])
    (t1,) = resolve_target("t.yaml@v1")
    (t2,) = resolve_target("t.yaml@my-branch")
    v1, v2 = verdicts(t1), verdicts(t2)
    assert v1["appended_exactly_once"] == "fail"
    assert v2 == {name: "pass" for name in v2} and "appended_exactly_once" in v2
    assert user_state(repo["path"]) == before


def test_a_checkout_is_reused(repo, target_file, capfd):
    (first,) = resolve_target("t.yaml@v1")
    assert "checking out v1" in capfd.readouterr().err
    stamp = (first.checkout / MARKER).stat().st_mtime_ns
    (again,) = resolve_target("t.yaml@main")  # another name of the same commit
    assert again.checkout == first.checkout and again.revision == first.revision
    assert again.name == "my-agent@main"
    assert (again.checkout / MARKER).stat().st_mtime_ns == stamp
    assert capfd.readouterr().err == ""
    assert len(worktrees(repo["path"])) == 2  # the user's and one


def test_rev_in_the_file_and_its_override(repo, target_file):
    write(target_file, TARGET.format(repo="../agent-repo", rev="rev: v1\n"))
    (from_file,) = resolve_target("t.yaml")
    assert (from_file.name, from_file.revision) == ("my-agent@v1", repo["v1"])
    (overridden,) = resolve_target("t.yaml@v2")
    assert (overridden.name, overridden.revision) == ("my-agent@v2", repo["v2"])
    assert (overridden.checkout / "agent.py").read_text() == V2
    # a full sha and an absolute repo path work too
    write(target_file, TARGET.format(repo=str(repo["path"]), rev=f"rev: {repo['v2']}\n"))
    (by_sha,) = resolve_target(str(target_file))
    assert by_sha.checkout == overridden.checkout and by_sha.name == f"my-agent@{repo['v2']}"


def test_working_tree_runs_the_folder_as_it_is(repo, target_file):
    # uncommitted: the v2 behaviour on main, whose last commit is v1
    (repo["path"] / "agent.py").write_text(V2)
    before = user_state(repo["path"])
    (target,) = resolve_target("t.yaml")
    assert target.name == "my-agent@working-tree"
    assert target.checkout == repo["path"] and target.revision is None
    assert verdicts(target)["appended_exactly_once"] == "pass"
    assert worktrees(repo["path"]) == [str(repo["path"])]  # no worktree for the working tree
    assert user_state(repo["path"]) == before


def test_repo_may_name_a_folder_inside_the_repository(tmp_path, repo, monkeypatch):
    # The agent lives in tools/agent/ of a bigger repository; {checkout} is that folder in every revision.
    big = tmp_path.resolve() / "mono"
    big.mkdir()
    git(big, "init", "-q", "-b", "main")
    old = commit(big, {"tools/agent/agent.py": V1, "tools/agent/t.yaml": TARGET.format(repo=".", rev="")}, "v1")
    commit(big, {"tools/agent/agent.py": V2}, "v2")
    monkeypatch.chdir(big / "tools" / "agent")
    (tree,) = resolve_target("t.yaml")
    (at_old,) = resolve_target(f"t.yaml@{old[:10]}")
    assert tree.checkout == big / "tools" / "agent"
    assert at_old.checkout.name == "agent" and at_old.checkout.parent.parent.name == f"mono-{old[:12]}"
    assert (at_old.checkout / "agent.py").read_text() == V1
    assert verdicts(at_old)["appended_exactly_once"] == "fail"
    assert git(big, "status", "--porcelain") == ""


def test_an_incomplete_checkout_is_made_again(repo, target_file, tools):
    (target,) = resolve_target("t.yaml@v1")
    # a crash after `git worktree add` began: no marker, a file half-written
    (target.checkout / MARKER).unlink()
    (target.checkout / "agent.py").write_text("half")
    (again,) = resolve_target("t.yaml@v1")
    assert again.checkout == target.checkout
    assert (again.checkout / "agent.py").read_text() == V1
    assert (again.checkout / MARKER).read_text().strip() == repo["v1"]
    assert len(worktrees(repo["path"])) == 2
    # the whole tool folder deleted: the repository still lists the worktree, which is made again
    shutil.rmtree(tools)
    (third,) = resolve_target("t.yaml@v1")
    assert (third.checkout / "agent.py").read_text() == V1
    assert len(worktrees(repo["path"])) == 2


def test_parallel_resolves_create_one_worktree(repo, target_file):
    count = 4
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def resolve(i: int) -> None:
        barrier.wait()
        try:
            results[i] = resolve_target("t.yaml@v2")[0]
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=resolve, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors
    assert len({r.checkout for r in results}) == 1
    assert (results[0].checkout / "agent.py").read_text() == V2
    assert len(worktrees(repo["path"])) == 2
    assert len(list((results[0].checkout.parent).glob("agent-repo-*"))) == 1


# --------------------------------------------------------------------------- specs with '@'


def test_a_plain_path_with_at_signs_is_still_a_path(tmp_path, monkeypatch):
    folder = tmp_path / "team@corp"
    write(folder / "agent@2.yaml", NO_REPO)
    monkeypatch.chdir(tmp_path)
    assert [t.name for t in resolve_target("team@corp/agent@2.yaml")] == ["plain"]
    # no such file: an error about that file, not about a revision
    with pytest.raises(InputError, match="no such file") as caught:
        resolve_target("team@corp/missing.yaml@v1")
    assert caught.value.path == "team@corp/missing.yaml"
    with pytest.raises(InputError, match="nothing after '@'"):
        resolve_target("team@corp/agent@2.yaml@")


# --------------------------------------------------------------------------- bad input

BAD = [
    # (id, file text, line, key path the message starts with, fragments)
    ("rev-without-repo", NO_REPO + "rev: v1\n", 5, "rev", ["needs `repo:`"]),
    ("checkout-without-repo", NO_REPO.replace("[agent, -p", '["{checkout}/agent", -p'), 2, "launch[1]",
     ["{checkout}", "has no `repo:`", "add `repo: PATH`", "{target_dir}"]),
    ("checkout-in-env-without-repo", NO_REPO + 'env:\n  AGENT_ROOT: "{checkout}"\n', 6, "env.AGENT_ROOT", ["has no `repo:`"]),
    ("repo-missing", TARGET.format(repo="../no-such-repo", rev=""), 2, "repo", ["no such folder", "no-such-repo"]),
    ("repo-is-a-file", TARGET.format(repo="../agent-repo/README", rev=""), 2, "repo", ["got a file"]),
    ("repo-not-a-git-repository", TARGET.format(repo="../plain-folder", rev=""), 2, "repo",
     ["plain-folder is not a git repository", "git says"]),
    ("repo-not-text", TARGET.format(repo="[a, b]", rev=""), 2, "repo", ["expected a non-empty string, got a list"]),
    ("unknown-rev", TARGET.format(repo="../agent-repo", rev="rev: no-such-branch\n"), 3, "rev",
     ["no commit named 'no-such-branch'", "agent-repo", "branches and tags there:", "my-branch", "v1"]),
    ("rev-an-option", TARGET.format(repo="../agent-repo", rev="rev: --all\n"), 3, "rev", ["expected a branch, tag or commit"]),
    ("rev-a-number", TARGET.format(repo="../agent-repo", rev="rev: 1.0\n"), 3, "rev", ["got a number (1.0)", "quote it"]),
    ("rev-empty", TARGET.format(repo="../agent-repo", rev='rev: ""\n'), 3, "rev", ["expected a non-empty string"]),
    ("unknown-key", TARGET.format(repo="../agent-repo", rev="revision: v1\n"), 3, "", ["unknown key 'revision'", "repo, resume, resume+continue, resume+fork, retry, retry+continue, retry+fork, rev,"]),
    ("repo-with-nul", TARGET.format(repo='"../agent-repo\\0"', rev=""), 2, "repo", ["contains a NUL character (character 14", "it is a path"]),
    ("rev-with-nul", TARGET.format(repo="../agent-repo", rev='rev: "v1\\x00"\n'), 3, "rev", ["contains a NUL character (character 3", "passed to git"]),
]


@pytest.mark.parametrize(("text", "line", "where", "fragments"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_names_file_line_and_key(tmp_path, repo, text, line, where, fragments):
    (tmp_path / "plain-folder").mkdir()
    path = write(tmp_path / "targets" / "bad.yaml", text)
    with pytest.raises(InputError) as caught:
        load_target_file(path)
    error = caught.value
    assert (error.path, error.line) == (str(path), line), str(error)
    if where:
        assert error.message.startswith(f"{where}: "), str(error)
    for fragment in fragments:
        assert fragment in error.message, str(error)
    assert worktrees(repo["path"]) == [str(repo["path"])]


def test_unknown_rev_from_the_spec(repo, target_file):
    with pytest.raises(InputError) as caught:
        resolve_target("t.yaml@no-such-branch")
    error = caught.value
    assert (error.path, error.line) == ("t.yaml", None)
    assert error.message.startswith("@no-such-branch (from the target spec): no commit named 'no-such-branch'")
    assert str(repo["path"]) in error.message


def test_a_revision_for_a_file_without_repo(tmp_path, monkeypatch):
    write(tmp_path / "plain.yaml", NO_REPO)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as caught:
        resolve_target("plain.yaml@v1")
    assert caught.value.path == "plain.yaml"
    assert "names a revision, but this target file has no `repo:`" in caught.value.message
    assert "'@v1'" in caught.value.message


def test_the_folder_missing_at_that_revision(tmp_path, repo, monkeypatch):
    # the agent moved into agent/ after v2: at v1 there is no such folder
    commit(repo["path"], {"agent/agent.py": V2}, "move")
    path = write(tmp_path / "moved.yaml", TARGET.format(repo="agent-repo/agent", rev="rev: v1\n"))
    with pytest.raises(InputError) as caught:
        load_target_file(path)
    assert (caught.value.path, caught.value.line) == (str(path), 3)
    assert "the folder agent of" in caught.value.message and "does not exist at 'v1'" in caught.value.message


def test_git_missing(repo, target_file, monkeypatch):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent / "no-such-folder"))
    with pytest.raises(InputError, match="git is not on PATH") as caught:
        resolve_target("t.yaml@v1")
    assert (caught.value.path, caught.value.line) == ("t.yaml", 2)
