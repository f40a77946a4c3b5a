"""A Claude Code session transcript (~/.claude/projects/<folder>/<session>.jsonl) as steps.

Every `claude -p` process enqueues its prompt first (a queue-operation line),
so those lines are where processes begin; `/compact` enqueued is a compaction
step. Replies are the assistant lines, one message per id (Claude Code writes
each content block on a line of its own); lines the CLI made up itself
(model "<synthetic>") are not model replies, except an "API Error" line,
which says the turn failed. A compaction inside a prompt's process (auto-
compaction) gives that step its summary. Since 2.1.332 the transcript also
keeps the system prompt of each request shape, where the appended text can
show; older transcripts keep no system prompt at all.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.importing.draft import ObservedStep, error_of, prompt_text, summary_in, turn_of

SYNTHETIC = "<synthetic>"
COMPACT_COMMAND = "/compact"
_API_ERROR = re.compile(r"^API Error: (\d{3})\s*(.*)", re.S)


def is_transcript_line(record: dict) -> bool:
    return "sessionId" in record and "type" in record


def system_prompts(records: list[dict]) -> list[list[str]]:
    """The system blocks of each request shape the transcript recorded (2.1.332 and later), in order."""
    shapes = [r.get("shape") or {} for r in records if r.get("type") == "api-request-shape"]
    return [[b.get("text", "") for b in shape.get("system") or [] if isinstance(b, dict)] for shape in shapes]


def steps_from_transcript(path: Path, records: list[dict], notes: list[str]) -> list[ObservedStep]:
    sessions = {r.get("sessionId") for r in records if r.get("sessionId")}
    if len(sessions) > 1:
        notes.append(f"The transcript holds {len(sessions)} session ids; they are read as one conversation in file order.")
    by_process = _processes(records, notes)
    steps: list[ObservedStep] = []
    for number, (command, lines) in enumerate(by_process):
        step = _step(command, lines, number == 0, notes)
        if step is None:
            notes.append(f"The command {command!r} was left out: a scenario has no step for it.")
            continue
        if steps and steps[-1].failed and step.kind == "resume":
            step.kind = "retry"
        steps.append(step)
    if not steps:
        raise InputError("no prompt or reply in this transcript: nothing to import", path)
    return steps


def _processes(records: list[dict], notes: list[str]) -> list[tuple[str | None, list[dict]]]:
    """The transcript cut where each process enqueued its prompt (or at each prompt, when none did)."""
    enqueued = any(r.get("type") == "queue-operation" and r.get("operation") == "enqueue" for r in records)
    if not enqueued:
        notes.append("The transcript does not mark where each process began (no queue operations): "
                     "a new step starts at each prompt.")
    processes: list[tuple[str | None, list[dict]]] = []
    for record in records:
        if enqueued and record.get("type") == "queue-operation" and record.get("operation") == "enqueue":
            processes.append((record.get("content"), []))
        elif not enqueued and _prompt_of(record) is not None:
            processes.append((_prompt_of(record), [record]))
        elif processes:
            processes[-1][1].append(record)
    return processes


def _prompt_of(record: dict) -> str | None:
    """The prompt of a user line the caller wrote (not a tool result, summary, meta or command echo)."""
    if record.get("type") != "user" or record.get("isMeta") or record.get("isCompactSummary"):
        return None
    content = (record.get("message") or {}).get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    return prompt_text(content)


def _step(command: str | None, lines: list[dict], first: bool, notes: list[str]) -> ObservedStep | None:
    is_compact = isinstance(command, str) and command.strip().split(" ")[0] == COMPACT_COMMAND
    if isinstance(command, str) and command.startswith("/") and not is_compact:
        return None
    prompts = [p for p in map(_prompt_of, lines) if p is not None]
    step = ObservedStep(kind="compact" if is_compact else "launch" if first else "resume",
                        prompt=None if is_compact else (prompts[0] if prompts else command))
    messages: dict[str, list[dict]] = {}
    for line in lines:
        if line.get("type") == "assistant":
            message = line.get("message") or {}
            failure = _api_error(line)
            if failure is not None:
                step.turns.append({"error": failure})
            elif message.get("model") != SYNTHETIC:
                blocks = messages.setdefault(message.get("id") or line.get("uuid"), [])
                if not blocks:
                    step.turns.append(blocks)  # filled in place as the message's further lines come
                blocks.extend(message.get("content") or [])
        elif line.get("isCompactSummary"):
            step.summary = summary_in(prompt_text((line.get("message") or {}).get("content")) or "")
    step.turns = [t if isinstance(t, dict) and "error" in t else turn_of(t, notes) for t in step.turns]
    errors = [t["error"] for t in step.turns if isinstance(t, dict) and "error" in t]
    if errors and len(errors) == len(step.turns) and all(e == errors[0] for e in errors):
        step.error, step.turns = errors[0], []
    if is_compact:
        step.turns = []
    return step


def _api_error(line: dict) -> dict[str, Any] | None:
    if not line.get("isApiErrorMessage"):
        return None
    content = (line.get("message") or {}).get("content") or []
    text = "".join(b.get("text", "") for b in content if isinstance(b, dict))
    matched = _API_ERROR.match(text)
    status = line.get("apiErrorStatus") or (int(matched.group(1)) if matched else 500)
    message = matched.group(2).strip() if matched else text
    return error_of(status, message, line.get("apiErrorType"))
