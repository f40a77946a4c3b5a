"""One step of a scenario as a caller of the Claude Agent SDK for Python lives it: one `query()` in a fresh process.

Run by the SDK's own virtualenv (never imported by the harness). The options
are the ones a launcher author writes: the caller's text as the preset's
`append` (or as a replacing string prompt, or no `system_prompt` at all, as
the target's policy says), `resume=` the previous step's session,
`continue_conversation` or `fork_session` where the step says so. The CLI the
SDK starts is the harness's recording shim (`cli_path`), so what the SDK
passed it lands in the launch journal. Prints one JSON line: the session id,
whether the result was an error, and the result text.
"""

import argparse
import asyncio
import json
import os
import sys

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, SystemMessage, query


def options(args: argparse.Namespace) -> ClaudeAgentOptions:
    chosen = {"cwd": os.getcwd(), "cli_path": os.environ["HARNESS_AGENT_BINARY"],
              "permission_mode": "acceptEdits"}  # the CLI refuses bypassPermissions as root
    if args.system == "preset-append":
        chosen["system_prompt"] = {"type": "preset", "preset": "claude_code", "append": args.text}
    elif args.system == "string":
        chosen["system_prompt"] = args.text
    if args.resume:
        chosen["resume"] = args.resume
    if args.continue_conversation:
        chosen["continue_conversation"] = True
    if args.fork:
        chosen["fork_session"] = True
    return ClaudeAgentOptions(**chosen)


async def main(args: argparse.Namespace) -> int:
    outcome = {"session_id": None, "is_error": None, "result": None}
    async for message in query(prompt=args.prompt, options=options(args)):
        if isinstance(message, SystemMessage) and message.subtype == "init":
            outcome["session_id"] = outcome["session_id"] or message.data.get("session_id")
        elif isinstance(message, ResultMessage):
            outcome.update(session_id=message.session_id, is_error=message.is_error, result=message.result)
    print(json.dumps(outcome), flush=True)
    return 1 if outcome["is_error"] or outcome["session_id"] is None else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--system", choices=("preset-append", "string", "none"), required=True)
    parser.add_argument("--text", default="")
    parser.add_argument("--resume")
    parser.add_argument("--continue", dest="continue_conversation", action="store_true")
    parser.add_argument("--fork", action="store_true")
    sys.exit(asyncio.run(main(parser.parse_args())))
