"""Finding the caller's appended text in recorded system prompts, when the record shows it.

A system prompt alone does not say which part a launcher appended. It shows
once two requests differ by it: the launcher dropped it on a resume, or sent
it twice. Then one system block is the other plus a separated tail (or head),
and that tail is the caller's text. When every request carries it the same
way, nothing tells it from the agent's own prompt, and the importer says so.
"""

from __future__ import annotations

from typing import Iterable

_MIN_LENGTH = 8  # shorter differences are version strings and counters, not instructions


def appended_candidates(systems: Iterable[list[str]]) -> list[str]:
    """Texts by which one request's system block extends the same block of another, first seen first."""
    distinct: list[list[str]] = []
    for blocks in systems:
        if blocks not in distinct:
            distinct.append(blocks)
    found: list[str] = []
    for i, first in enumerate(distinct):
        for second in distinct[i + 1:]:
            if len(first) != len(second):
                continue
            for a, b in zip(first, second):
                extra = _extension(a, b) or _extension(b, a)
                if extra and extra not in found:
                    found.append(extra)
    return found


def _extension(longer: str, shorter: str) -> str | None:
    """What `longer` adds to `shorter` at one end, when separated from it by a line break."""
    if len(longer) <= len(shorter) or not shorter:
        return None
    if longer.startswith(shorter):
        tail = longer[len(shorter):]
        if tail.startswith("\n") and len(tail.strip()) >= _MIN_LENGTH:
            return tail.strip()
    if longer.endswith(shorter):
        head = longer[: len(longer) - len(shorter)]
        if head.endswith("\n") and len(head.strip()) >= _MIN_LENGTH:
            return head.strip()
    return None


def infer_append(systems: list[list[str]], given: str | None, where: str) -> tuple[str | None, str]:
    """The appended text to check and the note saying where it came from; `given` (--append) wins."""
    if given is not None:
        return given, "The appended text was given on the command line (--append)."
    candidates = appended_candidates(systems)
    if len(candidates) == 1:
        return candidates[0], (f"The appended text was inferred from {where}: some requests carry it and others do "
                               f"not (or carry it twice); pass --append to state it instead.")
    if candidates:
        listed = "; ".join(repr(c[:60]) for c in candidates)
        return None, (f"The appended text could not be inferred: {where} differ in {len(candidates)} places ({listed}); "
                      f"pass --append TEXT to check it.")
    if not systems:
        return None, (f"The appended text could not be inferred: {where} are not recorded "
                      f"(Claude Code keeps them in its transcripts from 2.1.332 on); pass --append TEXT to check it.")
    return None, (f"The appended text could not be inferred: {where} never differ by a separated block of text; "
                  f"pass --append TEXT to check it.")
