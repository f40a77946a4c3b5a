"""`pytest scenarios/`: scenario × target items, readable failures, collection errors, xdist."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

OK = """\
name: {name}
append: "Answer in one word."
steps:
  - launch: {{prompt: "Colour of the sky?", reply: "Blue"}}
  - retry:  {{prompt: "Wrong. Again?", reply: "Azure"}}
"""


@pytest.fixture
def library(pytester: pytest.Pytester):
    folder = pytester.mkdir("scenarios")
    (folder / "sky.yaml").write_text(OK.format(name="sky"))
    (folder / "sea.yaml").write_text(OK.format(name="sea"))
    return folder


def test_each_scenario_and_target_is_an_item(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "--collect-only", "-q", "--target", "reference",
                                           "--target", "reference:forget-last-reply")
    result.stdout.fnmatch_lines([
        "scenarios/sea.yaml::sea[[]reference[]]",
        "scenarios/sea.yaml::sea[[]reference:forget-last-reply[]]",
        "scenarios/sky.yaml::sky[[]reference[]]",
        "scenarios/sky.yaml::sky[[]reference:forget-last-reply[]]",
    ])


def test_clean_target_passes_under_xdist(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "-n", "2", "-p", "no:cacheprovider", "--target", "reference")
    result.assert_outcomes(passed=2)


def test_no_target_is_an_error_naming_the_way_out_never_a_silent_reference_run(pytester, library):
    """An outside team's `pytest` went green on items `[reference]`: its own agent never ran."""
    result = pytester.runpytest_subprocess("scenarios", "-n", "2", "-p", "no:cacheprovider")
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), result.stdout.str()
    result.stdout.fnmatch_lines(["*harness: no target: pass --target T*configure one with `harness_targets`*"])
    assert "passed" not in result.stdout.str() and "[reference]" not in result.stdout.str()


def test_a_configured_target_is_the_default(pytester, library):
    pytester.makeini("[pytest]\nharness_targets =\n    reference\n    reference:forget-last-reply\n")
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*sky[[]reference[]] PASSED*", "*sky[[]reference:forget-last-reply[]] FAILED*"])


def test_unexpected_failure_reads_like_an_assertion(pytester, library):
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "--target", "reference:forget-last-reply")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*scenario 'sky' on target 'reference:forget-last-reply': status fail*",
        "*✗ history_preserved: expected pass, got fail*",
        "*step 2 (retry), request #2: history differs from step 1 (launch), request #1 plus its reply*",
        "*expected: assistant: {\"text\": \"Blue\", \"type\": \"text\"}*",
    ])


def test_expected_failure_passes(pytester, library):
    (library / "sky.yaml").write_text(
        OK.format(name="sky") + "expect:\n  reference:forget-last-reply: {history_preserved: fail}\n")
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "--target", "reference:forget-last-reply")
    result.assert_outcomes(passed=1)


def test_broken_scenario_is_a_collection_error_not_a_skip(pytester, library):
    (library / "broken.yaml").write_text("name: broken\nsteps:\n  - resume: {prompt: hi}\n")
    result = pytester.runpytest_subprocess("scenarios")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*broken.yaml:3: steps[[]1[]].resume: the first step must be 'launch'*"])
    assert "skipped" not in result.stdout.str()


def test_unknown_target_is_a_usage_error(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "--target", "reference:nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown reference defect 'nope'*"])


def test_journals_are_kept_when_asked(pytester, library):
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "--harness-journal-dir", "journals", "--target", "reference")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "journals" / "sky__reference.jsonl").read_text().count("\n") == 2


def test_a_journal_folder_held_by_another_session_is_a_usage_error(pytester, library):
    import fcntl
    import os

    folder = pytester.path / "journals"
    folder.mkdir()
    fd = os.open(folder / ".harness.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"4242\n")
        result = pytester.runpytest_subprocess("scenarios/sky.yaml", "--harness-journal-dir", "journals", "--target",
                                               "reference", "-n", "2")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*journals: is in use by another harness run (pid 4242)*"])
    finally:
        os.close(fd)
    assert not list(folder.glob("*.jsonl"))


def test_compare_entry_point_fails_an_item_per_scenario_with_a_regression(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "-p", "no:cacheprovider", "--baseline", "reference",
                                           "--candidate", "reference:drop-append-on-resume")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*✗ regression: sky · appended_exactly_once (pass → fail, from step 2 (retry))",
        "*occurrences by request: 1 → 0",
        "FAILED scenarios/sky.yaml::sky[[]reference → reference:drop-append-on-resume[]]*",
    ])


def test_compare_entry_point_passes_fixes_and_proves_required_ones_under_xdist(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "-n", "2", "-p", "no:cacheprovider",
                                           "--baseline", "reference:drop-append-on-resume", "--candidate", "reference",
                                           "--require-fix", "sky")
    result.assert_outcomes(passed=2)
    unproven = pytester.runpytest_subprocess("scenarios/sky.yaml", "-p", "no:cacheprovider",
                                             "--baseline", "reference", "--candidate", "reference", "--require-fix", "sky")
    unproven.assert_outcomes(failed=1)
    unproven.stdout.fnmatch_lines(["*required fix missing: sky must fail on the baseline*"])


def test_compare_needs_both_sides_and_no_target(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "--baseline", "reference", "--target", "reference")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*harness: compare with both --baseline and --candidate, and without --target*"])


def test_repeat_makes_each_round_its_own_item(pytester, library):
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "-p", "no:cacheprovider", "-v", "--harness-repeat", "3",
                                           "--target", "reference")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*sky[[]reference·1/3[]] PASSED*", "*sky[[]reference·3/3[]] PASSED*"])
    bad = pytester.runpytest_subprocess("scenarios", "--harness-repeat", "0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


def test_the_pytest_plugin_leaves_the_inbox_out_unless_named(pytester):
    library = pytester.path / "scenarios"
    (library / "found").mkdir(parents=True)
    (library / "kept.yaml").write_text(OK.format(name="kept"))
    (library / "found" / "new.yaml").write_text(OK.format(name="new"))
    whole = pytester.runpytest_subprocess("scenarios", "--collect-only", "-q", "-p", "no:cacheprovider", "--target", "reference")
    assert "kept.yaml" in whole.stdout.str() and "new.yaml" not in whole.stdout.str()
    named = pytester.runpytest_subprocess("scenarios/found", "--collect-only", "-q", "-p", "no:cacheprovider",
                                          "--target", "reference")
    assert "new.yaml" in named.stdout.str()
