"""One target's exploration: settings from a profile, a seed, the state machine run, its findings collected.

Hypothesis raises what it found after shrinking: one Finding, or a group of
them (one per check that failed), possibly wrapped as flaky when the shortest
sequence did not fail again on its final replay. Anything that is not a
Finding is the harness's own failure and propagates as such, never a verdict.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable

from hypothesis import Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import FlakyFailure
from hypothesis.stateful import run_state_machine_as_test

from harness.errors import InputError
from harness.explore import profiles
from harness.explore.machine import Exploration, Finding, machine_for
from harness.targets.base import Target

MIN_STEPS = 2  # a launch and one step after it: the least a sequence across processes can be


@dataclass
class Budget:
    profile: str = profiles.DEV
    examples: int | None = None  # None: the profile's
    max_steps: int | None = None  # None: the profile's
    seed: int | None = None  # None: a fresh one (dev, deep) or derandomized (ci)

    def settings(self) -> settings:
        profiles.register()
        base = settings.get_profile(self.profile)
        chosen = settings(
            base,
            max_examples=self.examples or base.max_examples,
            stateful_step_count=self.max_steps or base.stateful_step_count,
            verbosity=Verbosity.quiet,  # the explorer reports findings itself, as scenarios
        )
        if self.seed is not None:  # an explicit seed is the whole story: no draws from the database first
            chosen = settings(chosen, derandomize=False, database=None)
        return chosen

    def validate(self) -> None:
        if self.profile not in profiles.PROFILES:
            raise InputError(f"--profile {self.profile!r}: expected one of {', '.join(profiles.PROFILES)}")
        if self.examples is not None and self.examples < 1:
            raise InputError(f"--examples must be at least 1, got {self.examples}")
        if self.max_steps is not None and self.max_steps < MIN_STEPS:
            raise InputError(f"--max-steps must be at least {MIN_STEPS} (a launch and a step after it), got {self.max_steps}")
        if self.seed is not None and self.seed < 0:
            raise InputError(f"--seed must be a non-negative integer, got {self.seed}")


@dataclass
class Outcome:
    """What exploring one target found, and what it cost."""

    target: Target
    seed: int | None  # None: derandomized
    max_examples: int
    max_steps: int
    findings: list[Finding] = field(default_factory=list)
    flaky: bool = False  # Hypothesis could not make the shortest failure fail again
    sequences: int = 0
    steps: int = 0
    rules: dict[str, int] = field(default_factory=dict)  # steps run per rule
    unavailable: dict[str, str] = field(default_factory=dict)  # rules the target cannot take, and why
    duration_s: float = 0.0


def explore_target(target: Target, budget: Budget,
                   on_sequence: Callable[[Exploration, list, Finding | None], None] = lambda *_: None) -> Outcome:
    whole = target.executor.why_not_one_at_a_time()
    if whole is not None:
        raise InputError(f"target {target.name!r} {whole}; explore needs a fresh process per step, so that each "
                         "next step can be chosen after the last")
    chosen = budget.settings()
    seed = budget.seed
    if seed is None and not chosen.derandomize:
        seed = random.SystemRandom().randrange(2**32)
    exploration = Exploration(target, max_steps=chosen.stateful_step_count, on_sequence=on_sequence)
    machine = machine_for(exploration)
    if seed is not None:
        machine = hypothesis_seed(seed)(machine)
    outcome = Outcome(target, seed, chosen.max_examples, chosen.stateful_step_count, unavailable=exploration.unavailable())
    started = time.monotonic()
    try:
        run_state_machine_as_test(machine, settings=chosen)
    except (Finding, BaseExceptionGroup) as found:
        outcome.findings, outcome.flaky = _findings(found)
    finally:
        outcome.sequences, outcome.steps, outcome.rules = exploration.sequences, exploration.steps, dict(exploration.rules)
        outcome.duration_s = time.monotonic() - started
    return outcome


def _findings(raised: BaseException) -> tuple[list[Finding], bool]:
    """The findings in what Hypothesis raised; anything else is re-raised (a harness error is not a finding)."""
    if isinstance(raised, Finding):
        return [raised], False
    flaky = isinstance(raised, FlakyFailure)
    found: list[Finding] = []
    for inner in raised.exceptions:
        if isinstance(inner, Finding):
            found.append(inner)
        elif isinstance(inner, BaseExceptionGroup):
            more, inner_flaky = _findings(inner)
            found += more
            flaky = flaky or inner_flaky
        else:
            raise inner
    return sorted(found, key=lambda f: (len(f.steps), f.check)), flaky
