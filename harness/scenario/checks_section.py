"""The `checks:` and `expect:` parts of a scenario file: which checks run, and what each target should get.

A check that judges against something the scenario declares (the caller's text,
temporary text, a cache-reuse floor) is refused when the declaration is missing,
so it can never pass for want of anything to look for.

The check names are the grammar's own words, listed here; harness.checks
implements one check under each (tests/test_scenario_grammar.py keeps the two
lists equal, order included: the default list runs in this order).
"""

from __future__ import annotations

from harness.documents.located import LocatedDict, child_path, describe, item_path, unknown_key_error
from harness.documents.reader import Reader
from harness.scenario import installed_rules
from harness.scenario.model import VERDICTS

APPEND_CHECK = "appended_exactly_once"
LAUNCH_APPEND_CHECK = "launch_appended_exactly_once"
TEMPORARY_CHECK = "temporary_text_transient"
CACHE_CHECK = "cache_reuse"
LAUNCH_PROMPT_CHECK = "launch_prompt_from_caller"
INSTRUCTIONS_CHECK = "instruction_files_current"
CHECK_NAMES = ("identity_stable", APPEND_CHECK, "prefix_stable", "history_preserved", CACHE_CHECK, TEMPORARY_CHECK,
               INSTRUCTIONS_CHECK, LAUNCH_APPEND_CHECK, LAUNCH_PROMPT_CHECK)
# Judged only where a scenario lists them: the launch checks judge the launcher, which most scenarios take as given;
# instruction_files_current judges agents that read project files, which the reference agent does not.
OPT_IN_CHECKS = (INSTRUCTIONS_CHECK, LAUNCH_APPEND_CHECK, LAUNCH_PROMPT_CHECK)
DEFAULT_CHECKS = tuple(name for name in CHECK_NAMES if name not in OPT_IN_CHECKS)
NEEDS = {  # what a check judges against, when the scenario must declare it
    APPEND_CHECK: "'append' (the appended system text to look for): add a top-level 'append:'",
    LAUNCH_APPEND_CHECK: "'append' (the caller's text every launch must pass): add a top-level 'append:'",
    TEMPORARY_CHECK: "temporary text to look for: add a top-level 'temporary:' or a step's 'temporary:'",
    CACHE_CHECK: "a floor for the cache-reuse ratio: add a top-level 'min_cache_reuse: 0.8' (say)",
    INSTRUCTIONS_CHECK: "the files the agent reads as instructions: add a top-level 'instruction_files: [AGENTS.md]' "
                        "(say), each written by a step's 'edit:'",
}


class ChecksReader:
    """Reads `checks:` and `expect:`; errors name ``file``'s path."""

    def __init__(self, file: Reader):
        self.file = file

    def checks(self, doc: LocatedDict, declared: dict[str, bool]) -> tuple[str, ...]:
        """The listed checks; by default every check, less those whose declaration the scenario lacks.

        Only 'append' is demanded of a default list: a scenario without the
        caller's text would otherwise test nothing the seeds are about.
        """
        if "checks" not in doc:
            if not declared[APPEND_CHECK]:
                raise self.file.error(
                    f"the default checks include {APPEND_CHECK!r}, which needs "
                    f"{NEEDS[APPEND_CHECK]}, or list 'checks:' without it",
                    doc.line,
                    "",
                )
            return tuple(name for name in DEFAULT_CHECKS if declared.get(name, True))
        value = doc["checks"]
        lst = self.file.list_(value, doc.key_line("checks"), "checks", "a non-empty list of check names")
        seen: dict[str, int] = {}
        for i, name in enumerate(lst):
            where = item_path("checks", i)
            line = lst.item_line(i)
            if not isinstance(name, str):
                raise self.file.error(f"expected a check name, got {describe(name)}", line, where)
            if name not in CHECK_NAMES:
                raise unknown_key_error(name, CHECK_NAMES, self.file.path, line, where, what="check", listing="known checks")
            if name in seen:
                raise self.file.error(
                    f"duplicate check {name!r} (already {item_path('checks', seen[name])})", line, where
                )
            seen[name] = i
            if not declared.get(name, True):
                raise self.file.error(f"check {name!r} needs {NEEDS[name]}, or leave the check out", line, where)
        return tuple(lst)

    def expect(self, doc: LocatedDict, checks: tuple[str, ...]) -> dict:
        if "expect" not in doc:
            return {}
        top = self.file.mapping(
            doc["expect"], doc.key_line("expect"), "expect", "a mapping of target name -> {check: pass|fail}"
        )
        result: dict[str, dict[str, str]] = {}
        for target, verdicts in top.items():
            line = top.key_line(target)
            if not isinstance(target, str) or not target.strip():
                raise self.file.error(f"expected a target name (a non-empty string) as key, got {describe(target)}", line, "expect")
            where = child_path("expect", target)
            problem = installed_rules.target_name_problem(target)
            if problem:
                raise self.file.error(problem, line, where)
            m = self.file.mapping(verdicts, line, where, "a mapping of check name -> pass|fail")
            out: dict[str, str] = {}
            for check, verdict in m.items():
                check_line = m.key_line(check)
                if check not in CHECK_NAMES:
                    raise unknown_key_error(check, CHECK_NAMES, self.file.path, check_line, where, what="check", listing="known checks")
                check_where = child_path(where, check)
                if check not in checks:
                    raise self.file.error(
                        f"check {check!r} is not among this scenario's checks ({', '.join(checks)})",
                        check_line,
                        check_where,
                    )
                if verdict not in VERDICTS or not isinstance(verdict, str):
                    raise self.file.error(
                        f"expected one of {', '.join(VERDICTS)}, got {describe(verdict)}", check_line, check_where
                    )
                out[check] = verdict
            result[target] = out
        return result
