"""Checks over the launch journal: what the launcher passed to the agent binary, judged apart from what reached the model.

launch_appended_exactly_once: every launch passes the caller's text exactly
once. A launcher that passes it on the first launch only (the first seed) fails
here at the first resume, even while a bridge-side pin still puts the text
into the requests, which the request checks alone would call a pass.

launch_prompt_from_caller: every system-prompt option a launch passes carries
only text the caller gave (the appended text, temporary text). Rebuilding the
option from the conversation on a resume appends the agent's own prompt a
second time, a bug the first seed's fix had to avoid.
"""

from __future__ import annotations

from harness.checks.context import CheckContext
from harness.checks.evidence import clip, series
from harness.journal.launches import Launch
from harness.results import APPENDED_IN_LAUNCHES, ERROR, FAIL, PASS, CheckResult

APPENDED = APPENDED_IN_LAUNCHES
FROM_CALLER = "launch_prompt_from_caller"
NAMES = (APPENDED, FROM_CALLER)


def at(launch: Launch) -> str:
    step = f"step {launch.step} ({launch.step_kind})" if launch.step is not None else "outside any step"
    return f"launch {launch.seq}, {step}"


def _judged(context: CheckContext, name: str) -> tuple[list[Launch], CheckResult | None]:
    launches = [launch for launch in context.launches if launch.step is not None]
    if not launches:
        return [], CheckResult(name, ERROR, "no launch of the agent binary was recorded: nothing to judge")
    return launches, None


def prompt_options(argv: list[str], flags: tuple[str, ...]) -> list[tuple[str, str]]:
    """(option, value) for each system-prompt option in argv, `--flag VALUE` and `--flag=VALUE` alike."""
    found = []
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        for flag in flags:
            if arg == flag and i + 1 < len(argv):
                found.append((flag, argv[i + 1]))
            elif arg.startswith(flag + "="):
                found.append((flag, arg[len(flag) + 1:]))
    return found


def check_appended(context: CheckContext) -> CheckResult:
    if not context.append or not context.append.strip():
        return CheckResult(APPENDED, ERROR, "the scenario has no appended text to look for")
    launches, missing = _judged(context, APPENDED)
    if missing:
        return missing
    text = context.append.strip()
    counts = [(launch, sum(arg.count(text) for arg in launch.argv[1:])) for launch in launches]
    evidence = {
        "appended": text,
        "by_launch": [
            {"launch": launch.seq, "step": launch.step, "kind": launch.step_kind, "count": n,
             "options": [flag for flag, value in prompt_options(launch.argv, context.prompt_flags) if text in value]}
            for launch, n in counts
        ],
    }
    by_launch = series([n for _, n in counts])
    for launch, count in counts:
        if count != 1:
            return CheckResult(
                APPENDED, FAIL,
                f"{at(launch)}: the launcher passed the caller's text {count} time(s), expected exactly once\n"
                f"  appended text: {clip(text, 100)!r}\n"
                f"  argv: {clip(' '.join(launch.argv), 300)}\n"
                f"  occurrences by launch: {by_launch}",
                step=launch.step, expected=1, observed=count, evidence=evidence,
            )
    return CheckResult(APPENDED, PASS, f"every one of {len(launches)} launches passed the caller's text exactly once",
                       expected=1, observed=1, evidence=evidence)


def check_from_caller(context: CheckContext) -> CheckResult:
    launches, missing = _judged(context, FROM_CALLER)
    if missing:
        return missing
    evidence: dict = {"options": list(context.prompt_flags), "by_launch": []}
    for launch in launches:
        given = [t for t in (context.append, *context.temporary, context.step_temporary.get(launch.step or 0)) if t and t.strip()]
        for flag, value in prompt_options(launch.argv, context.prompt_flags):
            rest = value
            for text in sorted(given, key=len, reverse=True):
                rest = rest.replace(text.strip(), "")
            evidence["by_launch"].append({"launch": launch.seq, "step": launch.step, "option": flag,
                                          "length": len(value), "not_from_caller": len(rest.strip())})
            if rest.strip():
                return CheckResult(
                    FROM_CALLER, FAIL,
                    f"{at(launch)}: {flag} carries {len(rest.strip())} character(s) the caller did not give\n"
                    f"  not from the caller: {clip(rest.strip(), 160)!r}\n"
                    f"  the caller gave: {', '.join(repr(clip(t, 60)) for t in given) or 'no text'}",
                    step=launch.step, expected="only the caller's text", observed=clip(rest.strip(), 200), evidence=evidence,
                )
    return CheckResult(
        FROM_CALLER, PASS,
        f"{len(launches)} launches, {len(evidence['by_launch'])} system-prompt option(s): all of it text the caller gave",
        evidence=evidence,
    )
