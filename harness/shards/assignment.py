"""Which shard runs which (scenario, target) pair: a partition of the matrix that every machine computes alike.

The default deals the runs by hash. Each run's id is `SCENARIO × TARGET`
(the names a report lists it under, unique in one report); the ids are
sorted by the sha256 of that id and dealt round-robin, the k-th to shard
(k mod n) + 1. Why this and not the others:

- stateless and the same everywhere: the sort key is a digest of names, not
  Python's salted `hash()`, not the file order of a checkout, not a record
  of earlier runs a fresh CI job does not have;
- balanced: shard sizes differ by at most one run. `hash mod n` alone leaves
  shards empty or doubled on the small matrices CI shards most (8 runs in
  4 shards), and every shard already knows the whole matrix (it planned it
  and records its digests, which merge-reports checks), so dealing over it
  costs nothing;
- mixed: a suite's runs are spread over the shards instead of handed to one
  as a block (matrix order split in contiguous slices, Playwright's way,
  gives one shard all of a slow real CLI's runs).

Optional, pytest-split's way: `--shard-durations results.json` from an
earlier run balances by recorded time, longest first, each run to the shard
with the least time so far (greedy LPT); a run the record does not know is
given the median of those it does. It needs the same record on every
shard (a file in the repository or a cached artifact); the dealt hash needs
nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from harness.errors import InputError

RunId = tuple[str, str]  # (scenario name, target name)
_SHARD = re.compile(r"([0-9]+)/([0-9]+)")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as `--shard 2/3` says it
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str, option: str = "--shard") -> Shard:
    """`i/n` with 1 <= i <= n; anything else is one line of bad input (exit 2)."""
    match = _SHARD.fullmatch(text.strip()) if text.isascii() else None
    if match is None:
        raise InputError(f"{option} {text!r}: expected i/n, this shard's number and the number of shards, e.g. 2/3")
    index, count = int(match[1]), int(match[2])
    if count < 1:
        raise InputError(f"{option} {text!r}: the number of shards must be at least 1")
    if not 1 <= index <= count:
        raise InputError(f"{option} {text!r}: the shard's number counts from 1 to {count}")
    return Shard(index, count)


def run_label(run: RunId) -> str:
    return f"{run[0]} × {run[1]}"


def _key(run: RunId) -> str:
    return hashlib.sha256(run_label(run).encode("utf-8", "surrogatepass")).hexdigest()


def assign(runs: Sequence[RunId], count: int, durations: Mapping[RunId, float] | None = None) -> dict[RunId, int]:
    """Each run's shard (1..count): dealt by hash, or balanced by `durations` when given."""
    unique = sorted(set(runs), key=lambda run: (_key(run), run))
    if durations is None:
        return {run: k % count + 1 for k, run in enumerate(unique)}
    known = [durations[run] for run in unique if run in durations]
    guess = statistics.median(known) if known else 1.0
    cost = {run: durations.get(run, guess) for run in unique}
    load = [0.0] * count
    shards: dict[RunId, int] = {}
    for run in sorted(unique, key=lambda run: -cost[run]):  # stable: equal costs keep the hash order
        lightest = min(range(count), key=lambda i: (load[i], i))
        load[lightest] += cost[run]
        shards[run] = lightest + 1
    return shards


def runs_of(shard: Shard, runs: Sequence[RunId], durations: Mapping[RunId, float] | None = None) -> frozenset[RunId]:
    """The runs `shard` owns, out of the whole matrix `runs`."""
    return frozenset(run for run, owner in assign(runs, shard.count, durations).items() if owner == shard.index)


def read_durations(path: str | Path, option: str = "--shard-durations") -> dict[RunId, float]:
    """Each run's duration_s from an earlier results.json (or shard.json, whose runs hold the same field)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        runs: Iterable = data["runs"]
        return {(str(r["scenario"]), str(r["target"])): float(r["duration_s"]) for r in runs}
    except OSError as exc:
        raise InputError(f"{option}: cannot read it: {exc.strerror or exc}", Path(path)) from None
    except (ValueError, KeyError, TypeError, AttributeError):
        raise InputError(f"{option}: not a results.json of `harness run` (runs with scenario, target and duration_s)",
                         Path(path)) from None
