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
from urllib.parse import urlsplit
from typing import Any

from harness.fakeapi.conversation import system_text

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

REDACTED = "[redacted]"
_SECRET_HEADERS = {
    "authorization",
    "proxy-authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
    "set-cookie",
}
_SECRET_QUERY = re.compile(r"(?i)(^|[?&])((?:api[_-]?)?key|token|access_token|secret)=([^&]*)")


def redact_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    """Lower-cased header map with credentials replaced; repeated headers are joined."""
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        shown = REDACTED if key in _SECRET_HEADERS else value
        out[key] = f"{out[key]}, {shown}" if key in out else shown
    return out


def redact_query(query: str) -> str:
    return _SECRET_QUERY.sub(lambda m: f"{m.group(1)}{m.group(2)}={REDACTED}", query)


# Credentials as they show up in free text an agent prints (its stdout and stderr end up in
# reports); only the part named `secret` is replaced, so the words around it stay readable.
_SECRET_TEXT = (
    re.compile(r"(?i)\b(?:bearer|basic)\s+(?P<secret>[A-Za-z0-9._~+/=-]{8,})"),
    re.compile(r"(?P<secret>\bsk-[A-Za-z0-9_-]{12,})"),
    re.compile(r"(?i)\b(?:authorization|x-api-key|api-key|x-goog-api-key|cookie)\s*[:=]\s*(?P<secret>[^\n]+)"),
    re.compile(r"(?i)[?&](?:(?:api[_-]?)?key|(?:access_)?token|secret)=(?P<secret>[^&\s\"']+)"),
    re.compile(r"://[^/\s:@]+:(?P<secret>[^@\s/]+)@"),  # user:password@host
)


def redact_text(text: str) -> str:
    """Free text with credentials replaced."""
    for pattern in _SECRET_TEXT:
        text = pattern.sub(lambda m: m.group(0)[: m.start("secret") - m.start()] + REDACTED + m.group(0)[m.end("secret") - m.start():], text)
    return text


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
    protocol: str = "anthropic"
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
        return self.path if self.method == "CONNECT" else urlsplit(self.path).netloc

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
            protocol=data.get("protocol", "anthropic"),
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
