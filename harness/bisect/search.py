"""The binary search of `harness bisect`, apart from what it searches: candidates in order and one probe each.

Kept free of installs and agents so its promises can be tested on their own
(tests/test_bisect_search.py, with Hypothesis): it probes the two ends first,
then halves the range between the last candidate that judged like the first
and the first that did not, probing each candidate at most once. A candidate
that cannot be judged (it does not install, or its run is an error or cannot
express the scenario) is skipped and named, as `git bisect skip` does: the
search tries the untested candidate nearest the middle instead, and when only
skipped candidates are left between the two sides, the answer says the change
lies somewhere among them rather than guessing which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Generic, Sequence, TypeVar

C = TypeVar("C")


@dataclass(frozen=True)
class Probe:
    """One candidate's outcome: the verdicts compared (check -> verdict), or why it could not be judged."""

    verdicts: tuple[tuple[str, str], ...] | None = None
    skipped: str | None = None  # set when the candidate could not be judged


@dataclass
class Boundary(Generic[C]):
    """What the search found: last_unchanged judges like the first candidate, first_changed does not."""

    last_unchanged: C | None = None
    first_changed: C | None = None
    between: list[C] = field(default_factory=list)  # skipped candidates the change could lie in (usually none)
    tested: list[tuple[C, Probe]] = field(default_factory=list)  # in the order probed
    problem: str | None = None  # why there is no boundary: an end could not be judged, or both ends agree


def bisect(candidates: Sequence[C], probe: Callable[[C], Probe],
           on_probe: Callable[[C, int], None] | None = None) -> Boundary[C]:
    """The first candidate whose verdicts differ from candidates[0]'s, assuming one change between the ends.

    `on_probe(candidate, left)` is told before each probe, with how many candidates are still undecided.
    """
    found: Boundary[C] = Boundary()
    if len(candidates) < 2:
        found.problem = "a bisection needs two releases or revisions at least"
        return found
    outcomes: dict[int, Probe] = {}

    def judge(index: int, left: int) -> Probe:
        if on_probe is not None:
            on_probe(candidates[index], left)
        outcome = probe(candidates[index])
        outcomes[index] = outcome
        found.tested.append((candidates[index], outcome))
        return outcome

    first = judge(0, len(candidates))
    if first.skipped is not None:
        found.problem = f"the first end, {candidates[0]}, cannot be judged: {first.skipped}"
        return found
    last = judge(len(candidates) - 1, len(candidates) - 1)
    if last.skipped is not None:
        found.problem = f"the last end, {candidates[-1]}, cannot be judged: {last.skipped}"
        return found
    if last.verdicts == first.verdicts:
        found.problem = f"{candidates[0]} and {candidates[-1]} judge alike: there is no change between them to find"
        return found
    low, high = 0, len(candidates) - 1  # low judges like the first end, high does not
    while True:
        untested = [i for i in range(low + 1, high) if i not in outcomes]
        if not untested:
            break
        middle = (low + high) / 2
        index = min(untested, key=lambda i: (abs(i - middle), i))
        outcome = judge(index, len(untested))
        if outcome.skipped is not None:
            continue
        if outcome.verdicts == first.verdicts:
            low = index
        else:
            high = index
    found.last_unchanged, found.first_changed = candidates[low], candidates[high]
    found.between = [candidates[i] for i in range(low + 1, high)]
    return found


def changed_checks(before: Probe, after: Probe) -> list[str]:
    """The checks whose verdicts differ between two judged probes, in the scenario's order."""
    old, new = dict(before.verdicts or ()), dict(after.verdicts or ())
    return [check for check in dict.fromkeys([*old, *new]) if old.get(check) != new.get(check)]

