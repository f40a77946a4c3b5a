"""The reusable gate, action.yml, run step by step for real in a temporary git repository.

GitHub Actions cannot run here, but a composite action is a list of bash scripts and two actions of GitHub's own:
each `run:` step is run with bash the way the runner runs it (`bash --noprofile --norc -eo pipefail`, in the
workspace, with GITHUB_OUTPUT, GITHUB_STEP_SUMMARY and the event file), its `env:` evaluated by an evaluator that
knows exactly the expressions the file uses and refuses any other. The `uses:` steps (setup-python,
upload-artifact) are not run; their place, pinning and `if:` are asserted, and the report folder is looked at when
the upload would run. The install step is run for real once per worker: a fresh virtual environment, and pip
installing a copy of this checkout (what `uses: OWNER/REPO@REF` installs), its dependencies from the package index.
`gh` is the one stand-in: a recording script that keeps the pull request's comments in a file (no network here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from test_checkout_targets import AGENT, TARGET, commit, git

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
TARGET_FILE = "agent/target.yaml"
CORRECT, BUGGY = AGENT.format(flag="--append", keep=True), AGENT.format(flag="--append", keep=False)
SCENARIO = """\
name: append-across-resume
append: "Rules: never delete files."
steps:
  - launch: {prompt: "Remember 17.", reply: "Noted."}
  - resume: {prompt: "Add 5.", reply: "22."}
checks: [appended_exactly_once, history_preserved]
expect:
  "reference:drop-append-on-resume": {appended_exactly_once: fail}
"""
ONE_STEP = """\
name: one-launch
append: "Rules: be brief."
steps:
  - launch: {prompt: "Hello.", reply: "Hi."}
checks: [appended_exactly_once]
"""
MARKER = f"<!-- launcher-harness gate: {TARGET_FILE} -->"
STEP = re.compile(r"inputs\.([a-z][a-z0-9-]*)|steps\.([a-z][a-z0-9-]*)\.outputs\.([a-z][a-z0-9-]*)|github\.token")
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
TOKEN = "token-of-this-workflow-run"


def action() -> dict:
    return yaml.safe_load(ACTION.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- the expressions action.yml may use


class UnknownExpression(AssertionError):
    pass


def value_of(operand: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
    declared = action()["inputs"]
    match = STEP.fullmatch(operand)
    if match is None:
        raise UnknownExpression(f"an expression this evaluator does not know: {operand!r}")
    if match.group(1):
        if match.group(1) not in declared:
            raise UnknownExpression(f"an undeclared input: {operand}")
        return inputs.get(match.group(1), str(declared[match.group(1)].get("default", "")))
    if match.group(2):
        if match.group(2) not in outputs:
            raise UnknownExpression(f"{operand}: no earlier step has the id {match.group(2)!r}")
        return outputs[match.group(2)].get(match.group(3), "")
    return TOKEN


def evaluate(text: str, inputs: dict[str, str], outputs: dict[str, dict[str, str]]) -> str:
    """`${{ a || b }}` is the first non-empty operand, as GitHub's `||` on strings."""
    def one(match: re.Match) -> str:
        values = [value_of(part.strip(), inputs, outputs) for part in match.group(1).split("||")]
        return next((v for v in values if v), values[-1])
    return EXPRESSION.sub(one, str(text))


def runs_anyway(condition: str | None, inputs: dict[str, str], outputs, failed: bool) -> bool:
    if condition is None:
        return not failed
    if condition == "always()":
        return True
    match = re.fullmatch(r"(inputs\.[a-z-]+) != ''", condition)
    if match is None:
        raise UnknownExpression(f"an if: this evaluator does not know: {condition!r}")
    return not failed and value_of(match.group(1), inputs, outputs) != ""


def read_outputs(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT: `name=value` lines and `name<<DELIMITER` blocks; a name set twice is a mistake here."""
    found: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    while lines:
        line = lines.pop(0)
        name, _, value = line.partition("=")
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = "\n".join(iter(lambda: lines.pop(0), delimiter))
        assert name not in found, f"{name} written twice to GITHUB_OUTPUT"
        found[name] = value
    return found


# --------------------------------------------------------------------------- the runner


@dataclass
class ActionRun:
    failed: bool = False
    steps: list[tuple[str, str]] = field(default_factory=list)  # (name, "ok" | "failed" | "skipped" | "uses")
    outputs: dict[str, dict[str, str]] = field(default_factory=dict)
    summary: str = ""
    log: str = ""
    uploaded: list[str] | None = None  # what the report folder held when the upload step would run

    def first_failure(self) -> str | None:
        return next((name for name, status in self.steps if status == "failed"), None)

    def ran(self, name: str) -> bool:
        return dict(self.steps)[name] in ("ok", "failed")


def run_action(env: dict[str, str], workspace: Path, inputs: dict[str, str], installed: dict[str, str]) -> ActionRun:
    definition, run = action(), ActionRun()
    scratch = Path(tempfile.mkdtemp(prefix="steps-", dir=env["RUNNER_TEMP"]))  # fresh files for every step, as a runner's
    for index, step in enumerate(definition["runs"]["steps"]):
        name = step["name"]
        if not runs_anyway(step.get("if"), inputs, run.outputs, run.failed):
            run.steps.append((name, "skipped"))
            continue
        if "uses" in step:
            with_ = {key: evaluate(value, inputs, run.outputs) for key, value in step.get("with", {}).items()}
            if step["uses"].startswith("actions/upload-artifact@"):
                folder = workspace / with_["path"]
                run.uploaded = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")) if folder.exists() else []
            run.steps.append((name, "uses"))
            continue
        if step.get("id") == "install" and installed:
            run.outputs["install"] = installed
            run.steps.append((name, "ok"))
            continue
        assert "${{" not in step["run"], f"{name}: an expression in the script's text"
        files = {key: scratch / f"step-{index}-{key}" for key in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "script")}
        files["script"].write_text(step["run"])
        step_env = {**env, **{k: str(v) for k, v in files.items() if k != "script"},
                    **{key: evaluate(value, inputs, run.outputs) for key, value in step.get("env", {}).items()}}
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(files["script"])], cwd=workspace,
                              env=step_env, capture_output=True, text=True, timeout=600)
        run.log += f"--- {name} (exit {done.returncode})\n{done.stdout}{done.stderr}"
        if step.get("id"):
            run.outputs[step["id"]] = read_outputs(files["GITHUB_OUTPUT"])
        if files["GITHUB_STEP_SUMMARY"].exists():
            run.summary += files["GITHUB_STEP_SUMMARY"].read_text(encoding="utf-8")
        run.steps.append((name, "ok" if done.returncode == 0 else "failed"))
        run.failed = run.failed or done.returncode != 0
    run.outputs["action"] = {key: evaluate(spec["value"], inputs, run.outputs) for key, spec in definition["outputs"].items()}
    return run


# --------------------------------------------------------------------------- the machine: a checkout of the action, a runner


def action_checkout(folder: Path) -> Path:
    """This repository as `uses: OWNER/REPO@REF` fetches it: its files (the working tree's), no .venv, no build."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    return folder


def runner_env(base: Path, action_path: Path, bin_dir: Path) -> dict[str, str]:
    """The runner's environment: the machine's (proxies, pip's settings), without this test run's own harness."""
    skip = ("HARNESS_", "GITHUB_", "RUNNER_", "PYTEST_", "CI_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(skip) and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CI")}
    path = [str(bin_dir)] + [p for p in os.environ["PATH"].split(os.pathsep) if p and not shutil.which("harness", path=p)]
    (base / "runner-temp").mkdir(parents=True, exist_ok=True)
    env.update(PATH=os.pathsep.join(path), GITHUB_ACTIONS="true", CI="true", GITHUB_ACTION_PATH=str(action_path),
               RUNNER_TEMP=str(base / "runner-temp"), GITHUB_REPOSITORY="octo/agent", GITHUB_SERVER_URL="https://github.com",
               GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", HARNESS_TOOLS_DIR=str(base / "tools"))
    for key, value in (("NAME", "Test"), ("EMAIL", "test@example.invalid")):
        env[f"GIT_AUTHOR_{key}"] = env[f"GIT_COMMITTER_{key}"] = value
    return env


def bare_machine(base: Path) -> dict:
    """A runner before the action: python3 on PATH (what setup-python puts there) and the action's checkout."""
    bin_dir = base / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python3").symlink_to(getattr(sys, "_base_executable", sys.executable))
    return {"base": base, "bin": bin_dir, "checkout": action_checkout(base / "action")}


@pytest.fixture(scope="module")
def machine(tmp_path_factory) -> dict:
    """The install step run for real, once: its outputs serve every run below."""
    found = bare_machine(tmp_path_factory.mktemp("machine"))
    env = runner_env(found["base"], found["checkout"], found["bin"])
    assert shutil.which("harness", path=env["PATH"]) is None  # the action can only use the harness it installs
    run = run_action(env, found["base"], {"target-file": TARGET_FILE}, installed={})  # stops after it: no target file
    assert run.steps[1] == ("Install the harness", "ok"), run.log
    assert run.first_failure() == "harness diff: baseline vs candidate" and "no such file" in run.log, run.log
    installed = run.outputs["install"]
    where = subprocess.run([installed["python"], "-c", "import harness; print(harness.__file__)"], cwd=found["base"],
                           env=env, capture_output=True, text=True, check=True).stdout  # not from the current folder
    assert where.startswith(str(found["base"] / "runner-temp" / "launcher-harness-gate")), where  # not this checkout
    return {**found, "installed": installed}


def make_repos(tmp_path: Path, env: dict[str, str], monkeypatch) -> dict:
    """origin: main (a correct agent), buggy (drops the appended text on resume), docs (correct, a README more);
    workspace: a clone of origin with `buggy` checked out, as a CI checkout leaves a pull request's head."""
    origin = tmp_path / "origin"
    origin.mkdir()
    for key in (k for k in env if k.startswith("GIT_")):
        monkeypatch.setenv(key, env[key])  # for git() and commit() here
    git(origin, "init", "-q", "-b", "main")
    shas = {"main": commit(origin, {"agent/agent.py": CORRECT, TARGET_FILE: TARGET.format(repo=".", rev=""),
                                    "scenarios/append.yaml": SCENARIO, "more/one-launch.yaml": ONE_STEP}, "the agent")}
    for branch, files in (("buggy", {"agent/agent.py": BUGGY}), ("docs", {"README": "docs\n"})):
        git(origin, "switch", "-q", "-c", branch, "main")
        shas[branch] = commit(origin, files, branch)
    git(origin, "switch", "-q", "main")
    workspace = tmp_path / "workspace"
    subprocess.run(["git", "clone", "-q", "--branch", "buggy", f"file://{origin}", str(workspace)], env=env, check=True)
    return {"origin": origin, "workspace": workspace, "env": env, "tmp": tmp_path, **shas}


@pytest.fixture
def repos(tmp_path, machine, monkeypatch) -> dict:
    return make_repos(tmp_path, runner_env(tmp_path, machine["checkout"], machine["bin"]), monkeypatch)


def pull_request(repos: dict, base: str, head: str, number: int = 7) -> dict[str, str]:
    event = repos["tmp"] / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": number, "pull_request": {
        "number": number, "base": {"sha": repos[base], "ref": "main"}, "head": {"sha": repos[head], "ref": head}}}))
    return {**repos["env"], "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event), "GITHUB_WORKSPACE": str(repos["workspace"])}


def gate(repos, machine, env, **inputs) -> ActionRun:
    return run_action(env, repos["workspace"], {"target-file": TARGET_FILE, **inputs}, machine["installed"])


def report(repos, folder: str = "harness-reports") -> dict:
    return json.loads((repos["workspace"] / folder / "comparison.json").read_text())


REPORT_FILES = {"report.html", "summary.md", "junit.xml", "comparison.json"}
AFTER_THE_DIFF = ["Summary on the job's page", "Keep the reports", "Pull-request comment"]


# --------------------------------------------------------------------------- the gate


def test_a_regression_fails_the_action_after_its_summary_upload_and_comment(repos, machine):
    run = gate(repos, machine, pull_request(repos, "main", "buggy"))
    assert run.failed and run.first_failure() == "The gate's verdict", run.log  # the last step, nothing earlier
    assert [name for name, _ in run.steps][-1] == "The gate's verdict" and all(run.ran(n) or dict(run.steps)[n] == "uses" for n in AFTER_THE_DIFF)
    assert run.outputs["action"] == {"result": "fail", "report-dir": "harness-reports"}
    assert run.outputs["gate"]["exit-code"] == "1"
    assert REPORT_FILES <= set(run.uploaded), run.uploaded  # there when the upload step runs
    assert "**harness gate: FAILED** (exit 1)" in run.summary and "| append-across-resume | appended_exactly_once | pass → fail | **regression** |" in run.summary
    assert "::error::harness gate: FAILED (exit 1)" in run.log
    comparison = report(repos)
    assert comparison["counts"]["regression"] == 1
    assert (comparison["baseline_revision"], comparison["candidate_revision"]) == (repos["main"], repos["buggy"])
    assert {s["scenario"] for s in comparison["scenarios"]} == {"append-across-resume"}  # the default scenarios/
    assert comparison["command"][0] == machine["installed"]["harness"]  # the harness the action installed
    assert git(repos["workspace"], "status", "--porcelain") == "?? harness-reports/"  # the checkout is left alone


def test_a_correct_candidate_passes(repos, machine):
    run = gate(repos, machine, pull_request(repos, "main", "docs"))
    assert not run.failed and run.first_failure() is None, run.log
    assert run.outputs["action"] == {"result": "pass", "report-dir": "harness-reports"}
    assert run.summary.startswith("**harness gate: passed**") and "# harness diff: no regressions" in run.summary
    assert REPORT_FILES <= set(run.uploaded)


def test_inputs_name_the_revisions_the_scenarios_and_the_folder(repos, machine):
    env = pull_request(repos, "main", "buggy")  # the inputs win over the event
    run = gate(repos, machine, env, baseline="origin/main", candidate=repos["docs"], scenarios="\n  more/one-launch.yaml  \n\n",
               **{"report-dir": "out/gate"})
    assert not run.failed, run.log
    comparison = report(repos, "out/gate")
    assert [s["scenario"] for s in comparison["scenarios"]] == ["one-launch"]
    assert comparison["baseline"] == "my-agent@origin/main" and comparison["baseline_revision"] == repos["main"]
    assert comparison["candidate_revision"] == repos["docs"]
    assert run.outputs["action"]["report-dir"] == "out/gate"


def test_a_push_compares_before_with_after(repos, machine):
    event = repos["tmp"] / "push.json"
    event.write_text(json.dumps({"ref": "refs/heads/buggy", "before": repos["main"], "after": repos["buggy"]}))
    run = gate(repos, machine, {**repos["env"], "GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": str(event)})
    assert run.failed and run.outputs["action"]["result"] == "fail" and report(repos)["counts"]["regression"] == 1, run.log


@pytest.mark.parametrize("payload", [{"ref": "refs/heads/new", "before": "0" * 40, "after": "x"}, {"action": "opened"}],
                         ids=["push-creating-a-branch", "no-revisions"])
def test_no_revision_is_one_clear_line(repos, machine, payload):
    event = repos["tmp"] / "event.json"
    event.write_text(json.dumps(payload))
    run = gate(repos, machine, {**repos["env"], "GITHUB_EVENT_NAME": "workflow_dispatch", "GITHUB_EVENT_PATH": str(event)})
    assert run.first_failure() == "harness diff: baseline vs candidate"
    errors = [line for line in run.log.splitlines() if "harness gate:" in line and "error" in line]
    assert errors == ["::error::harness gate: no baseline revision: the baseline input is empty and the event "
                      "(workflow_dispatch) names none (a pull request's base and head shas, a push's before and after)"], run.log
    assert "Traceback" not in run.log and not (repos["workspace"] / "harness-reports").exists()
    assert run.outputs["action"] == {"result": "fail", "report-dir": ""}
    assert run.summary == "**harness gate: FAILED** before the diff ran; the job's log says why.\n"


def test_a_base_missing_from_a_shallow_clone_is_fetched(repos, machine):
    shutil.rmtree(repos["workspace"])
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "buggy", f"file://{repos['origin']}", str(repos["workspace"])],
                   env=repos["env"], check=True)
    with pytest.raises(subprocess.CalledProcessError):
        git(repos["workspace"], "cat-file", "-e", repos["main"] + "^{commit}")
    run = gate(repos, machine, pull_request(repos, "main", "buggy"))
    assert f"the baseline revision {repos['main']} is not in this clone; fetching it from origin" in run.log
    assert run.outputs["gate"]["exit-code"] == "1" and report(repos)["counts"]["regression"] == 1, run.log


def test_an_older_report_folder_is_refused(repos, machine):
    stale = repos["workspace"] / "harness-reports" / "summary.md"
    stale.parent.mkdir()
    stale.write_text("# harness diff: no regressions\n")
    run = gate(repos, machine, pull_request(repos, "main", "buggy"))
    assert run.first_failure() == "harness diff: baseline vs candidate"
    assert "::error::harness gate: report-dir harness-reports is not empty" in run.log
    assert "no regressions" not in run.summary and stale.read_text() == "# harness diff: no regressions\n"


def test_extra_targets_must_meet_the_scenarios_expectations(repos, machine):
    env = pull_request(repos, "main", "docs")
    run = gate(repos, machine, env, **{"extra-targets": "reference\nreference:drop-append-on-resume\n"})
    assert not run.failed, run.log  # the defect fails appended_exactly_once, as the scenario expects of it
    results = json.loads((repos["workspace"] / "harness-reports" / "extra-targets" / "results.json").read_text())
    assert results["summary"]["runs"] == results["summary"]["as_expected"] == 2  # the two, over the default scenarios/
    assert results["command"][1:] == ["run", "--target", "reference", "--target", "reference:drop-append-on-resume",
                                      "--report-dir", "harness-reports/extra-targets"]
    assert "# harness diff: no regressions" in run.summary and "\n# harness: " in run.summary  # both summaries
    shutil.rmtree(repos["workspace"] / "harness-reports")
    run = gate(repos, machine, env, **{"extra-targets": "reference:forget-last-reply"})  # history_preserved: unexpected
    assert run.failed and run.first_failure() == "The gate's verdict" and run.outputs["action"]["result"] == "fail", run.log
    assert report(repos)["counts"]["regression"] == 0  # the diff itself passed
    assert "reference:forget-last-reply" in run.summary


# --------------------------------------------------------------------------- the pull-request comment

GH = '''#!{python}
"""A recording gh: `gh api` on the issue-comments endpoints, the comments kept in a file."""
import json, os, sys
from pathlib import Path
state_file = Path({state!r})
state = json.loads(state_file.read_text())
args, method, body = sys.argv[1:], None, None
assert args[0] == "api", args
rest = args[1:]
paginate = "--paginate" in rest
if "--method" in rest:
    method = rest[rest.index("--method") + 1]
if "--input" in rest:
    assert rest[rest.index("--input") + 1] == "-"
    body = json.loads(sys.stdin.read())
path = [a for i, a in enumerate(rest) if not a.startswith("--") and rest[i - 1] not in ("--method", "--input")][0]
state["calls"].append({{"method": method or "GET", "path": path, "paginate": paginate, "body": body,
                       "token": os.environ.get("GH_TOKEN")}})
state_file.write_text(json.dumps(state))
if state.get("refuse"):
    sys.exit("gh: Resource not accessible by integration (HTTP 403)")
repo = "repos/octo/agent/issues"
if method is None and path == repo + "/7/comments?per_page=100":
    half = len(state["comments"]) // 2  # two pages, printed back to back as gh does
    print(json.dumps(state["comments"][:half]) + json.dumps(state["comments"][half:]))
elif method == "POST" and path == repo + "/7/comments":
    comment = {{"id": state["next_id"], "body": body["body"], "user": {{"login": "github-actions[bot]"}}}}
    state["next_id"] += 1
    state["comments"].append(comment)
    print(json.dumps(comment))
elif method == "PATCH" and path.startswith(repo + "/comments/"):
    found = [c for c in state["comments"] if str(c["id"]) == path.rsplit("/", 1)[1]]
    if not found:
        sys.exit("gh: Not Found (HTTP 404)")
    found[0]["body"] = body["body"]
    print(json.dumps(found[0]))
else:
    sys.exit(f"gh: unexpected call {{args}}")
state_file.write_text(json.dumps(state))
'''


@pytest.fixture
def gh(repos) -> Path:
    folder = repos["tmp"] / "gh"
    folder.mkdir()
    state = folder / "state.json"
    quoting = {"id": 11, "body": f"> {MARKER}\n> the gate said so", "user": {"login": "reviewer"}}  # listed first
    state.write_text(json.dumps({"next_id": 500, "calls": [], "comments": [
        quoting, {"id": 12, "body": "LGTM", "user": {"login": "reviewer"}}]}))
    (folder / "gh").write_text(GH.format(python=sys.executable, state=str(state)))
    (folder / "gh").chmod(0o755)
    repos["env"]["PATH"] = f"{folder}{os.pathsep}{repos['env']['PATH']}"
    return state


def test_one_comment_is_created_then_updated(repos, machine, gh):
    run = gate(repos, machine, pull_request(repos, "main", "buggy"), comment="true")
    assert run.failed and run.first_failure() == "The gate's verdict", run.log
    state = json.loads(gh.read_text())
    assert [(c["method"], c["path"]) for c in state["calls"]] == [
        ("GET", "repos/octo/agent/issues/7/comments?per_page=100"), ("POST", "repos/octo/agent/issues/7/comments")]
    assert state["calls"][0]["paginate"] and {c["token"] for c in state["calls"]} == {TOKEN}
    created = state["comments"][-1]
    assert created["id"] == 500 and created["body"].split("\n")[0] == MARKER
    assert "**harness gate: FAILED** (exit 1)" in created["body"] and "**regression**" in created["body"]

    shutil.rmtree(repos["workspace"] / "harness-reports")  # the next push: the branch is fixed
    run = gate(repos, machine, pull_request(repos, "main", "docs"), comment="true")
    assert not run.failed, run.log
    state = json.loads(gh.read_text())
    assert [(c["method"], c["path"]) for c in state["calls"][2:]] == [
        ("GET", "repos/octo/agent/issues/7/comments?per_page=100"), ("PATCH", "repos/octo/agent/issues/comments/500")]
    assert [c["id"] for c in state["comments"]] == [11, 12, 500]  # still one comment of the gate's
    assert state["comments"][2]["body"].startswith(MARKER + "\n**harness gate: passed**")
    assert state["comments"][0]["body"].startswith("> ")  # the reviewer's quote was not taken for the gate's comment


def test_a_comment_refused_is_a_warning_not_the_verdict(repos, machine, gh):
    gh.write_text(json.dumps({**json.loads(gh.read_text()), "refuse": True}))
    run = gate(repos, machine, pull_request(repos, "main", "docs"), comment="true")
    assert not run.failed and run.outputs["action"]["result"] == "pass", run.log
    assert "::warning::harness gate: no pull-request comment: gh api repos/octo/agent/issues/7/comments?per_page=100: " \
           "gh: Resource not accessible by integration (HTTP 403)" in run.log


def test_no_comment_unless_asked(repos, machine, gh):
    run = gate(repos, machine, pull_request(repos, "main", "buggy"))
    assert run.ran("Pull-request comment") and json.loads(gh.read_text())["calls"] == []
    run = gate(repos, machine, pull_request(repos, "main", "docs"), comment="yes", **{"report-dir": "again"})
    assert "::error::harness gate: comment must be true or false, not 'yes'" in run.log
    assert run.first_failure() == "Pull-request comment" and dict(run.steps)["The gate's verdict"] == "ok"


# --------------------------------------------------------------------------- the steps' order and the actions of others


def test_everything_after_the_diff_runs_whatever_happened_and_the_verdict_comes_last():
    steps = action()["runs"]["steps"]
    names = [step["name"] for step in steps]
    assert names.index("harness diff: baseline vs candidate") < min(map(names.index, AFTER_THE_DIFF))
    assert names[-1] == "The gate's verdict" and all(step.get("if") == "always()" for step in steps[names.index(AFTER_THE_DIFF[0]):])
    setup, upload = [step for step in steps if "uses" in step]
    assert (setup["uses"], upload["uses"]) == ("actions/setup-python@v5", "actions/upload-artifact@v4")  # major versions
    assert setup["if"] == "inputs.python-version != ''" and setup["with"] == {"python-version": "${{ inputs.python-version }}"}
    assert upload["with"] == {"name": "${{ inputs.artifact-name }}", "path": "${{ inputs.report-dir }}", "if-no-files-found": "warn"}
    assert action()["outputs"] == {
        "result": {"description": "pass or fail", "value": "${{ steps.gate.outputs.result }}"},
        "report-dir": {"description": action()["outputs"]["report-dir"]["description"], "value": "${{ steps.gate.outputs.report-dir }}"}}


def test_the_evaluator_refuses_what_it_does_not_know():
    # What it refuses, the action may not use: a context this evaluator cannot stand for would go untested.
    for text in ("${{ github.action_path }}", "${{ github.event.pull_request.head.ref }}", "${{ inputs.nope }}",
                 "${{ steps.later.outputs.x }}", "${{ format('{0}', inputs.comment) }}", "${{ env.HOME }}"):
        with pytest.raises(UnknownExpression):
            evaluate(text, {}, {})
    assert evaluate("${{ inputs.baseline || inputs.report-dir }}", {}, {}) == "harness-reports"
    with pytest.raises(UnknownExpression):
        runs_anyway("success() && inputs.comment == 'true'", {}, {}, False)
