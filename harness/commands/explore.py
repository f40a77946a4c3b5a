"""`harness explore`: search each target's step sequences; write and replay the shortest failures.

Exit codes as `harness run`: 0 when every target survived its budget, 1 when
something was found (each finding written and replayed), 2 on bad input,
130 when interrupted (nothing half-shrunk is written).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from harness import install_hint
from harness.errors import InputError
from harness.explore import profiles
from harness.explore.vocabulary import first_line, step_kinds

if TYPE_CHECKING:  # Hypothesis is imported when exploring, not for every command line
    from harness.explore.machine import Exploration, Finding
    from harness.explore.search import Outcome

PROGRESS_EVERY_S = 2.0


def add_parser(sub) -> None:
    explore = sub.add_parser("explore", help="generate step sequences against a target; save the shortest failing one as a scenario")
    explore.add_argument("--target", "-t", action="append", required=True, metavar="T",
                         help="the target to explore (as for run; a spec standing for several explores each); repeatable")
    explore.add_argument("--examples", type=int, metavar="N", help="sequences to try per target (default: the profile's, 100 for dev and ci)")
    explore.add_argument("--max-steps", type=int, metavar="K", help="steps per sequence at most (default: the profile's, 6 for dev and ci)")
    explore.add_argument("--seed", type=int, metavar="S", help="the search's seed: the same seed, the same sequences (default: a fresh one, printed)")
    explore.add_argument("--profile", choices=profiles.PROFILES, default=profiles.DEV,
                         help="ci: derandomized and bounded; dev: a fresh seed (default); deep: 10x the sequences, with Hypothesis' database")
    explore.add_argument("--out", type=Path, default=None, metavar="DIR",
                         help="where findings are written as scenario files (default: the configured `explore_inbox`, "
                              "else scenarios/found/)")
    explore.add_argument("--quiet", "-q", action="store_true", help="no progress lines")


def run(args: argparse.Namespace, command: list[str], out: TextIO | None = None) -> int:
    out = out or sys.stdout  # looked up now: a captured or replaced stdout, not the one at import
    try:
        import hypothesis  # noqa: F401
    except ImportError:
        raise InputError(f"harness explore needs Hypothesis: {install_hint('explore')} (make install has it)") from None
    from harness.explore.machine import ExplorationError
    from harness.explore.search import Budget, explore_target
    from harness.targets import resolve_targets

    from harness import config

    budget = Budget(args.profile, args.examples, args.max_steps, args.seed)
    budget.validate()
    if args.out is None:
        project = config.current()
        args.out = Path(project.place(project.explore_inbox))
    _check_writable(args.out)
    targets = resolve_targets(args.target)
    found = errors = 0
    for target in targets:
        progress = _Progress(out, quiet=args.quiet)
        print(f"harness explore: {target.name}", file=out, flush=True)
        try:
            outcome = explore_target(target, budget, progress.sequence_done)
        except KeyboardInterrupt:
            print(f"interrupted after {progress.summary()}; nothing was written", file=out, flush=True)
            return 130
        except ExplorationError as exc:  # raised after Hypothesis shrank it: the shortest sequence that shows it
            print(f"  harness error after {progress.summary()}: {exc}", file=out, flush=True)
            errors += 1
            continue
        print(f"  {_budget_line(outcome)}", file=out)
        print(f"  tried {outcome.sequences} sequences, {outcome.steps} steps, in {outcome.duration_s:.1f} s", file=out)
        print("  steps per kind: " + ", ".join(f"{rule} {n}" for rule, n in sorted(outcome.rules.items(), key=lambda kv: -kv[1])), file=out)
        for rule, why in outcome.unavailable.items():
            print(f"  not explored: {rule} ({why})", file=out)
        if not outcome.findings:
            print(f"  ✓ no failing sequence: every check held after every step{' (flaky failures seen)' if outcome.flaky else ''}", file=out)
            continue
        for finding in outcome.findings:
            found += 1
            _report(finding, outcome, out, " ".join(shlex.quote(a) for a in _repeatable(command, target, outcome)), args.out)
    print(f"\n{found} finding(s) in {len(targets)} target(s); written under {args.out}/" if found else
          f"\nno findings in {len(targets)} target(s)", file=out)
    if errors:
        print(f"{errors} target(s) could not be explored: see above", file=out)
    return 1 if found or errors else 0


def _check_writable(out_dir: Path) -> None:
    """Before any search: a finding that cannot be written would be a search wasted."""
    import tempfile

    existing = next((p for p in (out_dir, *out_dir.absolute().parents) if p.exists()), None)
    if existing is None or not existing.is_dir():
        raise InputError(f"cannot write findings there: {existing} is not a folder", out_dir)
    try:
        with tempfile.TemporaryFile(dir=existing):  # a real write: permissions alone do not say (root, /proc)
            pass
    except OSError as exc:
        raise InputError(f"cannot write findings there: creating a file in {existing} failed: {exc.strerror or exc}",
                         out_dir) from None


def _budget_line(outcome: "Outcome") -> str:
    seed = "derandomized (ci profile)" if outcome.seed is None else f"seed {outcome.seed}"
    return (f"budget: {outcome.max_examples} examples (Hypothesis' max_examples; shrinking a failure tries more), "
            f"up to {outcome.max_steps} steps each, {seed}")


def _repeatable(command: list[str], target, outcome: "Outcome") -> list[str]:
    """The command line that explores this target again with the same seed."""
    argv, skip = ["harness", "explore"], False
    for arg in command[2:]:
        if skip:
            skip = False
            continue
        if arg in ("--target", "-t", "--seed"):
            skip = True
            continue
        if arg.startswith(("--target=", "--seed=")):
            continue
        argv.append(arg)
    argv += ["--target", target.replay_spec]
    if outcome.seed is not None:
        argv += ["--seed", str(outcome.seed)]
    return argv


def _report(finding: "Finding", outcome: "Outcome", out: TextIO, explored_with: str, out_dir: Path) -> None:
    from harness.explore.found import replay, write_finding

    target = outcome.target
    print(f"  ✗ {finding.what} at step {finding.step} of {len(finding.steps)}: {step_kinds(finding.steps)}", file=out)
    if outcome.flaky:
        print("      flaky: Hypothesis saw this sequence pass on one of its replays; the replay below says how it went",
              file=out)
    print(f"      {first_line(finding.message)}", file=out)
    written = write_finding(finding, target, out_dir, explored_with)
    print(f"      written: {written.path}", file=out, flush=True)
    replays = [target]
    if target.expected_as:  # an in-process target: replay as fresh processes too
        from harness.targets import resolve_target

        replays += resolve_target(target.expected_as)
    for replayed_on in replays:
        reproduced, result = replay(written.path, finding, replayed_on)
        verdict = "fails again" if reproduced else (
            f"did NOT fail again (run {result.status}; {finding.check}: {result.verdict_of(finding.check)}"
            f"{'; ' + first_line(result.error) if result.error else ''})")
        print(f"      replayed on {replayed_on.name}: {verdict}", file=out, flush=True)


class _Progress:
    """A line every few seconds on a long search: sequences, steps, failures so far, and the last sequence tried."""

    def __init__(self, out: TextIO, quiet: bool):
        self.out, self.quiet = out, quiet
        self.last_print = time.monotonic()
        self.exploration: "Exploration | None" = None

    def sequence_done(self, exploration: "Exploration", docs: list, finding: "Finding | None") -> None:
        self.exploration = exploration
        now = time.monotonic()
        if self.quiet or now - self.last_print < PROGRESS_EVERY_S:
            return
        self.last_print = now
        kinds = step_kinds(docs) or "(none)"
        mark = f"✗ {finding.check}" if finding is not None else "✓"
        print(f"  … {self.summary()}; last: {kinds} {mark}", file=self.out, flush=True)

    def summary(self) -> str:
        e = self.exploration
        if e is None:
            return "0 sequences"
        phase = ", shrinking" if e.failing else ""
        return f"{e.sequences} sequences, {e.steps} steps, {e.failing} failing{phase} ({time.monotonic() - e.started:.0f} s)"
