"""The bisection's promises, apart from installs and agents: it finds the first change, probes each candidate once,
stays within ⌈log2 (n-1)⌉ + 2 probes (n candidates), and never names a candidate it could not judge as the boundary."""

from __future__ import annotations

import math

from hypothesis import given, settings, strategies as st

from harness.bisect.search import Probe, bisect, changed_checks

OLD, NEW = Probe(verdicts=(("appended_exactly_once", "fail"),)), Probe(verdicts=(("appended_exactly_once", "pass"),))
SKIP = Probe(skipped="does not install")


def _probe_of(flip: int, skipped: set[int], seen: list[int]):
    def probe(index: int) -> Probe:
        seen.append(index)
        if index in skipped:
            return SKIP
        return OLD if index < flip else NEW
    return probe


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=2, max_value=400).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, n - 1))))
def test_it_finds_the_first_changed_candidate_in_at_most_log2_probes(case):
    n, flip = case
    seen: list[int] = []
    found = bisect(list(range(n)), _probe_of(flip, set(), seen))
    assert (found.last_unchanged, found.first_changed, found.between, found.problem) == (flip - 1, flip, [], None)
    assert len(seen) == len(set(seen)), "a candidate was probed twice"
    assert len(seen) <= 2 + math.ceil(math.log2(n - 1))


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=3, max_value=120).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(1, n - 1), st.sets(st.integers(1, n - 2), max_size=n))))
def test_a_skipped_candidate_is_never_the_boundary_and_the_change_is_bracketed(case):
    n, flip, skipped = case
    seen: list[int] = []
    found = bisect(list(range(n)), _probe_of(flip, skipped, seen))
    assert found.problem is None
    assert found.first_changed not in skipped and found.last_unchanged not in skipped
    assert found.last_unchanged < flip <= found.first_changed
    # only candidates that could not be judged stand between the two sides
    assert set(found.between) <= skipped and found.between == list(range(found.last_unchanged + 1, found.first_changed))
    if not skipped:
        assert found.first_changed == flip
    assert len(seen) == len(set(seen))


def test_ends_that_agree_or_cannot_be_judged_are_said_not_bisected():
    assert "judge alike" in bisect([1, 2, 3], lambda c: OLD).problem
    assert "the first end, 1, cannot be judged" in bisect([1, 2, 3], lambda c: SKIP if c == 1 else OLD).problem
    assert "the last end, 3" in bisect([1, 2, 3], lambda c: SKIP if c == 3 else OLD).problem
    assert "two releases" in bisect([1], lambda c: OLD).problem


def test_changed_checks_names_only_the_checks_whose_verdict_moved():
    before = Probe(verdicts=(("identity_stable", "pass"), ("prefix_stable", "fail")))
    after = Probe(verdicts=(("identity_stable", "pass"), ("prefix_stable", "pass")))
    assert changed_checks(before, after) == ["prefix_stable"]
