"""The Claude Agent SDKs for Python and TypeScript, each step one query() in a fresh process, under every policy.

The SDK releases come from the tool folder (`make tools` installs them; a
missing one is installed here, and one that cannot be installed fails with the
installer's reason, never a skip). Every verdict is derived again from the
bytes: the request checks from the journal's raw bodies (as
tests/test_claude_code.py does), the launch checks from the launch journal's
raw lines, argv and the `initialize` request the TypeScript SDK writes on the
CLI's stdin. Launchers broken on purpose (a copy of each SDK with one line
changed) show the checks fail where the text is dropped or doubled.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_claude_code import verdicts_from_bytes

from harness.journal.launches import SHIM, launch_journal_path
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario
from harness.targets import claude_agent_sdk, claude_agent_sdk_ts, resolve_target
from harness.targets.agent_sdk import POLICIES

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "scenarios" / "agent-sdk"
FAMILIES = {claude_agent_sdk.NAME: (claude_agent_sdk, "2.1.332"), claude_agent_sdk_ts.NAME: (claude_agent_sdk_ts, "2.1.328")}
MATRIX = [(path, f"{name}+{policy}") for path in sorted(SUITE.glob("*.yaml")) for name in FAMILIES for policy in POLICIES]


def target(spec: str):
    (resolved,) = resolve_target(spec)
    return resolved


def launch_verdicts_from_bytes(journal: Path, append: str) -> dict[str, str]:
    """launch_appended_exactly_once from the launch journal's own lines: the text in argv and in what came on stdin."""
    counts: dict[int, int] = {}
    for line in launch_journal_path(journal).read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["event"] == "start":
            assert record["recorded_by"] == SHIM and record["argv"][0] == "claude", record
            counts[record["seq"]] = sum(arg.count(append) for arg in record["argv"][1:])
        elif record["event"] == "control":
            counts[record["seq"]] += json.dumps(record["request"], ensure_ascii=False).count(append)
    assert counts, "no launch recorded"
    return {"launch_appended_exactly_once": "pass" if set(counts.values()) == {1} else "fail"}


@pytest.mark.parametrize("name, bundled", [(n, v) for n, (_, v) in FAMILIES.items()])
def test_each_sdk_runs_the_cli_build_its_package_bundles(name, bundled):
    module = FAMILIES[name][0]
    installed = module.install(module.PINNED_VERSION)
    assert installed.bundled_version == bundled
    shown = subprocess.run([str(installed.bundled_cli), "--version"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and shown.stdout.startswith(bundled), (shown.stdout, shown.stderr)
    assert target(f"{name}+append-never").name == f"{name}@{module.PINNED_VERSION}+claude-code@{bundled}+append-never"


@pytest.mark.parametrize("path, spec", MATRIX, ids=[f"{p.stem}·{s}" for p, s in MATRIX])
def test_suite_verdicts_match_expectations_and_the_raw_bytes(path, spec, tmp_path):
    scenario = load_scenario(path)
    result = run_scenario(scenario, target(spec), tmp_path / "journal.jsonl")
    assert result.status != "error", result.error
    assert all(s.unforeseen == 0 and s.unused_turns == 0 for s in result.steps), [(s.index, s.notes) for s in result.steps]
    mismatches = [f"{c.check}: expected {c.expected_verdict}, got {c.verdict}\n{c.message}" for c in result.checks if not c.as_expected]
    assert not mismatches, "\n\n".join(mismatches)
    from_bytes = {**verdicts_from_bytes(tmp_path / "journal.jsonl", scenario.append),
                  **launch_verdicts_from_bytes(tmp_path / "journal.jsonl", scenario.append)}
    assert {c.check: c.verdict for c in result.checks if c.check in from_bytes} == from_bytes


# ---------------------------------------------------------------------------------------- broken launchers


def python_sdk_patched(tmp_path: Path, old: str, new: str):
    """The pinned Python SDK with one line of its command building changed, first on the step's PYTHONPATH."""
    resolved = target(f"{claude_agent_sdk.NAME}+append-every-launch")
    venv = Path(resolved.commands["launch"][0]).parent.parent
    (package,) = venv.glob("lib/python*/site-packages/claude_agent_sdk")
    copy = tmp_path / "patched" / "claude_agent_sdk"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("_bundled", "__pycache__"))
    source = copy / "_internal" / "transport" / "subprocess_cli.py"
    text = source.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the SDK's command building changed: {old!r} not found once"
    source.write_text(text.replace(old, new), encoding="utf-8")
    return dataclasses.replace(resolved, name="claude-agent-sdk-patched",
                               env={**resolved.env, "PYTHONPATH": str(copy.parent)})


def ts_sdk_patched(tmp_path: Path, old: str, new: str):
    """The pinned TypeScript SDK with one expression changed: a node_modules of links to the install but this copy."""
    resolved = target(f"{claude_agent_sdk_ts.NAME}+append-every-launch")
    sdk_arg = next(part for part in resolved.commands["launch"] if part.startswith("--sdk="))
    package = Path(sdk_arg[len("--sdk="):]).parent
    modules, scope = package.parent.parent, package.parent.name
    linked = tmp_path / "node_modules"
    linked.mkdir()
    for entry in modules.iterdir():
        if entry.name != scope:
            (linked / entry.name).symlink_to(entry)
    (linked / scope).mkdir()
    for entry in package.parent.iterdir():
        if entry.name != package.name:
            (linked / scope / entry.name).symlink_to(entry)
    copy = linked / scope / package.name
    shutil.copytree(package, copy)
    script = copy / Path(sdk_arg).name
    text = script.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the SDK's initialize request changed: {old!r} not found once"
    script.write_text(text.replace(old, new), encoding="utf-8")
    commands = {kind: tuple(f"--sdk={script}" if part == sdk_arg else part for part in argv)
                for kind, argv in resolved.commands.items()}
    return dataclasses.replace(resolved, name="claude-agent-sdk-ts-patched", commands=commands)


def verdicts(result) -> dict[str, str]:
    return {c.check: c.verdict for c in result.checks}


def test_a_python_sdk_that_drops_the_text_on_resumed_queries_fails_the_launch_check(tmp_path):
    broken = python_sdk_patched(tmp_path, 'elif sp.get("type") == "preset" and "append" in sp:',
                                'elif sp.get("type") == "preset" and "append" in sp and not self._options.resume:')
    result = run_scenario(load_scenario(SUITE / "sdk-compact-then-resume.yaml"), broken, tmp_path / "journal.jsonl")
    launch = next(c for c in result.checks if c.check == "launch_appended_exactly_once")
    assert (launch.verdict, launch.step, launch.observed) == ("fail", 2, 0)
    # The CLI keeps the first launch's text in its session file until the compaction: the requests lose it after.
    appended = next(c for c in result.checks if c.check == "appended_exactly_once")
    assert [(r["step"], r["count"]) for r in appended.evidence["by_request"]] == [(1, 1), (2, 1), (4, 0)]
    assert verdicts(result)["identity_stable"] == "fail"


def test_a_typescript_sdk_that_doubles_the_text_fails_both_vantage_points(tmp_path):
    broken = ts_sdk_patched(tmp_path, "appendSystemPrompt:this.initConfig?.appendSystemPrompt,",
                            "appendSystemPrompt:this.initConfig?.appendSystemPrompt&&this.initConfig.appendSystemPrompt"
                            "+'\\n'+this.initConfig.appendSystemPrompt,")
    result = run_scenario(load_scenario(SUITE / "sdk-second-turn-fork-continue.yaml"), broken, tmp_path / "journal.jsonl")
    launch = next(c for c in result.checks if c.check == "launch_appended_exactly_once")
    assert (launch.verdict, launch.step, launch.observed) == ("fail", 1, 2)
    assert "configured over stdin with:" in launch.message
    appended = next(c for c in result.checks if c.check == "appended_exactly_once")
    assert (appended.verdict, appended.step) == ("fail", 1)
    assert {r["count"] for r in appended.evidence["by_request"]} == {2}
