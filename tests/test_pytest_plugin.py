"""The pytest plugin: scenario × target items, readable failures, collection errors, xdist, and fitting a team's suite.

Every pytester folder here holds a harness.toml naming `scenarios` as the
scenario path, as a team's project would: without one, the plugin collects
only the YAML files named on the command line.
"""

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


CONFIG = 'scenarios = ["scenarios"]\n'


@pytest.fixture
def library(pytester: pytest.Pytester):
    (pytester.path / "harness.toml").write_text(CONFIG)
    folder = pytester.mkdir("scenarios")
    (folder / "sky.yaml").write_text(OK.format(name="sky"))
    (folder / "sea.yaml").write_text(OK.format(name="sea"))
    return folder


def test_each_scenario_and_target_is_an_item(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "--collect-only", "-q", "--harness-target", "reference",
                                           "--harness-target", "reference:forget-last-reply")
    result.stdout.fnmatch_lines([
        "scenarios/sea.yaml::sea[[]reference[]]",
        "scenarios/sea.yaml::sea[[]reference:forget-last-reply[]]",
        "scenarios/sky.yaml::sky[[]reference[]]",
        "scenarios/sky.yaml::sky[[]reference:forget-last-reply[]]",
    ])


def test_clean_target_passes_under_xdist(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "-n", "2", "-p", "no:cacheprovider", "--harness-target", "reference")
    result.assert_outcomes(passed=2)


def test_no_target_is_an_error_naming_the_way_out_never_a_silent_reference_run(pytester, library):
    """An outside team's `pytest` went green on items `[reference]`: its own agent never ran."""
    result = pytester.runpytest_subprocess("scenarios", "-n", "2", "-p", "no:cacheprovider")
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED), result.stdout.str()
    result.stdout.fnmatch_lines(["*harness: no target: pass --harness-target T*name the project's in `targets` of its [[]tool.harness[]] table*"])
    assert "passed" not in result.stdout.str() and "[reference]" not in result.stdout.str()


def test_a_configured_target_is_the_default(pytester, library):
    (pytester.path / "harness.toml").write_text(CONFIG + 'targets = ["reference", "reference:forget-last-reply"]\n')
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*sky[[]reference[]] PASSED*", "*sky[[]reference:forget-last-reply[]] FAILED*"])


def test_unexpected_failure_reads_like_an_assertion(pytester, library):
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "--harness-target", "reference:forget-last-reply")
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
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "--harness-target", "reference:forget-last-reply")
    result.assert_outcomes(passed=1)


def test_broken_scenario_is_a_collection_error_not_a_skip(pytester, library):
    (library / "broken.yaml").write_text("name: broken\nsteps:\n  - resume: {prompt: hi}\n")
    result = pytester.runpytest_subprocess("scenarios")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*broken.yaml:3: steps[[]1[]].resume: the first step must be 'launch'*"])
    assert "skipped" not in result.stdout.str()


def test_unknown_target_is_a_usage_error(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "--harness-target", "reference:nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown reference defect 'nope'*"])


def test_journals_are_kept_when_asked(pytester, library):
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "--harness-journal-dir", "journals", "--harness-target", "reference")
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
        result = pytester.runpytest_subprocess("scenarios/sky.yaml", "--harness-journal-dir", "journals", "--harness-target",
                                               "reference", "-n", "2")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*journals: is in use by another harness run (pid 4242)*"])
    finally:
        os.close(fd)
    assert not list(folder.glob("*.jsonl"))


def test_compare_entry_point_fails_an_item_per_scenario_with_a_regression(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "-p", "no:cacheprovider", "--harness-baseline", "reference",
                                           "--harness-candidate", "reference:drop-append-on-resume")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*✗ regression: sky · appended_exactly_once (pass → fail, from step 2 (retry))",
        "*occurrences by request: 1 → 0",
        "FAILED scenarios/sky.yaml::sky[[]reference → reference:drop-append-on-resume[]]*",
    ])


def test_compare_entry_point_passes_fixes_and_proves_required_ones_under_xdist(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "-n", "2", "-p", "no:cacheprovider",
                                           "--harness-baseline", "reference:drop-append-on-resume", "--harness-candidate", "reference",
                                           "--harness-require-fix", "sky")
    result.assert_outcomes(passed=2)
    unproven = pytester.runpytest_subprocess("scenarios/sky.yaml", "-p", "no:cacheprovider",
                                             "--harness-baseline", "reference", "--harness-candidate", "reference", "--harness-require-fix", "sky")
    unproven.assert_outcomes(failed=1)
    unproven.stdout.fnmatch_lines(["*required fix missing: sky must fail on the baseline*"])


def test_compare_needs_both_sides_and_no_target(pytester, library):
    result = pytester.runpytest_subprocess("scenarios", "--harness-baseline", "reference", "--harness-target", "reference")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*harness: compare with both --harness-baseline and --harness-candidate, and without --harness-target*"])


def test_repeat_makes_each_round_its_own_item(pytester, library):
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "-p", "no:cacheprovider", "-v", "--harness-repeat", "3",
                                           "--harness-target", "reference")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*sky[[]reference·1/3[]] PASSED*", "*sky[[]reference·3/3[]] PASSED*"])
    bad = pytester.runpytest_subprocess("scenarios", "--harness-repeat", "0")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


def test_the_pytest_plugin_leaves_the_inbox_out_unless_named(pytester):
    (pytester.path / "harness.toml").write_text(CONFIG)
    library = pytester.path / "scenarios"
    (library / "found").mkdir(parents=True)
    (library / "kept.yaml").write_text(OK.format(name="kept"))
    (library / "found" / "new.yaml").write_text(OK.format(name="new"))
    whole = pytester.runpytest_subprocess("scenarios", "--collect-only", "-q", "-p", "no:cacheprovider", "--harness-target", "reference")
    assert "kept.yaml" in whole.stdout.str() and "new.yaml" not in whole.stdout.str()
    named = pytester.runpytest_subprocess("scenarios/found", "--collect-only", "-q", "-p", "no:cacheprovider",
                                          "--harness-target", "reference")
    assert "new.yaml" in named.stdout.str()


# --------------------------------------------------------------------------- fitting a team's own suite

TEAM_TEST = "def test_unit():\n    assert 1 + 1 == 2\n"


def test_a_teams_own_target_option_does_not_clash(pytester):
    """A conftest defining `--target` crashed pytest with "conflicting option string" while the plugin took that name."""
    pytester.makeconftest("def pytest_addoption(parser):\n    parser.addoption('--target', default='prod')\n"
                          "def pytest_report_header(config):\n    return 'team target: ' + config.getoption('--target')\n")
    pytester.makepyfile(test_unit=TEAM_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--target", "staging")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["team target: staging"])


def test_an_unrelated_yaml_under_a_folder_named_scenarios_is_never_collected(pytester):
    """A fixture under tests/fixtures/scenarios/ broke a team's whole suite with "unknown key 'user'"."""
    (pytester.path / "harness.toml").write_text('scenarios = ["agent-scenarios"]\ntargets = ["reference"]\n')
    fixtures = pytester.mkdir("tests").joinpath("fixtures", "scenarios")
    fixtures.mkdir(parents=True)
    (fixtures / "login.yaml").write_text("user: alice\npassword: x\n")
    (pytester.path / "tests" / "test_unit.py").write_text(TEAM_TEST)
    pytester.mkdir("agent-scenarios").joinpath("sky.yaml").write_text(OK.format(name="sky"))
    named = pytester.runpytest_subprocess("tests", "-p", "no:cacheprovider", "-q")
    named.assert_outcomes(passed=1)
    assert "login.yaml" not in named.stdout.str() and "sky" not in named.stdout.str()
    everything = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")  # no paths: the configured ones too
    everything.assert_outcomes(passed=2)
    everything.stdout.fnmatch_lines(["*agent-scenarios/sky.yaml::sky[[]reference[]] PASSED*"])
    assert "login.yaml" not in everything.stdout.str()


def test_testpaths_elsewhere_still_collect_the_configured_scenarios(pytester):
    (pytester.path / "harness.toml").write_text('scenarios = ["agent-scenarios"]\ntargets = ["reference"]\n')
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    pytester.mkdir("tests").joinpath("test_unit.py").write_text(TEAM_TEST)
    pytester.mkdir("agent-scenarios").joinpath("sky.yaml").write_text(OK.format(name="sky"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=2)


def test_without_a_configuration_only_named_files_are_scenarios(pytester):
    pytester.mkdir("scenarios").joinpath("sky.yaml").write_text(OK.format(name="sky"))
    pytester.makepyfile(test_unit=TEAM_TEST)
    folder = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "--harness-target", "reference")
    folder.assert_outcomes(passed=1)  # the team's test only: a folder named `scenarios` is not configuration
    named = pytester.runpytest_subprocess("scenarios/sky.yaml", "-p", "no:cacheprovider", "-v", "--harness-target",
                                          "reference")
    named.assert_outcomes(passed=1)
    named.stdout.fnmatch_lines(["*sky[[]reference[]] PASSED*"])


def test_a_configured_inbox_is_left_out_unless_named(pytester, library):
    (pytester.path / "harness.toml").write_text(CONFIG + 'explore_inbox = "scenarios/inbox"\ntargets = ["reference"]\n')
    (library / "inbox").mkdir()
    (library / "inbox" / "new.yaml").write_text(OK.format(name="new"))
    whole = pytester.runpytest_subprocess("scenarios", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert "sky.yaml" in whole.stdout.str() and "new.yaml" not in whole.stdout.str()
    named = pytester.runpytest_subprocess("scenarios/inbox", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert "new.yaml" in named.stdout.str()


def test_a_broken_table_is_a_usage_error_naming_its_line(pytester, library):
    (pytester.path / "harness.toml").write_text(CONFIG + 'target = ["reference"]\n')
    result = pytester.runpytest_subprocess("scenarios", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*harness: *harness.toml:2: target: unknown key 'target' (did you mean 'targets'?*"])


def test_retries_name_a_flaky_item_and_fail_it_unless_allowed(pytester, library):
    from test_flaky_runs import flip_target

    target = flip_target(pytester.path)  # odd launches drop the text on resume: the first attempt fails, the second passes
    result = pytester.runpytest_subprocess("scenarios/sky.yaml", "-p", "no:cacheprovider", "--harness-retries", "1",
                                           "--harness-target", str(target))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FLAKY: attempt 1 not as expected (appended_exactly_once fail*), attempt 2 as expected;*"])
    allowed = pytester.runpytest_subprocess("scenarios/sky.yaml", "-p", "no:cacheprovider", "--harness-retries", "1",
                                            "--harness-allow-flaky", "--harness-target", str(target))
    allowed.assert_outcomes(passed=1, warnings=1)
    allowed.stdout.fnmatch_lines(["*FLAKY: sky on flip: attempt 1 not as expected*"])
    once = pytester.runpytest_subprocess("scenarios/sky.yaml", "-p", "no:cacheprovider", "--harness-allow-flaky",
                                         "--harness-target", str(target))
    once.assert_outcomes(failed=1)  # no retry: the odd launch's verdict is the item's
