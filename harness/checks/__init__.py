"""The properties judged over a run's journal; each is a pure function of a CheckContext."""

from __future__ import annotations

from typing import Callable

from harness.checks import appended, cache, history, identity, instructions, launches, prefix, temporary
from harness.checks.context import CheckContext
from harness.checks.request_pair import request_pair
from harness.results import FAIL, CheckResult

CHECKS: dict[str, Callable[[CheckContext], CheckResult]] = {
    identity.NAME: identity.check,
    appended.NAME: appended.check,
    prefix.NAME: prefix.check,
    history.NAME: history.check,
    cache.NAME: cache.check,
    temporary.NAME: temporary.check,
    instructions.NAME: instructions.check,
    launches.APPENDED: launches.check_appended,
    launches.FROM_CALLER: launches.check_from_caller,
}
CHECK_NAMES = tuple(CHECKS)
# Judged only where a scenario lists them: the launch checks judge the launcher, which most scenarios take as given;
# instruction_files_current judges agents that read project files, which the reference agent does not.
OPT_IN_CHECKS = (instructions.NAME, *launches.NAMES)

__all__ = ["CHECKS", "CHECK_NAMES", "CheckContext", "run_check"]


def run_check(name: str, context: CheckContext) -> CheckResult:
    """The verdict; a failing one carries its requests as the checks see them, for the report to show."""
    result = CHECKS[name](context)
    if result.verdict == FAIL:
        result.request_pair = request_pair(context, result)
    return result
