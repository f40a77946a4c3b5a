"""An Inspect eval log whose solver is inspect_swe's claude_code(): its model calls as steps.

Inspect records every model call the agent bridge forwarded: the request as
sent (its messages condensed into the sample's events_data and attachments,
expanded here) and the response. Process boundaries come from the log's
structure: each agent span is one launch of Claude Code, and a score that
marks an answer incorrect inside it starts the next attempt, which
inspect_swe runs as a fresh process with --resume (a retry). The sample's
system message is the caller's text, which inspect_swe appends to Claude
Code's system prompt. Both the `.json` and the zipped `.eval` log formats
are read.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.fakeapi.formats import anthropic
from harness.importing.calls import Call
from harness.importing.draft import error_of

_ATTACHMENT = "attachment://"
CORRECT = "C"


def looks_like_inspect_log(path: Path) -> bool:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            return any(name.startswith("samples/") for name in archive.namelist())
    if path.suffix != ".json":
        return False
    with path.open("rb") as handle:
        head = handle.read(4096)
    return b'"eval"' in head or b'"version"' in head and b'"status"' in head


def read_inspect_log(path: Path) -> tuple[dict, list[dict]]:
    """The log's eval header and its samples, from either format."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                header = json.loads(archive.read("header.json")) if "header.json" in archive.namelist() else {}
                samples = [json.loads(archive.read(n)) for n in sorted(archive.namelist())
                           if n.startswith("samples/") and n.endswith(".json")]
            return header, samples
        log = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise InputError(f"cannot read the Inspect log: {exc}", path) from None
    if not isinstance(log, dict) or "eval" not in log:
        raise InputError("not an Inspect eval log (no 'eval' header)", path)
    return log, list(log.get("samples") or [])


def sample_name(sample: dict) -> str:
    """How --sample names a sample: its id, and its epoch after a colon when the task ran several."""
    epoch = sample.get("epoch")
    return f"{sample.get('id')}" + (f":{epoch}" if epoch not in (None, 1) else "")


def pick_sample(path: Path, samples: list[dict], wanted: str | None) -> dict:
    """The sample --sample names (by id, or id:epoch), else the only or first one."""
    if wanted is None:
        return samples[0]
    for sample in samples:
        if wanted in (sample_name(sample), f"{sample.get('id')}:{sample.get('epoch')}"):
            return sample
    names = ", ".join(sample_name(s) for s in samples[:20]) + (" …" if len(samples) > 20 else "")
    raise InputError(f"no sample {wanted!r} in this log (its samples: {names})", path)


def solvers(header: dict) -> list[str]:
    return [step.get("solver", "") for step in (header.get("plan") or {}).get("steps", [])]


def calls_from_sample(path: Path, sample: dict) -> list[Call]:
    attachments = sample.get("attachments") or {}
    pooled = (sample.get("events_data") or {}).get("calls") or []
    calls: list[Call] = []
    agent, attempt, retry_next, called_in_agent = 0, 0, False, False
    for event in sample.get("events") or []:
        kind = event.get("event")
        if kind == "span_begin" and event.get("type") == "agent":
            agent, attempt, retry_next, called_in_agent = agent + 1, 0, False, False
        elif kind == "score" and called_in_agent and (event.get("score") or {}).get("value") != CORRECT:
            retry_next = True
        elif kind == "model":
            if retry_next:
                attempt, retry_next = attempt + 1, False
            called_in_agent = True
            calls.append(_call(path, event, pooled, attachments, (agent, attempt), "retry" if attempt else None))
    return calls


def _call(path: Path, event: dict, pooled: list, attachments: dict, process: tuple, kind: str | None) -> Call:
    record = event.get("call") or {}
    request = dict(record.get("request") or {})
    key = record.get("call_key")
    if key and record.get("call_refs") is not None:
        request[key] = [item for start, end in record["call_refs"] for item in pooled[start:end]]
    request = _expand(request, attachments)
    try:
        normalized = anthropic.parse_messages_request(json.dumps(request).encode("utf-8"))
    except anthropic.BadRequest as exc:
        raise InputError(f"model event {event.get('uuid', '?')}: its recorded request is no Messages request ({exc})", path) from None
    response = _expand(record.get("response"), attachments)
    failure = event.get("error")
    if failure or not isinstance(response, dict) or "content" not in response:
        message = str(failure or "the call has no recorded response")
        return Call(normalized=normalized, error=error_of(_status_in(message), message), process=process, kind=kind)
    return Call(normalized=normalized, reply=response["content"], process=process, kind=kind)


def _status_in(message: str) -> int:
    """An HTTP status named in Inspect's error text (`Error code: 529 - ...`), else 500."""
    for word in message.replace("-", " ").split():
        if word.isdigit() and len(word) == 3 and word[0] in "45":
            return int(word)
    return 500


def _expand(value: Any, attachments: dict) -> Any:
    """Inspect stores long strings once, as attachment://HASH; put them back."""
    if isinstance(value, str) and value.startswith(_ATTACHMENT):
        return attachments.get(value[len(_ATTACHMENT):], value)
    if isinstance(value, list):
        return [_expand(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, attachments) for k, v in value.items()}
    return value


def caller_text(sample: dict) -> str | None:
    """The sample's system message(s): what inspect_swe passes with --append-system-prompt."""
    texts = []
    for message in sample.get("input") or []:
        if isinstance(message, dict) and message.get("role") == "system":
            content = message.get("content")
            texts.append(content if isinstance(content, str) else
                         "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict)))
    return "\n\n".join(texts) if texts else None
