"""temporary_text_transient: text meant for one run, or one step, never becomes part of the conversation.

The second seed: a headless instruction the launcher adds to every `-p` run
must follow the identity line, so that body + identity stay a maximal stable
prefix and the instruction can be dropped again. It was lost on a resumed run,
then frozen into the persisted prompt in the opposite order, so every later
turn (interactive ones too) carried it inside the cached prefix. Position is
the only signal that survives the trip through storage into another process,
so position is what this check judges:

- The durable prefix is the system text up to the last cache breakpoint, the
  same bytes prefix_stable compares: whatever precedes a breakpoint is cached,
  so a temporary text there is frozen. With no breakpoint (OpenAI's automatic
  caching of the whole prompt), it is the whole system text less any temporary
  texts that end it: text that only has whitespace or other temporary texts
  after it can be dropped without moving anything before it. (So there a
  frozen copy that happens to end the prompt reads as this process's own; it
  shows once anything durable follows it, or when a step's own text outlives
  its step.)
- A step's own text must not reach any request of a later step: it outlived
  its step.
- No temporary text belongs in a user or assistant message: that history is
  persisted and replayed. Tool results are left out; a tool may legitimately
  read a file that holds the text.

A text that never shows up where it was declared is reported, not failed; one
that shows up in no request at all leaves nothing to judge, which is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.checks.context import CheckContext
from harness.checks.evidence import around, clip, where
from harness.checks.prefix import block_at, breakpoint_index, system_prefix
from harness.journal.conversation import message_text, system_text
from harness.journal.exchange import Exchange
from harness.results import ERROR, FAIL, PASS, CheckResult

NAME = "temporary_text_transient"
PREFIX, AFTER, HISTORY, ABSENT = "prefix", "after the prefix", "history", "absent"
_PLACES = (PREFIX, AFTER, HISTORY)
MAX_LISTED = 4  # further problems are counted, not spelled out


@dataclass(frozen=True)
class Declared:
    text: str
    step: int | None  # None: the agent adds it to every run

    @property
    def label(self) -> str:
        return "temporary text" if self.step is None else f"step {self.step}'s temporary text"

    @property
    def scope(self) -> str:
        return "every step" if self.step is None else f"step {self.step}"


@dataclass(frozen=True)
class Found:
    place: str  # one of _PLACES
    offset: int  # bytes into the durable prefix, or into the message's text
    context: str  # the text with what surrounds it, ⟦…⟧ around the occurrence
    block: int | None  # system block (prefix) or message index
    description: str  # the same, for a reader


@dataclass(frozen=True)
class Problem:
    kind: str  # "frozen into the prefix" | "persisted into the history" | "outlived its step"
    exchange: Exchange
    declared: Declared
    found: Found


def declared_texts(context: CheckContext) -> list[Declared]:
    out = [Declared(t.strip(), None) for t in context.temporary if t.strip()]
    out += [Declared(t.strip(), s) for s, t in sorted(context.step_temporary.items()) if t.strip()]
    return out


def durable_prefix(exchange: Exchange, temporary: list[str]) -> str:
    """The prefix prefix_stable compares; without a breakpoint, less the temporary texts (and whitespace) that end it."""
    prefix = system_prefix(exchange).decode("utf-8")
    if breakpoint_index(exchange) is not None:
        return prefix
    ordered = sorted({t for t in temporary if t}, key=len, reverse=True)
    end = len(prefix)
    while True:
        head = prefix[:end].rstrip()
        tail = next((t for t in ordered if head.endswith(t)), None)
        if tail is None:
            return prefix[:end]
        end = len(head) - len(tail)


def _byte_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))


def locate(exchange: Exchange, text: str, temporary: list[str]) -> list[Found]:
    """Every place of `text` in one request: the durable prefix, the instructions after it, the history."""
    normalized = exchange.normalized or {}
    messages = normalized.get("messages", [])
    found = []
    durable = durable_prefix(exchange, temporary)
    index = durable.find(text)
    if index >= 0:
        offset = _byte_offset(durable, index)
        block = block_at(exchange, offset)
        found.append(Found(PREFIX, offset, around(durable, index, len(text)), block,
                           f"system block {block}, offset {offset} of the durable prefix"))
    full = system_text(normalized)
    if full.count(text) > durable.count(text):
        index = full.rfind(text)
        offset = _byte_offset(full, index)
        found.append(Found(AFTER, offset, around(full, index, len(text)), None, f"offset {offset} of the system text"))
    else:
        found += _in_messages(messages, text, ("system",), AFTER)[:1]
    found += _in_messages(messages, text, ("user", "assistant"), HISTORY)[:1]
    return found


def _in_messages(messages: list[dict], text: str, roles: tuple[str, ...], place: str) -> list[Found]:
    out = []
    for i, message in enumerate(messages):
        content = message_text(message) if message["role"] in roles else ""
        index = content.find(text)
        if index >= 0:
            offset = _byte_offset(content, index)
            out.append(Found(place, offset, around(content, index, len(text)), i,
                             f"message {i} ({message['role']}), offset {offset} of its text"))
    return out


def _problem_line(problem: Problem) -> str:
    f = problem.found
    if problem.kind == "outlived its step":
        return f"{problem.declared.label} outlived its step: found at {where(problem.exchange)}, {_PLACE_PHRASE[f.place]}: {f.description}"
    return f"{problem.declared.label} {problem.kind} at {where(problem.exchange)}: {f.description}"


def survey(texts: list[Declared], mains: list[Exchange]) -> tuple[dict[tuple[int | None, int], set[str]], list[Problem]]:
    """Where each text was seen, per (step, index in texts), and every misplaced occurrence in request order."""
    places: dict[tuple[int | None, int], set[str]] = {}
    problems: list[Problem] = []
    for exchange in mains:
        own = [d.text for d in texts if d.step is None or d.step == exchange.step]
        for n, declared in enumerate(texts):
            later = declared.step is not None and exchange.step is not None and exchange.step > declared.step
            if later and declared.text in own:
                continue  # declared again for this step (or for every step): judged as that declaration
            if not later and declared.step is not None and declared.step != exchange.step:
                continue  # a later step's text, not given yet
            found = locate(exchange, declared.text, own)
            places.setdefault((exchange.step, n), set()).update(f.place for f in found)
            if later:
                problems += [Problem("outlived its step", exchange, declared, f) for f in found[:1]]
            else:
                problems += [Problem(_KIND[f.place], exchange, declared, f) for f in found if f.place in _KIND]
    return places, problems


def check(context: CheckContext) -> CheckResult:
    texts = declared_texts(context)
    if not texts:
        return CheckResult(NAME, ERROR, "the scenario declares no temporary text to look for")
    mains = context.main_requests
    if not mains:
        return CheckResult(NAME, ERROR, "no main request in the journal: nothing to judge")
    # Judged as of an earlier step (harness diff), a later step's text has not been given yet: nothing is missing.
    reached = max((e.step for e in context.exchanges if e.step is not None), default=0)
    pending = [d for d in texts if d.step is not None and d.step > reached]
    texts = [d for d in texts if d not in pending]
    if not texts:
        return CheckResult(
            NAME, PASS, f"no temporary text given by step {reached}: "
            + ", ".join(f"{d.label} comes later" for d in pending),
            evidence={"pending": [{"text": clip(d.text, 100), "declared_for": d.scope} for d in pending]},
        )
    main_steps = {e.step for e in mains if e.step is not None}
    steps = sorted(main_steps | {d.step for d in texts if d.step is not None})
    places, problems = survey(texts, mains)
    evidence = {
        "texts": [{"text": clip(d.text, 100), "declared_for": d.scope} for d in texts],
        "by_step": _by_step(texts, steps, places, main_steps),
    }
    notes, missing = _absences(texts, main_steps, places)
    where_series = "\n  where it was found by step: " + "; ".join(
        _series_for(texts, n, steps, places, main_steps) for n in range(len(texts)))
    if problems:
        first = problems[0]
        evidence["problems"] = [
            {"kind": p.kind, "step": p.exchange.step, "request": p.exchange.seq, "text": clip(p.declared.text, 100),
             "place": p.found.place, "offset": p.found.offset, "block": p.found.block, "context": p.found.context}
            for p in problems
        ]
        more = [f"\n  also: {_problem_line(p)}" for p in problems[1 : 1 + MAX_LISTED]]
        if len(problems) > 1 + MAX_LISTED:
            more.append(f"\n  … and {len(problems) - 1 - MAX_LISTED} more (evidence.problems lists them all)")
        return CheckResult(
            NAME, FAIL,
            _problem_line(first)
            + f"\n  text: {clip(first.declared.text, 100)!r}\n  context: {first.found.context}"
            + "".join(more) + where_series + notes,
            step=first.exchange.step, request=first.exchange.seq,
            expected="absent" if first.kind == "outlived its step" else "outside the durable prefix and the history",
            observed=first.found.place, evidence=evidence,
        )
    if missing:
        return CheckResult(
            NAME, ERROR,
            "nothing to judge: " + "; ".join(f"{d.label} {clip(d.text, 60)!r} appears in no request" for d in missing)
            + where_series + notes, evidence=evidence,
        )
    return CheckResult(
        NAME, PASS,
        f"temporary text stayed out of the durable prefix and the history in all {len(mains)} requests" + where_series + notes,
        expected="outside the durable prefix and the history", observed="outside the durable prefix and the history",
        evidence=evidence,
    )


_KIND = {PREFIX: "frozen into the prefix", HISTORY: "persisted into the history"}
_PLACE_PHRASE = {PREFIX: "in the durable prefix", AFTER: "after the prefix", HISTORY: "in the history"}


def _places(seen: set[str] | None) -> list[str]:
    return [p for p in _PLACES if p in (seen or ())] or [ABSENT]


def _places_label(seen: set[str] | None) -> str:
    return ", ".join(_places(seen))


def _shown(declared: Declared, n: int, step: int, places: dict, main_steps: set[int]) -> bool:
    """A text is reported where it was given (every step that reached the model, or its own step) and where it outlived it."""
    if declared.step is None:
        return step in main_steps
    return step == declared.step or (step > declared.step and bool(places.get((step, n))))


def _by_step(texts: list[Declared], steps: list[int], places: dict, main_steps: set[int]) -> list[dict]:
    return [
        {"step": step, "texts": [
            {"text": clip(declared.text, 60), "declared_for": declared.scope, "found": _places(places.get((step, n)))}
            for n, declared in enumerate(texts) if _shown(declared, n, step, places, main_steps)
        ]}
        for step in steps
    ]


def _series_for(texts: list[Declared], n: int, steps: list[int], places: dict, main_steps: set[int]) -> str:
    """`1: after the prefix · 2: prefix, after the prefix`, prefixed with the text when there are several."""
    cells = " · ".join(
        f"{s}: {_places_label(places.get((s, n)))}" for s in steps if _shown(texts[n], n, s, places, main_steps)
    )
    return (f"{clip(texts[n].text, 40)!r} " if len(texts) > 1 else "") + cells


def _absences(texts: list[Declared], main_steps: set[int], places: dict) -> tuple[str, list[Declared]]:
    """Notes for steps a declared text never reached, and the texts no request carried at all."""
    notes, missing = [], []
    for n, declared in enumerate(texts):
        if not any(seen for (_, m), seen in places.items() if m == n):
            missing.append(declared)
        if declared.step is None:
            absent = [s for s in sorted(main_steps) if not places.get((s, n))]
            if absent and declared not in missing:
                notes.append(f"the {declared.label} is absent from the requests of step(s) {', '.join(map(str, absent))}")
        elif declared.step not in main_steps:
            notes.append(f"step {declared.step} sent no main request, so its temporary text was never given to the model")
        elif not places.get((declared.step, n)) and declared not in missing:
            notes.append(f"{declared.label} is absent from that step's own requests")
    return "".join(f"\n  note: {line}" for line in notes), missing
