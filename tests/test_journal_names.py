"""Journal file names: one per (scenario, target) pair, never shared by two pairs, never too long to create."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, strategies as st

from harness.run.runner import MAX_JOURNAL_NAME, journal_name

from test_runner import ONE_TURN, scenario, target


def name(scenario_name: str, target_name: str) -> str:
    return journal_name(SimpleNamespace(name=scenario_name), SimpleNamespace(name=target_name))


def test_plain_names_stay_readable():
    assert name("two-turns", "reference") == "two-turns__reference.jsonl"
    assert name("cc-compact", "claude-code@2.1.332+append-never") == "cc-compact__claude-code@2.1.332+append-never.jsonl"
    assert name("s", "reference:drop-append-on-resume").startswith("s__reference_drop-append-on-resume=")


def test_targets_that_sanitise_alike_get_journals_of_their_own():
    assert name("s", "a/b") != name("s", "a_b") != name("s", "a:b")
    assert name("x__y", "z") != name("x", "y__z")


names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=300)


@given(names, names, names, names)
def test_different_pairs_never_share_a_name_and_every_name_fits(s1, t1, s2, t2):
    first, second = name(s1, t1), name(s2, t2)
    assert len(first.encode()) <= MAX_JOURNAL_NAME + len(".jsonl") and "/" not in first and "\0" not in first
    if (s1, t1) != (s2, t2):
        assert first != second


def test_a_run_with_a_name_of_240_characters_keeps_its_journal(run, tmp_path):
    from harness.run.runner import run_matrix

    sc = scenario("n" * 240, ONE_TURN)
    results = run_matrix([sc], [target("good")], tmp_path / "journal")
    assert results[0].error is None, results[0].error
    (journal,) = (tmp_path / "journal").glob("*.jsonl")
    assert len(journal.name) <= MAX_JOURNAL_NAME + len(".jsonl") and journal.read_text().count("\n") == 1
