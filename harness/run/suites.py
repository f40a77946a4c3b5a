"""Several suites (scenario paths × targets, each with its own workers) run as one matrix, for one report.

`make run` ran nine `harness run` commands and left nine report folders, with
`reports/latest` pointing at the last suite only. A project's suites are now
one command: every suite's scenarios and targets are read before any agent
starts (bad input in the last suite stops the first one from running), each
suite runs as `harness run` would run it, and the results are concatenated
in the suites' order, so the reporters render one results.json, junit.xml,
summary.md and report.html for all of them. A stop (Ctrl-C, a full disk)
ends the whole command: the runs of later suites are listed as not run,
never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from harness.errors import InputError
from harness.results import RunResult
from harness.run.attempts import Attempts
from harness.run.runner import Progress, not_run, run_matrix
from harness.scenario.model import Scenario
from harness.targets.base import Target


@dataclass(frozen=True)
class Part:
    """One suite as planned: what it runs and on how many worker processes."""

    name: str | None  # None: the command line's own scenarios and targets
    scenarios: Sequence[Scenario]
    targets: Sequence[Target]
    specs: Sequence[str]  # the target specs `targets` were resolved from (workers resolve them again)
    workers: int = 1
    # The runs to keep, as (scenario, target) names: a shard's (`--shard i/n`, harness/shards/) or --last-failed's;
    # None: the whole product.
    only: frozenset[tuple[str, str]] | None = None

    def pairs(self) -> list[tuple[Scenario, Target]]:
        """The (scenario, target) pairs this part runs, scenario-major as run_matrix orders them."""
        return [(s, t) for s in self.scenarios for t in self.targets if self.only is None or (s.name, t.name) in self.only]

    @property
    def runs(self) -> int:
        return len(self.pairs())


def check_overlap(parts: Sequence[Part]) -> None:
    """One report holds each (scenario, target) run once, and one scenario name means one file."""
    runs: dict[tuple[str, str], str] = {}
    files: dict[str, tuple[Path | None, str]] = {}
    for part in parts:
        label = f"suite {part.name!r}" if part.name else "the command line"
        for scenario in part.scenarios:
            path = scenario.path.resolve() if scenario.path else None
            other = files.setdefault(scenario.name, (path, label))
            if other[0] != path:
                raise InputError(f"{label}: scenario name {scenario.name!r} is also the name of another file "
                                 f"({other[0]}, in {other[1]}); one report cannot tell the two apart", scenario.path)
            for target in part.targets:
                first = runs.setdefault((scenario.name, target.name), label)
                if first != label:
                    raise InputError(f"{label} and {first} both run scenario {scenario.name!r} on {target.name}; "
                                     "one report holds each run once: drop it from one of them")


def run_parts(
    parts: Sequence[Part],
    journal_dir: Path | None,
    progress_for: Callable[[Part], Progress | None],
    say: Callable[[str], None],
    keep_workspace: bool = False,
    target_file_from_working_tree: bool = False,
    attempts: Attempts = Attempts(),
) -> list[RunResult]:
    results: list[RunResult] = []
    for number, part in enumerate(parts):
        if part.name is not None:
            mine = f" ({part.runs} of them in this shard)" if part.only is not None else ""
            say(f"suite {part.name} ({number + 1}/{len(parts)}): {len(part.scenarios)} scenario(s) × "
                f"{len(part.targets)} target(s) = {len(part.scenarios) * len(part.targets)} run(s){mine}"
                + (f" on {part.workers} workers" if part.workers > 1 else ""))
        progress = progress_for(part)
        if part.workers > 1:
            from harness.run.pool import run_matrix_parallel

            done = run_matrix_parallel(part.scenarios, part.targets, part.specs, journal_dir, progress, keep_workspace,
                                       part.workers, target_file_from_working_tree, attempts, part.only)
        else:
            done = run_matrix(part.scenarios, part.targets, journal_dir, progress, keep_workspace, attempts, part.only)
        results += done
        stopped = next((r for r in done if r.interrupted or r.harness_failure), None)
        if stopped is not None:
            why = None if stopped.interrupted else f"not run: the harness could not go on ({stopped.harness_failure})"
            results += [not_run(s, t, why) for later in parts[number + 1:] for s, t in later.pairs()]
            break
    return results
