"""`--shard i/n` and `--shard-durations FILE` as `harness run` and `harness diff` share them (harness/shards/)."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path
from typing import Any, Sequence

from harness.errors import InputError


def add_shard_options(parser: argparse.ArgumentParser, unit: str) -> None:
    # A plain string, parsed in the command: bad values are one line and exit 2, not argparse's usage block.
    parser.add_argument("--shard", metavar="i/n",
                        help=f"run only shard i of n (1-based) of the {unit}, dealt by a hash of each run's name, "
                             "and write shard.json beside the reports; `harness merge-reports` joins the n folders "
                             "into the single run's report")
    parser.add_argument("--shard-durations", metavar="RESULTS_JSON",
                        help="with --shard: balance the shards by the durations an earlier results.json recorded "
                             "(longest first, each to the least loaded shard) instead of the hash; every shard must "
                             "be given the same file")


class ShardPlan:
    """This command's shard: which of the matrix's runs it owns, and how they were chosen (for shard.json)."""

    def __init__(self, args: argparse.Namespace, matrix: Sequence[tuple[str, str]]):
        from harness.shards.assignment import parse_shard, read_durations, runs_of

        self.matrix = list(matrix)
        if args.shard is None:
            if args.shard_durations is not None:
                raise InputError("--shard-durations balances shards: give --shard i/n too")
            self.shard, self.owned, self.assignment = None, None, None
            return
        self.shard = parse_shard(args.shard)
        durations = None
        self.assignment = "hash"
        if args.shard_durations is not None:
            durations = read_durations(args.shard_durations)
            digest = hashlib.sha256(Path(args.shard_durations).read_bytes()).hexdigest()
            self.assignment = f"durations sha256:{digest}"
        self.owned = runs_of(self.shard, list(matrix), durations)

    def record(self, kind: str, command: list[str], notes: Sequence[str], report_dir: Path, inputs: tuple,
               options: dict[str, Any], **results: Any):
        """The shard's record, to be written as shard.json (None when the command is not sharded).

        `inputs` is (scenarios, targets, matrix): everything the whole matrix reads, and its runs in the order a
        single run lists them.
        """
        from harness.shards.record import ShardRecord, inputs_of

        if self.shard is None:
            return None
        return ShardRecord(kind, self.shard.index, self.shard.count, list(command), str(report_dir),
                           inputs_of(*inputs, self.assignment or "hash", options), list(notes), **results)
