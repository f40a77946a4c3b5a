"""make bench's gate figure: a real suite run as make run runs it, its agents' CPU read from results.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.bench import gate, report

ROOT = Path(__file__).resolve().parent.parent


def test_agent_cpu_counts_every_step_of_every_attempt_and_says_what_it_could_not(tmp_path):
    runs = [{"steps": [{"index": 1, "cpu_s": 0.5}, {"index": 2, "cpu_s": 0.25}],
             "attempts": [{"steps": [{"index": 1, "cpu_s": 1.0}, {"index": 2, "cpu_s": None}]}]},
            {"steps": [{"index": 1, "cpu_s": None}], "attempts": []}]
    (tmp_path / "results.json").write_text(json.dumps({"runs": runs}))
    assert gate.agent_cpu(tmp_path / "results.json") == (1.75, 3, 2)


def test_steps_one_launcher_process_carried_are_measured_on_its_last_step_not_missing(tmp_path):
    carried = {"steps": [{"index": 1, "cpu_s": None}, {"index": 2, "cpu_s": None},
                         {"index": 3, "cpu_s": 2.0, "cpu_of_steps": [1, 2]}]}
    in_process = {"steps": [{"index": 1, "cpu_s": None, "cpu_of_steps": []}]}
    (tmp_path / "results.json").write_text(json.dumps({"runs": [carried, in_process]}))
    assert gate.agent_cpu(tmp_path / "results.json") == (2.0, 3, 1)


def test_a_suite_is_measured_against_its_agents_cpu(tmp_path):
    (tmp_path / "pyproject.toml").write_text(f"""\
[tool.harness.suites.small]
scenarios = ["{ROOT / 'scenarios' / 'retry-after-wrong-answer.yaml'}", "{ROOT / 'scenarios' / 'three-turns-three-processes.yaml'}"]
targets = ["reference", "reference:drop-append-on-resume"]
""")
    got = gate.run_suite("small", 2, tmp_path / "out", tmp_path)
    assert got["exit_code"] == 0 and got["runs"] == 4
    assert got["steps_unmeasured"] == 0 and got["agent_cpu_s"] > 0  # every reference step ran under the warden
    assert abs(got["gate"] - got["wall_s"] / (got["agent_cpu_s"] / 2)) < 0.05 and got["gate"] > 1
    document = {"gate": {"cores": 2, "suites": [got], "wall_s": got["wall_s"], "limit_s": got["limit_s"],
                         "gate": got["gate"]}}
    assert f"| small | 4 | {got['wall_s']:.1f} s | {got['limit_s']:.1f} s | ×{got['gate']:.2f} |" \
        in report.render_markdown(document)


def test_every_suite_of_make_run_is_one_the_gate_measures():
    assert gate.suites(ROOT)[0] == "library" and "claude-code" in gate.suites(ROOT)
    assert os.cpu_count()


def test_the_report_of_a_suite_that_did_not_exit_0_is_kept_beside_the_bench(tmp_path, monkeypatch):
    """The scratch goes when the bench ends; a suite's unexpected verdicts must not go with it."""
    scenario = (ROOT / "scenarios" / "retry-after-wrong-answer.yaml").read_text().split("expect:")[0]
    (tmp_path / "no-expectations.yaml").write_text(scenario)  # a defect that fails, expected to pass: exit 1
    (tmp_path / "pyproject.toml").write_text("""\
[tool.harness.suites.small]
scenarios = ["no-expectations.yaml"]
targets = ["reference:drop-append-on-resume"]
""")
    monkeypatch.setattr(gate, "suites", lambda checkout: ["small"])
    said: list[str] = []
    got = gate.measure(tmp_path / "scratch", tmp_path, False, said.append, keep=tmp_path / "out")
    (row,) = got["suites"]
    assert row["exit_code"] == 1 and row["report_kept"] == str(tmp_path / "out" / "gate-small")
    kept = json.loads((tmp_path / "out" / "gate-small" / "results.json").read_text())
    assert [r["target"] for r in kept["runs"]] == ["reference:drop-append-on-resume"]
    assert said[-1].endswith(f"; exit 1, its report kept in {tmp_path / 'out' / 'gate-small'}")
