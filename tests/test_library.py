"""The scenario library against the reference agent: clean passes, every defect is caught.

Each target runs every scenario for real (fresh processes, real fake API);
the expectations written in the scenario files must hold exactly. The rows
feed the defect-matrix table printed at the end of the test run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import MATRIX_KEY

from harness.checks import CHECK_NAMES, OPT_IN_CHECKS
from harness.reference_agent.defects import KNOWN_DEFECTS
from harness.results import CANNOT_EXPRESS
from harness.run.runner import run_matrix
from harness.scenario.reader import load_scenarios
from harness.targets import resolve_target

LIBRARY = Path(__file__).resolve().parent.parent / "scenarios"
TARGETS = resolve_target("reference:*")


def test_library_covers_the_seeds_sequences():
    scenarios = load_scenarios([LIBRARY])
    kinds = [[step.kind for step in s.steps] for s in scenarios]
    assert any("retry" in k and k.index("retry") == 1 for k in kinds), "wrong answer then retry"
    assert any("compact" in k and "resume" in k[k.index("compact"):] for k in kinds), "compaction then resume"
    assert any(len(k) >= 3 and all(x != "compact" for x in k) for k in kinds), "several turns, 3+ processes"
    assert any(
        turn.usage and (turn.usage.cache_read_input_tokens or 0) + (turn.usage.input_tokens or 0) > 150_000
        for s in scenarios for step in s.steps for turn in step.turns
    ), "auto-compaction pushed by usage numbers"


def test_every_check_is_expected_to_fail_for_some_defect_and_every_defect_somewhere():
    """Static half of the proof; the runs below show the expectations hold on the bytes."""
    scenarios = load_scenarios([LIBRARY])
    expected_fails = {
        (t, c) for s in scenarios for t, verdicts in s.expect.items() for c, v in verdicts.items()
        if v == "fail" and t.startswith("reference")
    }
    # The launch checks judge the launcher, which the reference target gets right; test_launch_journal.py and
    # test_inspect_swe.py show them failing on launchers that drop, double or rebuild the caller's text.
    assert {c for _, c in expected_fails} == set(CHECK_NAMES) - set(OPT_IN_CHECKS)
    assert {t for t, _ in expected_fails} == {f"reference:{d}" for d in KNOWN_DEFECTS}


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_library_verdicts_on_reference_target(target, record_property):
    scenarios = load_scenarios([LIBRARY])
    results = run_matrix(scenarios, [target])
    agent_checks = [c for c in CHECK_NAMES if c not in OPT_IN_CHECKS]  # the matrix is about the agent's defects
    fails = {c: sum(1 for r in results if r.verdict_of(c) == "fail") for c in agent_checks}
    judged = {c: sum(1 for r in results if any(v.check == c for v in r.checks)) for c in agent_checks}
    record_property(MATRIX_KEY, json.dumps({
        "target": target.name, "order": [t.name for t in TARGETS].index(target.name), "checks": agent_checks,
        "fails": fails, "judged": judged, "scenarios": len(results), "as_expected": sum(r.as_expected for r in results),
    }))
    errors = [f"{r.scenario}: {r.error}" for r in results if r.status == "error"]
    assert not errors, errors
    mismatches = [
        f"{r.scenario} · {c.check}: expected {c.expected_verdict}, got {c.verdict}\n{c.message}"
        for r in results for c in r.checks if not c.as_expected
    ]
    assert not mismatches, "\n\n".join(mismatches)
    if target.name == "reference":
        # An interactive step needs a terminal UI, which the reference agent has not: those scenarios are not its.
        interactive = {s.name for s in scenarios if any(step.interactive for step in s.steps)}
        assert all(r.status == "pass" or (r.status == CANNOT_EXPRESS and r.scenario in interactive) for r in results)
    else:
        assert sum(fails.values()) > 0, f"{target.name} escaped every check of the library"


def test_the_documented_target_file_contract_passes_the_library():
    """examples/minimal-agent is the README's target-file contract, run by plain `python3`."""
    contract = resolve_target(str(LIBRARY.parent / "examples" / "minimal-agent" / "target.yaml"))
    # Temporary text is what a particular agent adds (or its target passes as {temporary}); the contract adds
    # none, and a check with nothing to judge is an error by design, so those scenarios are not its to pass.
    # Nor are forks and continues, which the contract's commands do not name (a step's `session:`), nor steps in a
    # terminal UI (`interactive:`), which a target file cannot declare.
    generic = [s for s in load_scenarios([LIBRARY])
               if not s.temporary and not s.step_temporary and not any(step.session or step.interactive for step in s.steps)]
    results = run_matrix(generic, contract)
    problems = [f"{r.scenario}: {r.status} {r.error or ''} " + "; ".join(c.message for c in r.checks if c.verdict != "pass")
                for r in results if r.status != "pass"]
    assert not problems, "\n".join(problems)
    compacted = [r for r in results if any(s.kind == "compact" for s in r.steps)]
    assert compacted and all(s.requests >= 1 for r in compacted for s in r.steps)
