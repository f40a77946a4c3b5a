"""What every artefact reader produces: the steps it could see, and what it could not.

Readers differ in what their artefact records (a transcript has no system
prompt before 2.1.332, a proxy log has no replies, only an Inspect log scores
the answers); they agree on this shape, and everything a reader had to
assume goes into `notes`, which end up in the scenario's description. Nothing
is guessed silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

PLACEHOLDER_REPLY = "ok"  # a turn whose reply the artefact does not hold
# The Anthropic error type for a status, for artefacts that keep only the status.
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}
# Text a client adds to a user message beside the caller's prompt: reminders, and the echo of a local command.
_CLIENT_TEXT = re.compile(r"(?s)^\s*(<system-reminder>.*</system-reminder>|<(local-command-[a-z]+|command-[a-z]+|bash-[a-z]+)>.*)\s*$")


@dataclass
class ObservedStep:
    """One agent process as the artefact shows it, in the scenario grammar's terms."""

    kind: str  # launch, resume, retry or compact
    prompt: str | None = None
    turns: list[Any] = field(default_factory=list)  # scenario reply turns: text, {content: [...]}, {error: {...}}
    error: dict | None = None  # every main request of the step failed with this
    summary: str | None = None  # the compaction summary the step's compaction request got

    def document(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.kind != "compact":
            body["prompt"] = self.prompt if self.prompt is not None else PLACEHOLDER_REPLY
        if self.error is not None:
            body["error"] = self.error
        elif self.turns:
            body["reply"] = self.turns[0] if len(self.turns) == 1 else list(self.turns)
        if self.summary is not None:
            body["summary"] = self.summary
        return {self.kind: body}

    @property
    def failed(self) -> bool:
        """The step ended in an API error, so the launcher's next attempt is a retry."""
        return self.error is not None or bool(self.turns and isinstance(self.turns[-1], dict) and "error" in self.turns[-1])


@dataclass
class Draft:
    """An artefact's steps, the caller's appended text if known, and every assumption made."""

    source: str  # what was read, for the description: "a Claude Code transcript (2.1.332)"
    steps: list[ObservedStep]
    append: str | None = None
    notes: list[str] = field(default_factory=list)
    extra_checks: tuple[str, ...] = ()  # checks that only make sense for this artefact's launcher

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def turn_of(blocks: list[dict[str, Any]], notes: list[str]) -> Any:
    """A recorded assistant message as a scenario reply turn (a bare string when it is one text)."""
    kept = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text" and block.get("text"):
            kept.append({"text": block["text"]})
        elif kind == "thinking" and block.get("thinking"):
            kept.append({"thinking": block["thinking"]})
        elif kind == "tool_use":
            kept.append({"tool_use": {"name": block.get("name", ""), "input": block.get("input") or {}}})
    if not kept:
        kinds_seen = ", ".join(sorted({str(b.get("type")) for b in blocks})) or "nothing"
        notes.append(f"A recorded reply held no text, thinking or tool call ({kinds_seen}): "
                     f"it is a placeholder ({PLACEHOLDER_REPLY!r}).")
        return PLACEHOLDER_REPLY
    if len(kept) == 1 and "text" in kept[0]:
        return kept[0]["text"]
    kinds = [next(iter(block)) for block in kept]
    if kinds == sorted(set(kinds), key=_MAPPING_ORDER.index):  # each kind once, in the order a mapping turn sends
        return {kind: block[kind] for kind, block in zip(kinds, kept)}
    return {"content": kept}


_MAPPING_ORDER = ("thinking", "text", "tool_use")  # how the scenario reader orders a mapping turn's blocks


def error_of(status: int, message: str, error_type: str | None = None) -> dict[str, Any]:
    return {"status": int(status), "type": error_type or ERROR_TYPES.get(int(status), "api_error"),
            "message": message or f"HTTP {status}"}


def prompt_text(content: Any) -> str | None:
    """The caller's prompt in a user message: its last text block the client did not add itself."""
    if isinstance(content, str):
        return None if _CLIENT_TEXT.match(content) else content
    texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
    own = [t for t in texts if t and not _CLIENT_TEXT.match(t)]
    return own[-1] if own else None


def summary_in(text: str) -> str | None:
    """The summary inside a compaction reply (<summary>…</summary>) or a continuation message (Summary:…)."""
    tagged = re.search(r"(?s)<summary>\s*(.*?)\s*</summary>", text)
    if tagged:
        return tagged.group(1)
    marker = text.find("Summary:\n")
    if marker < 0:
        return None
    rest = text[marker + len("Summary:\n"):]
    ends = [rest.find(tail) for tail in _CONTINUATION_TAILS if rest.find(tail) >= 0]
    return (rest[: min(ends)] if ends else rest).strip() or None


# How Claude Code's continuation message goes on after the summary it carries.
_CONTINUATION_TAILS = ("\n\nIf you need specific details from before compaction", "\nPlease continue the conversation",
                       "\n\nContinue the conversation from where", "\nContinue the conversation from where")
