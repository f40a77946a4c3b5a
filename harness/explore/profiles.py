"""Hypothesis profiles for exploring, shared by `harness explore` and the test suite (HYPOTHESIS_PROFILE).

- ci: derandomized (the same sequences on every run, so a red gate is
  reproducible and never flaky by draw), no example database, a bounded budget;
- dev (explore's default): a fresh random seed each run, printed so the run
  can be repeated with --seed, no database;
- deep: for a long local search: ten times the sequences, longer ones, and
  Hypothesis' example database under .hypothesis/, so a failure found once
  is tried first on the next run.

Health checks are off and there is no deadline: a step is a real process
whose duration is the agent's, not the test's.
"""

from __future__ import annotations

CI, DEV, DEEP = "ci", "dev", "deep"
PROFILES = (CI, DEV, DEEP)
ENV_VARIABLE = "HYPOTHESIS_PROFILE"


def register() -> None:
    """Register the three profiles (idempotent)."""
    from hypothesis import HealthCheck, settings

    _COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), report_multiple_bugs=True)
    settings.register_profile(CI, derandomize=True, database=None, max_examples=100, stateful_step_count=6, **_COMMON)
    settings.register_profile(DEV, database=None, max_examples=100, stateful_step_count=6, **_COMMON)
    # No `database` given: Hypothesis' own, in .hypothesis/examples of the folder it runs in.
    settings.register_profile(DEEP, max_examples=1000, stateful_step_count=10, **_COMMON)
