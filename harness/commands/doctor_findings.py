"""What `harness doctor` makes of one launch and one resume: what each step did, and what to change in the target file.

A team writing its first target file meets the harness's rules one failed run
at a time: an id it cannot read, an identity regex that finds nothing, an
`{append}` left off the resume. The doctor runs the smallest scenario that
touches each rule and reports every one of them at once, with the evidence
it read (the stdout, the system prompt's first line, the counts), each
problem as the line of the target file to change. It reads the journal the
run wrote and judges with the checks' own helpers, so what it calls ready is
what `harness run` will find.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

import yaml

from harness.checks.appended import count_in_conversation, count_in_instructions
from harness.checks.context import CheckContext, main_requests
from harness.checks.evidence import clip
from harness.checks.history import NAME as HISTORY
from harness.checks.identity import identity_of
from harness.journal.conversation import system_text
from harness.journal.exchange import Exchange
from harness.redaction import redact, redact_many
from harness.results import FAIL, RunResult, StepResult
from harness.scenario.model import Scenario
from harness.scenario.reader import scenario_from_text
from harness.targets.base import Target, template_fields

DEFAULT_APPEND = "Rules from the caller: answer briefly, in plain text."
SESSION_ID_MISSING = "could not read the session id"  # how run/session.py opens that step error
STDOUT_SHOWN = 600  # characters of a step's stdout tail shown when its session id was not found
ENVIRONMENT_HINT = ("ANTHROPIC_BASE_URL, or OPENAI_BASE_URL (…/v1), which every step gets; other variables "
                    "set in `env:` from {base_url}, e.g. GOOGLE_GEMINI_BASE_URL: \"{base_url}\"")


def doctor_scenario(append: str) -> Scenario:
    """A launch and a resume: the fewest steps that read a session id back and carry the appended text twice."""
    document = {
        "name": "doctor",
        "description": "harness doctor: one launch and one resume",
        "append": append,
        "steps": [{"launch": {"prompt": "Say hello.", "reply": "Hello."}},
                  {"resume": {"prompt": "Say it once more.", "reply": "Hello again."}}],
        "checks": ["identity_stable", "appended_exactly_once", HISTORY],
    }
    return scenario_from_text(yaml.safe_dump(document, allow_unicode=True, sort_keys=False), "harness doctor")


@dataclass
class Findings:
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def last_line(self) -> str:
        return "ready" if not self.problems else f"{len(self.problems)} problem(s)"


def examine(scenario: Scenario, target: Target, result: RunResult, exchanges: list[Exchange]) -> Findings:
    """Each step as it ran, then the problems; `exchanges`: the run's journal as read back from its file."""
    found = Findings()
    context = CheckContext.of(scenario, exchanges, target.identity_pattern)
    mains = main_requests(exchanges)
    launch_identity = identity_of(mains[0], context) if mains else None
    launch_id: str | None = None
    for number, step in enumerate(scenario.steps):
        ran = result.steps[number] if number < len(result.steps) else None
        if ran is None:
            found.lines.append(f"step {step.index} ({step.kind}): not run, since step {step.index - 1} did not complete")
            continue
        mine = [e for e in exchanges if e.step == step.index]
        _step_lines(found, ran, mine, target)
        launch_id = _session_id(found, ran, mine, target, launch_id)
        if not ran.error or ran.error.startswith(SESSION_ID_MISSING):
            step_mains = [e for e in mains if e.step == step.index]
            identity_problem = _identity(found, ran, step_mains, context, launch_identity)
            if identity_problem and not any(p.startswith("identity:") for p in found.problems):  # one regex, said once
                found.problems.append(identity_problem)
            _appended(found, ran, step_mains, scenario.append or "", target)
    history = next((c for c in result.checks if c.check == HISTORY), None)
    if history is not None and history.verdict == FAIL:
        found.lines.append(f"history: {history.message.splitlines()[0]}")
        found.problems.append("resume: its request does not carry the launch's conversation (history_preserved fails): "
                              "the resume must continue the session the launch printed; pass \"{session_id}\" the way "
                              "your agent resumes a session")
    return found


def _step_lines(found: Findings, ran: StepResult, mine: list[Exchange], target: Target) -> None:
    code = "no exit code" if ran.exit_code is None else f"exit {ran.exit_code}"
    timed = ", timed out" if ran.timed_out else ""
    found.lines.append(f"step {ran.index} ({ran.kind}): {code}{timed}, {ran.duration_s:.2f}s")
    found.lines.append(f"  argv: {shlex.join(redact_many(list(ran.argv)))}" if ran.argv else "  argv: (none built)")
    if mine:
        found.lines.append("  requests: " + "; ".join(f"#{e.seq} {e.method} {e.path} ({e.klass}, {e.status})" for e in mine))
    else:
        found.lines.append("  requests: none reached the fake API")
    found.lines.extend(f"  note: {note}" for note in ran.notes)
    if ran.error and not ran.error.startswith(SESSION_ID_MISSING):
        found.lines.append(f"  error: {redact(ran.error)}")
        found.problems.append(_step_problem(ran, target))


def _step_problem(ran: StepResult, target: Target) -> str:
    kind = ran.kind
    if ran.timed_out:
        return (f"{kind}: the agent did not finish within timeout_s ({target.timeout_s:g}s) and was killed; an agent "
                f"waiting for input (a terminal, stdin, a confirmation) hangs: give `{kind}:` its non-interactive "
                "flags, or raise timeout_s")
    if ran.exit_code not in (0, None):
        return (f"{kind}: the agent exited with code {ran.exit_code} (its error is above): run the argv above by hand "
                f"and fix `{kind}:`")
    if ran.error and ran.error.startswith("cannot start"):
        return f"{kind}: {redact(ran.error)}; fix the program `{kind}:` names"
    if ran.exit_code is None:
        return f"{kind}: the command could not run ({redact(ran.error or '')}); fix `{kind}:`"
    if ran.requests == 0:
        return (f"{kind}: the agent sent no request to the fake API; it must send them to the base URL it is given: "
                + ENVIRONMENT_HINT)
    return f"{kind}: {redact(ran.error or '')}"


def _session_id(found: Findings, ran: StepResult, mine: list[Exchange], target: Target,
                launch_id: str | None) -> str | None:
    """The session id line of one step; returns the launch's id (what a later step is compared with)."""
    rule = target.session_id.describe()
    if ran.error and ran.error.startswith(SESSION_ID_MISSING):
        stdout = ran.stdout_tail[-STDOUT_SHOWN:]
        found.lines.append(f"  session id: NOT FOUND by {rule}; stdout " + ("ends with:" if stdout.strip() else "is empty"))
        found.lines.extend(f"    | {line}" for line in stdout.splitlines())
        fix = ("{stdout_json: KEY} for a JSON line holding the id, {stdout_regex: \"...\"} with a group around it, "
               "or {header: NAME} for a header of the agent's requests")
        if not stdout.strip():
            fix = "the agent prints nothing on stdout: {header: NAME} if its requests carry the id, else make it print one"
        found.problems.append(f"session_id: `{rule}` reads no session id from the {ran.kind}'s stdout (shown above); "
                              f"write the form that reads what your agent prints: {fix}")
        return launch_id
    if ran.error:
        found.lines.append("  session id: not read, since the step did not complete")
        return launch_id
    printed = target.session_id.read(ran.stdout_tail, [e for e in mine if e.klass != "foreign"])
    if printed is None and not target.prints_session_id(ran.kind):
        found.lines.append(f"  session id: none printed (steps_without_session_id); {ran.session_id!r} carries over")
        return launch_id
    same = ""
    if ran.kind != "launch" and launch_id is not None:
        same = "; the same as the launch's" if ran.session_id == launch_id else "; a new one (a later step resumes it)"
    found.lines.append(f"  session id: {ran.session_id!r}, read by {rule}{same}")
    tail = ran.stdout_tail.strip()
    found.lines.append(f"  stdout ends with: {clip(tail[-200:], 200)!r}" if tail else "  stdout: empty")
    return launch_id if ran.kind != "launch" else ran.session_id


def _identity(found: Findings, ran: StepResult, mains: list[Exchange], context: CheckContext,
              launch_identity: str | None) -> str | None:
    """The identity lines of one step's requests; the problem with them, if any."""
    pattern = context.identity_pattern.pattern
    problem = None
    for exchange in mains:
        text = system_text(exchange.normalized)
        first = text.split("\n", 1)[0] if text else None
        identity = identity_of(exchange, context)
        found.lines.append(f"  request #{exchange.seq}: the system prompt's first line: "
                           + (repr(clip(first, 160)) if first is not None else "(no system prompt)"))
        if identity is None:
            found.lines.append(f"    identity /{pattern}/: matches nothing")
            problem = problem or (
                f"identity: /{pattern}/ matches nothing in the {ran.kind}'s system prompt"
                + (f", whose first line is {clip(first, 100)!r}" if first else ", which is empty")
                + "; set identity.regex to a pattern that finds your agent's identity line")
            continue
        same = ""
        if ran.kind != "launch" and launch_identity is not None:
            same = "; the same as the launch's" if identity == launch_identity else "; DIFFERS from the launch's"
        found.lines.append(f"    identity /{pattern}/: {clip(identity, 160)!r}{same}")
        if launch_identity is not None and identity != launch_identity:
            problem = problem or (
                f"identity: the {ran.kind}'s identity line {clip(identity, 80)!r} differs from the launch's "
                f"{clip(launch_identity, 80)!r}: identity_stable will fail; the agent makes its identity anew per "
                "process, or identity.regex takes in text that changes per process (narrow it to the stable part)")
    return problem


def _appended(found: Findings, ran: StepResult, mains: list[Exchange], append: str, target: Target) -> None:
    text = append.strip()
    counts = []
    for exchange in mains:
        count, elsewhere = count_in_instructions(exchange, text), count_in_conversation(exchange, text)
        counts.append(count)
        said = "present, once" if count == 1 else ("MISSING" if count == 0 else f"{count} TIMES")
        also = f" (and {elsewhere} time(s) in the conversation messages)" if elsewhere else ""
        found.lines.append(f"    appended text in the system prompt: {said}{also}")
    wrong = next((c for c in counts if c != 1), None)
    if wrong is None:
        return
    passes = _passes_append(target, ran.kind)
    if wrong == 0 and passes is False:
        found.problems.append(f"{ran.kind}: the appended text is missing from its system prompt, and `{ran.kind}:` has no "
                              "{append}: pass \"{append}\" as the launch does (e.g. --append-system-prompt \"{append}\")")
    elif wrong == 0:
        found.problems.append(f"{ran.kind}: the appended text is missing from its system prompt though `{ran.kind}:` passes "
                              "{append}: give it to the agent through the option that appends to its system prompt")
    else:
        found.problems.append(f"{ran.kind}: the appended text is {wrong} times in its system prompt, expected once: the "
                              f"agent adds it again to a prompt that already holds it, or `{ran.kind}:` passes {{append}} "
                              "more than once")


def _passes_append(target: Target, kind: str) -> bool | None:
    """Whether the step kind's command (or env) has {append}; None when the target runs no commands of its own."""
    argv = target.command_for(kind)
    if not argv:
        return None
    return any("append" in template_fields(part) for part in (*argv, *target.env.values()))
