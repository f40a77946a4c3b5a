"""One journaled request and the reply the fake API gave to it.

The journal is the only thing checks read, so an Exchange keeps everything a
reviewer could need to re-derive a verdict from the bytes: the raw body, the
redacted headers, the normalized view, and what was answered.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any

from harness import redaction
from harness.journal.conversation import system_text

# Request classes.  Checks judge "main" requests; the rest are journaled for
# the record and shown in reports.
MAIN = "main"
COMPACTION = "compaction"
SIDE = "side"
MALFORMED = "malformed"
OUTBOUND = "outbound"  # an attempt to reach another host, caught because the proxy variables point here
# Sent by a process outside the running step's process tree (another local program POSTing to this port):
# journaled for the record, never judged as the agent's.
FOREIGN = "foreign"

# Wire protocols, as Exchange.protocol journals them (one per format in harness/fakeapi/formats/). Journals
# on disk carry these strings: they never change.
ANTHROPIC = "anthropic"
OPENAI_CHAT = "openai-chat"
OPENAI_RESPONSES = "openai-responses"
GEMINI = "gemini"
PROTOCOLS = (ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, GEMINI)

# Every credential in what is journaled goes through the one redactor (harness/redaction/); these names
# stay for the modules that import them from here.
_AUTHORITY = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://)?([^/?#]*)")
REDACTED = redaction.REDACTED


def redact_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Lower-cased header map with credentials replaced (by name and by shape); repeated headers are joined."""
    return redaction.redact_headers(headers)


def redact_query(query: str) -> str:
    return redaction.redact_query(query)


def redact_text(text: str) -> str:
    """Free text with credentials replaced; the words around them stay readable."""
    return redaction.redact(text)


@dataclass
class Exchange:
    seq: int
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    klass: str
    status: int
    time_s: float = 0.0
    step: int | None = None
    step_kind: str | None = None
    pid: int | None = None
    protocol: str = ANTHROPIC
    normalized: dict | None = None
    stream: bool = False
    unforeseen: bool = False
    error: str | None = None
    reply: dict | None = None  # {"content": [...], "stop_reason": str, "usage": {...}}
    notes: list[str] = field(default_factory=list)

    @property
    def system_text(self) -> str:
        """All system text of the request, blocks joined as the model reads them."""
        return system_text(self.normalized)

    @property
    def scripted_error(self) -> bool:
        """Answered with an error the scenario scripted (not a refusal of a malformed request)."""
        return bool((self.reply or {}).get("error"))

    @property
    def destination(self) -> str:
        """For outbound requests: the host (and port) the agent tried to reach."""
        # Read by hand, not by urlsplit: the path's user:password@ is journaled redacted ("[redacted]"), which
        # urlsplit would take for an IPv6 address; the destination is the host and port, never the user.
        address = self.path if self.method == "CONNECT" else _AUTHORITY.match(self.path).group(1)
        return address.rpartition("@")[2]

    def reply_text(self) -> str:
        if not self.reply:
            return ""
        return "".join(b.get("text", "") for b in self.reply.get("content", []) if b.get("type") == "text")

    def to_json(self) -> dict[str, Any]:
        try:
            body_text: str | None = self.body.decode("utf-8")
            body_b64 = None
        except UnicodeDecodeError:
            body_text, body_b64 = None, base64.b64encode(self.body).decode("ascii")
        return {
            "seq": self.seq,
            "time_s": round(self.time_s, 6),
            "step": self.step,
            "step_kind": self.step_kind,
            "pid": self.pid,
            "class": self.klass,
            "protocol": self.protocol,
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": self.headers,
            "body": body_text,
            "body_base64": body_b64,
            "normalized": self.normalized,
            "stream": self.stream,
            "unforeseen": self.unforeseen,
            "status": self.status,
            "error": self.error,
            "reply": self.reply,
            "notes": self.notes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Exchange":
        if data.get("body_base64") is not None:
            body = base64.b64decode(data["body_base64"])
        else:
            body = (data.get("body") or "").encode("utf-8")
        return cls(
            seq=data["seq"],
            method=data["method"],
            path=data["path"],
            query=data.get("query", ""),
            headers=data.get("headers", {}),
            body=body,
            klass=data["class"],
            status=data["status"],
            time_s=data.get("time_s", 0.0),
            step=data.get("step"),
            step_kind=data.get("step_kind"),
            pid=data.get("pid"),
            protocol=data.get("protocol", ANTHROPIC),
            normalized=data.get("normalized"),
            stream=data.get("stream", False),
            unforeseen=data.get("unforeseen", False),
            error=data.get("error"),
            reply=data.get("reply"),
            notes=list(data.get("notes", [])),
        )

    def dumps(self) -> str:
        data = self.to_json()
        line = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (legal as a JSON \u escape) cannot be written as UTF-8
            line = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
        return line
