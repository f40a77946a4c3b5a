"""Session persistence: the only state that survives from one process to the next.

A launcher bug that loses or corrupts state across processes is exactly what the
harness hunts for, so the file holds structured fields (never rendered prompt
text the clean agent would have to parse back) and is replaced atomically, so a
crash mid-write can never leave a half-written session for the next process.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import uuid
from pathlib import Path

from .errors import AgentError, SessionNotFound

SESSION_VERSION = 1
# Ids become file names; anything else could escape the sessions directory.
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")


def sessions_dir(home: str | os.PathLike) -> Path:
    return Path(home) / ".reference-agent" / "sessions"


def session_path(home: str | os.PathLike, session_id: str) -> Path:
    if not _SAFE_ID.match(session_id):
        raise SessionNotFound(session_id)
    return sessions_dir(home) / f"{session_id}.json"


def new_session_record(
    *,
    agent_id: str,
    created_date: str,
    append: str | None,
    memory_fragment: str,
    session_id: str | None = None,
) -> dict:
    """The structured fields a clean resume restores from; nothing is derived later."""
    return {
        "version": SESSION_VERSION,
        "session_id": session_id or str(uuid.uuid4()),
        "agent_id": agent_id,
        "created_date": created_date,
        "append": append,
        "memory_fragment": memory_fragment,
        "messages": [],
        "last_usage": None,
        # State that belongs to particular history messages; it dies with them.
        "history_meta": {},
        # State only the known defects read or write.
        "defect_state": {},
    }


def load_session(home: str | os.PathLike, session_id: str) -> dict:
    path = session_path(home, session_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SessionNotFound(session_id) from None
    try:
        session = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AgentError(f"session file {path} is not valid JSON: {exc}") from None
    if not isinstance(session, dict) or not isinstance(session.get("messages"), list):
        raise AgentError(f"session file {path} is not a reference-agent session")
    session.setdefault("history_meta", {})
    session.setdefault("defect_state", {})
    return session


def fork_session(home: str | os.PathLike, session_id: str) -> str:
    """A copy of the session under a new id, the original left as it was: what `--fork-session` resumes."""
    session = load_session(home, session_id)
    session["session_id"] = str(uuid.uuid4())
    save_session(home, session)
    return session["session_id"]


def latest_session_id(home: str | os.PathLike) -> str:
    """The session saved last (a fork included): what `--continue` resumes."""
    saved = sorted(sessions_dir(home).glob("*.json"), key=lambda path: path.stat().st_mtime_ns)
    if not saved:
        raise SessionNotFound("(no saved session to continue)")
    return saved[-1].stem


def save_session(home: str | os.PathLike, session: dict) -> Path:
    """Write to a temp file in the same directory, then os.replace over the old one."""
    path = session_path(home, session["session_id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(session, handle, indent=1, ensure_ascii=False)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def add_user_text(messages: list[dict], text: str) -> None:
    """Roles must alternate, so a user text after a user message joins that message."""
    block = {"type": "text", "text": text}
    if messages and messages[-1].get("role") == "user":
        content = messages[-1]["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        messages[-1]["content"] = [*content, block]
    else:
        messages.append({"role": "user", "content": [block]})


def add_assistant_reply(messages: list[dict], reply: dict) -> None:
    messages.append({"role": "assistant", "content": reply["content"]})


def user_texts(messages: list[dict]) -> list[str]:
    """Every user-typed text block in order; tool results are not text blocks."""
    texts = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
            continue
        texts.extend(b["text"] for b in content if b.get("type") == "text")
    return texts


def replace_history(session: dict, messages: list[dict]) -> None:
    """Metadata attached to the old messages cannot describe the new ones, so it goes too."""
    session["messages"] = messages
    session["history_meta"] = {}
