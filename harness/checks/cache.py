"""cache_reuse: after the first request, most of every prompt is read from the provider's cache.

prefix_stable says that a byte moved; this check says what the move cost. It
reads the cache figures the fake API journaled with each reply (simulated from
the bytes by harness/fakeapi/cache_sim.py, unless the scenario scripted them)
and compares the share of prompt tokens read from the cache with the
scenario's `min_cache_reuse` floor. A drift's cost is what the previous main
request left in the cache that this one could not reuse: tokens billed again
at the full price, which is what made the third seed's prompt cache miss on
every turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.checks.context import CheckContext
from harness.checks.evidence import where
from harness.fakeapi.cache_sim import openai_cached_tokens
from harness.journal.exchange import ANTHROPIC, Exchange
from harness.results import ERROR, FAIL, PASS, CheckResult

NAME = "cache_reuse"


def journaled_usage(exchange: Exchange) -> dict[str, Any] | None:
    """The usage the reply carried; for a scripted transport fault, the usage of the reply it was cutting."""
    reply = exchange.reply or {}
    return reply.get("usage") or (reply.get("intended") or {}).get("usage")


@dataclass(frozen=True)
class Figures:
    """One main request's cache figures, as journaled."""

    exchange: Exchange
    prompt: int  # every prompt token, cached or not
    read: int
    written: int | None  # None: the wire format reports no cache writes (OpenAI)

    @classmethod
    def of(cls, exchange: Exchange) -> Figures | None:
        usage = journaled_usage(exchange)
        if not usage:
            return None
        read = int(usage.get("cache_read_input_tokens") or 0)
        written = int(usage.get("cache_creation_input_tokens") or 0)
        prompt = int(usage.get("input_tokens") or 0) + read + written
        return cls(exchange, prompt, read, written if exchange.protocol == ANTHROPIC else None)

    @property
    def left_in_cache(self) -> int:
        """What the provider holds for the next request: Anthropic caches up to the last breakpoint, OpenAI the prompt."""
        if self.written is None:
            return openai_cached_tokens(self.prompt)
        return self.read + self.written

    def cost_after(self, previous: Figures | None) -> int:
        """Tokens the previous request left in the cache that this prompt could have reused but did not."""
        if previous is None:
            return 0
        return max(0, min(previous.left_in_cache, self.prompt) - self.read)


def _share(read: int, prompt: int) -> str:
    return f"{read / prompt:.1%}" if prompt else "n/a"


def _step_label(exchange: Exchange) -> str:
    return f"step {exchange.step} ({exchange.step_kind})" if exchange.step is not None else "outside any step"


def check(context: CheckContext) -> CheckResult:
    floor = context.min_cache_reuse
    if floor is None:
        return CheckResult(NAME, ERROR, "the scenario sets no min_cache_reuse floor to judge against")
    mains = context.main_requests
    if len(mains) < 2:
        return CheckResult(NAME, ERROR, f"{len(mains)} main request(s) in the journal: nothing after the first to judge")
    figures = [(e, Figures.of(e)) for e in mains]
    unknown = [e.seq for e, f in figures if f is None]
    rows, previous = [], None  # (figures, drift cost) of each judged request
    for i, (exchange, fig) in enumerate(figures):
        if fig is not None and i > 0:
            rows.append((fig, fig.cost_after(previous)))
        previous = fig if fig is not None else previous
    prompt = sum(f.prompt for f, _ in rows)
    read = sum(f.read for f, _ in rows)
    if not prompt:
        return CheckResult(NAME, ERROR, "no prompt tokens journaled after the first main request: nothing to judge",
                           evidence={"requests_without_usage": unknown})
    ratio = read / prompt
    first = figures[0][1]
    steps = _by_step(rows)
    evidence: dict[str, Any] = {
        "min_cache_reuse": floor,
        "ratio": round(ratio, 4),
        "prompt_tokens": prompt,
        "cache_read_tokens": read,
        "first_request": {"request": mains[0].seq, "step": mains[0].step, "prompt_tokens": first.prompt if first else None,
                          "cache_read_tokens": first.read if first else None,
                          "cache_write_tokens": first.written if first else None},
        "by_step": steps,
        "by_request": [
            {"step": f.exchange.step, "request": f.exchange.seq, "prompt_tokens": f.prompt, "cache_read_tokens": f.read,
             "cache_write_tokens": f.written, "ratio": round(f.read / f.prompt, 4) if f.prompt else None,
             "drift_cost_tokens": cost}
            for f, cost in rows
        ],
    }
    if unknown:
        evidence["requests_without_usage"] = unknown
    table = _render_steps(mains[0], first, steps)
    summary = f"cache reuse {ratio:.1%} of {prompt:,} prompt tokens after the first request"
    if ratio >= floor:
        return CheckResult(NAME, PASS, f"{summary} (floor {floor:.0%})\n{table}",
                           expected=floor, observed=round(ratio, 4), evidence=evidence)
    dropped = next(((f, cost) for f, cost in rows if cost > 0), None)
    if dropped is not None:
        fig, cost = dropped
        reason = (
            f"reuse dropped at {where(fig.exchange)}: {cost:,} tokens the previous main request left in the cache "
            f"were not reused and were billed again at the full price (read {fig.read:,} of {fig.prompt:,} prompt "
            f"tokens, {_share(fig.read, fig.prompt)})"
        )
        culprit = fig.exchange
    else:
        fig = min((f for f, _ in rows), key=lambda f: f.read / f.prompt if f.prompt else 1.0)
        written = sum(f.written or 0 for f, _ in rows) + ((first.written or 0) if first else 0)
        why = ("nothing was ever written to the cache (no cache breakpoint, or every prefix below the minimum "
               "cacheable length)" if not written and all(f.written is not None for f, _ in rows) else
               "no cached tokens were lost between requests, but too little of each prompt was cacheable")
        reason = f"{why}; lowest reuse at {where(fig.exchange)}: {_share(fig.read, fig.prompt)}"
        culprit = fig.exchange
    evidence["culprit"] = {"step": culprit.step, "request": culprit.seq}
    return CheckResult(
        NAME, FAIL, f"{summary}, below the floor of {floor:.0%}: {reason}\n{table}",
        step=culprit.step, request=culprit.seq, expected=floor, observed=round(ratio, 4), evidence=evidence,
    )


def _by_step(rows: list[tuple[Figures, int]]) -> list[dict[str, Any]]:
    steps: dict[Any, dict[str, Any]] = {}
    for fig, cost in rows:
        e = fig.exchange
        entry = steps.setdefault(e.step, {"step": e.step, "kind": e.step_kind, "label": _step_label(e), "requests": [],
                                          "prompt_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": None,
                                          "drift_cost_tokens": 0})
        entry["requests"].append(e.seq)
        entry["prompt_tokens"] += fig.prompt
        entry["cache_read_tokens"] += fig.read
        if fig.written is not None:
            entry["cache_write_tokens"] = (entry["cache_write_tokens"] or 0) + fig.written
        entry["drift_cost_tokens"] += cost
    for entry in steps.values():
        p = entry["prompt_tokens"]
        entry["ratio"] = round(entry["cache_read_tokens"] / p, 4) if p else None
    return list(steps.values())


def _render_steps(first: Exchange, first_fig: Figures | None, steps: list[dict[str, Any]]) -> str:
    lines = []
    if first_fig is not None:
        written = f", written {first_fig.written:,}" if first_fig.written is not None else ""
        lines.append(f"  {where(first)}: prompt {first_fig.prompt:,}, read {first_fig.read:,}{written} (the first request, not judged)")
    for s in steps:
        written = f", written {s['cache_write_tokens']:,}" if s["cache_write_tokens"] is not None else ""
        requests = ", ".join(f"#{n}" for n in s["requests"])
        lines.append(
            f"  {s['label']}, request(s) {requests}: prompt {s['prompt_tokens']:,}, read {s['cache_read_tokens']:,}{written}, "
            f"reuse {_share(s['cache_read_tokens'], s['prompt_tokens'])}, drift cost {s['drift_cost_tokens']:,} tokens"
        )
    return "\n".join(lines)
