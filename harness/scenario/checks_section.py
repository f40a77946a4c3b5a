"""The `checks:` and `expect:` parts of a scenario file: which checks run, and what each target should get.

A check that judges against something the scenario declares (the caller's text,
temporary text, a cache-reuse floor) is refused when the declaration is missing,
so it can never pass for want of anything to look for.
"""

from __future__ import annotations

from harness.scenario.replies import ReplyReader
from harness.scenario.model import VERDICTS
from harness.targets import expectation_name_problem
from harness.documents.located import (
    LocatedDict,
    child_path,
    describe,
    item_path,
    unknown_key_error,
)

APPEND_CHECK = "appended_exactly_once"
LAUNCH_APPEND_CHECK = "launch_appended_exactly_once"
TEMPORARY_CHECK = "temporary_text_transient"
CACHE_CHECK = "cache_reuse"
NEEDS = {  # what a check judges against, when the scenario must declare it
    APPEND_CHECK: "'append' (the appended system text to look for): add a top-level 'append:'",
    LAUNCH_APPEND_CHECK: "'append' (the caller's text every launch must pass): add a top-level 'append:'",
    TEMPORARY_CHECK: "temporary text to look for: add a top-level 'temporary:' or a step's 'temporary:'",
    CACHE_CHECK: "a floor for the cache-reuse ratio: add a top-level 'min_cache_reuse: 0.8' (say)",
}


def _check_names() -> tuple[str, ...]:
    # Imported late: harness.checks may grow imports of this module.
    from harness.checks import CHECK_NAMES

    return tuple(CHECK_NAMES)


def _default_check_names() -> tuple[str, ...]:
    from harness.checks import CHECK_NAMES, OPT_IN_CHECKS

    return tuple(name for name in CHECK_NAMES if name not in OPT_IN_CHECKS)


class ChecksReader(ReplyReader):
    def checks(self, doc: LocatedDict, declared: dict[str, bool]) -> tuple[str, ...]:
        """The listed checks; by default every check, less those whose declaration the scenario lacks.

        Only 'append' is demanded of a default list: a scenario without the
        caller's text would otherwise test nothing the seeds are about.
        """
        known = _check_names()
        if "checks" not in doc:
            if APPEND_CHECK in known and not declared[APPEND_CHECK]:
                raise self.error(
                    f"the default checks include {APPEND_CHECK!r}, which needs "
                    f"{NEEDS[APPEND_CHECK]}: add a top-level 'append:' "
                    "or list 'checks:' without it",
                    doc.line,
                    "",
                )
            return tuple(name for name in _default_check_names() if declared.get(name, True))
        value = doc["checks"]
        lst = self.list_(value, doc.key_line("checks"), "checks", "a non-empty list of check names")
        seen: dict[str, int] = {}
        for i, name in enumerate(lst):
            where = item_path("checks", i)
            line = lst.item_line(i)
            if not isinstance(name, str):
                raise self.error(f"expected a check name, got {describe(name)}", line, where)
            if name not in known:
                raise unknown_key_error(name, known, self.path, line, where, what="check", listing="known checks")
            if name in seen:
                raise self.error(
                    f"duplicate check {name!r} (already {item_path('checks', seen[name])})", line, where
                )
            seen[name] = i
            if not declared.get(name, True):
                raise self.error(f"check {name!r} needs {NEEDS[name]}, or leave the check out", line, where)
        return tuple(lst)

    def expect(self, doc: LocatedDict, checks: tuple[str, ...]) -> dict:
        if "expect" not in doc:
            return {}
        known = _check_names()
        top = self.mapping(
            doc["expect"], doc.key_line("expect"), "expect", "a mapping of target name -> {check: pass|fail}"
        )
        result: dict[str, dict[str, str]] = {}
        for target, verdicts in top.items():
            line = top.key_line(target)
            if not isinstance(target, str) or not target.strip():
                raise self.error(f"expected a target name (a non-empty string) as key, got {describe(target)}", line, "expect")
            where = child_path("expect", target)
            problem = expectation_name_problem(target)
            if problem:
                raise self.error(problem, line, where)
            m = self.mapping(verdicts, line, where, "a mapping of check name -> pass|fail")
            out: dict[str, str] = {}
            for check, verdict in m.items():
                check_line = m.key_line(check)
                if check not in known:
                    raise unknown_key_error(check, known, self.path, check_line, where, what="check", listing="known checks")
                check_where = child_path(where, check)
                if check not in checks:
                    raise self.error(
                        f"check {check!r} is not among this scenario's checks ({', '.join(checks)})",
                        check_line,
                        check_where,
                    )
                if verdict not in VERDICTS or not isinstance(verdict, str):
                    raise self.error(
                        f"expected one of {', '.join(VERDICTS)}, got {describe(verdict)}", check_line, check_where
                    )
                out[check] = verdict
            result[target] = out
        return result


