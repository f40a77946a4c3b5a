"""appended_exactly_once: the caller's appended text reaches the model in every turn, once.

Zero means a re-launch dropped the caller's instructions (the first seed);
two means something re-appended text it had already persisted.
"""

from __future__ import annotations

from harness.checks.context import CheckContext
from harness.checks.evidence import clip, series, where
from harness.journal.exchange import Exchange
from harness.journal.conversation import message_text
from harness.results import APPENDED_IN_REQUESTS, ERROR, FAIL, PASS, CheckResult

NAME = APPENDED_IN_REQUESTS


def count_in_instructions(exchange: Exchange, text: str) -> int:
    """Occurrences in what the model reads as instructions: system blocks and system-role messages."""
    normalized = exchange.normalized or {}
    count = sum(block["text"].count(text) for block in normalized.get("system", []))
    count += sum(message_text(m).count(text) for m in normalized.get("messages", []) if m["role"] == "system")
    return count


def count_in_conversation(exchange: Exchange, text: str) -> int:
    normalized = exchange.normalized or {}
    return sum(message_text(m).count(text) for m in normalized.get("messages", []) if m["role"] != "system")


def check(context: CheckContext) -> CheckResult:
    if not context.append or not context.append.strip():
        return CheckResult(NAME, ERROR, "the scenario has no appended text to look for")
    text = context.append.strip()
    mains = context.main_requests
    if not mains:
        return CheckResult(NAME, ERROR, "no main request in the journal: nothing to judge")
    counts = [(e, count_in_instructions(e, text)) for e in mains]
    evidence = {
        "appended": text,
        "by_request": [
            {"step": e.step, "request": e.seq, "count": n, "in_conversation": count_in_conversation(e, text)}
            for e, n in counts
        ],
    }
    by_step = series([f"{n}" for _, n in counts])
    for exchange, count in counts:
        if count != 1:
            elsewhere = count_in_conversation(exchange, text)
            note = f" (it appears {elsewhere} time(s) in the conversation messages instead)" if elsewhere and not count else ""
            return CheckResult(
                NAME, FAIL,
                f"{where(exchange)}: the appended text occurs {count} time(s) in the system prompt, expected exactly once{note}\n"
                f"  appended text: {clip(text, 100)!r}\n"
                f"  occurrences by request: {by_step}",
                step=exchange.step, request=exchange.seq, expected=1, observed=count, evidence=evidence,
            )
    return CheckResult(
        NAME, PASS, f"appended text present exactly once in all {len(mains)} requests",
        expected=1, observed=1, evidence=evidence,
    )
