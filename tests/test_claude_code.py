"""The real Claude Code CLI, pinned and older builds, under every launch policy.

These run the native binaries from the tool folder (`make test` installs them
first; a missing build is installed here, and one that cannot be installed is
a failure that says why, never a skip). Every verdict is re-derived from the
raw request bytes in the journal file, independently of the checks, so a
check that drifted from the bytes fails here too.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from pathlib import Path

import pytest
from conftest import CLAUDE_CODE_KEY

from harness.journal.exchange import MAIN, OUTBOUND
from harness.results import RunResult
from harness.run.runner import run_scenario
from harness.scenario.reader import load_scenario, load_scenarios, scenario_from_text
from harness.targets import claude_code, resolve_target
from harness.targets.policy_family import POLICIES

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "scenarios" / "claude-code"
AUTO_COMPACTION = ROOT / "scenarios" / "claude-code-auto-compaction"
PINNED, OLDER = claude_code.PINNED_VERSION, claude_code.OLDER_VERSION
BILLING = "x-anthropic-billing-header:"


def names(version: str) -> list[str]:
    return [f"claude-code@{version}+{policy}" for policy in POLICIES]


# (scenario file, target name): the suite on both builds, auto-compaction on the pinned one (see its description).
MATRIX = [(path, name) for path in sorted(SUITE.glob("*.yaml")) for name in names(PINNED) + names(OLDER)] + [
    (path, name) for path in sorted(AUTO_COMPACTION.glob("*.yaml")) for name in names(PINNED)
]


def target(name: str):
    """Resolved inside the test: an install failure fails this test with npm's reason."""
    (resolved,) = resolve_target(name)
    return resolved


def run(scenario, name: str, tmp_path: Path) -> RunResult:
    return run_scenario(scenario, target(name), tmp_path / "journal.jsonl")


# ---------------------------------------------------------------------------------------- the bytes, read again


def raw_main_requests(journal: Path) -> list[dict]:
    """Main requests as sent: the journal's raw body bytes, parsed here without the harness's normalizer."""
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [json.loads(r["body"]) for r in records if r["class"] == MAIN and r["status"] == 200]


def system_texts(body: dict) -> list[str]:
    system = body.get("system") or []
    return [system] if isinstance(system, str) else [block["text"] for block in system]


def identity_line(body: dict) -> str | None:
    for text in system_texts(body):
        match = re.search(r"(?m)^You are [^\n]*", text)
        if match:
            return match.group(0)
    return None


def append_count(body: dict, append: str) -> int:
    count = sum(text.count(append) for text in system_texts(body))
    for message in body["messages"]:
        if message["role"] == "system":
            content = message["content"]
            parts = [content] if isinstance(content, str) else [b.get("text", "") for b in content]
            count += sum(part.count(append) for part in parts)
    return count


def cache_prefix(body: dict) -> tuple[str, str]:
    """Tools, then system blocks up to the last breakpoint; the billing block is metadata, outside the key."""
    system = body.get("system") or []
    if isinstance(system, str):
        system = [{"text": system}]
    marked = [i for i, block in enumerate(system) if block.get("cache_control")]
    kept = system[: marked[-1] + 1] if marked else system
    texts = [block["text"] for block in kept if not block["text"].startswith(BILLING)]
    return json.dumps(body.get("tools") or [], sort_keys=True), "\n\n".join(texts)


def verdicts_from_bytes(journal: Path, append: str) -> dict[str, str]:
    bodies = raw_main_requests(journal)
    assert bodies, f"no main request in {journal}"

    def same(values: list) -> str:
        return "pass" if all(v == values[0] for v in values) and values[0] is not None else "fail"

    return {
        "identity_stable": same([identity_line(b) for b in bodies]),
        "appended_exactly_once": "pass" if all(append_count(b, append) == 1 for b in bodies) else "fail",
        "prefix_stable": same([cache_prefix(b) for b in bodies]),
    }


# ---------------------------------------------------------------------------------------- the builds


@pytest.mark.parametrize("version", [PINNED, OLDER])
def test_the_build_is_installed_and_runs_natively(version):
    command = claude_code.cli_command(version)
    assert len(command) == 1 and command[0].endswith("/claude"), f"expected the native binary, got {command}"
    assert Path(command[0]).resolve().is_relative_to(claude_code_tools_root())
    shown = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and version in shown.stdout, (shown.stdout, shown.stderr)


def claude_code_tools_root() -> Path:
    from harness.targets.installs import tools_root

    return (tools_root() / "claude-code").resolve()


# ---------------------------------------------------------------------------------------- the suite


def test_the_suite_covers_the_seeds_sequences_with_every_policy():
    scenarios = load_scenarios([SUITE])
    kinds = {s.name: [step.kind for step in s.steps] for s in scenarios}
    assert any(k[:2] == ["launch", "retry"] for k in kinds.values()), "wrong answer then retry"
    assert any(any(step.error for step in s.steps) and s.steps[-1].kind == "retry" for s in scenarios), "uncaught error then retry"
    assert any("compact" in k and k[-1] == "resume" for k in kinds.values()), "compaction then resume"
    assert any(s.workdir == "git" and any(step.commit for step in s.steps) for s in scenarios), "a repository that changes"
    assert {n.split("+")[1] for _, n in MATRIX} == set(POLICIES)


@pytest.mark.parametrize("path,name", MATRIX, ids=[f"{p.stem}·{n}" for p, n in MATRIX])
def test_suite_verdicts_match_expectations_and_the_raw_bytes(path, name, tmp_path, record_property):
    scenario = load_scenario(path)
    result = run(scenario, name, tmp_path)
    assert result.status != "error", result.error
    steps = result.steps
    assert all(s.unforeseen == 0 and s.unused_turns == 0 for s in steps), [(s.index, s.notes) for s in steps]
    assert not any(s.classes.get(OUTBOUND) or s.classes.get("malformed") for s in steps), [s.classes for s in steps]
    assert len({pid for s in steps for pid in s.pids}) == len(steps), "each step is its own process"
    mismatches = [f"{c.check}: expected {c.expected_verdict}, got {c.verdict}\n{c.message}" for c in result.checks if not c.as_expected]
    assert not mismatches, "\n\n".join(mismatches)
    from_bytes = verdicts_from_bytes(tmp_path / "journal.jsonl", scenario.append)
    from_checks = {c.check: c.verdict for c in result.checks if c.check in from_bytes}
    assert from_checks == from_bytes
    record_property(CLAUDE_CODE_KEY, json.dumps({
        "target": name, "scenario": scenario.name, "fails": [c.check for c in result.checks if c.verdict == "fail"],
    }))


# ---------------------------------------------------------------------------------------- findings, with evidence


def check_of(result: RunResult, name: str):
    return next(c for c in result.checks if c.check == name)


def test_older_build_flips_identity_and_drops_the_text_at_the_first_resume_without_the_flag(tmp_path):
    result = run(load_scenario(SUITE / "wrong-answer-then-retry.yaml"), f"claude-code@{OLDER}+append-first-launch-only", tmp_path)
    identity = check_of(result, "identity_stable")
    assert (identity.verdict, identity.step) == ("fail", 2)
    assert identity.expected == "You are Claude Code, Anthropic's official CLI for Claude, running within the Claude Agent SDK."
    assert identity.observed == "You are a Claude agent, built on Anthropic's Claude Agent SDK."
    appended = check_of(result, "appended_exactly_once")
    assert [r["count"] for r in appended.evidence["by_request"]] == [1, 0]


def test_pinned_build_keeps_the_first_launch_text_until_compaction(tmp_path):
    result = run(load_scenario(SUITE / "compact-then-resume.yaml"), f"claude-code@{PINNED}+append-first-launch-only", tmp_path)
    appended = check_of(result, "appended_exactly_once")
    assert [(r["step"], r["count"]) for r in appended.evidence["by_request"]] == [(1, 1), (2, 1), (4, 0)]
    identity = check_of(result, "identity_stable")
    assert (identity.step, identity.observed) == (4, "You are a Claude agent, built on Anthropic's Claude Agent SDK.")
    compact = result.steps[2]
    assert compact.classes == {"compaction": 1}, compact.classes


def test_older_build_resumes_as_another_model_even_with_the_flag(tmp_path):
    result = run(load_scenario(SUITE / "wrong-answer-then-retry.yaml"), f"claude-code@{OLDER}+append-every-launch", tmp_path)
    prefix = check_of(result, "prefix_stable")
    assert (prefix.verdict, prefix.step) == ("fail", 2)
    assert "(1M context)" in prefix.evidence["expected_context"] and "(1M context)" not in prefix.evidence["observed_context"]
    assert prefix.evidence["excluded_blocks"] == [0]


def test_repository_state_reaches_the_system_prompt_of_the_older_build_only(tmp_path):
    scenario = load_scenario(SUITE / "two-turns-in-a-git-repository.yaml")
    for version, in_system in ((OLDER, True), (PINNED, False)):
        journal = tmp_path / version
        journal.mkdir()
        result = run_scenario(scenario, target(f"claude-code@{version}+append-every-launch"), journal / "journal.jsonl")
        assert result.status != "error", result.error
        bodies = raw_main_requests(journal / "journal.jsonl")
        second_system = "\n".join(system_texts(bodies[1]))
        assert ("Add notes" in second_system) is in_system, version
        assert "Add notes" not in "\n".join(system_texts(bodies[0]))


def test_a_failed_turn_exits_non_zero_and_the_retry_resumes_the_same_session(tmp_path):
    result = run(load_scenario(SUITE / "uncaught-error-then-retry.yaml"), f"claude-code@{PINNED}+append-every-launch", tmp_path)
    launch, failed, retry = result.steps
    assert failed.exit_code == 1 and failed.error is None and any("scripted API error" in n for n in failed.notes)
    assert launch.session_id == failed.session_id == retry.session_id
    records = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert {r["status"] for r in records if r["step"] == 2} == {400}


def test_nothing_leaves_the_machine_and_the_catch_is_real(tmp_path):
    """With the target's offline settings no request goes anywhere but the fake API; without them
    the CLI's background traffic shows up in the journal as refused outbound requests."""
    scenario = scenario_from_text("name: one-turn\nchecks: [identity_stable]\nsteps:\n  - launch: {prompt: hi, reply: hello}\n")
    offline = run_scenario(scenario, target(f"claude-code@{PINNED}+append-never"), tmp_path / "offline.jsonl")
    assert offline.status == "pass" and OUTBOUND not in offline.steps[0].classes
    chatty_target = target(f"claude-code@{PINNED}+append-never")
    chatty_env = {k: v for k, v in chatty_target.env.items() if k != "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"}
    chatty = run_scenario(scenario, dataclasses.replace(chatty_target, env=chatty_env), tmp_path / "chatty.jsonl")
    assert chatty.steps[0].classes.get(OUTBOUND, 0) > 0, chatty.steps[0].classes
    assert any("refused" in note for note in chatty.steps[0].notes)


# ---------------------------------------------------------------------------------------- the findings page's table


README_COLUMNS = [  # the table's scenario columns, left to right
    SUITE / "wrong-answer-then-retry.yaml",
    SUITE / "uncaught-error-then-retry.yaml",
    SUITE / "compact-then-resume.yaml",
    SUITE / "two-turns-in-a-git-repository.yaml",
    AUTO_COMPACTION / "auto-compaction-then-resume.yaml",
    SUITE / "headless-then-interactive.yaml",
    SUITE / "interactive-resume.yaml",
]
SHORT = {"identity": "identity_stable", "appended": "appended_exactly_once", "prefix": "prefix_stable", "history": "history_preserved"}


def readme_rows() -> list[list[str]]:
    text = (ROOT / "docs" / "findings" / "claude-code.md").read_text(encoding="utf-8")
    table = text.split("<!-- claude-code-table:start -->")[1].split("<!-- claude-code-table:end -->")[0]
    lines = [line for line in table.strip().splitlines() if line.startswith("|")][2:]  # header, rule
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_the_readme_table_says_what_the_measured_expectations_say():
    """The expectations are asserted against the real builds above; docs/findings/claude-code.md may not drift from them."""
    rows = readme_rows()
    assert {(version, policy) for version, policy, *_ in rows} == {
        (v, p) for v in (PINNED, OLDER) for p in POLICIES
    }
    ran = {(path, name) for path, name in MATRIX}
    for version, policy, *cells in rows:
        name = f"claude-code@{version}+{policy}"
        assert len(cells) == len(README_COLUMNS), (name, cells)
        for path, cell in zip(README_COLUMNS, cells):
            if (path, name) not in ran:
                assert cell.startswith("not run"), (path.stem, name, cell)
                continue
            scenario = load_scenario(path)
            failing = {c for c in scenario.checks if scenario.expected_verdict(name, c) == "fail"}
            said = set() if cell == "pass" else {SHORT[word.strip()] for word in cell.split(",")}
            assert said == failing, (path.stem, name, cell)


# ---------------------------------------------------------------------------------------- the merge gate on the real CLI


def test_the_seeds_fix_as_a_diff_on_the_real_cli(tmp_path):
    """The seed's change (the text on every launch, not the first only) fixes identity and appended text on
    2.1.236; its prefix stays broken on both sides (the 1M-context model name), which the gate does not blame on it."""
    import subprocess
    import sys

    args = [sys.executable, "-m", "harness", "diff", str(SUITE / "wrong-answer-then-retry.yaml"), "-q"]
    fixed = subprocess.run([*args, "--baseline", f"claude-code@{OLDER}+append-first-launch-only",
                            "--candidate", f"claude-code@{OLDER}+append-every-launch", "--report-dir", str(tmp_path / "fix"),
                            "--require-fix", "cc-wrong-answer-then-retry"], capture_output=True, text=True, timeout=300)
    assert fixed.returncode == 1, fixed.stdout  # required fix: the candidate must pass *every* check, and prefix still fails
    data = json.loads((tmp_path / "fix" / "comparison.json").read_text())
    changes = {check: v["change"] for check, v in data["scenarios"][0]["checks"].items()}
    assert changes == {"identity_stable": "fix", "appended_exactly_once": "fix", "prefix_stable": "unchanged-fail",
                       "history_preserved": "unchanged-pass"}
    assert data["gate_failures"] == ["required fix missing: cc-wrong-answer-then-retry must fail on the baseline and pass "
                                     "on the candidate (the candidate does not pass it)"]
    report = (tmp_path / "fix" / "report.html").read_text()
    assert 'class="first-diff"' in report and "(1M context)" in report

    broken = subprocess.run([*args, "--baseline", f"claude-code@{PINNED}+append-every-launch",
                             "--candidate", f"claude-code@{OLDER}+append-every-launch", "--report-dir", str(tmp_path / "old")],
                            capture_output=True, text=True, timeout=300)
    assert broken.returncode == 1
    assert "✗ regression: cc-wrong-answer-then-retry · prefix_stable (pass → fail, from step 2 (retry))" in broken.stdout
    assert "Opus 5⟦ ⟧(1M context)" in broken.stdout  # the evidence: which byte moved
