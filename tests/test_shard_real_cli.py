"""A real agent CLI's suite split in two shards, merged, equal to a single run: Codex under two launch policies.

The pinned Codex release from the tool folder (installed on first use: a failed install fails here, never a
skip), two scenarios of the claude-code suite (one with a compaction, whose first-launch-only policy fails
prefix_stable unexpectedly: the merged exit code must be the single run's 1). What a real CLI prints and
does at a time of its own is left out of the comparison (tests/shard_compare.py, `real=True`).
"""

from __future__ import annotations

from harness.targets import codex
from shard_compare import assert_same_reports, harness, run_shards

ARGV = ["run", "scenarios/claude-code/wrong-answer-then-retry.yaml", "scenarios/claude-code/compact-then-resume.yaml",
        "--target", f"codex@{codex.PINNED_VERSION}+append-every-launch",
        "--target", f"codex@{codex.PINNED_VERSION}+append-first-launch-only", "--quiet"]


def test_two_codex_shards_merged_equal_a_single_run(tmp_path):
    single = harness([*ARGV, "--report-dir", str(tmp_path / "single")], timeout=1200)
    assert single.returncode in (0, 1) and "Traceback" not in single.stderr, single.stderr[-3000:]
    shards = [tmp_path / "shard-1", tmp_path / "shard-2"]
    run_shards(ARGV, shards, timeout=1200)
    done = harness(["merge-reports", str(shards[1]), str(shards[0]), "--report-dir", str(tmp_path / "merged")])
    assert done.returncode == single.returncode, done.stderr
    assert_same_reports(tmp_path / "single", tmp_path / "merged", real=True)
