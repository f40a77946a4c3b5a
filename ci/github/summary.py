"""The gate's summary on the job's page (`summary.py step`) and in one pull-request comment (`summary.py comment`).

Both show the same text: the verdict, then the diff's summary.md and the extra targets' one, so what a reviewer
reads on the pull request is what the job says. Written whatever the verdict: a failing gate is the one whose
summary matters. Standard library only, run by the interpreter the install step made (python3 when there is none).

The comment is created once and then edited in place, found again by the hidden marker on its first line (one per
target file, so two gates on one pull request keep two comments), through `gh api` with the workflow's token
(GH_TOKEN) on the issue-comments endpoints. A comment that cannot be written is a warning, not a failed gate: a
pull request from a fork gets a read-only token, and the verdict is the gate's, not the comment's.

Environment: REPORT_DIR and EXIT_CODE (the gate step's outputs; empty when it stopped before the diff), COMMENT,
TARGET_FILE, GH_TOKEN, and the runner's GITHUB_EVENT_PATH, GITHUB_REPOSITORY and GITHUB_SERVER_URL.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

STEP_SUMMARY_BYTES = 1_000_000  # GitHub refuses a step summary over 1 MiB
COMMENT_CHARS = 60_000  # and a comment body over 65,536 characters
CUT = "\n\n… (cut here: the whole summary is in the uploaded report folder)\n"


class GhError(Exception):
    pass


def compose() -> str:
    report_dir, exit_code = os.environ.get("REPORT_DIR", ""), os.environ.get("EXIT_CODE", "")
    if not report_dir or not exit_code:
        return "**harness gate: FAILED** before the diff ran; the job's log says why.\n"
    verdict = "**harness gate: passed**" if exit_code == "0" else f"**harness gate: FAILED** (exit {exit_code})"
    parts = [verdict]
    diff = Path(report_dir, "summary.md")
    if diff.is_file():
        parts.append(diff.read_text(encoding="utf-8", errors="replace"))
    else:
        parts.append(f"`harness diff` wrote no {diff}; the job's log says why.")
    extra = Path(report_dir, "extra-targets", "summary.md")
    if extra.is_file():
        parts.append(extra.read_text(encoding="utf-8", errors="replace"))
    return "\n\n".join(part.rstrip("\n") for part in parts) + "\n"


def cut_bytes(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return data[: limit - len(CUT.encode("utf-8"))].decode("utf-8", errors="ignore") + CUT


def marker(target_file: str) -> str:
    name = re.sub(r"-{2,}", "-", re.sub(r"[^\w./@+-]", "_", target_file))  # nothing in it may end the comment early
    return f"<!-- launcher-harness gate: {name} -->"


def event() -> dict:
    path = os.environ.get("GITHUB_EVENT_PATH", "")
    try:
        loaded = json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def gh(*args: str, body: dict | None = None) -> str:
    env = dict(os.environ)
    host = urlparse(os.environ.get("GITHUB_SERVER_URL", "")).hostname
    if host and host != "github.com":
        env["GH_HOST"] = host  # GitHub Enterprise Server
    command = ["gh", "api", *args] + (["--input", "-"] if body is not None else [])
    try:
        done = subprocess.run(command, input=json.dumps(body) if body is not None else None, env=env,
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GhError(f"gh api: {exc}") from None
    if done.returncode != 0:
        raise GhError(f"gh api {args[-1]}: " + (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1])
    return done.stdout


def comments(text: str) -> list[dict]:
    """`gh api --paginate` prints one JSON array per page, back to back."""
    found, decoder, at = [], json.JSONDecoder(), 0
    while at < len(text.rstrip()):
        while text[at].isspace():
            at += 1
        page, at = decoder.raw_decode(text, at)
        found += [c for c in page if isinstance(c, dict)]
    return found


def comment() -> int:
    wanted = os.environ.get("COMMENT", "false").strip()
    if wanted not in ("true", "false"):
        print(f"::error::harness gate: comment must be true or false, not {wanted!r}")
        return 2
    if wanted == "false":
        return 0
    number = (event().get("pull_request") or {}).get("number")
    if not isinstance(number, int):
        print(f"harness gate: no pull request in this event ({os.environ.get('GITHUB_EVENT_NAME', 'none')}): no comment")
        return 0
    repo, mark = os.environ.get("GITHUB_REPOSITORY", ""), marker(os.environ.get("TARGET_FILE", ""))
    body = {"body": mark + "\n" + cut_bytes(compose(), COMMENT_CHARS)}
    try:
        listed = comments(gh("--paginate", f"repos/{repo}/issues/{number}/comments?per_page=100"))
        ours = [c["id"] for c in listed if str(c.get("body", "")).split("\n", 1)[0].strip() == mark]
        if ours:
            gh("--method", "PATCH", f"repos/{repo}/issues/comments/{ours[0]}", body=body)
            print(f"harness gate: updated the comment {ours[0]} on pull request #{number}")
        else:
            gh("--method", "POST", f"repos/{repo}/issues/{number}/comments", body=body)
            print(f"harness gate: commented on pull request #{number}")
    except (GhError, ValueError, KeyError, IndexError) as exc:
        print(f"::warning::harness gate: no pull-request comment: {exc}")
    return 0


def main(argv: list[str]) -> int:
    if argv == ["step"]:
        sys.stdout.write(cut_bytes(compose(), STEP_SUMMARY_BYTES))
        return 0
    if argv == ["comment"]:
        return comment()
    print("usage: summary.py step|comment", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
