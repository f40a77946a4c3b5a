"""Simulated prompt caching: the cache figures a real provider would have reported.

A launcher that moves one byte of its prompt prefix between processes works,
answers correctly, and silently pays for the whole prompt again on every turn.
The only trace a real provider leaves is in the usage numbers, so the fake API
computes them the way the provider would, from the bytes it actually received,
and the `cache_reuse` check can judge them from the journal.

Tokens are an ESTIMATE, not a tokenizer: ceil(UTF-8 bytes / 4) of a canonical
serialization of the prompt (see `anthropic_units`, `prompt_bytes`).
Prompt totals use the same estimate over the same bytes, so a prompt whose
every byte was seen before reads as exactly 100% cached.

What one FakeModelAPI instance (one scenario run, all its steps) has cached:

- Anthropic Messages: the cache key order is tools, then system, then messages.
  A breakpoint is a block carrying `cache_control` (a tool, a system block, a
  message content block), or the last block when the request carries a
  top-level `cache_control` (automatic caching). At each breakpoint the
  provider looks for a prefix written earlier that ends there or at one of the
  LOOKBACK_BLOCKS block boundaries before it; the longest such prefix is read.
  A prefix is written at every breakpoint whose prefix reaches the model's
  minimum cacheable length. The usage is: read = the longest hit; creation =
  from the hit up to the last breakpoint (when that prefix is cacheable);
  input = the rest. Blocks the wire format marks as metadata (Claude Code's
  billing header, `cache_key: False` in the normalized view) are outside the
  key, and `cache_control` markers themselves are not part of it (moving a
  breakpoint does not change the bytes before it).
- OpenAI (Chat Completions and Responses): every prompt is cached
  automatically; the cached tokens are the longest common prefix with an
  earlier prompt, counted only from 1024 tokens on and in steps of 128.

Caches are kept per provider format and model (a model never reads another
model's cache). Expiry (5 minutes by default) is not modelled: a scenario run
is far shorter.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness.fakeapi.script import resolve_usage as _resolve_usage
from harness.scenario.model import Usage

BYTES_PER_TOKEN = 4
# Anthropic's Prompt caching guide: from each explicit breakpoint the provider checks for
# hits at the earlier block boundaries, about 20 content blocks back and no further
# (the figure every client that works around the limit uses, e.g. a breakpoint every ~15 blocks).
LOOKBACK_BLOCKS = 20
# Minimum cacheable prompt length, by model name, from Anthropic's Prompt caching guide
# ("Cache limitations") as quoted in anthropic-sdk-python issue #1194: 4096 tokens for
# Claude Opus 4.6 and 4.5 and Claude Haiku 4.5; 1024 for Claude Sonnet 4.6, 4.5, 4, 3.7 and
# Opus 4.1, 4; 2048 for Claude Haiku 3.5 and 3. (The figures have changed over time and
# mirrors of the guide disagree on Sonnet 4.6; older guides said 1024 Sonnet/Opus, 2048
# Haiku.) Patterns are tried in order; any other model (Sonnet/Opus class, a test model)
# gets 1024.
ANTHROPIC_MIN_TOKENS: tuple[tuple[str, int], ...] = (
    (r"opus-4-[56]|haiku-4-5", 4096),
    (r"3-5-haiku|3-haiku|haiku-3", 2048),
    (r"haiku", 2048),
)
ANTHROPIC_DEFAULT_MIN_TOKENS = 1024
# "Cache hits require an exact, repeated prefix match and works automatically for prompts
# containing 1024 tokens or more, with cache hits occurring in increments of 128 tokens"
# (OpenAI Cookbook, "Prompt Caching 201", section 1.1).
OPENAI_MIN_TOKENS = 1024
OPENAI_INCREMENT = 128

CACHE_FIELDS = ("cache_read_input_tokens", "cache_creation_input_tokens")


def estimate_tokens(size_bytes: int) -> int:
    return -(-size_bytes // BYTES_PER_TOKEN)


@lru_cache(maxsize=256)
def anthropic_min_tokens(model: str | None) -> int:
    name = (model or "").lower()
    return next((n for pattern, n in ANTHROPIC_MIN_TOKENS if re.search(pattern, name)), ANTHROPIC_DEFAULT_MIN_TOKENS)


def openai_cached_tokens(common_prefix_tokens: int) -> int:
    """The longest common prefix as OpenAI bills it: 0 below 1024 tokens, then 1024 + a multiple of 128."""
    if common_prefix_tokens < OPENAI_MIN_TOKENS:
        return 0
    return OPENAI_MIN_TOKENS + (common_prefix_tokens - OPENAI_MIN_TOKENS) // OPENAI_INCREMENT * OPENAI_INCREMENT


@dataclass(frozen=True)
class CacheFigures:
    prompt_tokens: int  # the whole prompt, cached or not
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def input_tokens(self) -> int:
        """What is billed at the full price: the prompt less what was read or written."""
        return self.prompt_tokens - self.cache_read_input_tokens - self.cache_creation_input_tokens


# --------------------------------------------------------------------------- canonical bytes


def keyed_text(block: dict[str, Any]) -> str:
    """The part of a system block in the cache key: all of it, but for a leading metadata line (`cache_key_from`)."""
    return block["text"][block.get("cache_key_from", 0):]


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # a lone surrogate is legal as a JSON escape: count it, do not fail


def _dumps(value: Any) -> bytes:
    # The client's key order is kept: a client that reorders keys moves bytes, as it would for real.
    return _utf8(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _strip_cache_control(value: Any) -> tuple[Any, bool]:
    """The value without any `cache_control` key (nested ones too), and whether it had one."""
    if isinstance(value, dict):
        marked = value.get("cache_control") is not None
        out = {}
        for key, item in value.items():
            if key == "cache_control":
                continue
            out[key], inner = _strip_cache_control(item)
            marked = marked or inner
        return out, marked
    if isinstance(value, list):
        pairs = [_strip_cache_control(item) for item in value]
        return [p[0] for p in pairs], any(p[1] for p in pairs)
    return value, False


def anthropic_units(normalized: dict[str, Any]) -> list[tuple[bytes, bool]]:
    """(bytes, is a breakpoint) per block, in cache-key order: tools, system, messages.

    A message's role is written before its first block, so the same blocks split
    into messages differently are a different prompt.
    """
    units: list[tuple[bytes, bool]] = []
    for tool in normalized.get("tools") or []:
        clean, marked = _strip_cache_control(tool)
        units.append((b"tool:" + _dumps(clean), marked))
    for block in normalized.get("system") or []:
        if not block.get("cache_key", True):
            continue
        units.append((b"system:" + _utf8(keyed_text(block)), block.get("cache_control") is not None))
    for message in normalized.get("messages") or []:
        for j, block in enumerate(message.get("content") or []):
            clean, marked = _strip_cache_control(block)
            head = _utf8(f"{message['role']}:") if j == 0 else b""
            units.append((head + _dumps(clean), marked))
    if normalized.get("cache_control") is not None and units:  # automatic caching: the last cacheable block
        units[-1] = (units[-1][0], True)
    return units


def prompt_bytes(normalized: dict[str, Any]) -> bytes:
    """The whole prompt: tools and instructions first, then the messages / input items, as providers process them."""
    return b"".join(data for data, _ in anthropic_units({**normalized, "cache_control": None}))


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix, by bisection over slice comparisons (fast on long prompts)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


# --------------------------------------------------------------------------- the cache


@dataclass(frozen=True)
class _Layout:
    """A prompt's blocks as the cache keys them: where each ends, the digest of the prefix up to it, and its marks."""
    ends: list[int]
    digests: list[bytes]
    breakpoints: list[int]
    prompt: bytes  # the whole prompt, for the OpenAI formats' prefix match


def _layout(normalized: dict[str, Any]) -> _Layout:
    units = anthropic_units(normalized)
    ends, digests, hasher, position = [], [], hashlib.sha256(), 0
    for data, _ in units:
        hasher.update(len(data).to_bytes(8, "big") + data)  # length-prefixed: no two splits hash alike
        position += len(data)
        ends.append(position)
        digests.append(hasher.copy().digest())
    breakpoints = [i for i, (_, marked) in enumerate(units) if marked]
    return _Layout(ends, digests, breakpoints, b"".join(data for data, _ in units))  # as prompt_bytes(normalized)


class PromptCache:
    """What the provider holds after the requests answered so far. Not thread-safe: the caller serializes."""

    def __init__(self) -> None:
        self._written: set[tuple[str, bytes]] = set()  # (model, digest of a prefix written at a breakpoint)
        self._prompts: dict[tuple[str, str], list[bytes]] = {}  # (format, model) -> earlier OpenAI prompts

    def anthropic(self, normalized: dict[str, Any], layout: _Layout | None = None) -> CacheFigures:
        """Figures for one /v1/messages request; the prefixes at its breakpoints are written afterwards."""
        model = normalized.get("model") or ""
        layout = layout or _layout(normalized)
        ends, digests, breakpoints = layout.ends, layout.digests, layout.breakpoints
        total = estimate_tokens(ends[-1] if ends else 0)
        if not breakpoints:
            return CacheFigures(total)
        reachable = {i for b in breakpoints for i in range(max(0, b - LOOKBACK_BLOCKS), b + 1)}
        hit = max((i for i in reachable if (model, digests[i]) in self._written), default=None)
        read = estimate_tokens(ends[hit]) if hit is not None else 0
        minimum = anthropic_min_tokens(model)
        cacheable = [b for b in breakpoints if estimate_tokens(ends[b]) >= minimum]
        for b in cacheable:
            self._written.add((model, digests[b]))
        last = breakpoints[-1]
        creation = estimate_tokens(ends[last]) - read if last in cacheable and (hit is None or hit < last) else 0
        return CacheFigures(total, read, creation)

    def openai(self, protocol: str, normalized: dict[str, Any], layout: _Layout | None = None) -> CacheFigures:
        """Figures for one OpenAI-format request; the whole prompt is cached afterwards."""
        prompt = layout.prompt if layout is not None else prompt_bytes(normalized)
        earlier = self._prompts.setdefault((protocol, normalized.get("model") or ""), [])
        common = max((_common_prefix(prompt, e) for e in earlier), default=0)
        earlier.append(prompt)
        return CacheFigures(estimate_tokens(len(prompt)), openai_cached_tokens(estimate_tokens(common)))


class PreparedCache:
    """The run's PromptCache as a format's `cache_figures` sees it, for one request laid out beforehand.

    Laying a prompt out (serializing and hashing every block) is most of the simulation and depends on the
    request alone, so the fake API does it before taking the lock that orders requests; under that lock only
    the cache is read and written, in seq order as before. The same figures, a third of the time under the
    lock (`make bench`, issue 23).
    """

    def __init__(self, cache: PromptCache, normalized: dict[str, Any]):
        self._cache, self._normalized = cache, normalized
        try:
            self._layout: _Layout | None = _layout(normalized)
        except Exception:  # noqa: BLE001 - raised again where it always was, if the figures are asked for at all
            self._layout = None

    def _laid_out(self, normalized: dict[str, Any]) -> _Layout | None:
        return self._layout if normalized is self._normalized else None  # another request: laid out afresh

    def anthropic(self, normalized: dict[str, Any]) -> CacheFigures:
        return self._cache.anthropic(normalized, self._laid_out(normalized))

    def openai(self, protocol: str, normalized: dict[str, Any]) -> CacheFigures:
        return self._cache.openai(protocol, normalized, self._laid_out(normalized))


def resolve_usage(figures: CacheFigures, blocks: list[dict[str, Any]], *given: Usage | None) -> dict[str, int]:
    """The reply's usage: a scripted number wins, field by field (turn, then step); the rest are simulated."""
    usage = _resolve_usage(figures.input_tokens, blocks, *given)
    for key in CACHE_FIELDS:
        if all(g is None or getattr(g, key) is None for g in given):
            usage[key] = getattr(figures, key)
    return usage
