"""Steps from a sequence of recorded model requests: a harness journal, a proxy's log, an Inspect log.

What marks a new step, strongest evidence first: the artefact says so (a
harness journal knows each request's step), the sending process changed (a
journal's pid, an Inspect agent span), or, with neither, a request that
opens a new user prompt. A compaction request is a `compact` step of its own
unless it came from a process already running a prompt (auto-compaction),
where its summary belongs to that step. A step after one that ended in an
API error is a retry. Replies come from the record, or else from the next
request's history, which repeats them; what neither holds is a placeholder,
and said so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable

from harness.journal import conversation
from harness.importing.draft import PLACEHOLDER_REPLY, ObservedStep, prompt_text, summary_in, turn_of
from harness.targets.claude_code import SIDE_CALLS

MAIN, COMPACTION, SIDE = "main", "compaction", "side"


@dataclass
class Call:
    """One model request as an artefact records it."""

    normalized: dict[str, Any]  # the fake API's normalized view (system blocks, messages)
    reply: list[dict[str, Any]] | None = None  # the assistant content blocks it got, if recorded
    error: dict[str, Any] | None = None  # {status, type, message} when it was answered with an error
    process: Hashable | None = None  # whatever identifies the sending process, if recorded
    step: int | None = None  # the step it belongs to, when the artefact knows
    kind: str | None = None  # that step's kind, when the artefact knows
    klass: str | None = None  # main, compaction or side, when the artefact knows

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation as sent, without cache markers (they move from turn to turn)."""
        return _without_cache_control(self.normalized.get("messages", []))

    @property
    def prompt(self) -> str | None:
        """The caller's text in the last user message (mid-conversation system messages come after it)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return prompt_text(message.get("content"))
        return None


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    return value


def classify(call: Call) -> str:
    if call.klass:
        return call.klass
    if conversation.is_compaction(call.normalized):
        return COMPACTION
    if any(rule.matches(call.normalized) for rule in SIDE_CALLS):
        return SIDE
    return MAIN


def system_blocks(calls: list[Call]) -> list[list[str]]:
    """Each main request's system blocks, for finding the appended text."""
    return [[b.get("text", "") for b in c.normalized.get("system", [])] for c in calls if classify(c) == MAIN]


def infer_steps(calls: list[Call], notes: list[str]) -> list[ObservedStep]:
    side = [c for c in calls if classify(c) == SIDE]
    if side:
        notes.append(f"{len(side)} background request(s) (titles, quota probes, small-model helpers) were left out: "
                     f"the fake API answers them by itself.")
    calls = [c for c in calls if classify(c) != SIDE]
    groups = _group(calls, notes)
    steps: list[ObservedStep] = []
    for position, group in enumerate(groups):
        step = _step(group, calls, notes, first=position == 0)
        if steps and steps[-1].failed and step.kind == "resume" and group[0].kind is None:
            step.kind = "retry"
        steps.append(step)
    return steps


def _group(calls: list[Call], notes: list[str]) -> list[list[Call]]:
    if calls and all(c.step is not None for c in calls):
        by_step: dict[int, list[Call]] = {}
        for call in calls:
            by_step.setdefault(call.step, []).append(call)
        return [by_step[k] for k in sorted(by_step)]
    known_processes = all(c.process is not None for c in calls)
    if not known_processes:
        notes.append("Which process sent each request is not recorded: a new step starts at each new user prompt "
                     "and at each compaction request, and a request re-sent after an error is taken as a retry "
                     "inside the same process.")
    groups: list[list[Call]] = []
    for call in calls:
        if not groups or _starts_step(call, groups[-1], known_processes):
            if groups and known_processes and call.process == groups[-1][-1].process:
                notes.append("One process sent several prompts (an interactive session): each prompt became a step "
                             "of its own, as a scenario runs one prompt per process.")
            groups.append([call])
        else:
            groups[-1].append(call)
    return groups


def _starts_step(call: Call, current: list[Call], known_processes: bool) -> bool:
    if known_processes and call.process != current[-1].process:
        return True
    if known_processes:  # a prompt other than the one this process is answering (after a compaction it comes again)
        answering = [c.prompt for c in current if classify(c) == MAIN]
        return classify(call) == MAIN and _opens_prompt(call) and bool(answering) and call.prompt != answering[-1]
    if classify(call) == COMPACTION:
        return True
    if all(classify(c) == COMPACTION for c in current):
        return True
    return _opens_prompt(call) and call.messages != current[-1].messages


def _opens_prompt(call: Call) -> bool:
    """The request's last user message has text of its own (not only tool results), and no answer follows it."""
    spoken = [m for m in call.messages if m.get("role") in ("user", "assistant")]
    return bool(spoken) and spoken[-1].get("role") == "user" and call.prompt is not None


def _step(group: list[Call], everything: list[Call], notes: list[str], first: bool) -> ObservedStep:
    main = [c for c in group if classify(c) == MAIN]
    compactions = [c for c in group if classify(c) == COMPACTION]
    kind = group[0].kind or ("launch" if first else "compact" if not main else "resume")
    step = ObservedStep(kind=kind)
    if main and kind != "compact":
        step.prompt = main[0].prompt
        if step.prompt is None:
            notes.append(f"Step {kind}: the first request of the step does not end in a user prompt; "
                         f"its prompt is a placeholder ({PLACEHOLDER_REPLY!r}).")
    step.turns = [_turn(c, everything, notes) for c in main]
    errors = [c.error for c in main]
    if main and all(errors) and all(e == errors[0] for e in errors):
        step.error, step.turns = errors[0], []
    for call in compactions:
        step.summary = _summary(call, everything, notes)
    return step


def _turn(call: Call, everything: list[Call], notes: list[str]) -> Any:
    if call.error is not None:
        return {"error": call.error}
    if call.reply is not None:
        return turn_of(call.reply, notes)
    repeated = _reply_in_later_history(call, everything)
    if repeated is not None:
        return turn_of(repeated, notes)
    notes.append(f"The reply to {call.prompt or 'a request'!r} is not in the record (no response, and no later request "
                 f"repeats it): it is a placeholder ({PLACEHOLDER_REPLY!r}).")
    return PLACEHOLDER_REPLY


def _reply_in_later_history(call: Call, everything: list[Call]) -> list[dict[str, Any]] | None:
    """A later request's history carries this request's messages and then the answer to them."""
    sent = call.messages
    for later in everything[everything.index(call) + 1:]:
        history = later.messages
        if len(history) > len(sent) and history[: len(sent)] == sent and history[len(sent)].get("role") == "assistant":
            return history[len(sent)].get("content") or []
    return None


def _summary(call: Call, everything: list[Call], notes: list[str]) -> str | None:
    if call.reply is not None:
        text = "".join(b.get("text", "") for b in call.reply if b.get("type") == "text")
        return summary_in(text) or text
    for later in everything[everything.index(call) + 1:]:
        if classify(later) == MAIN and later.messages:
            found = summary_in(prompt_text(later.messages[0].get("content")) or "")
            if found:
                return found
    notes.append("A compaction's summary is not in the record: the fake API writes its default summary there.")
    return None
