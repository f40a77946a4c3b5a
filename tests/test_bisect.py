"""`harness bisect` end to end: over a target file's git revisions (a small agent, fast) and over real Claude Code
releases from the registry, plus the range's line of descent (backports and pre-releases named, not searched).

The CLI runs as a subprocess, so the exit code, the progress lines and bisect.json are what a user sees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from harness.bisect.candidates import _finals, out_of_order, parse
from harness.errors import InputError
from harness.targets.release_index import Release
from test_checkout_targets import AGENT, TARGET as TARGET_TEMPLATE, commit, git, tools  # noqa: F401 - tools is a fixture
from test_target_file_at_revision import SCENARIO

HARNESS = Path(sys.executable).parent / "harness"
TARGET = TARGET_TEMPLATE.format(repo=".", rev="")


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(HARNESS), *args], cwd=cwd, capture_output=True, text=True, timeout=1200)


@pytest.fixture
def history(tmp_path, tools) -> tuple[Path, list[str]]:
    """repo/ with six first-parent commits; the fourth makes the agent drop the appended text on resume, and a
    side branch merged after it touches only a README (first-parent order does not walk into it)."""
    repo = tmp_path.resolve() / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas = [commit(repo, {"agent.py": AGENT.format(flag="--append", keep=True), "target.yaml": TARGET}, "the agent")]
    shas.append(commit(repo, {"NOTES": "one"}, "notes"))
    shas.append(commit(repo, {"NOTES": "two"}, "more notes"))
    shas.append(commit(repo, {"agent.py": AGENT.format(flag="--append", keep=False)}, "resume starts fresh"))
    git(repo, "switch", "-q", "-c", "side", shas[1])
    commit(repo, {"README": "side"}, "a side branch")
    git(repo, "switch", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    shas.append(git(repo, "rev-parse", "HEAD"))
    shas.append(commit(repo, {"NOTES": "three"}, "last"))
    (repo / "scenario.yaml").write_text(SCENARIO)
    return repo, shas


def test_bisect_over_revisions_names_the_commit_that_dropped_the_text(history):
    repo, shas = history
    done = harness("bisect", "scenario.yaml", "--target", f"target.yaml@{shas[0][:10]}..{shas[-1][:10]}",
                   "--report-dir", "out", cwd=repo)
    assert done.returncode == 0, done.stderr
    record = json.loads((repo / "out" / "bisect.json").read_text())
    short = git(repo, "rev-parse", "--short", shas[3])
    assert record["first_changed"] == short and record["kind"] == "revision"
    assert record["last_unchanged"] == git(repo, "rev-parse", "--short", shas[2])
    assert record["candidates"] == 6  # first-parent: the side branch's commit is not a candidate
    assert record["changed_checks"] == ["appended_exactly_once"]
    evidence = record["evidence"]["appended_exactly_once"]
    assert (evidence["last_unchanged"]["verdict"], evidence["first_changed"]["verdict"]) == ("pass", "fail")
    assert evidence["first_changed"]["observed"] == 0 and Path(evidence["first_changed"]["journal"]).is_file()
    assert f"first changed in {short}" in done.stdout
    assert "harness bisect: testing" in done.stderr  # progress, one line per probe


def test_a_revision_that_cannot_run_is_skipped_and_named(history):
    repo, shas = history
    broken = commit(repo, {"agent.py": "raise SystemExit(3)\n"}, "broken")
    fixed = commit(repo, {"agent.py": AGENT.format(flag="--append", keep=False)}, "dropping again")
    # ... --first-parent from the second-last good commit: the break and the drop lie in the same range
    done = harness("bisect", "scenario.yaml", "--target", f"target.yaml@{shas[2]}..{fixed}", "--report-dir", "out",
                   "--check", "appended_exactly_once", cwd=repo)
    record = json.loads((repo / "out" / "bisect.json").read_text())
    assert done.returncode == 0, done.stderr
    assert record["first_changed"] == git(repo, "rev-parse", "--short", shas[3])
    assert broken[:7] not in json.dumps(record["tested"]) or all(t["release"] != git(repo, "rev-parse", "--short", broken)
                                                                 for t in record["tested"])


def test_an_unjudgeable_revision_between_the_sides_is_said_not_guessed(tmp_path, tools):
    repo = tmp_path.resolve() / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    good = commit(repo, {"agent.py": AGENT.format(flag="--append", keep=True), "target.yaml": TARGET}, "good")
    broken = commit(repo, {"agent.py": "raise SystemExit(3)\n"}, "broken")
    bad = commit(repo, {"agent.py": AGENT.format(flag="--append", keep=False)}, "bad")
    (repo / "scenario.yaml").write_text(SCENARIO)
    done = harness("bisect", "scenario.yaml", "--target", f"target.yaml@{good}..{bad}", "--report-dir", "out", cwd=repo)
    record = json.loads((repo / "out" / "bisect.json").read_text())
    assert done.returncode == 1, done.stdout
    short = git(repo, "rev-parse", "--short", broken)
    assert record["between"] == [short] and [s["release"] for s in record["skipped"]] == [short]
    assert "its run is an error" in record["skipped"][0]["why"]
    assert f"in one of {short}, none of which could be judged" in done.stdout


def test_bad_ranges_are_one_line_and_exit_2(history):
    repo, shas = history
    for spec, said in [("claude-code", "expected NAME@OLD..NEW"), ("nosuch@1..2", "no target family is named"),
                       ("reference@1..2", "not releases of a registry package"),
                       (f"target.yaml@{shas[-1]}..{shas[0]}", "is not an ancestor of"),
                       ("target.yaml@nope..HEAD", "no commit named 'nope'")]:
        done = harness("bisect", "scenario.yaml", "--target", spec, "--report-dir", "out", cwd=repo)
        assert done.returncode == 2, (spec, done.stderr)
        assert said in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr


def _release(version: str, day: int) -> Release:
    return Release(version, datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=day))


def test_prereleases_are_left_out_and_a_release_uploaded_out_of_order_is_named_not_dropped():
    """A late upload may be a backport or a mirror's late record (here the registry dates Claude Code 2.0.3 after
    2.0.5): dropping it could move the boundary onto its neighbour, so it is searched, and named."""
    inside = [_release("2.0.0", 0), _release("2.0.1", 1), _release("2.0.2", 9), _release("2.1.0-beta.1", 2),
              _release("2.1.0", 3), _release("2.1.1", 4)]
    kept, left_out = _finals(inside, "npm")
    assert [r.version for r in kept] == ["2.0.0", "2.0.1", "2.0.2", "2.1.0", "2.1.1"]
    assert left_out == [{"version": "2.1.0-beta.1", "why": "a pre-release"}]
    assert [(item["version"], item["after"]) for item in out_of_order(kept)] == [("2.0.2", "2.1.0")]


def test_a_release_range_is_the_registrys_list_in_version_order():
    span = parse("claude-code@2.1.266..2.1.269+append-first-launch-only")
    assert [c.label for c in span.candidates] == ["2.1.266", "2.1.267", "2.1.268", "2.1.269"]
    assert span.candidates[0].spec == "claude-code@2.1.266+append-first-launch-only"
    with pytest.raises(InputError, match="lists no release 9.9.9"):
        parse("claude-code@2.1.266..9.9.9")


def test_bisect_over_claude_code_releases_finds_where_resume_began_to_keep_the_text(tmp_path):
    """Measured: 2.1.267 and older drop --append-system-prompt's text on a plain --resume (and flip the identity
    line); 2.1.268 keeps the first launch's text. Four releases around the boundary, installed on first use."""
    scenario = Path(__file__).resolve().parent.parent / "scenarios" / "claude-code" / "wrong-answer-then-retry.yaml"
    done = harness("bisect", str(scenario), "--target", "claude-code@2.1.265..2.1.270+append-first-launch-only",
                   "--report-dir", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((tmp_path / "out" / "bisect.json").read_text())
    assert (record["last_unchanged"], record["first_changed"]) == ("2.1.267", "2.1.268")
    assert record["changed_checks"] == ["identity_stable", "appended_exactly_once", "prefix_stable"]
    evidence = record["evidence"]["appended_exactly_once"]
    assert (evidence["last_unchanged"]["observed"], evidence["first_changed"]["observed"]) == (0, 1)
    assert len(record["tested"]) <= 2 + 3  # ⌈log2 5⌉ probes between the ends


def test_an_end_that_cannot_be_judged_is_named_by_its_label(history):
    repo, shas = history
    broken = commit(repo, {"agent.py": "raise SystemExit(3)\n"}, "broken at the end")
    done = harness("bisect", "scenario.yaml", "--target", f"target.yaml@{shas[0]}..{broken}", "--report-dir", "out", cwd=repo)
    assert done.returncode == 1, done.stderr
    short = git(repo, "rev-parse", "--short", broken)
    assert f"no boundary: the last end, {short}, cannot be judged: its run is an error" in done.stdout
    assert "Candidate(" not in done.stdout
