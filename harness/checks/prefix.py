"""prefix_stable: the cacheable prompt prefix is byte-identical in every turn.

The prefix is what a provider caches: the tools, then the system blocks up to
the last cache breakpoint (all system blocks when none is marked), minus the
blocks the wire format marks as metadata (Claude Code's billing header). Any byte
that moves there re-bills the whole prefix on every turn (the third seed's
5571 → 6129 → 6175).

Some changes are meant: the user edits the project's instructions, or adds a
tool, between two turns. A scenario declares them (`prefix_change:` on the
step), and the prefix is then held stable from that step on instead of from
the first request; a change anywhere else fails as before. The declared change
is reported, never merely absorbed, so a reviewer sees what the cache lost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from harness.checks.context import CheckContext
from harness.checks.evidence import first_difference, per_step_first, series, where
from harness.journal.conversation import SYSTEM_SEPARATOR
from harness.fakeapi.cache_sim import keyed_text
from harness.journal.exchange import Exchange
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
    return [(i, keyed_text(b)) for i, b in enumerate(kept) if b.get("cache_key", True)]


def excluded_blocks(exchange: Exchange) -> list[int]:
    return [i for i, b in enumerate((exchange.normalized or {}).get("system", [])) if not b.get("cache_key", True)]


def excluded_lines(exchange: Exchange) -> list[int]:
    """Blocks whose leading line alone is metadata (the attribution header joined to the prompt in one block)."""
    return [i for i, b in enumerate((exchange.normalized or {}).get("system", [])) if b.get("cache_key_from")]


def system_prefix(exchange: Exchange) -> bytes:
    return BLOCK_SEPARATOR.join(text for _, text in prefix_blocks(exchange)).encode("utf-8")


def tools_bytes(exchange: Exchange) -> bytes:
    tools = (exchange.normalized or {}).get("tools", [])
    return json.dumps(tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def block_at(exchange: Exchange, offset: int) -> int:
    """Which system block a prefix offset falls in, for the message."""
    position = 0
    kept = prefix_blocks(exchange)
    for i, text in kept:
        position += len(text.encode("utf-8")) + len(BLOCK_SEPARATOR)
        if offset < position:
            return i
    return kept[-1][0] if kept else 0


def _same_prefix(a: Exchange, b: Exchange) -> bool:
    return system_prefix(a) == system_prefix(b) and tools_bytes(a) == tools_bytes(b)


def segments(mains: list[Exchange], declared: Mapping[int, str]) -> list[list[Exchange]]:
    """The requests cut where the scenario declares an intended change: group i holds the requests from the
    i-th declared step on (empty when no request falls there), group 0 those before any.

    A declared change resets the reference, it does not excuse the whole run: each
    request is still held to the first request of its own group.
    """
    starts = sorted(declared)
    groups: list[list[Exchange]] = [[] for _ in range(len(starts) + 1)]
    current = 0
    for exchange in mains:
        if exchange.step is not None:  # a request outside any step stays with the one before it
            current = sum(1 for s in starts if s <= exchange.step)
        groups[current].append(exchange)
    return groups


def _declared_outcomes(mains: list[Exchange], groups: list[list[Exchange]], declared: Mapping[int, str]) -> list[dict]:
    """For each declared step: did the prefix change there, compared with the last request before it?"""
    out = []
    for number, step in enumerate(sorted(declared), start=1):
        group = groups[number]
        entry = {"step": step, "reason": declared[step], "changed": None}
        earlier = [e for e in mains if group and e.seq < group[0].seq]
        if group and earlier:
            before, after = earlier[-1], group[0]
            entry.update(
                changed=not _same_prefix(before, after), first_request=after.seq, judged_at_step=after.step,
                bytes_before=len(system_prefix(before)), bytes_after=len(system_prefix(after)),
                tools_changed=tools_bytes(before) != tools_bytes(after),
            )
        out.append(entry)
    return out


def _declared_notes(outcomes: list[dict]) -> str:
    lines = []
    for o in outcomes:
        head = f"step {o['step']}"
        if o["changed"] is None:
            lines.append(f"{head}: a prefix change was declared ({o['reason']}), but no main request came after it to judge")
            continue
        at = f" (first request after it: step {o['judged_at_step']})" if o["judged_at_step"] != o["step"] else ""
        if o["changed"]:
            tools = "; tool definitions changed" if o["tools_changed"] else ""
            lines.append(f"{head}: prefix changed as declared ({o['reason']}): {o['bytes_before']} → {o['bytes_after']} bytes{tools}{at}")
        else:
            lines.append(f"{head}: prefix did not change, though a change was declared ({o['reason']}){at}")
    return "".join(f"\n  {line}" for line in lines)


def check(context: CheckContext) -> CheckResult:
    mains = context.main_requests
    if not mains:
        return CheckResult(NAME, ERROR, "no main request in the journal: nothing to judge")
    first = mains[0]
    declared = dict(context.prefix_changes)
    groups = segments(mains, declared)
    reference = {e.seq: group[0] for group in groups for e in group}  # each request's yardstick
    lengths = [(e.step, len(system_prefix(e))) for e in per_step_first(mains)]
    evidence = {
        "prefix_length_by_step": [{"step": s, "bytes": n} for s, n in lengths],
        "breakpoint_by_request": [{"request": e.seq, "block": breakpoint_index(e)} for e in mains],
    }
    excluded = sorted({i for e in mains for i in excluded_blocks(e)})
    if excluded:
        evidence["excluded_blocks"] = excluded
    lines = sorted({i for e in mains for i in excluded_lines(e)})
    if lines:
        evidence["excluded_first_line_of_blocks"] = lines
    notes = ""
    if declared:
        outcomes = _declared_outcomes(mains, groups, declared)
        evidence["declared_changes"] = outcomes
        evidence["segments"] = [{"from_step": g[0].step, "first_request": g[0].seq, "requests": len(g)} for g in groups if g]
        notes = _declared_notes(outcomes)
    length_series = series([n for _, n in lengths])
    changed = [e for e in mains if reference[e.seq] is not e and not _same_prefix(reference[e.seq], e)]
    if not changed:
        if any(o["changed"] for o in evidence.get("declared_changes", [])):
            headline = f"prefix identical in all {len(mains)} requests apart from the declared change(s)"
        else:
            headline = f"prefix ({len(system_prefix(first))} bytes) identical in all {len(mains)} requests"
        return CheckResult(
            NAME, PASS, headline + notes + _excluded_note(excluded, lines),
            expected=len(system_prefix(first)), observed=len(system_prefix(mains[-1])), evidence=evidence,
        )
    culprit = changed[0]
    base = reference[culprit.seq]
    evidence["changed_requests"] = [e.seq for e in changed]
    evidence["changed_steps"] = sorted({e.step for e in changed if e.step is not None})
    diff = first_difference(system_prefix(base), system_prefix(culprit))
    if diff is None:
        diff = first_difference(tools_bytes(base), tools_bytes(culprit))
        part = "tool definitions"
    else:
        part = f"system prefix (block {block_at(culprit, diff.offset)}"
        moved = breakpoint_index(base) != breakpoint_index(culprit)
        part += f"; cache breakpoint moved from block {breakpoint_index(base)} to {breakpoint_index(culprit)})" if moved else ")"
    assert diff is not None
    evidence.update(offset=diff.offset, part=part, expected_context=diff.expected_context, observed_context=diff.observed_context)
    return CheckResult(
        NAME, FAIL,
        f"prefix changed at {where(culprit)}: {part}, "
        + diff.render(f"{where(base)}", f"{where(culprit)}")
        + f"\n  prefix length by step: {length_series} bytes (steps {', '.join(str(s) for s, _ in lengths)})"
        + f"\n  steps whose prefix differs from step {_differs_from(changed, reference)}"
        + notes + _excluded_note(excluded, lines),
        step=culprit.step, request=culprit.seq, expected=diff.expected_length, observed=diff.observed_length,
        evidence=evidence,
    )


def _differs_from(changed: list[Exchange], reference: dict[int, Exchange]) -> str:
    """`1: 2, 3`, and per later segment `; from step 4 (declared change): 6`."""
    by_base: dict[int, list[int]] = {}
    bases: dict[int, Exchange] = {}
    for e in changed:
        base = reference[e.seq]
        bases[base.seq] = base
        steps = by_base.setdefault(base.seq, [])
        if e.step is not None and e.step not in steps:
            steps.append(e.step)
    parts = []
    for n, (seq, steps) in enumerate(by_base.items()):
        label = f"{bases[seq].step}" if n == 0 else f"from step {bases[seq].step} (declared change)"
        parts.append(f"{label}: {', '.join(map(str, steps))}")
    return "; ".join(parts)


def _excluded_note(excluded: list[int], lines: list[int] = ()) -> str:
    note = ""
    if excluded:
        blocks = ", ".join(str(i) for i in excluded)
        note += f"\n  not compared: system block(s) {blocks}, request attribution the provider reads as metadata, outside the cache key"
    if lines:
        blocks = ", ".join(str(i) for i in lines)
        note += (f"\n  not compared: the first line of system block(s) {blocks}, request attribution joined to the "
                 "prompt, which the provider reads as metadata")
    return note
