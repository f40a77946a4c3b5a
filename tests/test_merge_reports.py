"""`harness run --shard i/n` as n separate processes over the reference library, merged, equal to a single run.

The shards and the single run are real `harness` processes over the same matrix (the library × three
reference targets, so every shard holds passing and failing runs of several targets); the merged folder's
results.json, junit.xml, summary.md and report.html must equal the single run's, modulo what
tests/shard_compare.py lists. The folders are given to merge-reports out of order: the merged order must be
the single run's, never the folders'. Each refusal (a changed scenario file, a missing shard, a duplicate,
another n, a folder that is no shard) is one line and exit 2. The last tests break the merge in a copy
of the package and show the comparison then fails: these tests can fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shard_compare import ROOT, assert_same_reports, harness, run_shards

LIBRARY = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "scenarios").glob("*.yaml"))
TARGETS = ["--target", "reference", "--target", "reference:drop-append-on-resume",
           "--target", "reference:duplicate-append-on-resume"]
MATRIX = [*LIBRARY, *TARGETS, "--quiet"]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """A single run of the matrix and its three shards, each a process of its own."""
    base = tmp_path_factory.mktemp("library")
    single = harness(["run", *MATRIX, "--report-dir", str(base / "single")])
    shards = [base / f"shard-{i}" for i in (1, 2, 3)]
    codes = run_shards(["run", *MATRIX], shards)
    return base, single, shards, codes


def merge(shards, out: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return harness(["merge-reports", *map(str, shards), "--report-dir", str(out)], cwd=cwd)


def one_line_refusal(done: subprocess.CompletedProcess, *fragments: str) -> str:
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, line
    assert line.startswith("harness: error: "), line
    for fragment in fragments:
        assert fragment in line, line
    return line


def test_merged_shards_equal_a_single_run(library):
    base, single, shards, codes = library
    assert single.returncode == 0, single.stderr[-2000:]
    assert set(codes) <= {0, 1}
    done = merge(list(reversed(shards)), base / "merged")  # out of order on purpose
    assert done.returncode == single.returncode, done.stderr
    assert_same_reports(base / "single", base / "merged")


def test_each_shard_is_a_report_folder_of_its_own_runs_and_together_they_are_the_matrix(library):
    base, _, shards, _ = library
    whole = [(r["scenario"], r["target"]) for r in json.loads((base / "single" / "results.json").read_text())["runs"]]
    seen = []
    for shard in shards:
        assert {"results.json", "junit.xml", "summary.md", "report.html", "shard.json", "journal"} <= {
            p.name for p in shard.iterdir()}
        runs = [(r["scenario"], r["target"]) for r in json.loads((shard / "results.json").read_text())["runs"]]
        assert runs, "a shard of 33 runs in 3 is never empty"
        assert runs == [run for run in whole if run in runs]  # each shard lists its runs in the matrix's order
        seen += runs
    assert sorted(seen) == sorted(whole) and len(seen) == len(set(seen))
    assert max(map(len, map(lambda s: json.loads((s / "results.json").read_text())["runs"], shards))) - min(
        map(len, map(lambda s: json.loads((s / "results.json").read_text())["runs"], shards))) <= 1


def test_the_merged_journals_are_where_the_results_say(library):
    base, _, shards, _ = library
    out = base / "merged-journals"
    assert merge(shards, out).returncode == 0
    runs = json.loads((out / "results.json").read_text())["runs"]
    for run in runs:
        for key in ("journal", "launch_journal"):
            assert Path(run[key]).is_file() and Path(run[key]).is_relative_to(out / "journal"), run[key]


def test_missing_duplicate_other_n_and_foreign_folders_are_refused(library, tmp_path):
    base, _, shards, _ = library
    one_line_refusal(merge(shards[:2], tmp_path / "a"), "shard(s) 3 of 3 missing", "given 1, 2")
    one_line_refusal(merge([shards[0], *shards], tmp_path / "b"), str(shards[0]), "shard 1/3 twice")
    one_line_refusal(merge([*shards, base / "single"], tmp_path / "c"), str(base / "single"), "not a shard folder")
    other_n = tmp_path / "half-1"
    assert run_shards(["run", LIBRARY[0], "--target", "reference", "--quiet"], [other_n, tmp_path / "half-2"]) == [0, 0]
    one_line_refusal(merge([*shards, other_n], tmp_path / "d"), str(other_n), "share their n")
    one_line_refusal(merge(shards, shards[0]), "is one of the shard folders")


def _copy_library(into: Path) -> list[str]:
    (into / "scenarios").mkdir(parents=True)
    for name in LIBRARY[:2]:
        shutil.copy(ROOT / name, into / name)
    return LIBRARY[:2]


def test_a_scenario_file_changed_between_two_shards_is_refused(tmp_path):
    scenarios = _copy_library(tmp_path)
    argv = ["run", *scenarios, "--target", "reference", "--quiet"]
    assert harness([*argv, "--shard", "1/2", "--report-dir", "s1"], cwd=tmp_path).returncode == 0
    changed = tmp_path / scenarios[1]
    changed.write_text(changed.read_text() + "\n# edited between the shards\n")
    assert harness([*argv, "--shard", "2/2", "--report-dir", "s2"], cwd=tmp_path).returncode == 0
    line = one_line_refusal(merge(["s1", "s2"], tmp_path / "merged", cwd=tmp_path), "s2", "shard 2/2 ran other inputs",
                            Path(scenarios[1]).stem, "digest")
    assert "sha256:" in line


def test_shards_attempted_under_other_policies_are_refused(tmp_path):
    scenarios = _copy_library(tmp_path)
    argv = ["run", *scenarios, "--target", "reference", "--quiet"]
    assert harness([*argv, "--shard", "1/2", "--retries", "2", "--report-dir", "s1"], cwd=tmp_path).returncode == 0
    assert harness([*argv, "--shard", "2/2", "--report-dir", "s2"], cwd=tmp_path).returncode == 0
    one_line_refusal(merge(["s1", "s2"], tmp_path / "merged", cwd=tmp_path), "s2", "options", "'retries': 0",
                     "'retries': 2")


@pytest.mark.parametrize("value", ["0/3", "4/3", "x", "1/0", "", "1/2/3", "-1/2", "2/ 3"])
def test_a_bad_shard_is_one_line_and_exit_2(value, tmp_path):
    one_line_refusal(harness(["run", LIBRARY[0], f"--shard={value}", "--report-dir", str(tmp_path / "r")]), "--shard")
    one_line_refusal(harness(["diff", LIBRARY[0], "-b", "reference", "-c", "reference", f"--shard={value}",
                              "--report-dir", str(tmp_path / "d")]), "--shard")
    assert not (tmp_path / "r").exists()  # refused before anything ran or was written


def test_duration_balanced_shards_merge_to_the_same_report(library, tmp_path):
    base, single, _, _ = library
    durations = ["--shard-durations", str(base / "single" / "results.json")]
    shards = [tmp_path / "d1", tmp_path / "d2", tmp_path / "d3"]
    assert set(run_shards(["run", *MATRIX], shards, extra=durations)) <= {0, 1}
    assert json.loads((shards[0] / "shard.json").read_text())["inputs"]["assignment"].startswith("durations sha256:")
    assert merge(shards, tmp_path / "merged").returncode == single.returncode
    assert_same_reports(base / "single", tmp_path / "merged")
    one_line_refusal(merge([shards[0], base / "shard-2", base / "shard-3"], tmp_path / "mixed"), "assignment")


# ------------------------------------------------------------------ the comparison can fail: a broken merge is caught

def _broken_copy(tmp_path: Path, old: str, new: str) -> Path:
    """A copy of the harness package with one line of the merge changed."""
    shutil.copytree(ROOT / "harness", tmp_path / "pkg" / "harness", ignore=shutil.ignore_patterns("__pycache__"))
    merge_py = tmp_path / "pkg" / "harness" / "shards" / "merge.py"
    text = merge_py.read_text()
    assert old in text
    merge_py.write_text(text.replace(old, new))
    return tmp_path / "pkg"


def _merge_with(package: Path, shards, out: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    code = (f"import sys; sys.path.insert(0, {str(package)!r}); import harness; "
            f"assert harness.__file__.startswith({str(package)!r}); from harness.cli import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, "merge-reports", *map(str, shards), "--report-dir", str(out)],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_merge_in_folder_order_fails_the_comparison(library, tmp_path):
    base, _, shards, _ = library
    package = _broken_copy(tmp_path, "return [runs[run] for run in matrix]", "return list(runs.values())")
    done = _merge_with(package, list(reversed(shards)), tmp_path / "merged")
    assert done.returncode in (0, 1), done.stderr
    with pytest.raises(AssertionError):
        assert_same_reports(base / "single", tmp_path / "merged")


def test_a_merge_without_the_digest_check_takes_a_changed_scenario(tmp_path):
    scenarios = _copy_library(tmp_path)
    argv = ["run", *scenarios, "--target", "reference", "--quiet"]
    assert harness([*argv, "--shard", "1/2", "--report-dir", "s1"], cwd=tmp_path).returncode == 0
    (tmp_path / scenarios[1]).write_text((tmp_path / scenarios[1]).read_text() + "\n# edited\n")
    assert harness([*argv, "--shard", "2/2", "--report-dir", "s2"], cwd=tmp_path).returncode == 0
    package = _broken_copy(tmp_path, "differs = _first_difference(first.inputs, shard.inputs)", "differs = None")
    assert _merge_with(package, ["s1", "s2"], tmp_path / "merged", cwd=tmp_path).returncode == 0  # taken: unchecked
    assert merge(["s1", "s2"], tmp_path / "merged-2", cwd=tmp_path).returncode == 2  # the real merge refuses
