"""prefix_stable: the cacheable prompt prefix is byte-identical in every turn.

The prefix is what a provider caches: the tools, then the system blocks up to
the last cache breakpoint (all system blocks when none is marked), minus the
blocks the wire format marks as metadata (Claude Code's billing header). Any byte
that moves there re-bills the whole prefix on every turn (the third seed's
5571 → 6129 → 6175).
"""

from __future__ import annotations

import json

from harness.checks.context import CheckContext
from harness.checks.evidence import first_difference, per_step_first, series, where
from harness.fakeapi.conversation import SYSTEM_SEPARATOR
from harness.fakeapi.exchange import Exchange
from harness.results import ERROR, FAIL, PASS, CheckResult

NAME = "prefix_stable"
BLOCK_SEPARATOR = SYSTEM_SEPARATOR  # offsets refer to the blocks joined as the model reads them


def breakpoint_index(exchange: Exchange) -> int | None:
    blocks = (exchange.normalized or {}).get("system", [])
    marked = [i for i, b in enumerate(blocks) if b.get("cache_control")]
    return marked[-1] if marked else None


def prefix_blocks(exchange: Exchange) -> list[tuple[int, str]]:
    """(index, text) of the system blocks in the cache key: up to the last breakpoint, metadata blocks left out."""
    blocks = (exchange.normalized or {}).get("system", [])
    last = breakpoint_index(exchange)
    kept = blocks if last is None else blocks[: last + 1]
    return [(i, b["text"]) for i, b in enumerate(kept) if b.get("cache_key", True)]


def excluded_blocks(exchange: Exchange) -> list[int]:
    return [i for i, b in enumerate((exchange.normalized or {}).get("system", [])) if not b.get("cache_key", True)]


def system_prefix(exchange: Exchange) -> bytes:
    return BLOCK_SEPARATOR.join(text for _, text in prefix_blocks(exchange)).encode("utf-8")


def tools_bytes(exchange: Exchange) -> bytes:
    tools = (exchange.normalized or {}).get("tools", [])
    return json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _block_at(exchange: Exchange, offset: int) -> int:
    """Which system block a prefix offset falls in, for the message."""
    position = 0
    kept = prefix_blocks(exchange)
    for i, text in kept:
        position += len(text.encode("utf-8")) + len(BLOCK_SEPARATOR)
        if offset < position:
            return i
    return kept[-1][0] if kept else 0


def check(context: CheckContext) -> CheckResult:
    mains = context.main_requests
    if not mains:
        return CheckResult(NAME, ERROR, "no main request in the journal: nothing to judge")
    first = mains[0]
    lengths = [(e.step, len(system_prefix(e))) for e in per_step_first(mains)]
    evidence = {
        "prefix_length_by_step": [{"step": s, "bytes": n} for s, n in lengths],
        "breakpoint_by_request": [{"request": e.seq, "block": breakpoint_index(e)} for e in mains],
    }
    excluded = sorted({i for e in mains for i in excluded_blocks(e)})
    if excluded:
        evidence["excluded_blocks"] = excluded
    length_series = series([n for _, n in lengths])
    changed = [e for e in mains[1:] if system_prefix(e) != system_prefix(first) or tools_bytes(e) != tools_bytes(first)]
    if not changed:
        return CheckResult(
            NAME, PASS, f"prefix ({len(system_prefix(first))} bytes) identical in all {len(mains)} requests"
            + _excluded_note(excluded),
            expected=len(system_prefix(first)), observed=len(system_prefix(first)), evidence=evidence,
        )
    culprit = changed[0]
    evidence["changed_requests"] = [e.seq for e in changed]
    evidence["changed_steps"] = sorted({e.step for e in changed if e.step is not None})
    diff = first_difference(system_prefix(first), system_prefix(culprit))
    if diff is None:
        diff = first_difference(tools_bytes(first), tools_bytes(culprit))
        part = "tool definitions"
    else:
        part = f"system prefix (block {_block_at(culprit, diff.offset)}"
        moved = breakpoint_index(first) != breakpoint_index(culprit)
        part += f"; cache breakpoint moved from block {breakpoint_index(first)} to {breakpoint_index(culprit)})" if moved else ")"
    assert diff is not None
    evidence.update(offset=diff.offset, part=part, expected_context=diff.expected_context, observed_context=diff.observed_context)
    return CheckResult(
        NAME, FAIL,
        f"prefix changed at {where(culprit)}: {part}, "
        + diff.render(f"{where(first)}", f"{where(culprit)}")
        + f"\n  prefix length by step: {length_series} bytes (steps {', '.join(str(s) for s, _ in lengths)})"
        + f"\n  steps whose prefix differs from step {first.step}: {', '.join(map(str, evidence['changed_steps']))}"
        + _excluded_note(excluded),
        step=culprit.step, request=culprit.seq, expected=diff.expected_length, observed=diff.observed_length,
        evidence=evidence,
    )


def _excluded_note(excluded: list[int]) -> str:
    if not excluded:
        return ""
    blocks = ", ".join(str(i) for i in excluded)
    return f"\n  not compared: system block(s) {blocks}, request attribution the provider reads as metadata, outside the cache key"
