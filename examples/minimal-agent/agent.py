#!/usr/bin/env python3
"""Minimal Agent: a small, correct headless agent, and the model for your own target file.

Standard library only. One process per turn, the way launchers run agents:

    agent.py -p PROMPT [--resume SESSION_ID] [--append-system-prompt TEXT]
    agent.py --compact --resume SESSION_ID

It talks to $ANTHROPIC_BASE_URL/v1/messages with $ANTHROPIC_API_KEY, keeps each
session in $HOME/.minimal-agent/<session_id>.json, and prints one JSON line
{"session_id": ..., "result": ...} on stdout. What makes it correct across
processes: the identity line is derived from the stored session id (never
minted per process), the appended text comes from the flag of *this* process
and is written exactly once, and every reply is saved before the process ends.
"""

import argparse
import ast
import json
import operator
import os
import re
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

MODEL = "claude-sonnet-4-5"
MAX_TOKENS = 1024
AUTOCOMPACT_TOKENS = 150_000  # compact before a turn once the context is this full
INSTRUCTIONS = "Answer the user's request concisely and accurately.\nUse the calculator tool for arithmetic."
SUMMARY_REQUEST = "Summarize the conversation so far inside <summary></summary> tags."
CALCULATOR = {
    "name": "calculator",
    "description": "Evaluate an arithmetic expression.",
    "input_schema": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
}
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.USub: operator.neg, ast.UAdd: operator.pos}


class AgentError(Exception):
    pass


def session_file(session_id):
    if not re.fullmatch(r"[A-Za-z0-9-]+", session_id):
        raise AgentError(f"not a session id: {session_id!r}")
    return Path(os.environ["HOME"]) / ".minimal-agent" / f"{session_id}.json"


def load_session(session_id):
    try:
        return json.loads(session_file(session_id).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AgentError(f"no such session: {session_id}") from None


def save_session(session):
    path = session_file(session["session_id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(session, indent=1), encoding="utf-8")
    os.replace(tmp, path)  # never a half-written session


def call_api(system, messages, tools=None):
    body = {"model": MODEL, "max_tokens": MAX_TOKENS, "system": system, "messages": messages}
    if tools:
        body["tools"] = tools
    request = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"].rstrip("/") + "/v1/messages",
        data=json.dumps(body).encode("utf-8"),
        headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01",
                 "content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise AgentError(f"API returned HTTP {exc.code}: {exc.read().decode('utf-8', 'replace')}") from None
    except urllib.error.URLError as exc:
        raise AgentError(f"cannot reach the API: {exc.reason}") from None


def text_of(reply):
    return "".join(b.get("text", "") for b in reply["content"] if b["type"] == "text")


def user_message(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def system_blocks(session_id, append):
    body = INSTRUCTIONS + (f"\n\n{append}" if append else "")
    return [
        {"type": "text", "text": f"You are Minimal Agent (session {session_id[:8]})."},
        {"type": "text", "text": body, "cache_control": {"type": "ephemeral"}},
    ]


def calculate(node):
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](calculate(node.left), calculate(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](calculate(node.operand))
    raise ValueError("not plain arithmetic")


def run_tool(block):
    result = {"type": "tool_result", "tool_use_id": block["id"]}
    try:
        if block["name"] != "calculator":
            raise ValueError(f"unknown tool {block['name']!r}")
        result["content"] = str(calculate(ast.parse(str(block["input"]["expression"]), mode="eval").body))
    except (ValueError, KeyError, SyntaxError, ZeroDivisionError) as exc:
        result.update(content=f"Error: {exc}", is_error=True)
    return result


def compact(session):
    """Replace the history with a model-written summary."""
    reply = call_api([{"type": "text", "text": "You summarize conversations."}],
                     session["messages"] + [user_message(SUMMARY_REQUEST)])
    match = re.search(r"<summary>(.*?)</summary>", text_of(reply), re.S)
    if not match or not match.group(1).strip():
        raise AgentError("compaction failed: the reply has no <summary>...</summary>")
    session["messages"] = [user_message(f"Summary of the earlier conversation: {match.group(1).strip()}")]
    session["last_usage"] = None
    save_session(session)


def context_tokens(usage):
    keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    return sum(int((usage or {}).get(k) or 0) for k in keys)


def run_turn(session, prompt, append):
    if context_tokens(session.get("last_usage")) > AUTOCOMPACT_TOKENS:
        compact(session)
    messages = session["messages"] + [user_message(prompt)]
    system = system_blocks(session["session_id"], append)
    for _ in range(10):  # the model may call tools a few times before it answers
        reply = call_api(system, messages, tools=[CALCULATOR])
        messages.append({"role": "assistant", "content": reply["content"]})
        if reply.get("stop_reason") != "tool_use":
            break
        messages.append({"role": "user", "content": [run_tool(b) for b in reply["content"] if b["type"] == "tool_use"]})
    else:
        raise AgentError("the model kept calling tools")
    session["messages"] = messages
    session["last_usage"] = reply.get("usage")
    save_session(session)
    return text_of(reply)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-p", dest="prompt", help="run one turn with this prompt")
    parser.add_argument("--resume", metavar="SESSION_ID", help="continue a saved session")
    parser.add_argument("--append-system-prompt", default="", metavar="TEXT", help="appended to the system prompt")
    parser.add_argument("--compact", action="store_true", help="summarize the resumed session's history")
    args = parser.parse_args()
    if args.compact == (args.prompt is not None) or (args.compact and not args.resume):
        parser.error("give either -p PROMPT or --compact --resume SESSION_ID")
    try:
        if args.resume:
            session = load_session(args.resume)
        else:
            session = {"session_id": str(uuid.uuid4()), "messages": [], "last_usage": None}
        if args.compact:
            compact(session)
            result = "Compacted."
        else:
            result = run_turn(session, args.prompt, args.append_system_prompt)
    except AgentError as exc:
        print(f"minimal-agent: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps({"session_id": session["session_id"], "result": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
