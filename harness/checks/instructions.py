"""instruction_files_current: a project file the agent reads as instructions reaches the model as it stands now.

AGENTS.md, GEMINI.md and the like are read by the agent, not passed by its
launcher, and an agent that resumes a session may replay the copy it read at
the launch instead of the file as it is (openai/codex #27473: the model never
learns the rule added since). Nothing moves in the prefix or the history
then, so the other checks pass; this one looks for the text itself: every
request from the step that last wrote the file must carry that text (leading
and trailing whitespace aside), anywhere in its instructions or messages.
An earlier text still being there beside it is evidence, not a failure: an
agent may keep the launch's message and send the new text after it.
"""

from __future__ import annotations

from harness.checks.context import CheckContext
from harness.checks.evidence import clip, where
from harness.journal.conversation import message_text
from harness.journal.exchange import Exchange
from harness.results import ERROR, FAIL, PASS, CheckResult

NAME = "instruction_files_current"


def request_text(exchange: Exchange) -> list[str]:
    """Every text the model reads in a request: system blocks, then each message's text."""
    normalized = exchange.normalized or {}
    return [block["text"] for block in normalized.get("system", [])] + [message_text(m) for m in normalized.get("messages", [])]


def _count(texts: list[str], needle: str) -> int:
    return sum(text.count(needle) for text in texts)


def check(context: CheckContext) -> CheckResult:
    if not context.instruction_files:
        return CheckResult(NAME, ERROR, "the scenario names no instruction files to look for")
    mains = context.main_requests
    if not mains:
        return CheckResult(NAME, ERROR, "no main request in the journal: nothing to judge")
    by_request = []
    first_failure = None
    for exchange in mains:
        texts = request_text(exchange)
        for path, versions in context.instruction_files.items():
            written = [(step, text.strip()) for step, text in versions if exchange.step is not None and step <= exchange.step]
            if not written:
                continue  # not written yet at this step
            step_written, current = written[-1]
            count = _count(texts, current)
            earlier = [(step, text) for step, text in written[:-1] if text and text != current]
            stale = {step: _count(texts, text) - count * current.count(text) for step, text in earlier}
            by_request.append({"step": exchange.step, "request": exchange.seq, "file": path, "written_at": step_written,
                               "current": count, "earlier": {str(step): n for step, n in stale.items() if n}})
            if count == 0 and first_failure is None:
                first_failure = (exchange, path, step_written, current, {s: n for s, n in stale.items() if n})
    evidence = {"files": {path: [{"step": step, "text": text} for step, text in versions]
                          for path, versions in context.instruction_files.items()},
                "by_request": by_request}
    if first_failure is not None:
        exchange, path, step_written, current, stale = first_failure
        still = "; ".join(f"its text from step {step} is there {n} time(s)" for step, n in stale.items())
        return CheckResult(
            NAME, FAIL,
            f"{where(exchange)}: {path} as step {step_written} wrote it does not reach the model (0 occurrences)"
            + (f"; {still}" if still else "") + f"\n  current text: {clip(current, 100)!r}",
            step=exchange.step, request=exchange.seq, expected=current, observed=0, evidence=evidence,
        )
    judged = len({entry["request"] for entry in by_request})
    return CheckResult(NAME, PASS, f"every instruction file's current text reaches the model in all {judged} requests "
                                   f"after it was written", evidence=evidence)
