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

import json

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
    """(option, value) for each system-prompt option in argv, `--flag VALUE` and `--flag=VALUE` alike.

    A flag given as `FLAG KEY` is a configuration override whose value is `KEY=STRING` (Codex's
    `-c developer_instructions=...` with a TOML string): its text is the string, its quotes taken off.
    """
    found = []
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        for flag in flags:
            option, _, key = flag.partition(" ")
            if key:
                value = argv[i + 1] if arg == option and i + 1 < len(argv) else ""
                if value.startswith(key + "="):
                    found.append((flag, _unquoted(value[len(key) + 1:])))
            elif arg == flag and i + 1 < len(argv):
                found.append((flag, argv[i + 1]))
            elif arg.startswith(flag + "="):
                found.append((flag, arg[len(flag) + 1:]))
    return found


def _unquoted(value: str) -> str:
    for quote in ("'" * 3, '"' * 3, "'", '"'):
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return value[len(quote):-len(quote)]
    return value


def control_options(launch: Launch, fields: tuple[str, ...]) -> list[tuple[str, str]]:
    """(SUBTYPE.field, value) for each system-prompt field of a control request the launcher sent on stdin.

    The TypeScript Agent SDK configures the CLI with an `initialize` request (`appendSystemPrompt`, `systemPrompt`,
    a string or a list of strings) instead of argv; a target names such fields as `initialize.appendSystemPrompt`.
    """
    found = []
    for request in launch.control:
        for name in fields:
            subtype, dot, key = name.partition(".")
            if not dot or request.get("subtype") != subtype or key not in request:
                continue
            value = request[key]
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str):
                    found.append((name, item))
    return found


def launch_options(launch: Launch, flags: tuple[str, ...]) -> list[tuple[str, str]]:
    """Every system-prompt option of one launch: argv options (`--flag`) and control-request fields (`SUBTYPE.field`)."""
    return prompt_options(launch.argv, flags) + control_options(launch, flags)


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def passed_count(launch: Launch, text: str) -> int:
    """How often a launch passed the text: in its arguments and in the control requests it was configured with."""
    return sum(arg.count(text) for arg in launch.argv[1:]) + sum(s.count(text) for s in _strings(launch.control))


def check_appended(context: CheckContext) -> CheckResult:
    if not context.append or not context.append.strip():
        return CheckResult(APPENDED, ERROR, "the scenario has no appended text to look for")
    launches, missing = _judged(context, APPENDED)
    if missing:
        return missing
    text = context.append.strip()
    texts = {launch.seq: (context.append_at(launch.step) or "").strip() for launch in launches}
    counts = [(launch, passed_count(launch, texts[launch.seq])) for launch in launches]
    evidence = {
        "appended": text,
        "by_launch": [
            {"launch": launch.seq, "step": launch.step, "kind": launch.step_kind, "count": n,
             "options": [flag for flag, value in launch_options(launch, context.prompt_flags) if texts[launch.seq] in value]}
            for launch, n in counts
        ],
    }
    by_launch = series([n for _, n in counts])
    for launch, count in counts:
        if count != 1:
            return CheckResult(
                APPENDED, FAIL,
                f"{at(launch)}: the launcher passed the caller's text {count} time(s), expected exactly once\n"
                f"  appended text: {clip(texts[launch.seq], 100)!r}\n"
                f"  argv: {clip(' '.join(launch.argv), 300)}\n"
                f"{_control_line(launch)}"
                f"  occurrences by launch: {by_launch}",
                step=launch.step, expected=1, observed=count, evidence=evidence,
            )
    return CheckResult(APPENDED, PASS, f"every one of {len(launches)} launches passed the caller's text exactly once",
                       expected=1, observed=1, evidence=evidence)


def _control_line(launch: Launch) -> str:
    if not launch.control:
        return ""
    return f"  configured over stdin with: {clip(json.dumps(launch.control, ensure_ascii=False), 300)}\n"


def check_from_caller(context: CheckContext) -> CheckResult:
    launches, missing = _judged(context, FROM_CALLER)
    if missing:
        return missing
    evidence: dict = {"options": list(context.prompt_flags), "by_launch": []}
    for launch in launches:
        given = [t for t in (context.append_at(launch.step), *context.temporary, context.step_temporary.get(launch.step or 0))
                 if t and t.strip()]
        for flag, value in launch_options(launch, context.prompt_flags):
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
