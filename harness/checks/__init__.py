"""The properties judged over a run's journal; each is a pure function of a CheckContext."""

from __future__ import annotations

from typing import Callable

from harness.checks import appended, cache, history, identity, prefix, temporary
from harness.checks.context import CheckContext
from harness.results import CheckResult

CHECKS: dict[str, Callable[[CheckContext], CheckResult]] = {
    identity.NAME: identity.check,
    appended.NAME: appended.check,
    prefix.NAME: prefix.check,
    history.NAME: history.check,
    cache.NAME: cache.check,
    temporary.NAME: temporary.check,
}
CHECK_NAMES = tuple(CHECKS)

__all__ = ["CHECKS", "CHECK_NAMES", "CheckContext", "run_check"]


def run_check(name: str, context: CheckContext) -> CheckResult:
    return CHECKS[name](context)
