"""Switchable known defects, each a faithful copy of a real class of launcher bug.

They exist so that every harness check can be shown to fail on a broken agent
and pass on the clean one; the names are the harness's vocabulary, so their
order and spelling are part of the interface.
"""

from __future__ import annotations

from collections.abc import Iterable

from .errors import UsageError

DROP_APPEND_ON_RESUME = "drop-append-on-resume"
DUPLICATE_APPEND_ON_RESUME = "duplicate-append-on-resume"
FRESH_IDENTITY_PER_PROCESS = "fresh-identity-per-process"
GROWING_PROMPT_FRAGMENT = "growing-prompt-fragment"
APPEND_LOST_AFTER_COMPACTION = "append-lost-after-compaction"
TEMPORARY_TEXT_FROZEN_INTO_PREFIX = "temporary-text-frozen-into-prefix"
TIMESTAMP_IN_PREFIX = "timestamp-in-prefix"
FORGET_LAST_REPLY = "forget-last-reply"
TEMPORARY_TEXT_IN_HISTORY = "temporary-text-in-history"

KNOWN_DEFECTS: tuple[str, ...] = (
    DROP_APPEND_ON_RESUME,
    DUPLICATE_APPEND_ON_RESUME,
    FRESH_IDENTITY_PER_PROCESS,
    GROWING_PROMPT_FRAGMENT,
    APPEND_LOST_AFTER_COMPACTION,
    TEMPORARY_TEXT_FROZEN_INTO_PREFIX,
    TIMESTAMP_IN_PREFIX,
    FORGET_LAST_REPLY,
    TEMPORARY_TEXT_IN_HISTORY,
)

DEFECT_DESCRIPTIONS: dict[str, str] = {
    DROP_APPEND_ON_RESUME: "On resume the appended system text is omitted entirely.",
    DUPLICATE_APPEND_ON_RESUME: "On resume the appended system text appears twice in the cached body.",
    FRESH_IDENTITY_PER_PROCESS: "The agent id is minted fresh in every process instead of restored.",
    GROWING_PROMPT_FRAGMENT: "Recalled notes are re-gathered from earlier prompts every process, so the body grows.",
    APPEND_LOST_AFTER_COMPACTION: "The appended text is pinned to the first message and vanishes once compaction replaces it.",
    TEMPORARY_TEXT_FROZEN_INTO_PREFIX: "The per-run headless text is persisted into the durable body at launch.",
    TIMESTAMP_IN_PREFIX: "The cached body carries the current time, re-read for every request.",
    FORGET_LAST_REPLY: "The session is saved before the final reply is appended, so resume loses it.",
    TEMPORARY_TEXT_IN_HISTORY: "A hook copies the step's temporary text into the user prompt, which is saved with the history.",
}


def parse_defects(names: Iterable[str]) -> frozenset[str]:
    """Reject unknown names loudly: a typo must not silently run the clean agent."""
    chosen = list(names)
    unknown = [name for name in chosen if name not in KNOWN_DEFECTS]
    if unknown:
        raise UsageError(
            f"unknown defect {', '.join(repr(n) for n in unknown)}; "
            f"known defects: {', '.join(KNOWN_DEFECTS)}"
        )
    return frozenset(chosen)
