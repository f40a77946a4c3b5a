"""n shard folders back into one matrix: checked to belong together, runs in the single run's order, journals moved in.

The merge refuses rather than guess, each refusal one line naming the shard
folder: a folder that is no shard, shards of different kinds (run, diff),
of different n, of different inputs (a scenario file, a target's build,
the matrix, the options: the digests each shard recorded), the same shard
twice, and shards missing (naming which). Runs are put back in the order
of the recorded matrix, the order the single run would list them in,
never the order the folders were given in: that is what makes the merged
results.json, junit.xml, summary.md and report.html equal a single run's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Sequence

from harness.errors import InputError
from harness.results import Comparison, RunResult
from harness.shards import record as records
from harness.shards.codec import decode, encode
from harness.shards.record import ShardRecord

JOURNAL_DIR = "journal"


def load(folders: Sequence[Path]) -> list[tuple[Path, ShardRecord]]:
    """Every shard's record, checked to be one complete set of the same matrix; ordered by shard number."""
    if not folders:
        raise InputError("merge-reports needs the shard folders to merge: harness merge-reports DIR...")
    loaded = [(Path(f), records.read(Path(f))) for f in folders]
    first_folder, first = loaded[0]
    seen: dict[int, Path] = {}
    for folder, shard in loaded:
        if shard.kind != first.kind:
            raise InputError(f"a shard of `harness {shard.kind}`, but {first_folder} is one of `harness {first.kind}`; "
                             "merge the shards of one command", folder)
        if shard.count != first.count:
            raise InputError(f"shard {shard.shard}, but {first_folder} is shard {first.shard}: the shards of one "
                             "matrix share their n", folder)
        differs = _first_difference(first.inputs, shard.inputs)
        if differs is not None:
            raise InputError(f"shard {shard.shard} ran other inputs than {first_folder} (shard {first.shard}): {differs}; "
                             "merge only shards of the same scenarios, targets and options", folder)
        if shard.index in seen:
            raise InputError(f"shard {shard.shard} twice: here and in {seen[shard.index]}", folder)
        seen[shard.index] = folder
    missing = [i for i in range(1, first.count + 1) if i not in seen]
    if missing:
        raise InputError(f"shard(s) {', '.join(map(str, missing))} of {first.count} missing: given "
                         f"{', '.join(str(i) for i in sorted(seen))}; a merged report of part of the matrix would "
                         "pass for all of it")
    return sorted(loaded, key=lambda pair: pair[1].index)


def _first_difference(ours: dict[str, Any], theirs: dict[str, Any]) -> str | None:
    """What first differs between two shards' inputs, said as a reader would look for it."""
    for key in ("harness_version", "assignment", "options"):
        if ours.get(key) != theirs.get(key):
            return f"{key} {theirs.get(key)!r}, not {ours.get(key)!r}"
    for key, kind in (("scenarios", "scenario"), ("targets", "target")):
        mine, other = ours.get(key, {}), theirs.get(key, {})
        for name in sorted(set(mine) | set(other)):
            if name not in mine or name not in other:
                return f"{kind} {name!r} is in one matrix only"
            if mine[name] != other[name]:
                what = "file's digest" if kind == "scenario" else "spec, installed builds or target file"
                return f"{kind} {name!r}: its {what} differs ({other[name]} here, {mine[name]} there)"
    if ours.get("matrix") != theirs.get("matrix"):
        return "the matrix (the scenario × target runs, in order)"
    return None


def merged_runs(loaded: Sequence[tuple[Path, ShardRecord]], out: Path) -> list[RunResult]:
    """Every shard's runs in the matrix's order, their journals under `out`/journal/ and their paths pointing there."""
    matrix = loaded[0][1].matrix
    place = {run: number for number, run in enumerate(matrix)}
    runs: dict[tuple[str, str], RunResult] = {}
    for folder, shard in loaded:
        for result in _moved(shard.runs, RunResult, folder, shard, out):
            run = (result.scenario, result.target)
            if run not in place:
                raise InputError(f"shard {shard.shard} holds run {run[0]} × {run[1]}, which its matrix has not", folder)
            if run in runs:
                raise InputError(f"run {run[0]} × {run[1]} is in two shards (here, and another given); shards of "
                                 "one matrix never share a run", folder)
            runs[run] = result
    absent = [run for run in matrix if run not in runs]
    if absent:
        raise InputError(f"{len(absent)} run(s) of the matrix are in no shard, first {absent[0][0]} × {absent[0][1]}")
    return [runs[run] for run in matrix]


def merged_comparison(loaded: Sequence[tuple[Path, ShardRecord]], out: Path) -> Comparison:
    """The diff shards' scenarios in the matrix's order, one Comparison as a single `harness diff` makes it."""
    order = {scenario: number for number, (scenario, _) in enumerate(loaded[0][1].matrix)}
    parts = [(folder, shard, _moved([shard.comparison], Comparison, folder, shard, out)[0]) for folder, shard in loaded]
    first = parts[0][2]
    scenarios = sorted((sd for _, _, c in parts for sd in c.scenarios), key=lambda sd: order[sd.scenario.name])
    options = loaded[0][1].inputs["options"]
    return Comparison(first.baseline, first.candidate, scenarios, bool(options.get("fail_on_unchanged_fail")),
                      tuple(options.get("required_fixes", ())))


def _moved(items: list, kind: type, folder: Path, shard: ShardRecord, out: Path) -> list:
    """The items with their journals copied into `out`/journal/ and every path to them rewritten to point there.

    The rewrite works on the encoded text of each value, so a path in any field (a journal, a launch journal,
    an error message naming one, a field added later) follows the journal it names.
    """
    source = folder / JOURNAL_DIR
    if source.is_dir():
        shutil.copytree(source, out / JOURNAL_DIR, dirs_exist_ok=True)
    old, new = f"{shard.report_dir.rstrip('/')}/{JOURNAL_DIR}/", f"{str(out).rstrip('/')}/{JOURNAL_DIR}/"
    moved = []
    for item in items:
        text = json.dumps(encode(item, kind), ensure_ascii=False)
        moved.append(decode(json.loads(text.replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1])), kind))
    return moved
