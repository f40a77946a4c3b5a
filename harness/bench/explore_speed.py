"""How fast `harness explore` searches: steps per second in-process against fresh processes.

Both modes explore the clean reference agent (which survives any budget, so
every sequence runs to its end and nothing is shrunk) with the same seed and
profile, a bounded budget each; rounds alternate the two modes, each round
with its own seed. The figure is steps per second of Hypothesis' search as
explore_target reports it: every step run, judged after it, and the
sequences' setup and teardown included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from harness.bench.stats import alternate, median

IN_PROCESS, SUBPROCESS = "in_process", "subprocess"
SEED = 2026


@dataclass
class Budgets:
    in_process_examples: int = 100
    subprocess_examples: int = 10
    max_steps: int = 6
    rounds: int = 3


def _explore(spec: str, examples: int, max_steps: int, seed: int) -> dict:
    from harness.explore.search import Budget, explore_target
    from harness.targets import resolve_target

    target, = resolve_target(spec)
    outcome = explore_target(target, Budget(profile="dev", examples=examples, max_steps=max_steps, seed=seed))
    if outcome.findings:
        raise RuntimeError(f"the clean reference failed a check while exploring {spec}: {outcome.findings[0]}")
    return {"seed": seed, "sequences": outcome.sequences, "steps": outcome.steps,
            "seconds": round(outcome.duration_s, 4), "steps_per_s": round(outcome.steps / outcome.duration_s, 2)}


def measure(budgets: Budgets, progress: Callable[[str], None] = lambda line: None) -> dict:
    _explore("reference+in-process", 10, budgets.max_steps, 1)  # warm: imports, Hypothesis' first compile
    done = {IN_PROCESS: 0, SUBPROCESS: 0}

    def run(mode: str) -> dict:
        seed = SEED + done[mode]  # the k-th round of either mode explores with the same seed
        done[mode] += 1
        if mode == IN_PROCESS:
            return _explore("reference+in-process", budgets.in_process_examples, budgets.max_steps, seed)
        return _explore("reference", budgets.subprocess_examples, budgets.max_steps, seed)

    def said(number: int, got: dict) -> None:
        progress(f"round {number}/{budgets.rounds}: in-process {got[IN_PROCESS]['steps_per_s']:.0f} steps/s "
                 f"({got[IN_PROCESS]['steps']} steps), subprocess {got[SUBPROCESS]['steps_per_s']:.1f} steps/s "
                 f"({got[SUBPROCESS]['steps']} steps)")

    runs = alternate({IN_PROCESS: lambda: run(IN_PROCESS), SUBPROCESS: lambda: run(SUBPROCESS)}, budgets.rounds, said)
    inside = median([r["steps_per_s"] for r in runs[IN_PROCESS]])
    outside = median([r["steps_per_s"] for r in runs[SUBPROCESS]])
    return {
        "target": "reference",
        "profile": "dev",
        "max_steps": budgets.max_steps,
        "in_process_examples": budgets.in_process_examples,
        "subprocess_examples": budgets.subprocess_examples,
        "in_process_steps_per_s": round(inside, 1),
        "subprocess_steps_per_s": round(outside, 2),
        "speedup": round(inside / outside, 1),
        "rounds": runs,
    }
