#!/usr/bin/env python3
"""Team Agent: a small streaming agent of an outside team, kept in that team's own git repository by the test.

    agent.py -p PROMPT [--resume ID] [--append TEXT]      one turn, streamed
    agent.py --compact --resume ID [--append TEXT]         the history replaced by a model-written summary

Standard library only; each session in $HOME/.team-agent/<id>.json; prints {"session_id": ...} last. The test's
`buggy` branch changes DROP_APPEND_ON_RESUME to True: the caller's text is then lost on every resumed turn.
"""

import argparse
import json
import os
import re
import sys
import urllib.request
import uuid
from pathlib import Path

DROP_APPEND_ON_RESUME = False


def stream(system, messages):
    """POST /v1/messages with stream: true; the text deltas joined."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 512, "stream": True, "system": system, "messages": messages}
    request = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "accept": "text/event-stream",
                                              "anthropic-version": "2023-06-01", "content-type": "application/json"})
    text = []
    with urllib.request.urlopen(request, timeout=60) as response:
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data:"):
                event = json.loads(line[5:])
                if event.get("type") == "content_block_delta" and event["delta"].get("type") == "text_delta":
                    text.append(event["delta"]["text"])
    return "".join(text)


def system_prompt(append):
    blocks = [{"type": "text", "text": "You are Team Agent, a careful assistant."}]
    if append:
        blocks.append({"type": "text", "text": append, "cache_control": {"type": "ephemeral"}})
    return blocks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-p", dest="prompt")
    parser.add_argument("--resume")
    parser.add_argument("--append", default="")
    parser.add_argument("--compact", action="store_true")
    args = parser.parse_args()
    session_id = args.resume or str(uuid.uuid4())
    if not re.fullmatch(r"[0-9a-f-]+", session_id):
        sys.exit(f"team-agent: not a session id: {session_id!r}")
    store = Path(os.environ["HOME"]) / ".team-agent" / f"{session_id}.json"
    messages = json.loads(store.read_text()) if args.resume else []
    append = "" if (args.resume and DROP_APPEND_ON_RESUME) else args.append
    if args.compact:
        asked = messages + [{"role": "user", "content": "Summarize the conversation inside <summary></summary> tags."}]
        summary = re.search(r"<summary>(.*?)</summary>", stream(system_prompt(append), asked), re.S).group(1).strip()
        messages = [{"role": "user", "content": f"Summary of the conversation so far: {summary}"}]
    else:
        messages.append({"role": "user", "content": args.prompt})
        messages.append({"role": "assistant", "content": stream(system_prompt(append), messages)})
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps(messages))
    print(json.dumps({"session_id": session_id}))


if __name__ == "__main__":
    main()
