"""history_preserved: each turn carries the conversation so far, or the summary that replaced it.

Every main request must start with the previous main request's messages plus
the reply the fake model actually gave (so a resumed process that forgot the
last answer is caught). After a compaction request, the next turn must carry
the summary the fake model returned instead.

Compared item by item with message boundaries flattened (agents may merge
consecutive user turns), cache_control markers dropped (they move by design),
and thinking blocks ignored (providers allow dropping them from history).
"""

from __future__ import annotations

import json
import re
from typing import Any

from harness.checks.context import CheckContext
from harness.checks.evidence import clip, where
from harness.journal.exchange import Exchange
from harness.journal.conversation import message_text, system_text
from harness.results import ERROR, FAIL, PASS, CheckResult

NAME = "history_preserved"
_SUMMARY = re.compile(r"<summary>\s*(.*?)\s*</summary>", re.S)


def _normalize_block(block: dict[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind in ("thinking", "redacted_thinking"):
        return None
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": block.get("input")}
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = [_normalize_block(b) for b in content]
        return {"type": "tool_result", "tool_use_id": block.get("tool_use_id"), "content": content,
                "is_error": bool(block.get("is_error", False))}
    return {k: v for k, v in block.items() if k != "cache_control"}


def flatten(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    items = []
    for message in messages:
        if message["role"] == "system":
            continue
        for block in message["content"]:
            normalized = _normalize_block(block)
            if normalized is not None:
                items.append((message["role"], json.dumps(normalized, sort_keys=True, ensure_ascii=False)))
    return items


def expected_after(previous: Exchange) -> list[tuple[str, str]]:
    reply = [{"role": "assistant", "content": (previous.reply or {}).get("content", [])}]
    return flatten(previous.normalized["messages"]) + flatten(reply)


def summary_of(compaction: Exchange) -> str:
    text = compaction.reply_text()
    match = _SUMMARY.search(text)
    return (match.group(1) if match else text).strip()


def _show(item: tuple[str, str] | None) -> str:
    if item is None:
        return "(nothing: the history ends here)"
    role, block = item
    return f"{role}: {clip(block, 140)}"


def check(context: CheckContext) -> CheckResult:
    mains = context.main_requests
    if not mains:
        return CheckResult(NAME, ERROR, "no main request in the journal: nothing to judge")
    evidence: dict[str, Any] = {"transitions": []}
    for previous, current in zip(mains, mains[1:]):
        compactions = context.compactions_between(previous.seq, current.seq)
        if compactions:
            summary = summary_of(compactions[-1])
            carried = _where_carried(summary, current)
            evidence["transitions"].append({"request": current.seq, "after_compaction": compactions[-1].seq,
                                            "ok": carried is not None, "carried_in": carried})
            if carried is None:
                return CheckResult(
                    NAME, FAIL,
                    f"{where(current)}: the conversation was compacted (request #{compactions[-1].seq}) "
                    f"but this turn does not carry the summary the model returned\n"
                    f"  summary: {clip(summary, 120)!r}",
                    step=current.step, request=current.seq, expected=summary, observed=None, evidence=evidence,
                )
            continue
        want = expected_after(previous)
        got = flatten(current.normalized["messages"])
        ok = got[: len(want)] == want
        evidence["transitions"].append({"request": current.seq, "after_request": previous.seq, "ok": ok})
        if not ok:
            index = next((i for i, (w, g) in enumerate(zip(want, got)) if w != g), min(len(want), len(got)))
            return CheckResult(
                NAME, FAIL,
                f"{where(current)}: history differs from {where(previous)} plus its reply, "
                f"at history item {index} of {len(want)}\n"
                f"  expected: {_show(want[index] if index < len(want) else None)}\n"
                f"  observed: {_show(got[index] if index < len(got) else None)}",
                step=current.step, request=current.seq,
                expected=_show(want[index] if index < len(want) else None),
                observed=_show(got[index] if index < len(got) else None),
                evidence=evidence,
            )
    in_system = [t["request"] for t in evidence["transitions"] if t.get("carried_in") == "system"]
    note = f"; the compaction summary rides in the system prompt at request(s) {', '.join(f'#{r}' for r in in_system)}" if in_system else ""
    return CheckResult(
        NAME, PASS, f"history carried through {len(mains) - 1} transitions between {len(mains)} requests{note}",
        evidence=evidence,
    )


def _where_carried(summary: str, exchange: Exchange) -> str | None:
    """Clients carry a summary back as a message (Claude Code) or inside the system prompt (code-puppy)."""
    if any(summary in message_text(m) for m in exchange.normalized["messages"]):
        return "messages"
    if summary in system_text(exchange.normalized):
        return "system"
    return None
