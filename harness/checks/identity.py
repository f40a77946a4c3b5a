"""identity_stable: every turn of the conversation runs under the identity line of its first turn.

A launcher that loses a flag on resume, or an agent that mints its id per
process, shows up here as a flip between two steps.
"""

from __future__ import annotations

import re

from harness.checks.context import CheckContext
from harness.checks.evidence import clip, where
from harness.journal.exchange import Exchange
from harness.results import ERROR, FAIL, PASS, CheckResult

NAME = "identity_stable"


def identity_match(exchange: Exchange, context: CheckContext) -> tuple[int, re.Match[str]] | None:
    """The first identity match, searched block by block in the system prompt: (the block's index, the match)."""
    for index, block in enumerate((exchange.normalized or {}).get("system", [])):
        match = context.identity_pattern.search(block["text"])
        if match:
            return index, match
    return None


def identity_of(exchange: Exchange, context: CheckContext) -> str | None:
    found = identity_match(exchange, context)
    return found[1].group(0) if found is not None else None


def check(context: CheckContext) -> CheckResult:
    mains = context.main_requests
    if not mains:
        return CheckResult(NAME, ERROR, "no main request in the journal: nothing to judge")
    identities = [(e, identity_of(e, context)) for e in mains]
    evidence = {
        "pattern": context.identity_pattern.pattern,
        "by_request": [{"step": e.step, "request": e.seq, "identity": ident} for e, ident in identities],
    }
    first, baseline = identities[0]
    if baseline is None:
        return CheckResult(
            NAME, FAIL,
            f"{where(first)}: no identity line matching /{context.identity_pattern.pattern}/ in the system prompt",
            step=first.step, request=first.seq, expected=f"a line matching /{context.identity_pattern.pattern}/",
            observed=None, evidence=evidence,
        )
    for exchange, identity in identities[1:]:
        if identity != baseline:
            shown = repr(identity) if identity is not None else "(no identity line)"
            distinct = len({i for _, i in identities})
            return CheckResult(
                NAME, FAIL,
                f"identity flipped at {where(exchange)}\n"
                f"  {where(first)}: {clip(baseline)!r}\n"
                f"  {where(exchange)}: {clip(shown)}\n"
                f"  {distinct} distinct identities over {len(identities)} requests",
                step=exchange.step, request=exchange.seq, expected=baseline, observed=identity, evidence=evidence,
            )
    steps = len({e.step for e in mains})
    return CheckResult(
        NAME, PASS, f"identity stable over {len(mains)} requests in {steps} steps: {clip(baseline)!r}",
        expected=baseline, observed=baseline, evidence=evidence,
    )
