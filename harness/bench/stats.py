"""Medians, percentiles and alternating repetitions: the arithmetic every measurement shares.

Nearest-rank percentiles, not interpolated ones: p99 of 1000 replies is then
the 990th fastest reply that really happened, which is what "p99" means to
whoever reads the table. Repetitions of the variants being compared alternate
(A, B, A, B, starting with a different one each round), so a burst of load on
the shared machine falls on both sides instead of on whichever ran last.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping, Sequence, TypeVar

T = TypeVar("T")


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank p-th percentile (0 < p <= 100) of a non-empty sample."""
    if not values:
        raise ValueError("percentile of an empty sample")
    if not 0 < p <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {p}")
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    """The middle value; the mean of the two middle ones for an even count."""
    if not values:
        raise ValueError("median of an empty sample")
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def alternate(variants: Mapping[str, Callable[[], T]], rounds: int,
              on_round: Callable[[int, dict[str, T]], None] = lambda *_: None) -> dict[str, list[T]]:
    """Each variant once per round, in an order rotated by one every round; results per variant, in round order."""
    names = list(variants)
    results: dict[str, list[T]] = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names)
        this_round = {}
        for name in names[shift:] + names[:shift]:
            this_round[name] = variants[name]()
            results[name].append(this_round[name])
        on_round(number + 1, this_round)
    return results


def summary(values: Sequence[float], digits: int = 6) -> dict[str, float | int]:
    """The figures a sample is reported by: count, median, p99, min, max."""
    return {
        "n": len(values),
        "median": round(median(values), digits),
        "p99": round(percentile(values, 99), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
    }
