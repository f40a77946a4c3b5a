"""`FILE@REV` reads the target file itself at REV, and a revision target must run its revision's code.

Real git repositories in tmp_path, real runs of a small agent, and `harness diff`
run as a subprocess of the installed CLI, so the exit code and comparison.json
are what a CI job sees. HARNESS_TOOLS_DIR points at tmp_path, so the worktrees
land there (the `tools` fixture of test_checkout_targets).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.results import UNCHANGED_PASS
from harness.errors import InputError
from harness.journal.launches import read_launches
from harness.run.runner import run_scenario
from harness.scenario.reader import scenario_from_text
from harness.targets import resolve_target
from harness.targets.target_file import load_target_file
from test_checkout_targets import AGENT, commit, git, tools, worktrees  # noqa: F401 - tools is a fixture

HARNESS = Path(sys.executable).parent / "harness"

OLD_FLAG, NEW_FLAG = "--append-system-prompt", "--system-append"


def agent(flag: str = OLD_FLAG, keep: bool = True) -> str:
    return AGENT.format(flag=flag, keep=keep)


def target_yaml(flag: str = OLD_FLAG, repo: str = ".", run: str = '"{python}", "{checkout}/agent.py"', extra: str = "") -> str:
    return (
        "name: rev-agent\n"
        f"repo: {repo}\n"
        f'launch: [{run}, -p, "{{prompt}}", {flag}, "{{append}}"]\n'
        f'resume: [{run}, -p, "{{prompt}}", --resume, "{{session_id}}", {flag}, "{{append}}"]\n'
        "session_id: {stdout_json: session_id}\n"
        "timeout_s: 20\n" + extra
    )  # six lines; `extra` starts on line 7


SCENARIO = """\
name: append-across-resume
append: "Rules: never delete files."
steps:
  - launch: {prompt: "Remember 17.", reply: "Noted."}
  - resume: {prompt: "Add 5.", reply: "22."}
checks: [identity_stable, appended_exactly_once, history_preserved]
"""


def verdicts(target) -> dict[str, str]:
    result = run_scenario(scenario_from_text(SCENARIO), target)
    assert not result.error, result.error
    return {c.check: c.verdict for c in result.checks}


@pytest.fixture
def renamed(tmp_path, tools, monkeypatch) -> Path:
    """repo/: main's agent and target file pass the text with --append-system-prompt; branch rename-flag renames
    the flag to --system-append in both, in one commit. cwd is the repository."""
    path = tmp_path.resolve() / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    commit(path, {"agent.py": agent(OLD_FLAG), "target.yaml": target_yaml(OLD_FLAG)}, "the agent and its target file")
    git(path, "switch", "-q", "-c", "rename-flag")
    commit(path, {"agent.py": agent(NEW_FLAG), "target.yaml": target_yaml(NEW_FLAG)}, "rename the flag")
    git(path, "switch", "-q", "main")
    monkeypatch.chdir(path)
    return path


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(HARNESS), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


# --------------------------------------------------------------------------- each side reads its own file


@pytest.mark.parametrize("checked_out", ["main", "rename-flag"])
def test_a_branch_that_renames_its_flag_is_no_regression(tmp_path, renamed, checked_out):
    # Either side may be the working tree: locally main, in CI the pull request's head.
    git(renamed, "switch", "-q", checked_out)
    (tmp_path / "s.yaml").write_text(SCENARIO)
    done = harness("diff", "--baseline", "target.yaml@main", "--candidate", "target.yaml@rename-flag",
                   "--report-dir", str(tmp_path / "report"), "--quiet", str(tmp_path / "s.yaml"), cwd=renamed)
    assert done.returncode == 0, done.stdout + done.stderr
    comparison = json.loads((tmp_path / "report" / "comparison.json").read_text())
    assert comparison["gate_failures"] == [] and comparison["counts"]["regression"] == 0
    (scenario,) = comparison["scenarios"]
    assert scenario["change"] == UNCHANGED_PASS, scenario["checks"]
    assert {c["baseline"] for c in scenario["checks"].values()} == {c["candidate"] for c in scenario["checks"].values()} == {"pass"}
    # each side ran with its own revision's target file: main's flag for the base, the branch's for the head
    for side, flag, branch in (("baseline", OLD_FLAG, "main"), ("candidate", NEW_FLAG, "rename-flag")):
        launches = read_launches(Path(scenario[f"{side}_run"]["launch_journal"]))
        assert [launch.step_kind for launch in launches] == ["launch", "resume"]
        sha = git(renamed, "rev-parse", branch)
        for launch in launches:
            other = NEW_FLAG if flag == OLD_FLAG else OLD_FLAG
            assert flag in launch.argv and other not in launch.argv, launch.argv
            assert launch.argv[1] == str(tmp_path.resolve() / "tools" / "worktrees" / f"repo-{sha[:12]}" / "agent.py")
    assert git(renamed, "status", "--porcelain") == ""


def test_target_dir_and_the_files_beside_it_are_the_revisions(renamed):
    # v1 drops the text on resume, v2 keeps it; the target file runs "{target_dir}/agent.py" and reads a file beside it
    text = target_yaml(run='"{python}", "{target_dir}/agent.py"', extra='env: {NOTE: "{target_dir}/note.txt"}\n')
    v1 = commit(renamed, {"agent.py": agent(keep=False), "note.txt": "v1\n", "target.yaml": text}, "v1")
    v2 = commit(renamed, {"agent.py": agent(keep=True), "note.txt": "v2\n"}, "v2")
    (renamed / "agent.py").write_text("raise SystemExit('the working tree is never run')\n")
    (at_v1,) = resolve_target(f"target.yaml@{v1}")
    (at_v2,) = resolve_target(f"target.yaml@{v2}")
    for target, sha in ((at_v1, v1), (at_v2, v2)):
        assert target.target_dir == target.checkout and target.revision == sha
        assert target.target_dir.parent.name == "worktrees" and target.target_dir.name == f"repo-{sha[:12]}"
    assert (at_v1.target_dir / "note.txt").read_text() == "v1\n"
    assert verdicts(at_v1)["appended_exactly_once"] == "fail"
    assert verdicts(at_v2)["appended_exactly_once"] == "pass"


def test_the_file_at_rev_is_validated_under_its_own_name_and_lines(renamed, tools):
    old = commit(renamed, {"target.yaml": target_yaml(extra="timeout: 5\n")}, "a typo")
    commit(renamed, {"target.yaml": target_yaml()}, "fixed")
    with pytest.raises(InputError) as caught:
        resolve_target(f"target.yaml@{old[:10]}")
    assert (caught.value.path, caught.value.line) == (f"target.yaml@{old[:10]}", 7), str(caught.value)
    assert "unknown key 'timeout'" in caught.value.message
    assert worktrees(renamed) == [str(renamed)] and not (tools / "worktrees").exists()  # a typo costs no checkout
    # the working tree's file loads; the file at main is its own text, not the working tree's
    (renamed / "target.yaml").write_text(target_yaml().replace("rev-agent", "edited-name"))
    assert resolve_target("target.yaml")[0].name == "edited-name@working-tree"
    assert resolve_target("target.yaml@main")[0].name == "rev-agent@main"


def test_a_file_that_did_not_exist_at_rev(tmp_path, renamed):
    first = git(renamed, "rev-parse", "main")
    commit(renamed, {"gate/new.yaml": target_yaml(repo="..")}, "a target file of its own")
    with pytest.raises(InputError) as caught:
        resolve_target(f"gate/new.yaml@{first}")
    assert caught.value.path == f"gate/new.yaml@{first}" and caught.value.line is None
    message = caught.value.message
    assert f"did not exist at '{first}' ({first[:12]})" in message and "gate/new.yaml is not in that commit" in message
    assert "commit it at that revision" in message and "--target-file-from-working-tree" in message
    # the CLI: one line, exit 2
    (tmp_path / "s.yaml").write_text(SCENARIO)
    done = harness("run", "--target", f"gate/new.yaml@{first}", "--report-dir", str(tmp_path / "r"), str(tmp_path / "s.yaml"),
                   cwd=renamed)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"harness: error: gate/new.yaml@{first}: this target file did not exist at ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    # without a revision, or with the working tree's file asked for, it runs
    (asked,) = resolve_target(f"gate/new.yaml@{first}", target_file_from_working_tree=True)
    assert asked.revision == first and asked.target_dir == renamed / "gate"


def test_the_file_at_rev_without_repo(renamed):
    old = commit(renamed, {"target.yaml": target_yaml(run="python3, agent.py").replace("repo: .\n", "")}, "no repo yet")
    commit(renamed, {"target.yaml": target_yaml()}, "repo")
    with pytest.raises(InputError) as caught:
        resolve_target(f"target.yaml@{old}")
    assert caught.value.path == f"target.yaml@{old}"
    assert f"has no `repo:` at '{old}' (the working tree's file has one)" in caught.value.message
    assert "--target-file-from-working-tree" in caught.value.message


def test_the_file_at_rev_naming_another_repository(tmp_path, renamed):
    other = tmp_path.resolve() / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    commit(other, {"agent.py": agent()}, "another agent")
    old = commit(renamed, {"target.yaml": target_yaml(repo="../other")}, "pointed elsewhere")
    commit(renamed, {"target.yaml": target_yaml()}, "back")
    with pytest.raises(InputError) as caught:
        resolve_target(f"target.yaml@{old}")
    assert (caught.value.path, caught.value.line) == (f"target.yaml@{old}", 2)
    assert caught.value.message.startswith(f"repo: names {other}, outside the git repository {renamed}")
    assert worktrees(other) == [str(other)]


def test_the_file_at_rev_naming_another_folder_of_the_repository(renamed):
    # the agent lived in old-agent/ at that revision and has moved since: the folder exists only at REV
    moved = commit(renamed, {"gate/t.yaml": target_yaml(repo="../old-agent"), "old-agent/agent.py": agent(keep=False)},
                   "the agent in old-agent/")
    git(renamed, "mv", "old-agent", "agent")
    commit(renamed, {"gate/t.yaml": target_yaml(repo="../agent")}, "moved to agent/")
    (target,) = resolve_target(f"gate/t.yaml@{moved}")
    assert target.checkout.name == "old-agent" and target.checkout.parent.name == f"repo-{moved[:12]}"
    assert target.target_dir == target.checkout.parent / "gate"
    assert verdicts(target)["appended_exactly_once"] == "fail"
    # at a revision where that folder does not exist, the file's `repo:` line at that revision is to blame
    commit(renamed, {"gate/t.yaml": target_yaml(repo="../old-agent")}, "a stale repo: line")
    (renamed / "gate" / "t.yaml").write_text(target_yaml(repo="../agent"))  # the working tree's is right
    with pytest.raises(InputError) as caught:
        resolve_target("gate/t.yaml@main")
    assert (caught.value.path, caught.value.line) == ("gate/t.yaml@main", 2)
    assert "the folder old-agent of" in caught.value.message and "does not exist at 'main'" in caught.value.message


# --------------------------------------------------------------------------- files with no text at REV


def test_a_file_outside_the_repository_serves_every_revision(tmp_path, renamed, monkeypatch):
    # a folder of target files beside the agents, in no repository, and one in a repository of its own
    plain = tmp_path / "targets" / "t.yaml"
    plain.parent.mkdir()
    plain.write_text(target_yaml(repo="../repo"))
    config = tmp_path.resolve() / "config"
    config.mkdir()
    git(config, "init", "-q", "-b", "main")
    commit(config, {"t.yaml": target_yaml(repo="../repo")}, "targets")
    # nested: a repository inside the agent's, untracked by it
    nested = renamed / "vendored"
    nested.mkdir()
    git(nested, "init", "-q", "-b", "main")
    commit(nested, {"t.yaml": target_yaml(repo="..")}, "nested")
    for path in (plain, config / "t.yaml", nested / "t.yaml"):
        (target,) = resolve_target(f"{path}@rename-flag")
        assert target.revision == git(renamed, "rev-parse", "rename-flag")
        assert target.target_dir == path.parent.resolve()  # the file's own folder
        assert OLD_FLAG in target.commands["launch"]  # the file on disk, not the branch's target.yaml


def test_the_working_tree_file_when_asked_for(renamed):
    git(renamed, "switch", "-q", "rename-flag")
    (at_main,) = resolve_target("target.yaml@main", target_file_from_working_tree=True)
    assert NEW_FLAG in at_main.commands["launch"] and at_main.name == "rev-agent@main"
    assert at_main.target_dir == renamed and at_main.revision == git(renamed, "rev-parse", "main")
    # ... and by default, main's own file
    (default,) = resolve_target("target.yaml@main")
    assert OLD_FLAG in default.commands["launch"] and default.target_dir == default.checkout


# --------------------------------------------------------------------------- a revision target runs its revision

INSTALLED = "rev-agent"  # a console script on PATH, installed from some working tree: the same at every revision
REFUSED = [
    # (id, file text, spec, target_file_from_working_tree, line, key, fragments beyond the common ones)
    ("installed-console-script", target_yaml(run=INSTALLED), "target.yaml@main", False, 3, "launch", []),
    ("only-the-launch-uses-it", target_yaml().replace('"{python}", "{checkout}/agent.py", -p, "{prompt}", --resume',
                                                      f'{INSTALLED}, -p, "{{prompt}}", --resume'),
     "target.yaml@main", False, 4, "resume", []),
    ("env-without-it", target_yaml(run=INSTALLED, extra='env: {AGENT_HOME: "{home}"}\n'), "target.yaml@main", False, 3,
     "launch", []),
    ("repo-without-a-revision", target_yaml(run=INSTALLED), "target.yaml", False, 3, "launch", []),
    ("target-dir-of-a-file-read-from-the-working-tree", target_yaml(run='"{python}", "{target_dir}/agent.py"'),
     "target.yaml@main", True, 3, "launch", ["{target_dir} is the target file's folder in the working tree"]),
    ("target-dir-with-rev-in-the-file", target_yaml(run='"{python}", "{target_dir}/agent.py"', extra="rev: main\n"),
     "target.yaml", False, 3, "launch", ["{target_dir} is the target file's folder in the working tree"]),
]


@pytest.mark.parametrize(("text", "spec", "from_working_tree", "line", "key", "fragments"), [c[1:] for c in REFUSED],
                         ids=[c[0] for c in REFUSED])
def test_a_command_that_runs_nothing_of_the_checkout_is_refused(renamed, tools, text, spec, from_working_tree, line,
                                                                 key, fragments):
    commit(renamed, {"target.yaml": text}, "the target under test")
    with pytest.raises(InputError) as caught:
        resolve_target(spec, target_file_from_working_tree=from_working_tree)
    error = caught.value
    assert (error.path, error.line) == (spec if not from_working_tree else "target.yaml", line), str(error)
    assert error.message.startswith(f"{key}: runs nothing of the agent's code that `repo:` names"), str(error)
    for fragment in ["neither this command nor `env` uses {checkout}", "the same installed program at every revision",
                     '["{python}", "{checkout}/agent.py", ...]', 'PYTHONPATH: "{checkout}"', *fragments]:
        assert fragment in error.message, str(error)
    assert not (tools / "worktrees").exists()  # refused before any checkout


def test_a_target_file_outside_the_repository_cannot_reach_it_through_target_dir(tmp_path, renamed, tools):
    outside = tmp_path / "targets" / "t.yaml"
    outside.parent.mkdir()
    outside.write_text(target_yaml(repo="../repo", run='"{python}", "{target_dir}/agent.py"'))
    for spec in (f"{outside}@main", str(outside)):  # a revision, and the working tree
        with pytest.raises(InputError, match="launch: runs nothing of the agent's code") as caught:
            resolve_target(spec)
        assert (caught.value.path, caught.value.line) == (str(outside), 3)


def test_the_checkout_through_env_runs_each_revisions_code(renamed):
    # `python -m agent` with the checkout on PYTHONPATH: no argv names {checkout}, env does
    text = target_yaml(run='"{python}", -m, agent', extra='env: {PYTHONPATH: "{checkout}"}\n')
    v1 = commit(renamed, {"agent.py": agent(keep=False), "target.yaml": text}, "v1")
    v2 = commit(renamed, {"agent.py": agent(keep=True)}, "v2")
    (at_v1,), (at_v2,) = resolve_target(f"target.yaml@{v1}"), resolve_target(f"target.yaml@{v2}")
    assert verdicts(at_v1)["appended_exactly_once"] == "fail"
    assert verdicts(at_v2)["appended_exactly_once"] == "pass"


def test_the_gate_refuses_two_revisions_of_one_installed_program(tmp_path, renamed):
    commit(renamed, {"target.yaml": target_yaml(run=INSTALLED), "agent.py": agent(keep=False)}, "an installed agent")
    commit(renamed, {"agent.py": agent(keep=True)}, "the fix the gate would never see")
    (tmp_path / "s.yaml").write_text(SCENARIO)
    done = harness("diff", "--baseline", "target.yaml@main~1", "--candidate", "target.yaml@main",
                   "--report-dir", str(tmp_path / "report"), str(tmp_path / "s.yaml"), cwd=renamed)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("harness: error: target.yaml@main~1:3: launch: runs nothing of the agent's code")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "report" / "comparison.json").exists()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_the_command_line_option_reaches_every_worker(tmp_path, renamed, workers):
    """With -n 2 each worker resolves the specs again: it must read the same file the option names."""
    git(renamed, "switch", "-q", "rename-flag")
    (tmp_path / "s.yaml").write_text(SCENARIO)
    (tmp_path / "t.yaml").write_text(SCENARIO.replace("append-across-resume", "second-scenario"))
    for option, flag in ((["--target-file-from-working-tree"], NEW_FLAG), ([], OLD_FLAG)):
        report = tmp_path / f"report-{workers}-{bool(option)}"
        done = harness("run", "-n", workers, *option, "--target", "target.yaml@main", "--report-dir", str(report), "-q",
                       str(tmp_path / "s.yaml"), str(tmp_path / "t.yaml"), cwd=renamed)
        runs = json.loads((report / "results.json").read_text())["runs"]
        assert len(runs) == 2, done.stdout + done.stderr
        for run in runs:  # main's agent reads --append-system-prompt: the branch's file makes it lose the text
            launch = run["steps"][0]["argv"]
            assert flag in launch and (NEW_FLAG if flag == OLD_FLAG else OLD_FLAG) not in launch, launch
