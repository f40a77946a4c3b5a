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


def stale_count(exchange: Exchange, context: CheckContext) -> int:
    """Occurrences of the caller's replaced texts in a request's instructions, not counting those inside the current one."""
    current = (context.append_at(exchange.step) or "").strip()
    return sum(count_in_instructions(exchange, old) - count_in_instructions(exchange, current) * current.count(old)
               for old in context.replaced_at(exchange.step))


def check(context: CheckContext) -> CheckResult:
    if not context.append or not context.append.strip():
        return CheckResult(NAME, ERROR, "the scenario has no appended text to look for")
    text = context.append.strip()
    mains = context.main_requests
    if not mains:
        return CheckResult(NAME, ERROR, "no main request in the journal: nothing to judge")
    texts = {e.seq: (context.append_at(e.step) or "").strip() for e in mains}
    counts = [(e, count_in_instructions(e, texts[e.seq])) for e in mains]
    evidence = {
        "appended": text,
        "by_request": [
            {"step": e.step, "request": e.seq, "count": n, "in_conversation": count_in_conversation(e, texts[e.seq])}
            for e, n in counts
        ],
    }
    stale = {e.seq: stale_count(e, context) for e in mains}  # 0 everywhere unless the caller changed its text
    if context.step_appends:  # which text each request was judged against, and the replaced ones it still carried
        evidence["appended_by_step"] = {str(step): text.strip() for step, text in context.step_appends.items()}
        for entry, (exchange, _) in zip(evidence["by_request"], counts):
            entry["replaced"] = stale[exchange.seq]
    by_step = series([f"{n}" for _, n in counts])
    for exchange, count in counts:
        if stale[exchange.seq]:
            return CheckResult(
                NAME, FAIL,
                f"{where(exchange)}: the caller's text was changed by then, and the request still carries the "
                f"replaced text {stale[exchange.seq]} time(s) (the current one {count} time(s))\n"
                f"  current text: {clip(texts[exchange.seq], 100)!r}\n"
                f"  replaced: {', '.join(repr(clip(old, 60)) for old in context.replaced_at(exchange.step))}\n"
                f"  occurrences of the current text by request: {by_step}",
                step=exchange.step, request=exchange.seq, expected=1, observed=count, evidence=evidence,
            )
        if count != 1:
            elsewhere = count_in_conversation(exchange, text)
            note = f" (it appears {elsewhere} time(s) in the conversation messages instead)" if elsewhere and not count else ""
            return CheckResult(
                NAME, FAIL,
                f"{where(exchange)}: the appended text occurs {count} time(s) in the system prompt, expected exactly once{note}\n"
                f"  appended text: {clip(texts[exchange.seq], 100)!r}\n"
                f"  occurrences by request: {by_step}",
                step=exchange.step, request=exchange.seq, expected=1, observed=count, evidence=evidence,
            )
    return CheckResult(
        NAME, PASS, f"appended text present exactly once in all {len(mains)} requests",
        expected=1, observed=1, evidence=evidence,
    )
