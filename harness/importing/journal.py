"""A harness journal (a run's journal/*.jsonl, or `harness serve --record`'s journal.jsonl) as model calls.

A run's journal knows each request's step and step kind, and its class; a
recording made by hand knows neither, only the sending process where the
fake API could see it, so its steps are inferred (harness/importing/calls.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import InputError
from harness.journal.exchange import COMPACTION, MAIN, SIDE
from harness.importing.calls import Call


def is_journal_line(record: dict) -> bool:
    return {"seq", "class", "normalized", "reply"} <= record.keys()


def calls_from_journal(path: Path, records: list[dict]) -> list[Call]:
    calls = []
    for number, record in enumerate(records, 1):
        if not is_journal_line(record):
            raise InputError(f"line {number}: not a journal entry (expected seq, class, normalized and reply)", path)
        if record["class"] not in (MAIN, COMPACTION, SIDE) or not record.get("normalized"):
            continue  # malformed and outbound requests are no turn of the conversation
        reply = record.get("reply") or {}
        error = reply.get("error")
        calls.append(Call(
            normalized=record["normalized"],
            reply=None if error or "content" not in reply else reply["content"],
            error={k: error[k] for k in ("status", "type", "message")} if error else None,
            process=record.get("pid"),
            step=record.get("step"),
            kind=record.get("step_kind"),
            klass=record["class"],
        ))
    return calls


def read_jsonl(path: Path) -> list[dict]:
    """Every non-blank line of a JSONL file as an object; a bad line is named."""
    records = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", path) from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"line {number}: not JSON ({exc.msg} at column {exc.colno})", path) from None
        if not isinstance(record, dict):
            raise InputError(f"line {number}: expected a JSON object, got {type(record).__name__}", path)
        records.append(record)
    return records
