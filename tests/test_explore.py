"""`harness explore`: every reference defect is found, shrunk, written and fails on replay; the clean agent survives.

All against the real reference agent (in-process through respx where the test
needs hundreds of sequences, as fresh processes where it says so) and the real
fake API; the findings are replayed through the ordinary runner.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_interrupt import descendants_of

from harness import cli
from harness.errors import InputError
from harness.explore import vocabulary as voc
from harness.explore.found import replay, write_finding
from harness.explore.machine import RUN_ERROR
from harness.explore.search import Budget, explore_target
from harness.reference_agent.defects import KNOWN_DEFECTS
from harness.results import PASS
from harness.run.runner import run_scenario
from harness.scenario.reader import find_scenario_files, load_scenario, load_scenarios, scenario_from_text
from harness.targets import resolve_target

# The check each defect must be caught by first (the first failing check in the scenario's order, at the
# first step where anything fails), and the step kinds the shortest sequence needs.
SHORTEST = {
    "drop-append-on-resume": ("appended_exactly_once", ["launch", "resume"]),
    "duplicate-append-on-resume": ("appended_exactly_once", ["launch", "resume"]),
    "fresh-identity-per-process": ("identity_stable", ["launch", "resume"]),
    "growing-prompt-fragment": ("prefix_stable", ["launch", "resume"]),
    "append-lost-after-compaction": ("appended_exactly_once", ["launch", "resume", "compact", "resume"]),
    "temporary-text-frozen-into-prefix": ("prefix_stable", ["launch", "resume"]),
    "timestamp-in-prefix": ("prefix_stable", ["launch", "resume"]),
    "forget-last-reply": ("history_preserved", ["launch", "resume"]),
    "temporary-text-in-history": ("temporary_text_transient", ["launch", "resume"]),
}


def target(spec: str):
    (found,) = resolve_target(spec)
    return found


def kinds(steps) -> list[str]:
    return [next(iter(step)) for step in steps]


def test_the_expectations_name_every_defect():
    assert sorted(SHORTEST) == sorted(KNOWN_DEFECTS)


@pytest.mark.parametrize("defect", KNOWN_DEFECTS)
def test_each_defect_is_found_in_the_default_budget_and_its_scenario_fails_on_replay(defect, tmp_path):
    explored = target(f"reference:{defect}+in-process")
    outcome = explore_target(explored, Budget(profile="ci"))
    check, shortest = SHORTEST[defect]
    assert [f.check for f in outcome.findings][:1] == [check], outcome.findings
    finding = outcome.findings[0]
    assert kinds(finding.steps) == shortest, finding.steps
    assert finding.step == len(finding.steps), "a sequence is judged after every step: it ends where it first fails"
    assert outcome.sequences <= outcome.max_examples * 50  # shrinking is bounded, generation within the budget

    written = write_finding(finding, explored, tmp_path, "test")
    scenario = load_scenario(written.path)
    assert scenario.expect == {} and check in scenario.checks
    for replayed_on in (explored, target(f"reference:{defect}")):  # in-process, then as fresh processes
        reproduced, result = replay(written.path, finding, replayed_on)
        assert reproduced, (replayed_on.name, result.checks)
    clean = run_scenario(scenario, target("reference"))
    assert clean.status == PASS, "a finding must pass on a correct agent, or it is the harness's bug"


def test_the_clean_reference_survives_a_long_exploration():
    outcome = explore_target(target("reference+in-process"), Budget(profile="ci", examples=400, max_steps=8))
    assert outcome.findings == []
    assert outcome.sequences >= 400 and outcome.steps >= 400 * 6  # it really ran that many, not a vacuous pass


def test_every_step_kind_is_explored_and_runs_cleanly():
    seen: set[str] = set()
    rules: set[str] = set()

    def note(exploration, docs, finding):
        for doc in docs:
            kind, body = next(iter(doc.items()))
            seen.add(kind)
            rules.update(k for k in ("error", "edit", "commit", "temporary") if k in body)
            if isinstance(body.get("reply"), list):
                rules.add("tool_use")
            if kind == "retry" and body["prompt"].startswith("That is not right"):
                rules.add("wrong-answer retry")

    outcome = explore_target(target("reference+in-process"), Budget(profile="ci", examples=150), note)
    assert outcome.findings == []
    assert seen == {"launch", "resume", "retry", "compact"}
    # In-process the working directory is a plain folder (git would be a subprocess): edits, no commits.
    assert rules == {"error", "edit", "temporary", "tool_use", "wrong-answer retry"}
    assert set(outcome.rules) == {"launch", "resume", "retry_after_wrong_answer", "retry_after_failed_turn",
                                  "turn_failed_by_api", "compact", "tool_call_turn", "workdir_change_turn",
                                  "turn_with_temporary_text"}


def test_a_process_target_explores_commits_in_a_git_repository():
    commits = []
    outcome = explore_target(target("reference"), Budget(profile="ci", examples=12),
                             lambda e, docs, f: commits.extend(d for d in docs if "commit" in next(iter(d.values()))))
    assert outcome.findings == [] and commits, outcome.rules


def test_in_process_exploration_starts_no_process_and_opens_no_socket():
    seen: list[str] = []
    watching = [True]

    def hook(event, args):
        if watching[0] and event in ("subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec", "socket.connect",
                                     "socket.bind", "socket.getaddrinfo"):
            seen.append(event)

    sys.addaudithook(hook)  # hooks cannot be removed: this one stops looking when the test ends
    try:
        outcome = explore_target(target("reference+in-process"), Budget(profile="ci", examples=40))
    finally:
        watching[0] = False
    assert outcome.findings == [] and outcome.steps > 100
    assert seen == []


def test_the_same_seed_gives_the_same_sequences_and_another_seed_others():
    def sequences(seed: int) -> list[list[dict]]:
        runs: list[list[dict]] = []
        explore_target(target("reference+in-process"), Budget(examples=30, seed=seed),
                       lambda exploration, docs, finding: runs.append([dict(d) for d in docs]))
        return runs

    first = sequences(11)
    assert len(first) >= 30 and first == sequences(11)
    assert first != sequences(12)


def test_a_finding_replays_through_harness_run_as_a_failure(tmp_path, capsys):
    code = cli.main(["explore", "--target", "reference:forget-last-reply+in-process", "--profile", "ci",
                     "--out", str(tmp_path / "found"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 1, out
    (written,) = (tmp_path / "found").glob("*.yaml")
    assert f"written: {written}" in out
    assert "replayed on reference:forget-last-reply+in-process: fails again" in out
    assert "replayed on reference:forget-last-reply: fails again" in out
    code = cli.main(["run", str(written), "--target", "reference:forget-last-reply",
                     "--report-dir", str(tmp_path / "report"), "--quiet"])
    assert code == 1
    assert "history_preserved" in capsys.readouterr().out


def test_the_clean_target_exits_zero_and_says_what_it_tried(tmp_path, capsys):
    code = cli.main(["explore", "--target", "reference+in-process", "--examples", "20", "--seed", "3",
                     "--out", str(tmp_path), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert re.search(r"tried \d+ sequences, \d+ steps", out)
    assert "seed 3" in out and "no failing sequence" in out
    assert not list(tmp_path.iterdir())


def test_explore_as_fresh_processes_finds_the_same_shortest_sequence(tmp_path):
    """The subprocess mode, on a small budget: the in-process search is not the only one that works."""
    outcome = explore_target(target("reference:drop-append-on-resume"), Budget(profile="ci", examples=10))
    assert [(f.check, kinds(f.steps)) for f in outcome.findings][:1] == [("appended_exactly_once", ["launch", "resume"])]


@pytest.mark.parametrize("argv, message", [
    (["--max-steps", "1"], "--max-steps must be at least 2"),
    (["--examples", "0"], "--examples must be at least 1"),
    (["--seed", "-1"], "--seed must be a non-negative integer"),
    (["--target", "reference:no-such-defect"], "unknown reference defect"),
    (["--out", "/proc/found"], "cannot write findings there:"),
])
def test_bad_input_is_a_usage_error_naming_what(argv, message, capsys, tmp_path):
    base = ["explore"] + ([] if "--out" in argv else ["--out", str(tmp_path)])
    base += [] if "--target" in argv else ["--target", "reference+in-process"]
    assert cli.main(base + argv) == cli.EXIT_INPUT
    assert message in capsys.readouterr().err


def test_a_launcher_target_is_refused_with_the_reason():
    from harness.execution.launcher import LauncherSteps
    from harness.targets.base import SessionIdSource, Target

    launched = Target(name="one-launcher", commands={}, session_id=SessionIdSource("stdout_json", "session_id"),
                      executor=LauncherSteps(object()))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="one launcher process"):
        explore_target(launched, Budget())


def test_a_step_that_does_not_complete_is_a_finding_of_its_own(tmp_path):
    """A target whose resume crashes: the shortest failing sequence is launch → resume, as a run error."""
    crashing = target("reference")
    commands = dict(crashing.commands)
    commands["resume"] = ("{python}", "-c", "import sys; sys.exit(3)")
    from dataclasses import replace

    crashing = replace(crashing, name="reference-crashing-resume", commands=commands)
    outcome = explore_target(crashing, Budget(profile="ci", examples=10))
    assert [(f.check, kinds(f.steps)) for f in outcome.findings][:1] == [(RUN_ERROR, ["launch", "resume"])]
    written = write_finding(outcome.findings[0], crashing, tmp_path, "test")
    reproduced, result = replay(written.path, outcome.findings[0], crashing)
    assert reproduced and "exited with code 3" in result.error


def test_every_generated_step_is_a_valid_scenario_step():
    q = voc.Question(2, 3)
    steps = (voc.launch(q) + voc.resume(q) + voc.retry_after_wrong_answer(q) + voc.turn_failed_by_api(q, voc.API_ERRORS[1])
             + voc.retry_after_failed_turn(voc.turn_failed_by_api(q, voc.API_ERRORS[0])[0], q) + voc.resume(q) + voc.compact(7)
             + voc.tool_call_turn(q, {"name": "calculator", "input": {"expression": "2+3"}})
             + voc.workdir_change_turn(q, 1, commit=True) + voc.turn_with_temporary_text(q))
    scenario = scenario_from_text(voc.scenario_text("all-kinds", steps))
    assert [s.kind for s in scenario.steps] == ["launch", "resume", "retry", "resume", "retry", "resume", "compact",
                                                "resume", "resume", "resume"]
    assert scenario.steps[3].error.status == 529 and scenario.steps[8].commit and scenario.steps[9].temporary
    result = run_scenario(scenario, target("reference+in-process"))
    assert result.status == PASS, result.error or [c for c in result.checks if c.verdict != PASS]


def test_a_target_files_tool_call_is_explored_on_the_agent_itself(tmp_path):
    """The example agent's file, with its own calculator named: explore's tool-call turns call it, and pass."""
    example = Path(__file__).resolve().parents[1] / "examples" / "minimal-agent"
    path = tmp_path / "target.yaml"
    path.write_text((example / "target.yaml").read_text().replace("{target_dir}", str(example))
                    + 'tool_call: {name: calculator, input: {expression: "6*7"}}\n')
    calls = []
    outcome = explore_target(target(str(path)), Budget(profile="ci", examples=6, max_steps=3),
                             lambda e, docs, f: calls.extend(block["tool_use"] for d in docs for body in d.values()
                                                             for block in body.get("reply", []) if isinstance(block, dict)))
    assert "tool_call_turn" not in outcome.unavailable and outcome.rules.get("tool_call_turn"), outcome.rules
    assert calls and all(call == {"name": "calculator", "input": {"expression": "6*7"}} for call in calls)
    assert outcome.findings == []


def test_the_found_inbox_is_left_out_of_library_runs_unless_named(tmp_path):
    library = tmp_path / "scenarios"
    (library / "found").mkdir(parents=True)
    (library / "kept.yaml").write_text(voc.scenario_text("kept", voc.launch(voc.Question(1, 2))))
    (library / "found" / "new.yaml").write_text(voc.scenario_text("new", voc.launch(voc.Question(1, 2))))
    assert [p.name for p in find_scenario_files(library)] == ["kept.yaml"]
    assert [s.name for s in load_scenarios([library / "found"])] == ["new"]


def test_a_written_finding_reads_back_and_names_itself(tmp_path):
    outcome = explore_target(target("reference:fresh-identity-per-process+in-process"), Budget(profile="ci"))
    finding = outcome.findings[0]
    first = write_finding(finding, outcome.target, tmp_path, "harness explore --seed 5")
    again = write_finding(finding, outcome.target, tmp_path, "harness explore --seed 5")
    assert first.path == again.path and len(list(tmp_path.iterdir())) == 1  # the same sequence, the same file
    text = first.path.read_text()
    assert text.startswith("# Found by: harness explore --seed 5\n# Replay:   harness run ")
    assert load_scenario(first.path).name == first.name == first.path.stem
    assert "identity_stable fails at step 2 of 2 (launch → resume)" in load_scenario(first.path).description


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_exploration_exits_130_writes_nothing_and_leaves_no_process(stop, tmp_path):
    out = tmp_path / "found"
    proc = subprocess.Popen([sys.executable, "-m", "harness", "explore", "--target", "reference", "--seed", "1",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    lines = []
    for line in proc.stdout:  # wait until steps are running: a progress line names the steps so far
        lines.append(line)
        if "steps," in line:
            break
    children = descendants_of(proc.pid)
    proc.send_signal(stop)
    rest, _ = proc.communicate(timeout=60)
    text = "".join(lines) + rest
    assert proc.returncode == 130, text
    assert "interrupted after" in text and "nothing was written" in text and "Traceback" not in text
    assert not out.exists()
    time.sleep(0.5)
    assert [pid for pid in children if Path(f"/proc/{pid}").exists()] == []
