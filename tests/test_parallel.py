"""`harness run -n N` and `pytest -n N`: the same verdicts as a serial run, each run on its own port and HOME.

Every run here is real: `harness` as a subprocess, real worker processes,
real fake API servers, the real reference agent. Stopping a parallel run
(Ctrl-C, SIGTERM) is tested in tests/test_interrupt.py.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "scenarios"
# A meaningful slice of the library (the whole library × reference:* is 260 runs, about 3 minutes serially):
# compaction, a scripted API error and retry, text for one step only, prompt-cache reuse, a git working folder.
SLICE = ["auto-compaction-then-resume.yaml", "fault-overloaded-then-retry.yaml", "temporary-text-for-one-step.yaml",
         "cache-reuse-across-processes.yaml", "claude-code/two-turns-in-a-git-repository.yaml"]
# No expectations: against reference:* most runs differ from what it expects (UNEXPECTED), so exit 1 on both sides.
NO_EXPECTATIONS = """\
name: retry-without-expectations
append: "Task prompt: answer with one number."
steps:
  - launch:  {prompt: "What is 6*7?", reply: "41"}
  - retry:   {prompt: "Your answer was incorrect. Try again.", reply: "42"}
  - compact: {}
  - resume:  {prompt: "What is 2+2?", reply: "4"}
"""


def harness(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


# --------------------------------------------------------------------------- the normalizer
#
# What may differ between two runs of the same matrix, and nothing else:
# - timings (`duration_s` of a run and of each step, a step's `cpu_s`) and the agent's process ids (`pids` of a step);
# - the report folder, in the journal paths;
# - the ids the reference agent mints at random in every run (session ids are UUID4s; the agent id in
#   its identity line is 8 hex digits): each is replaced by its order of first appearance within the
#   run, so "the same id at every step" and "a different id at step 2" still compare;
# - for the two defects that put random bytes in the prompt prefix (a fresh agent id per process, the
#   current time), the failing prefix_stable check's message and evidence quote those bytes and the
#   offset of the first differing one: only there are the message and evidence left out. Its verdict,
#   step, request and lengths are still compared.
# Everything else compares as written: statuses, errors, verdicts, evidence and messages of every
# other check, each step's argv, exit code, request counts and classes, request seqs, stdout and stderr.

RANDOM_PREFIX_TARGETS = ("reference:fresh-identity-per-process", "reference:timestamp-in-prefix")
SESSION_ID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\b")
AGENT_ID = re.compile(r"(?<=\(agent id )[0-9a-f]{8}(?=\))")


def normalized(document: dict, report_dir: Path) -> dict:
    runs = []
    for original in document["runs"]:
        run = copy.deepcopy(original)
        del run["duration_s"]
        for step in run["steps"]:
            del step["duration_s"], step["cpu_s"], step["pids"]
        run = _map_strings(run, _RunText(report_dir))
        if run["target"].split("+")[0] in RANDOM_PREFIX_TARGETS:  # the defect, run either way (+in-process)
            for check in run["checks"]:
                if check["check"] == "prefix_stable" and check["verdict"] == "fail":
                    check["message"] = check["evidence"] = "<quotes random bytes>"
        runs.append(run)
    return {"interrupted": document["interrupted"], "summary": document["summary"], "runs": runs}


class _RunText:
    """The substitutions for the strings of one run: the report folder, and each random id by its order of appearance."""

    def __init__(self, report_dir: Path):
        self.report_dir = str(report_dir)
        self.seen: dict[str, str] = {}

    def __call__(self, value: str) -> str:
        value = value.replace(self.report_dir, "<REPORT>")
        value = SESSION_ID.sub(lambda match: self._ordinal(match.group(0), "session"), value)
        return AGENT_ID.sub(lambda match: self._ordinal(match.group(0), "agent"), value)

    def _ordinal(self, value: str, kind: str) -> str:
        return self.seen.setdefault(value, f"<{kind}-{len(self.seen) + 1}>")


def _map_strings(value, function):
    if isinstance(value, str):
        return function(value)
    if isinstance(value, list):
        return [_map_strings(v, function) for v in value]
    if isinstance(value, dict):
        return {k: _map_strings(v, function) for k, v in value.items()}
    return value


def first_difference(a, b, path="") -> str:
    if type(a) is not type(b) or not isinstance(a, (dict, list)):
        return f"{path}: {a!r} != {b!r}"
    keys = sorted(set(a) | set(b)) if isinstance(a, dict) else range(max(len(a), len(b)))
    for key in keys:
        try:
            left, right = a[key], b[key]
        except (KeyError, IndexError):
            return f"{path}/{key}: present on one side only"
        if left != right:
            return first_difference(left, right, f"{path}/{key}")
    return f"{path}: equal"


def assert_normalizer_keeps_real_differences(document: dict, report_dir: Path) -> None:
    """The normalizer cannot hide what matters: each of these edits to a real document must show."""
    base = normalized(document, report_dir)
    run_index = next(i for i, r in enumerate(document["runs"]) if r["steps"] and r["checks"])
    edits = {
        "status": lambda r: r.update(status="error"),
        "run error": lambda r: r.update(error="something else"),
        "check verdict": lambda r: r["checks"][0].update(verdict="fail" if r["checks"][0]["verdict"] == "pass" else "pass"),
        "check message": lambda r: r["checks"][0].update(message=r["checks"][0]["message"] + " (edited)"),
        "check evidence": lambda r: r["checks"][0]["evidence"].update(edited=True),
        "expected verdict": lambda r: r["checks"][0].update(expected_verdict="fail"),
        "step exit code": lambda r: r["steps"][0].update(exit_code=7),
        "step request count": lambda r: r["steps"][0].update(requests=r["steps"][0]["requests"] + 1),
        "step request classes": lambda r: r["steps"][0]["classes"].update(side=1),
        "step argv": lambda r: r["steps"][0]["argv"].append("--extra"),
        "step stdout": lambda r: r["steps"][0].update(stdout_tail=r["steps"][0]["stdout_tail"] + "x"),
        "a different session id at one step": lambda r: r["steps"][-1].update(session_id="00000000-0000-4000-8000-000000000000"),
        "one run fewer": None,
    }
    for name, edit in edits.items():
        edited = copy.deepcopy(document)
        if edit is None:
            edited["runs"].pop()
        else:
            edit(edited["runs"][run_index])
        assert normalized(edited, report_dir) != base, f"the normalizer hides a change of {name}"


# --------------------------------------------------------------------------- harness run -n


@pytest.fixture
def library_slice(tmp_path: Path) -> list[Path]:
    extra = tmp_path / "retry-without-expectations.yaml"
    extra.write_text(NO_EXPECTATIONS)
    return [LIBRARY / name for name in SLICE] + [extra]


def test_four_workers_give_the_serial_results(tmp_path, library_slice, record_property):
    outcomes = {}
    for workers in ("1", "4"):
        out = tmp_path / f"out-n{workers}"
        started = time.monotonic()
        proc = harness("run", *map(str, library_slice), "--target", "reference:*", "-n", workers, "--report-dir", str(out),
                       "-q", cwd=tmp_path)
        outcomes[workers] = (proc, out, time.monotonic() - started)
    (serial, serial_dir, serial_s), (parallel, parallel_dir, parallel_s) = outcomes["1"], outcomes["4"]
    record_property("wall_clock_n1_s", round(serial_s, 2))
    record_property("wall_clock_n4_s", round(parallel_s, 2))
    print(f"\n{len(library_slice)} scenarios × reference:*: -n 1 {serial_s:.1f}s, -n 4 {parallel_s:.1f}s, "
          f"ratio {serial_s / parallel_s:.2f}")

    # Both exit 1: the scenario without expectations differs from them on most defects.
    assert (serial.returncode, parallel.returncode) == (1, 1), serial.stderr[-2000:] + parallel.stderr[-2000:]
    documents = [json.loads((folder / "results.json").read_text()) for folder in (serial_dir, parallel_dir)]
    runs = len(library_slice) * 10
    assert len(documents[0]["runs"]) == runs
    summary = documents[0]["summary"]
    assert summary["unexpected"] > 0 and summary["as_expected"] > 0 and summary["pass"] > 0 and summary["fail"] > 0, summary
    # The raw documents differ (timings, pids, ids minted at random); the normalized ones must not.
    assert documents[0]["runs"] != documents[1]["runs"]
    expected, got = normalized(documents[0], serial_dir), normalized(documents[1], parallel_dir)
    order = [(run["scenario"], run["target"]) for run in expected["runs"]]
    assert [(run["scenario"], run["target"]) for run in got["runs"]] == order  # scenario-major, as run_matrix orders them
    assert got == expected, first_difference(expected, got)
    # The verdict table on stdout, row for row (the evidence after it quotes the random ids).
    assert table(serial.stdout) == table(parallel.stdout) and f"{runs} runs: " in table(serial.stdout)
    assert_normalizer_keeps_real_differences(documents[0], serial_dir)

    # Each run of the parallel matrix had its own HOME and its own fake API, the same at every step of it.
    homes = set()
    for run in documents[1]["runs"]:
        launches = [json.loads(line) for line in Path(run["launch_journal"]).read_text().splitlines()]
        starts = [entry for entry in launches if entry["event"] == "start"]
        assert len(starts) == len(run["steps"]) > 0
        assert len({entry["env"]["HOME"] for entry in starts}) == 1
        assert len({entry["env"]["ANTHROPIC_BASE_URL"] for entry in starts}) == 1
        homes.add(starts[0]["env"]["HOME"])
        port = starts[0]["env"]["ANTHROPIC_BASE_URL"].rsplit(":", 1)[1]
        requests = [json.loads(line) for line in Path(run["journal"]).read_text().splitlines()]
        assert {entry["headers"]["host"] for entry in requests} == {f"127.0.0.1:{port}"}
    assert len(homes) == runs


def table(stdout: str) -> str:
    """The verdict table `harness run` prints, through its "N runs: ..." line."""
    end = re.search(r"^\d+ runs: .*$", stdout, re.M)
    assert end, stdout
    return stdout[:end.end()]


BARRIER = '''\
"""A step that starts its agent only once COUNT steps are in flight at the same moment.

It records what it was given (HOME, base URL, pid) in DIR, waits until COUNT records are
there, then execs the agent; after TIMEOUT seconds without them it exits 3 saying so.
"""
import json, os, sys, time
from pathlib import Path

folder, count, timeout = Path(os.environ["BARRIER_DIR"]), int(os.environ["BARRIER_COUNT"]), float(os.environ["BARRIER_TIMEOUT"])
record = {"home": os.environ["HOME"], "base_url": os.environ["ANTHROPIC_BASE_URL"], "pid": os.getpid()}
scratch = folder / f".{os.getpid()}.tmp"
scratch.write_text(json.dumps(record))
scratch.rename(folder / f"{os.getpid()}.json")
deadline = time.monotonic() + timeout
while len(list(folder.glob("*.json"))) < count:
    if time.monotonic() > deadline:
        sys.exit(f"barrier: only {len(list(folder.glob('*.json')))} of {count} runs were in flight together")
    time.sleep(0.05)
os.execv(sys.argv[1], sys.argv[1:])
'''


def barrier_matrix(tmp_path: Path, runs: int, timeout_s: float) -> tuple[list[Path], Path, Path]:
    """`runs` scenarios and a target whose launch waits until that many launches are running at once."""
    records = tmp_path / "in-flight"
    records.mkdir()
    (tmp_path / "barrier.py").write_text(BARRIER)
    agent = ["{python}", "-m", "harness.reference_agent", "--output-format", "json"]
    target = tmp_path / "barrier.yaml"
    target.write_text(textwrap.dedent(f"""\
        name: barrier
        launch: {json.dumps(["{python}", "{target_dir}/barrier.py"] + agent + ["-p", "{prompt}", "--append-system-prompt", "{append}"])}
        resume: {json.dumps(agent + ["-p", "{prompt}", "--resume", "{session_id}", "--append-system-prompt", "{append}"])}
        session_id: {{stdout_json: session_id}}
        timeout_s: {timeout_s + 30}
        env:
          PYTHONPATH: "{ROOT}"
          BARRIER_DIR: "{records}"
          BARRIER_COUNT: "{runs}"
          BARRIER_TIMEOUT: "{timeout_s}"
        """))
    scenarios = []
    for index in range(1, runs + 1):
        path = tmp_path / f"s{index}.yaml"
        path.write_text(f"name: s{index}\nappend: x\nsteps:\n  - launch: {{prompt: a, reply: A}}\n  - resume: {{prompt: b, reply: B}}\n")
        scenarios.append(path)
    return scenarios, target, records


def test_runs_in_flight_together_each_have_their_own_port_and_home(tmp_path):
    scenarios, target, records = barrier_matrix(tmp_path, runs=4, timeout_s=60)
    out = tmp_path / "out"
    proc = harness("run", *map(str, scenarios), "--target", str(target), "--workers", "4", "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # every launch got past the barrier: all 4 were running at once

    seen = [json.loads(path.read_text()) for path in records.glob("*.json")]
    assert len(seen) == 4
    assert len({r["home"] for r in seen}) == 4, seen
    assert len({r["base_url"] for r in seen}) == 4, seen  # four fake APIs, four ports, at the same moment
    document = json.loads((out / "results.json").read_text())
    assert [run["scenario"] for run in document["runs"]] == ["s1", "s2", "s3", "s4"]
    by_home = {r["home"]: r for r in seen}
    for run in document["runs"]:
        launches = [json.loads(line) for line in Path(run["launch_journal"]).read_text().splitlines()]
        first, second = [entry for entry in launches if entry["event"] == "start"]
        # What the agent itself saw is what the launch journal recorded, and the resume had the same HOME and API.
        assert by_home[first["env"]["HOME"]]["base_url"] == first["env"]["ANTHROPIC_BASE_URL"]
        assert (second["env"]["HOME"], second["env"]["ANTHROPIC_BASE_URL"]) == (first["env"]["HOME"], first["env"]["ANTHROPIC_BASE_URL"])

    # Live progress from the workers, each line tagged with its run.
    for number in range(1, 5):
        assert re.search(rf"^\[{number}/4\] s{number} · barrier  \(2 steps\)$", proc.stderr, re.M), proc.stderr
        assert re.search(rf"^\[{number}/4\]   step 1/2 launch   exit 0 ", proc.stderr, re.M), proc.stderr
        assert re.search(rf"^\[{number}/4\]   step 2/2 resume   exit 0 ", proc.stderr, re.M), proc.stderr
        assert re.search(rf"^\[{number}/4\]   → ok$", proc.stderr, re.M), proc.stderr


def test_the_barrier_holds_a_serial_run_back(tmp_path):
    """The control for the test above: one run at a time never has two launches in flight."""
    scenarios, target, _ = barrier_matrix(tmp_path, runs=2, timeout_s=2)
    out = tmp_path / "out"
    proc = harness("run", *map(str, scenarios), "--target", str(target), "-n", "1", "--report-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    first = json.loads((out / "results.json").read_text())["runs"][0]
    assert first["status"] == "error"
    assert "barrier: only 1 of 2 runs were in flight together" in first["error"], first["error"]


def test_every_library_scenario_crosses_to_a_worker_as_a_pickle():
    from harness.run.pool import _scenario_payload
    from harness.scenario.reader import load_scenarios

    scenarios = load_scenarios([str(LIBRARY)])
    assert len(scenarios) > 20
    for scenario in scenarios:
        kind, blob = _scenario_payload(scenario)
        assert kind == "pickle" and pickle.loads(blob) == scenario, scenario.name


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "", "+2", "auto2"])
def test_bad_worker_counts_are_usage_errors(tmp_path, value):
    (tmp_path / "s.yaml").write_text("name: s\nappend: x\nsteps:\n  - launch: {prompt: a, reply: A}\n")
    out = tmp_path / "out"
    proc = harness("run", "s.yaml", "-n", value, "--report-dir", str(out), cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (f"harness run: error: argument -n/--workers: expected a whole number of worker processes, "
            f"at least 1, or 'auto'; got {value!r}") in proc.stderr, proc.stderr
    assert not out.exists()  # bad usage writes no report


def test_auto_is_one_worker_per_cpu(tmp_path):
    from harness.cli import build_parser

    assert build_parser().parse_args(["run", "-n", "auto"]).workers == (os.cpu_count() or 1)
    assert build_parser().parse_args(["run"]).workers is None  # no flag: the table's `workers`, else 1 (test_suites)
    (tmp_path / "s.yaml").write_text("name: s\nappend: x\nsteps:\n  - launch: {prompt: a, reply: A}\n")
    proc = harness("run", "s.yaml", "-n", "auto", "--report-dir", str(tmp_path / "out"), cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 runs: 1 as expected" in proc.stdout


# --------------------------------------------------------------------------- pytest -n over scenarios

PLUGIN_SCENARIO = """\
name: {name}
append: "Answer in one word."
steps:
  - launch: {{prompt: "Colour of the sky?", reply: "Blue"}}
  - retry:  {{prompt: "Wrong. Again?", reply: "Azure"}}
  - resume: {{prompt: "And grass?", reply: "Green"}}
{expect}"""


def test_pytest_xdist_gives_the_serial_outcome_of_every_item(tmp_path):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "sky.yaml").write_text(PLUGIN_SCENARIO.format(name="sky", expect=""))  # mismatches on both defects
    (folder / "sea.yaml").write_text(PLUGIN_SCENARIO.format(name="sea", expect=(
        "expect:\n  reference:forget-last-reply: {history_preserved: fail}\n"
        "  reference:drop-append-on-resume: {appended_exactly_once: fail, prefix_stable: fail}\n")))
    (folder / "grass.yaml").write_text(PLUGIN_SCENARIO.format(name="grass", expect=(
        "expect:\n  reference:forget-last-reply: {history_preserved: fail}\n")))  # mismatches on drop-append only
    (tmp_path / "harness.toml").write_text('scenarios = ["scenarios"]\n')
    targets = ["--harness-target", "reference", "--harness-target", "reference:forget-last-reply",
               "--harness-target", "reference:drop-append-on-resume"]

    outcomes = {}
    for workers in ("0", "2"):
        junit = tmp_path / f"junit-n{workers}.xml"
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "scenarios", *targets, "-n", workers, "-v", f"--junitxml={junit}",
             "-p", "no:cacheprovider", "--rootdir", str(tmp_path)],
            cwd=tmp_path, capture_output=True, text=True, timeout=600,
        )
        assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]  # some items fail, on both sides
        outcomes[workers] = (junit_outcomes(junit), proc.stdout)
    (serial, serial_out), (parallel, parallel_out) = outcomes["0"], outcomes["2"]
    assert "[gw0]" not in serial_out
    assert "[gw0]" in parallel_out and "[gw1]" in parallel_out, parallel_out  # really on two workers
    assert len(serial) == 9, serial
    assert parallel == serial
    assert sorted(set(serial.values())) == ["failed", "passed"]
    assert serial[("scenarios.sky.yaml", "sky[reference:forget-last-reply]")] == "failed"
    assert serial[("scenarios.grass.yaml", "grass[reference:drop-append-on-resume]")] == "failed"
    assert serial[("scenarios.sea.yaml", "sea[reference:drop-append-on-resume]")] == "passed"
    assert serial[("scenarios.sky.yaml", "sky[reference]")] == "passed"


def junit_outcomes(path: Path) -> dict[tuple[str, str], str]:
    outcomes = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("failure") is not None:
            outcome = "failed"
        elif case.find("error") is not None:
            outcome = "error"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        key = (case.get("classname"), case.get("name"))
        assert key not in outcomes, f"{key} reported twice"
        outcomes[key] = outcome
    return outcomes
