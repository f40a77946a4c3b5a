"""Which shard runs what: a partition of any matrix for any n, the same in every process; and the other sharded
commands (`harness diff --shard`, `harness run --suite ... --shard`, the pytest plugin's `--harness-shard`)
split and merge back into what a single command gives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import given, settings, strategies as st

from harness.results import CheckResult, Difference, Mark, RequestPair, RunResult, ShownRequest, ShownText, StepResult
from harness.shards.assignment import Shard, assign, parse_shard, runs_of
from harness.shards.codec import decode, encode
from shard_compare import DIFF_FILES, ROOT, assert_same_reports, harness, run_shards

names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
matrices = st.lists(st.tuples(names, names), unique=True, max_size=60)


@settings(max_examples=300, deadline=None)
@given(matrices, st.integers(1, 25), st.booleans(), st.data())
def test_the_shards_partition_any_matrix_for_any_n(matrix, count, by_time, data):
    durations = None
    if by_time:  # some runs with a recorded time, some without (the median stands in for them)
        durations = {run: data.draw(st.floats(0, 1e4)) for run in matrix if data.draw(st.booleans())}
    shards = [runs_of(Shard(i, count), matrix, durations) for i in range(1, count + 1)]
    assert sum(len(s) for s in shards) == len(matrix)  # disjoint ...
    assert set().union(*shards) == set(matrix)  # ... and covering: every run in exactly one shard
    if durations is None:
        assert max(map(len, shards)) - min(map(len, shards)) <= 1  # dealt: sizes differ by one at most
    shuffled = data.draw(st.permutations(matrix))
    assert assign(shuffled, count, durations) == assign(matrix, count, durations)  # the order given plays no part


def test_the_assignment_is_the_same_in_another_process_with_another_hash_seed():
    matrix = [(f"scenario-{s}", f"target-{t}") for s in range(9) for t in range(4)]
    code = ("import json, sys; from harness.shards.assignment import assign; "
            "m = [tuple(r) for r in json.load(sys.stdin)]; print(json.dumps(sorted(assign(m, 5).items())))")
    outputs = {subprocess.run([sys.executable, "-c", code], input=json.dumps(matrix), capture_output=True, text=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}, check=True).stdout for seed in ("1", "2")}
    assert len(outputs) == 1
    assert json.loads(outputs.pop()) == [[list(k), v] for k, v in sorted(assign(matrix, 5).items())]


def test_parse_shard():
    assert parse_shard("2/3") == Shard(2, 3) and str(Shard(2, 3)) == "2/3"


SCENARIOS = ["scenarios/three-turns-three-processes.yaml", "scenarios/compaction-then-resume.yaml",
             "scenarios/retry-after-wrong-answer.yaml", "scenarios/tool-use-across-resume.yaml"]


def test_diff_shards_merge_to_the_single_comparison(tmp_path):
    argv = ["diff", *SCENARIOS, "-b", "reference", "-c", "reference:drop-append-on-resume", "--quiet",
            "--require-fix", "three-turns-three-processes"]
    single = harness([*argv, "--report-dir", str(tmp_path / "single")])
    shards = [tmp_path / "s1", tmp_path / "s2"]
    assert run_shards(argv, shards) and single.returncode == 1
    records = [json.loads((s / "shard.json").read_text()) for s in shards]
    assert all(len(r["comparison"]["scenarios"]) == 2 for r in records)  # 4 scenarios dealt 2 and 2
    done = harness(["merge-reports", str(shards[1]), str(shards[0]), "--report-dir", str(tmp_path / "merged")])
    assert done.returncode == single.returncode, done.stderr
    assert_same_reports(tmp_path / "single", tmp_path / "merged", DIFF_FILES)
    mixed = harness(["merge-reports", str(shards[0]), str(tmp_path / "single")])
    assert mixed.returncode == 2 and "not a shard folder" in mixed.stderr


PROJECT = """
[tool.harness]
scenarios = ["scenarios"]
report_dir = "reports"

[tool.harness.suites.clean]
scenarios = ["scenarios/a"]
targets = ["reference"]

[tool.harness.suites.defects]
scenarios = ["scenarios/b"]
targets = ["reference:drop-append-on-resume", "reference:duplicate-append-on-resume"]
"""


def test_suite_shards_split_the_whole_matrix_of_every_suite(tmp_path):
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    for folder, files in (("a", SCENARIOS[:2]), ("b", SCENARIOS[2:])):  # one scenario name is one file in a report
        (tmp_path / "scenarios" / folder).mkdir(parents=True)
        for name in files:
            (tmp_path / "scenarios" / folder / Path(name).name).write_bytes((ROOT / name).read_bytes())
    argv = ["run", "--suite", "all", "--quiet"]
    single = harness([*argv, "--report-dir", str(tmp_path / "single")], cwd=tmp_path)
    shards = [tmp_path / f"s{i}" for i in (1, 2, 3)]
    assert set(run_shards(argv, shards, cwd=tmp_path)) <= {0, 1}
    per_shard = [{r["target"] for r in json.loads((s / "results.json").read_text())["runs"]} for s in shards]
    assert any("reference" in t and len(t) > 1 for t in per_shard)  # dealt over all suites, not a suite per shard
    done = harness(["merge-reports", *map(str, shards), "--report-dir", str(tmp_path / "merged")], cwd=tmp_path)
    assert done.returncode == single.returncode, done.stderr
    assert_same_reports(tmp_path / "single", tmp_path / "merged")


def _collected(args: list[str]) -> tuple[list[str], str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:randomly", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 5), done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if "::" in line], done.stdout


def test_the_pytest_plugin_deselects_the_other_shards_items():
    paths = [*SCENARIOS, "--harness-target", "reference", "--harness-target", "reference:drop-append-on-resume"]
    everything, _ = _collected(paths)
    shards = []
    for i in (1, 2, 3):
        kept, out = _collected([*paths, "--harness-shard", f"{i}/3"])
        assert f"{len(kept)}/{len(everything)} tests collected ({len(everything) - len(kept)} deselected)" in out
        shards.append(kept)
    assert sorted(sum(shards, [])) == sorted(everything) and len(everything) == 8
    # the same split as `harness run --shard`: an item's (scenario, target) is the run's name
    matrix = [(Path(s).stem, t) for s in SCENARIOS for t in ("reference", "reference:drop-append-on-resume")]
    for i, kept in enumerate(shards, 1):
        assert {(n.split("::")[1].split("[")[0], n.split("[")[1].rstrip("]")) for n in kept} == runs_of(Shard(i, 3), matrix)


def test_the_pytest_plugin_refuses_a_bad_shard():
    done = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", SCENARIOS[0], "--harness-target", "reference",
                           "--harness-shard", "3/2"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 4 and "--harness-shard '3/2'" in done.stderr and "Traceback" not in done.stderr


# ------------------------------------------------------------------ the record's codec: fields added later round-trip

@dataclass
class LaterRunResult(RunResult):
    """RunResult as it may grow (retries): fields of kinds the codec has never been told about."""

    attempts: list[RunResult] = field(default_factory=list)
    flaky_since: tuple[int, ...] = ()
    by_check: dict[str, RequestPair | None] = field(default_factory=dict)


def test_a_result_with_fields_added_later_round_trips_through_json():
    pair = RequestPair(first=ShownRequest(1, "step 1 (launch), request #1", ShownText("You are X", (Mark(0, 9, "identity"),)),
                                          (0,), (), (), "You are X", None, 0),
                       tools=("a", "b"), prefix_difference=Difference(3, 10, 11))
    check = CheckResult("prefix_stable", "fail", "m", expected=(1, "a"), observed={2: [3]}, evidence={"k": (1, 2)},
                        request_pair=pair)
    attempt = RunResult("s", "t", "fail", steps=[StepResult(1, "launch", classes={"main": 1})], checks=[check])
    result = LaterRunResult("s", "t", "pass", checks=[check], attempts=[attempt], flaky_since=(1, 2),
                            by_check={"prefix_stable": pair, "other": None})
    back = decode(json.loads(json.dumps(encode(result, LaterRunResult))), LaterRunResult)
    assert back == result
    assert back.attempts[0].checks[0].request_pair == pair  # compare=False on request_pair: checked on its own
    assert back.checks[0].observed == {2: [3]} and back.checks[0].expected == (1, "a")
