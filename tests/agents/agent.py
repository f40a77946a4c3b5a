"""A small agent for tests/test_runner.py; `--mode` picks how it (mis)behaves.

Stdlib only, run with the `{python}` placeholder. Every mode that gets as far
as the API records what it saw (argv, environment, cwd, pid, files it found)
in $HOME/dumps/, so a test that keeps the workspace can inspect it.

Modes:
  good              a correct agent: history kept in $HOME, one request per turn
  crash             writes to stderr and exits 3
  hang              starts a child (sleep 300), records both pids, sleeps forever
  stubborn          like hang, but it and its child ignore SIGTERM
  signal            kills itself with SIGKILL
  no-request        prints a session id without ever calling the API
  garbage-stdout    calls the API, then prints no session id at all
  leave-background  a correct turn that leaves a child (sleep 300) running
  fail-after-reply  gets its reply, then exits 1 for a reason of its own
  json-error        gets its reply, then reports an error as JSON on stdout (as Claude Code does), exits 1
  models-only       lists the models (GET /v1/models), never asks for its turn, prints a session id, exits 0
  count-tokens-only counts tokens (POST /v1/messages/count_tokens) instead of asking for its turn, exits 0
  side-call-only    sends only a title request (a side call by the target's rule), prints a session id, exits 0
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

HOME = Path(os.environ.get("HOME", "."))


def call_api(system, messages):
    body = {"model": "test-model", "max_tokens": 64, "system": system, "messages": messages}
    request = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01",
                 "content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def call(path, body=None):
    """A request that is not the turn: a model listing, a token count, a title."""
    request = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01",
                 "content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def write_json(name, data):
    path = HOME / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def start_child():
    return subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True)
    parser.add_argument("-p", dest="prompt", default="")
    parser.add_argument("--resume")
    parser.add_argument("--append", default="")
    args, _ = parser.parse_known_args()  # anything else is only echoed into the dump

    if args.mode == "crash":
        print("agent: fatal: cannot open the session store", file=sys.stderr, flush=True)
        return 3
    if args.mode == "signal":
        os.kill(os.getpid(), signal.SIGKILL)
    if args.mode in ("hang", "stubborn"):
        if args.mode == "stubborn":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # inherited by the child across exec
        child = start_child()
        write_json("pids.json", {"agent": os.getpid(), "child": child.pid})
        print("agent: working...", file=sys.stderr, flush=True)
        while True:
            time.sleep(60)
    if args.mode in ("models-only", "count-tokens-only", "side-call-only"):
        prompt = [{"role": "user", "content": [{"type": "text", "text": args.prompt}]}]
        if args.mode == "models-only":
            call("/v1/models")
        elif args.mode == "count-tokens-only":
            call("/v1/messages/count_tokens", {"model": "test-model", "messages": prompt})
        else:
            call("/v1/messages", {"model": "test-model", "max_tokens": 16, "messages": prompt,
                                  "system": [{"type": "text", "text": "Write a title for this conversation."}]})
        print(json.dumps({"session_id": args.resume or str(uuid.uuid4()), "result": "done"}))
        return 0
    if args.mode == "no-request":
        print(json.dumps({"session_id": "never-talked-to-the-api", "result": "done"}))
        return 0

    session_id = args.resume or str(uuid.uuid4())
    session_file = HOME / ".test-agent" / f"{session_id}.json"
    messages = json.loads(session_file.read_text()) if args.resume else []
    marker = HOME / "written-by-the-first-step.txt"
    dumps = HOME / "dumps"
    dumps.mkdir(exist_ok=True)
    write_json(f"dumps/{len(list(dumps.iterdir()))}.json", {
        "argv": sys.argv, "env": dict(os.environ), "cwd": os.getcwd(), "pid": os.getpid(),
        "tempdir": tempfile.gettempdir(), "marker": marker.read_text() if marker.exists() else None,
    })
    if not marker.exists():
        marker.write_text(f"written by pid {os.getpid()}")

    system = [
        {"type": "text", "text": f"You are Test Agent (session {session_id[:8]})."},
        {"type": "text", "text": "Be brief." + (f"\n\n{args.append}" if args.append else ""),
         "cache_control": {"type": "ephemeral"}},
    ]
    messages.append({"role": "user", "content": [{"type": "text", "text": args.prompt}]})
    reply = call_api(system, messages)
    messages.append({"role": "assistant", "content": reply["content"]})
    session_file.parent.mkdir(parents=True, exist_ok=True)
    session_file.write_text(json.dumps(messages))
    text = "".join(b.get("text", "") for b in reply["content"] if b["type"] == "text")

    if args.mode == "fail-after-reply":
        print("agent: fatal: disk full while saving", file=sys.stderr, flush=True)
        return 1
    if args.mode == "json-error":
        print(json.dumps({"type": "result", "is_error": True, "result": "API Error: the session store is gone"}))
        return 1
    if args.mode == "garbage-stdout":
        print("Thinking...\n\x1b[32m✓\x1b[0m all done, no id for you {not json")
        return 0
    if args.mode == "leave-background":
        write_json("background.json", {"child": start_child().pid})
    print("log: turn finished")
    print(json.dumps({"session_id": session_id, "result": text}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
