"""Command line: flags and environment in, one result on stdout, an exit code out.

Stdout carries the result and nothing else, because the harness parses it;
every diagnostic goes to stderr. Exit 2 is reserved for caller mistakes
(flags, environment, defect names), exit 1 for runs that failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence

from .agent import (
    DEFAULT_AUTOCOMPACT_TOKENS,
    DEFAULT_MODEL,
    AgentConfig,
    run_compact,
    run_prompt,
)
from .client import ConnectionFactory, MessagesClient
from .defects import KNOWN_DEFECTS, parse_defects
from .errors import AgentError, UsageError
from .prompt import ProcessContext
from .session import fork_session, latest_session_id

PROG = "reference-agent"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="A small agent that talks the Anthropic Messages API, for launcher harnesses.",
        epilog="known defects: " + ", ".join(KNOWN_DEFECTS),
    )
    parser.add_argument("-p", "--print", dest="prompt", metavar="PROMPT", help="run one headless turn")
    parser.add_argument("--append-system-prompt", metavar="TEXT", help="text appended to the system prompt")
    parser.add_argument(
        "--temporary", metavar="TEXT", help="text for this process only: sent after the cache breakpoint, never saved"
    )
    parser.add_argument("--resume", metavar="SESSION_ID", help="continue a saved session")
    parser.add_argument("--continue", dest="continue_latest", action="store_true",
                        help="continue the session saved last, instead of naming one")
    parser.add_argument("--fork-session", action="store_true", help="resume a copy of the session under a new id")
    parser.add_argument("--compact", action="store_true", help="summarize the resumed session's history")
    parser.add_argument("--output-format", choices=("text", "json"), default="text")
    parser.add_argument("--no-stream", action="store_true", help="ask for a plain JSON response")
    parser.add_argument(
        "--defect", action="append", default=[], metavar="NAME", help="switch on a known defect (repeatable)"
    )
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.continue_latest and args.resume is not None:
        parser.error("--continue resumes the session saved last: do not name one with --resume")
    resuming = args.resume is not None or args.continue_latest
    if args.fork_session and not resuming:
        parser.error("--fork-session needs a session: --resume SESSION_ID or --continue")
    if args.compact:
        if args.prompt is not None:
            parser.error("--compact cannot be combined with -p")
        if not resuming:
            parser.error("--compact requires --resume SESSION_ID (or --continue)")
    elif args.prompt is None:
        parser.error("one of -p PROMPT or --compact --resume SESSION_ID is required")
    return args


def config_from_env(
    env: Mapping[str, str], *, stream: bool, connect: ConnectionFactory | None = None
) -> tuple[AgentConfig, MessagesClient]:
    def required(name: str) -> str:
        value = env.get(name)
        if not value:
            raise UsageError(f"environment variable {name} is required")
        return value

    base_url, api_key, home = required("ANTHROPIC_BASE_URL"), required("ANTHROPIC_API_KEY"), required("HOME")
    raw_limit = env.get("REFERENCE_AGENT_AUTOCOMPACT_TOKENS") or str(DEFAULT_AUTOCOMPACT_TOKENS)
    try:
        limit = int(raw_limit)
    except ValueError:
        raise UsageError(f"REFERENCE_AGENT_AUTOCOMPACT_TOKENS is not an integer: {raw_limit!r}") from None
    config = AgentConfig(
        home=home,
        model=env.get("REFERENCE_AGENT_MODEL") or DEFAULT_MODEL,
        stream=stream,
        autocompact_tokens=limit,
    )
    return config, MessagesClient(base_url, api_key, connect=connect)


def main(
    argv: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    connect: ConnectionFactory | None = None,
) -> int:
    """One process's run. `connect` replaces the stdlib HTTP connection (the harness's in-process mode)."""
    args = parse_args(argv)  # argparse exits 2 on its own
    env = os.environ if env is None else env
    client = None
    try:
        defects = parse_defects(args.defect)
        config, client = config_from_env(env, stream=not args.no_stream, connect=connect)
        ctx = ProcessContext(defects=defects, append_flag=args.append_system_prompt, temporary=args.temporary or None)
        resume = latest_session_id(config.home) if args.continue_latest else args.resume
        if args.fork_session:
            resume = fork_session(config.home, resume)
        if args.compact:
            result = run_compact(resume, client=client, config=config, ctx=ctx)
        else:
            result = run_prompt(args.prompt, client=client, config=config, ctx=ctx, resume_id=resume)
    except AgentError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        if client is not None:
            client.close()
    if args.output_format == "json":
        sys.stdout.write(json.dumps(result.as_json(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(result.result + "\n")
    sys.stdout.flush()
    return 0
